/**
 * Band powers of 8 ms cells: a 16 ms Hann-windowed FFT every `HOP_MS`, reduced to `BANDS` bands from
 * 250 Hz (mean power per bin, in sample² units). `PairAnalyser` takes the caller's audio and the
 * reference at once (one as the real part, the other as the imaginary part of one transform, split by
 * symmetry); `SignalAnalyser` takes one signal (the canceller's residual).
 */
import { fftPlan, type FftPlan } from '../../audio/fft.js';
import type { VadSampleRate } from '../sample-rate.js';
import { BANDS, HOP_MS } from './cells.js';

/** FFT bin width is 62.5 Hz at both rates (128 points at 8 kHz, 256 at 16 kHz). */
const FIRST_BIN = 4;
const BINS_PER_BAND = 4;

/** The samples of one hop at `sampleRate`. */
export function hopSamples(sampleRate: VadSampleRate): number {
  return (sampleRate * HOP_MS) / 1000;
}

/**
 * A band's power (as the analysers give it) of white noise at `dbfs` RMS: per bin, twice its variance
 * over the transform's length.
 */
export function bandPowerOfNoise(sampleRate: VadSampleRate, dbfs: number): number {
  const rms = 32768 * 10 ** (dbfs / 20);
  return (2 * rms * rms) / (2 * hopSamples(sampleRate));
}

/** A Hann window of `n` samples. */
function hann(n: number): Float64Array {
  return Float64Array.from({ length: n }, (_, i) => 0.5 - 0.5 * Math.cos((2 * Math.PI * i) / n));
}

/**
 * One hop's transform: a frame of two hops, its Hann window, the FFT's buffers and plan (kept: no
 * look-up by length for each transform), and Parseval's scale with the window's mean square (3/8), by
 * which a band's value is the signal's power there.
 */
class HopTransform {
  readonly hop: number;
  readonly window: Float64Array;
  readonly re: Float64Array;
  readonly im: Float64Array;
  readonly fft: FftPlan;
  readonly scale: number;

  constructor(sampleRate: VadSampleRate) {
    this.hop = hopSamples(sampleRate);
    const n = this.hop * 2;
    this.window = hann(n);
    this.re = new Float64Array(n);
    this.im = new Float64Array(n);
    this.fft = fftPlan(n);
    this.scale = 1 / (n * n * 0.375);
  }
}

export class PairAnalyser {
  private readonly t: HopTransform;
  private readonly inFrame: Float64Array;
  private readonly refFrame: Float64Array;

  constructor(sampleRate: VadSampleRate) {
    this.t = new HopTransform(sampleRate);
    this.inFrame = new Float64Array(this.t.re.length);
    this.refFrame = new Float64Array(this.t.re.length);
  }

  get hopSamples(): number {
    return this.t.hop;
  }

  /**
   * The next hop of each signal; writes the bands of the frames ending with them into `inBands` and
   * `refBands`, and returns the reference's total.
   */
  push(
    inbound: Int16Array,
    reference: Int16Array,
    offset: number,
    inBands: Float64Array,
    refBands: Float64Array,
  ): number {
    const { inFrame, refFrame } = this;
    const { hop, re, im, window, fft, scale } = this.t;
    const n = re.length;
    inFrame.copyWithin(0, hop);
    refFrame.copyWithin(0, hop);
    for (let i = 0; i < hop; i++) {
      inFrame[hop + i] = inbound[offset + i]!;
      refFrame[hop + i] = reference[offset + i]!;
    }
    for (let i = 0; i < n; i++) {
      re[i] = inFrame[i]! * window[i]!;
      im[i] = refFrame[i]! * window[i]!;
    }
    fft.transform(re, im);
    let refTotal = 0;
    for (let b = 0; b < BANDS; b++) {
      let pIn = 0;
      let pRef = 0;
      const first = FIRST_BIN + b * BINS_PER_BAND;
      for (let k = first; k < first + BINS_PER_BAND; k++) {
        const ar = re[k]!;
        const ai = im[k]!;
        const br = re[n - k]!;
        const bi = im[n - k]!;
        // X[k] = (Z[k] + conj Z[n−k]) / 2, Y[k] = (Z[k] − conj Z[n−k]) / 2i.
        pIn += ((ar + br) ** 2 + (ai - bi) ** 2) / 4;
        pRef += ((ai + bi) ** 2 + (br - ar) ** 2) / 4;
      }
      // Both halves of the spectrum, per bin.
      inBands[b] = (2 * pIn * scale) / BINS_PER_BAND;
      refBands[b] = (2 * pRef * scale) / BINS_PER_BAND;
      refTotal += refBands[b]!;
    }
    return refTotal;
  }

  reset(): void {
    this.inFrame.fill(0);
    this.refFrame.fill(0);
  }
}

export class SignalAnalyser {
  private readonly t: HopTransform;
  private readonly frame: Float64Array;

  constructor(sampleRate: VadSampleRate) {
    this.t = new HopTransform(sampleRate);
    this.frame = new Float64Array(this.t.re.length);
  }

  /** The next hop of the signal (its first `hopSamples`); writes the bands of the frame into `bands`. */
  push(samples: Float64Array, bands: Float64Array): void {
    const { frame } = this;
    const { hop, re, im, window, fft, scale } = this.t;
    const n = re.length;
    frame.copyWithin(0, hop);
    for (let i = 0; i < hop; i++) frame[hop + i] = samples[i]!;
    for (let i = 0; i < n; i++) {
      re[i] = frame[i]! * window[i]!;
      im[i] = 0;
    }
    fft.transform(re, im);
    for (let b = 0; b < BANDS; b++) {
      let p = 0;
      const first = FIRST_BIN + b * BINS_PER_BAND;
      for (let k = first; k < first + BINS_PER_BAND; k++) p += re[k]! * re[k]! + im[k]! * im[k]!;
      bands[b] = (2 * p * scale) / BINS_PER_BAND;
    }
  }

  reset(): void {
    this.frame.fill(0);
  }
}
