/**
 * From measurements of a speaker's samples to eSpeak-NG's settings: a deeper sample gives a deeper
 * voice, a faster talker a faster one. This is an approximation of pitch and pace, not neural cloning:
 * timbre is one of two stock variants. A voice speaks with these when its language is one Flite lacks
 * (`params.ts`).
 */
import type { EspeakVoiceParams } from '../engine/voice-params.js';
import type { SpeechAnalysis } from './analyze.js';
import { pooledMeasures } from './pooled.js';

/** eSpeak's plain male American voice at its own defaults. */
export const DEFAULT_ESPEAK_PARAMS: Readonly<EspeakVoiceParams> = Object.freeze({
  engine: 'espeak-ng',
  variant: 'm3',
  pitch: 50,
  range: 50,
  rateWpm: 175,
  language: 'en-us',
});

type Calibration = ReadonlyArray<readonly [setting: number, measured: number]>;

/*
 * Calibration: `bench/calibrate-voices.ts` had eSpeak-NG (@echogarden/espeak-ng-emscripten 0.3.5,
 * en-us, range 50) read the first paragraph of the Rainbow Passage at each setting below, and measured
 * the audio with `analyzeSpeech`, the analyzer that measures uploaded samples. Mapping a sample through
 * the inverse of these tables therefore reproduces what the analyzer heard, whatever its biases.
 * Re-run it (and paste its output here) after changing the analyzer or the engine.
 */

/** [eSpeak pitch, median F0 in Hz measured at 175 wpm], per variant. */
// prettier-ignore
const PITCH_CALIBRATION = {
  m3: [[0, 69.2], [10, 74.5], [20, 79.8], [30, 87.2], [40, 95.3], [50, 104.5], [60, 114.8], [70, 126.9], [80, 140.9], [90, 156.5], [99, 172.5]],
  f3: [[0, 147.9], [10, 157.4], [20, 167], [30, 180], [40, 194], [50, 210.7], [60, 230.1], [70, 252.1], [80, 277.4], [90, 307.2], [99, 336.7]],
} as const satisfies Record<string, Calibration>;

/** [rate in wpm, syllables per second of speaking time measured at pitch 50], mean of m3 and f3. */
// prettier-ignore
const RATE_CALIBRATION: Calibration = [[80, 2.62], [100, 3.05], [125, 3.59], [150, 4.25], [175, 4.8], [200, 5.1], [225, 5.7], [250, 6.17], [300, 7.18], [350, 7.7], [400, 8.24], [450, 8.63]];

/**
 * Below this F0 a sample gets the male variant, from it up the female one; 165 Hz is the usual
 * boundary between adult male and female speaking voices. Both variants reach it (m3 at pitch ≈ 95,
 * f3 at ≈ 18), so the output F0 keeps rising through the switch.
 */
export const VARIANT_CROSSOVER_HZ = 165;
const LOW_VARIANT = 'm3';
const HIGH_VARIANT = 'f3';
const MAX_PITCH = 99;
/**
 * Derived rates stay in this band. Above ~300 wpm the analyzer merges syllables (it counts ~7/s where
 * eSpeak speaks ~9/s), so the table loses resolution; below 100 wpm eSpeak drawls, and a slow or
 * hesitant sample should not make a voice that does.
 */
export const MIN_DERIVED_RATE_WPM = 100;
export const MAX_DERIVED_RATE_WPM = 300;

/** The setting whose measured value is `target`, linearly interpolated; clamped to the table's ends. */
function inverse(table: Calibration, target: number): number {
  const first = table[0]!;
  const last = table[table.length - 1]!;
  if (target <= first[1]) return first[0];
  if (target >= last[1]) return last[0];
  for (let i = 1; i < table.length; i++) {
    const [s1, m1] = table[i]!;
    if (target <= m1) {
      const [s0, m0] = table[i - 1]!;
      return s0 + ((target - m0) / (m1 - m0)) * (s1 - s0);
    }
  }
  return last[0];
}

/** Linear interpolation of the measured value at `setting`; clamped to the table's ends. */
function forward(table: Calibration, setting: number): number {
  const first = table[0]!;
  const last = table[table.length - 1]!;
  if (setting <= first[0]) return first[1];
  if (setting >= last[0]) return last[1];
  for (let i = 1; i < table.length; i++) {
    const [s1, m1] = table[i]!;
    if (setting <= s1) {
      const [s0, m0] = table[i - 1]!;
      return m0 + ((setting - s0) / (s1 - s0)) * (m1 - m0);
    }
  }
  return last[1];
}

function isCalibratedVariant(variant: string): variant is keyof typeof PITCH_CALIBRATION {
  return Object.hasOwn(PITCH_CALIBRATION, variant);
}

/**
 * The median F0 the analyzer measures in eSpeak's speech at this variant and pitch, from the
 * calibration table; undefined for a variant the table does not cover.
 */
export function calibratedF0Hz(params: Pick<EspeakVoiceParams, 'variant' | 'pitch'>): number | undefined {
  return isCalibratedVariant(params.variant)
    ? forward(PITCH_CALIBRATION[params.variant], params.pitch)
    : undefined;
}

/**
 * Integer pitches round to the nearest setting; these bounds keep the rounding from crossing the
 * switch (the low variant stays at or below the crossover F0, the high one at or above it).
 */
const LOW_MAX_PITCH = Math.floor(inverse(PITCH_CALIBRATION[LOW_VARIANT], VARIANT_CROSSOVER_HZ));
const HIGH_MIN_PITCH = Math.ceil(inverse(PITCH_CALIBRATION[HIGH_VARIANT], VARIANT_CROSSOVER_HZ));

/**
 * Variant and pitch whose synthesized median F0 is closest to `f0Hz`, monotonic: a lower F0 never
 * gives a higher output F0.
 */
export function pitchForF0(f0Hz: number): Pick<EspeakVoiceParams, 'variant' | 'pitch'> {
  if (f0Hz < VARIANT_CROSSOVER_HZ) {
    const pitch = Math.round(inverse(PITCH_CALIBRATION[LOW_VARIANT], f0Hz));
    return { variant: LOW_VARIANT, pitch: Math.min(LOW_MAX_PITCH, Math.max(0, pitch)) };
  }
  const pitch = Math.round(inverse(PITCH_CALIBRATION[HIGH_VARIANT], f0Hz));
  return { variant: HIGH_VARIANT, pitch: Math.min(MAX_PITCH, Math.max(HIGH_MIN_PITCH, pitch)) };
}

/** The engine rate whose measured syllable rate is `syllablesPerSecond` (monotonic), within the derived band. */
export function rateForSyllableRate(syllablesPerSecond: number): number {
  const wpm = Math.round(inverse(RATE_CALIBRATION, syllablesPerSecond));
  return Math.min(MAX_DERIVED_RATE_WPM, Math.max(MIN_DERIVED_RATE_WPM, wpm));
}

/** The rate in wpm at which eSpeak speaks this many syllables a second (unclamped), for conversions. */
export function rateWpmForSyllableRate(syllablesPerSecond: number): number {
  return inverse(RATE_CALIBRATION, syllablesPerSecond);
}

/** Syllables a second of speaking time eSpeak speaks at this rate (from the calibration). */
export function syllableRateAt(rateWpm: number): number {
  return forward(RATE_CALIBRATION, rateWpm);
}

/**
 * eSpeak settings for a voice made from these samples (`pooledMeasures`). What the samples do not
 * show (no voiced frame, no syllable) keeps the default voice's value.
 */
export function deriveEspeakParams(analyses: readonly SpeechAnalysis[]): EspeakVoiceParams {
  const { f0Hz, syllablesPerSecond } = pooledMeasures(analyses);
  return {
    ...DEFAULT_ESPEAK_PARAMS,
    ...(f0Hz !== undefined ? pitchForF0(f0Hz) : {}),
    ...(syllablesPerSecond !== undefined ? { rateWpm: rateForSyllableRate(syllablesPerSecond) } : {}),
  };
}
