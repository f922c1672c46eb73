/**
 * How bright a recording sounds: the spectral centroid (the magnitude-weighted mean frequency, the
 * usual acoustic correlate of timbral brightness) of its speech. Tests use it, next to the median F0
 * of `analyzeSpeech` (src/service/voices/analyze.ts), to tell voices apart.
 */
import { fft } from '../src/audio/fft.js';

/** Frames at least this long (a power of two in samples): several periods of the lowest voice. */
const MIN_FRAME_SECONDS = 0.04;
/**
 * Frames quieter than the loud level (95th percentile of frame levels) by more than this are not
 * speech: the rule `analyzeSpeech` uses for its speaking time.
 */
const ACTIVITY_RANGE_DB = 30;
const LOUD_PERCENTILE = 0.95;

export interface CentroidOptions {
  /** Bins above this are left out, so that recordings at different rates compare (default: Nyquist). */
  maxHz?: number;
}

/**
 * Spectral centroid, in Hz, of the long-term average magnitude spectrum of the active frames of a mono
 * recording (Hann-windowed, half-overlapping frames of ≥ 40 ms; DC left out). 0 when nothing is active.
 */
export function spectralCentroidHz(
  samples: Float32Array,
  sampleRate: number,
  options: CentroidOptions = {},
): number {
  let size = 1;
  while (size < MIN_FRAME_SECONDS * sampleRate) size <<= 1;
  const hop = size >> 1;
  const frames = samples.length >= size ? Math.floor((samples.length - size) / hop) + 1 : 0;
  if (frames === 0) return 0;

  const levels = new Float64Array(frames);
  for (let k = 0; k < frames; k++) {
    let sum = 0;
    for (let i = k * hop; i < k * hop + size; i++) sum += samples[i]! * samples[i]!;
    levels[k] = sum > 0 ? 10 * Math.log10(sum / size) : -Infinity;
  }
  const sorted = levels.slice().sort();
  const gateDb = sorted[Math.min(frames - 1, Math.floor(LOUD_PERCENTILE * frames))]! - ACTIVITY_RANGE_DB;

  const window = new Float64Array(size);
  for (let i = 0; i < size; i++) window[i] = 0.5 - 0.5 * Math.cos((2 * Math.PI * i) / size);
  const lastBin = Math.min(size / 2, Math.floor(((options.maxHz ?? sampleRate / 2) * size) / sampleRate));
  const magnitude = new Float64Array(lastBin + 1);
  const re = new Float64Array(size);
  const im = new Float64Array(size);
  for (let k = 0; k < frames; k++) {
    if (!(levels[k]! >= gateDb)) continue;
    for (let i = 0; i < size; i++) re[i] = samples[k * hop + i]! * window[i]!;
    im.fill(0);
    fft(re, im);
    for (let b = 1; b <= lastBin; b++) magnitude[b] = magnitude[b]! + Math.hypot(re[b]!, im[b]!);
  }
  let weighted = 0;
  let total = 0;
  for (let b = 1; b <= lastBin; b++) {
    weighted += ((b * sampleRate) / size) * magnitude[b]!;
    total += magnitude[b]!;
  }
  return total > 0 ? weighted / total : 0;
}
