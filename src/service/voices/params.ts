/**
 * From measurements of a speaker's samples to the settings of the parametric engine (eSpeak-NG):
 * a deeper sample gives a deeper voice, a faster talker a faster one. This is an approximation of
 * pitch and pace, not neural cloning: timbre is one of two stock variants.
 */
import type { SpeechAnalysis } from './analyze.js';

export interface EngineVoiceParams {
  /** eSpeak voice variant, appended to the language (`en-us+m3`). */
  variant: string;
  /** eSpeak base pitch, 0–99. */
  pitch: number;
  /** eSpeak pitch range (intonation), 0–99; 50 is the engine's default. */
  range: number;
  /** Speaking rate in words per minute, 80–450. */
  rateWpm: number;
  /** eSpeak language, e.g. `en-us`. */
  language: string;
}

/** The built-in voice: the engine's own defaults. */
export const DEFAULT_ENGINE_PARAMS: Readonly<EngineVoiceParams> = Object.freeze({
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
export function calibratedF0Hz(params: Pick<EngineVoiceParams, 'variant' | 'pitch'>): number | undefined {
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
export function pitchForF0(f0Hz: number): Pick<EngineVoiceParams, 'variant' | 'pitch'> {
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

/**
 * Engine settings for a voice made from these samples, pooled: F0 is the geometric mean of the
 * samples' medians weighted by their voiced time; the syllable rate is all nuclei over all speaking
 * time. What the samples do not show (no voiced frame, no syllable) keeps the built-in voice's value.
 */
export function deriveEngineParams(analyses: readonly SpeechAnalysis[]): EngineVoiceParams {
  let logF0Sum = 0;
  let voicedSeconds = 0;
  let syllables = 0;
  let speakingSeconds = 0;
  for (const a of analyses) {
    if (a.f0Hz > 0 && a.voicedSeconds > 0) {
      logF0Sum += Math.log(a.f0Hz) * a.voicedSeconds;
      voicedSeconds += a.voicedSeconds;
    }
    syllables += a.syllables;
    speakingSeconds += a.speakingSeconds;
  }
  const params: EngineVoiceParams = { ...DEFAULT_ENGINE_PARAMS };
  if (voicedSeconds > 0) Object.assign(params, pitchForF0(Math.exp(logF0Sum / voicedSeconds)));
  if (syllables > 0 && speakingSeconds > 0) params.rateWpm = rateForSyllableRate(syllables / speakingSeconds);
  return params;
}
