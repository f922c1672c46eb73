/**
 * Takes a line's steady noise out of the caller's audio before Silero hears it. In line noise, Silero's
 * probabilities for the first syllables sink well under its threshold and a run of speech starts late;
 * on the same audio with the noise suppressed they are close to what they are on a quiet line. Only
 * Silero hears the result: the energy gate, the key and click checks and the echo estimator keep the
 * audio as it came.
 *
 * A short-time Wiener filter: 8 ms frames, half overlapping, under a square-root Hann window (so that
 * analysis and synthesis together add up to one), each bin scaled by ξ / (1 + ξ), where ξ, the bin's
 * a-priori speech-to-noise ratio, is estimated decision-directed (Ephraim and Malah: mostly the last
 * frame's cleaned power, a little of this frame's excess over the noise). The gain never goes below
 * −10.5 dB: at −20 dB, Silero took what a change of noise left (pink noise after white, its estimate
 * still the white's) for speech (`vad.test.ts`); at −10.5 it did not, and onsets in noise are decided
 * barely later. The noise in each bin is the minimum of its smoothed power over the last 1.3 s (minimum
 * statistics, Martin 2001: speech has pauses between words, so it does not raise the minimum), twice
 * over for the minimum's bias. A noisier line is followed within 1.3 s, a quieter one at once. A steady
 * tone is noise to it too (hum).
 *
 * Work is done window by window, in the detector's order, and only as far as it is needed: every
 * window is `listen`ed to (the noise followed on a frame every 16 ms, cheap), and only those Silero
 * hears are `clean`ed (a frame every 4 ms, transformed both ways: costlier, still far under Silero's
 * inference). What Silero hears of a window lags it by half a frame (4 ms), the whole cost in latency.
 * (Figures: docs/calls.md, «Barge-in», the paragraphs on the noise suppressor.)
 */
import { fftPlan, sqrtHannWindow, type FftPlan } from '../audio/fft.js';

/** Frame length (ms); the hop is half of it. */
const FRAME_MS = 8;
/** The least a bin is scaled by (−10.5 dB). */
const GAIN_FLOOR = 0.3;
/** Weight of the last frame's cleaned power in the a-priori ratio (decision-directed). */
const PRIOR_SMOOTHING = 0.98;
/** The noise is followed on one frame in this many ms. */
const FOLLOW_MS = 2 * FRAME_MS;
/** Smoothing of each bin's power before its minimum is taken, per frame followed. */
const POWER_SMOOTHING = 0.85 ** (FOLLOW_MS / 4);
/** The minimum is kept over this many sub-windows of `SUBWINDOW_FRAMES` frames followed (8 × 160 ms). */
const SUBWINDOWS = 8;
const SUBWINDOW_FRAMES = 160 / FOLLOW_MS;
/** The minimum of a smoothed power underestimates its mean: the noise is taken as this times it. */
const MINIMUM_BIAS = 2;
/** A bin's noise power is never taken as less than this (a line of digital silence). */
const LEAST_NOISE = 1;

export class NoiseSuppressor {
  /** Samples by which what Silero hears lags the window it is given for. */
  readonly delaySamples: number;
  private readonly windowSamples: number;
  private readonly frameLength: number;
  private readonly hop: number;
  private readonly bins: number;
  /** Samples from one frame followed to the next. */
  private readonly followEvery: number;
  /** The square-root Hann window, shared by the suppressors of a frame length. */
  private readonly taper: Float64Array;
  /** The last frame's worth of the audio given before the next window. */
  private readonly tail: Float64Array;
  /** Whether the next window continues the last one cleaned, whose synthesis `overlap` holds. */
  private continuous = false;
  private readonly overlap: Float64Array;
  private readonly re: Float64Array;
  private readonly im: Float64Array;
  /** The FFT's plan, kept: no look-up by length for each frame. */
  private readonly fft: FftPlan;
  private readonly smoothed: Float64Array;
  private readonly cleaned: Float64Array;
  /** Per bin: the minimum of the sub-window under way, of the finished ones, and those minima. */
  private readonly current: Float64Array;
  private readonly pastMinimum: Float64Array;
  private readonly past: Float64Array;
  private followed = 0;
  private nextPast = 0;

  constructor(sampleRate: number, windowSamples: number) {
    this.frameLength = 2 ** Math.round(Math.log2((sampleRate * FRAME_MS) / 1000));
    this.hop = this.frameLength / 2;
    this.followEvery = (this.frameLength * FOLLOW_MS) / FRAME_MS;
    if (windowSamples % this.followEvery !== 0)
      throw new RangeError(`a window of ${windowSamples} samples is not whole steps of ${this.followEvery}`);
    this.windowSamples = windowSamples;
    this.delaySamples = this.hop;
    this.bins = this.frameLength / 2 + 1;
    this.taper = sqrtHannWindow(this.frameLength);
    this.tail = new Float64Array(this.frameLength);
    this.overlap = new Float64Array(this.frameLength);
    this.re = new Float64Array(this.frameLength);
    this.im = new Float64Array(this.frameLength);
    this.fft = fftPlan(this.frameLength);
    this.smoothed = new Float64Array(this.bins);
    this.cleaned = new Float64Array(this.bins);
    this.current = new Float64Array(this.bins);
    this.pastMinimum = new Float64Array(this.bins);
    this.past = new Float64Array(SUBWINDOWS * this.bins);
    this.reset();
  }

  /** The next window of the line, which Silero will not hear: its noise is followed. */
  listen(window: Int16Array): void {
    this.checkLength(window);
    for (let end = this.followEvery; end <= window.length; end += this.followEvery) {
      this.analyse(window, end);
      this.gains(true, false);
    }
    this.keepTail(window);
    this.continuous = false;
  }

  /**
   * The next window given is not the one after the last: it follows `before` (unknown: silence). For
   * windows listened to and then cleaned after all (those just before the caller's first syllable).
   */
  goBack(before: Int16Array | undefined): void {
    if (before === undefined) this.tail.fill(0);
    else {
      this.checkLength(before);
      this.keepTail(before);
    }
    this.continuous = false;
  }

  /**
   * The window as Silero hears it: the samples from `delaySamples` before its start, cleaned. `follow`:
   * the window is new (its noise is followed); false for one already `listen`ed to, cleaned again.
   */
  clean(window: Int16Array, follow: boolean): Int16Array {
    this.checkLength(window);
    const hop = this.hop;
    const heard = new Int16Array(window.length);
    if (!this.continuous) {
      // The frame that ends where the window starts completes the first half-frame's synthesis.
      this.overlap.fill(0);
      this.analyse(window, 0);
      this.gains(false, true);
      this.synthesise(heard, -1);
    }
    for (let end = hop, k = 0; end <= window.length; end += hop, k++) {
      this.analyse(window, end);
      this.gains(follow && end % this.followEvery === 0, true);
      this.synthesise(heard, k);
    }
    this.keepTail(window);
    this.continuous = true;
    return heard;
  }

  /** Forgets the line: its noise, and the audio under way. */
  reset(): void {
    this.tail.fill(0);
    this.overlap.fill(0);
    this.continuous = false;
    this.smoothed.fill(0);
    this.cleaned.fill(0);
    this.current.fill(Number.POSITIVE_INFINITY);
    this.pastMinimum.fill(Number.POSITIVE_INFINITY);
    this.past.fill(Number.POSITIVE_INFINITY);
    this.followed = 0;
    this.nextPast = 0;
  }

  private checkLength(window: Int16Array): void {
    if (window.length !== this.windowSamples)
      throw new RangeError(`a window must hold ${this.windowSamples} samples, not ${window.length}`);
  }

  private keepTail(window: Int16Array): void {
    const n = this.frameLength;
    for (let i = 0; i < n; i++) this.tail[i] = window[window.length - n + i]!;
  }

  /** The spectrum of the frame that ends at `end` in `window` (reaching back into the tail). */
  private analyse(window: Int16Array, end: number): void {
    const { frameLength: n, re, im, taper, tail } = this;
    const start = end - n;
    for (let i = 0; i < n; i++) {
      const at = start + i;
      re[i] = (at < 0 ? tail[n + at]! : window[at]!) * taper[i]!;
      im[i] = 0;
    }
    this.fft.transform(re, im);
  }

  /**
   * Each bin's gain for the spectrum in `re`/`im`; `follow`: this frame also updates the noise;
   * `scale`: the spectrum is scaled by them and conjugated, ready for the inverse transform.
   */
  private gains(follow: boolean, scale: boolean): void {
    const { frameLength: n, bins, re, im } = this;
    const first = this.followed === 0;
    for (let k = 0; k < bins; k++) {
      const power = re[k]! * re[k]! + im[k]! * im[k]!;
      if (follow) {
        const smoothed = first ? power : POWER_SMOOTHING * this.smoothed[k]! + (1 - POWER_SMOOTHING) * power;
        this.smoothed[k] = smoothed;
        if (smoothed < this.current[k]!) this.current[k] = smoothed;
      }
      const minimum = Math.min(this.current[k]!, this.pastMinimum[k]!);
      const noise = Math.max(
        LEAST_NOISE,
        minimum === Number.POSITIVE_INFINITY ? power : MINIMUM_BIAS * minimum,
      );
      const excess = power / noise - 1;
      const prior =
        (PRIOR_SMOOTHING * this.cleaned[k]!) / noise + (1 - PRIOR_SMOOTHING) * (excess > 0 ? excess : 0);
      const gain = Math.max(GAIN_FLOOR, prior / (1 + prior));
      this.cleaned[k] = gain * gain * power;
      if (!scale) continue;
      re[k] = re[k]! * gain;
      im[k] = -im[k]! * gain;
      if (k > 0 && k < n / 2) {
        re[n - k] = re[n - k]! * gain;
        im[n - k] = -im[n - k]! * gain;
      }
    }
    if (follow && ++this.followed % SUBWINDOW_FRAMES === 0) this.endSubwindow();
  }

  /**
   * The inverse transform of the scaled spectrum (the forward one of its conjugate, scaled by n) added
   * into the overlap; its finished first half is hop `k` of what Silero hears (−1: before the window).
   */
  private synthesise(heard: Int16Array, k: number): void {
    const { frameLength: n, hop, re, im, taper, overlap } = this;
    this.fft.transform(re, im);
    for (let i = 0; i < n; i++) overlap[i] = overlap[i]! + (re[i]! / n) * taper[i]!;
    if (k >= 0)
      for (let i = 0; i < hop; i++) {
        const v = overlap[i]!;
        heard[k * hop + i] = v > 32767 ? 32767 : v < -32768 ? -32768 : Math.round(v);
      }
    overlap.copyWithin(0, hop);
    overlap.fill(0, n - hop);
  }

  /** A sub-window is over: its minima join the last ones, the oldest leave. */
  private endSubwindow(): void {
    const bins = this.bins;
    this.past.set(this.current, this.nextPast * bins);
    this.nextPast = (this.nextPast + 1) % SUBWINDOWS;
    this.current.fill(Number.POSITIVE_INFINITY);
    this.pastMinimum.fill(Number.POSITIVE_INFINITY);
    for (let s = 0; s < SUBWINDOWS; s++)
      for (let k = 0; k < bins; k++) {
        const v = this.past[s * bins + k]!;
        if (v < this.pastMinimum[k]!) this.pastMinimum[k] = v;
      }
  }
}
