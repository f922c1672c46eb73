/**
 * A short time-domain echo canceller (NLMS) around a delay the echo estimator found: it subtracts the
 * bot's echo from the caller's audio, so that what is left (the residual) shows a caller who speaks
 * only a few dB over a loud echo (a 6 dB hybrid) 15–35 dB over what remains of it.
 *
 * The estimator knows the delay to a cell (8 ms); the canceller finds it to the sample itself. Aimed
 * at a delay, it first adapts a wide filter (the delay ± one cell, and the path's tail), fast; once
 * enough of the bot's audio went through it, it keeps only the `TAPS` taps around the strongest part
 * of the path (`locked`) and adapts those slowly, which keeps line noise out of the filter. Short
 * taps keep it cheap: 32 taps at 8 kHz are 0.5 M multiply-adds a second for filter and update.
 *
 * The caller decides when it may adapt (the bot audible at the delay, the caller not talking: double
 * talk would pull the filter off the path) and when to aim it again (the path moved, or it cancels
 * nothing). Every sample of the reference goes through `process`, adapting or not, so that the
 * filter's history is always whole.
 */

/** Taps kept once locked (ms): a hybrid's or a handset's echo tail. */
const TAPS_MS = 4;
/** Of those, before the strongest tap (ms): the path's rise. */
const LEAD_MS = 0.5;
/** Adaptation step while acquiring (fast) and once locked (slow: noise misadjusts the filter less). */
const ACQUIRE_STEP = 0.5;
const LOCKED_STEP = 0.1;
/** Adapted audio after which the wide filter is cut down to its strongest taps (ms). */
const ACQUIRE_MS = 300;
/** Regularisation of the step's normalisation, per tap (sample²: ≈ −50 dBFS). */
const REGULARISATION = 1e4;
/**
 * Once locked, the error an update sees is clipped to this many times the residual's running RMS
 * (weight `ERROR_ALPHA` per sample, ≈ 30 ms at 8 kHz): a pop or a click on the line, which the double
 * talk check sees a cell late, must not throw the filter off the path.
 */
const ERROR_CLIP = 3;
/** The error's square under this times the running mean square is clear of the clip (2.99², < 3²). */
const NEAR_CLIP = 2.99 ** 2;
const ERROR_ALPHA = 1 / 256;
/**
 * Its health: over `HEALTH_CALLS` calls of `process` it adapted on once locked, a residual louder than
 * the caller's audio by this ratio means it lost the path (`lost`), and wants aiming again.
 */
const HEALTH_CALLS = 16;
const UNHEALTHY_RATIO = 1.4;

export type CancellerState = 'off' | 'acquiring' | 'locked';

export class EchoCanceller {
  readonly sampleRate: number;
  private readonly hop: number;
  private readonly lockedTaps: number;
  private readonly lead: number;
  private readonly acquireSamples: number;
  /** The reference, newest last, as a ring (a power of two long). */
  private readonly ring: Float64Array;
  private readonly mask: number;
  /** Samples written so far. */
  private written = 0;
  /** Reference samples for one call of `process`, oldest first: the filter's span and the hop. */
  private readonly span: Float64Array;
  private readonly weights: Float64Array;
  private taps = 0;
  /** The lag (samples) of the filter's first tap: inbound sample n sees reference n − lag − k at tap k. */
  private lag = 0;
  private step = 0;
  private adapted = 0;
  /** Running mean of the residual's square, for the clip (locked only). */
  private errorPower = REGULARISATION;
  private mode: CancellerState = 'off';
  /** Health sums over the calls adapted on since the last verdict: the caller's audio and the residual. */
  private healthIn = 0;
  private healthRes = 0;
  private healthCalls = 0;
  private pathLost = false;

  /**
   * `hop`: samples per call of `process`; `maxLag`: the longest lag (samples) the filter is ever aimed
   * at, from the reference sample to the inbound one.
   */
  constructor(
    sampleRate: number,
    hop: number,
    private readonly maxLag: number,
  ) {
    this.sampleRate = sampleRate;
    this.hop = hop;
    this.lockedTaps = Math.round((sampleRate * TAPS_MS) / 1000);
    this.lead = Math.round((sampleRate * LEAD_MS) / 1000);
    this.acquireSamples = Math.round((sampleRate * ACQUIRE_MS) / 1000);
    const wideTaps = 2 * hop + this.lockedTaps;
    let size = 1;
    while (size < maxLag + wideTaps + hop * 2) size *= 2;
    this.ring = new Float64Array(size);
    this.mask = size - 1;
    this.span = new Float64Array(wideTaps + hop);
    this.weights = new Float64Array(wideTaps);
  }

  get state(): CancellerState {
    return this.mode;
  }

  /** Locked, it has left more than it was given over its last health check: the path moved. */
  get lost(): boolean {
    return this.pathLost;
  }

  /**
   * Acquire the path anew around `lag` samples (the estimator's delay): a wide filter from one hop
   * before it to one hop and a tail after, adapted fast.
   */
  aim(lag: number): void {
    this.taps = this.weights.length;
    this.lag = Math.max(0, lag - this.hop);
    this.weights.fill(0);
    this.step = ACQUIRE_STEP;
    this.adapted = 0;
    this.errorPower = REGULARISATION;
    this.healthIn = 0;
    this.healthRes = 0;
    this.healthCalls = 0;
    this.pathLost = false;
    this.mode = 'acquiring';
  }

  /**
   * The echo now comes `samples` later against the reference (negative: sooner) than before: the
   * reference was placed afresh while the bot talked (echo-reference.ts). The filter keeps its taps at
   * the path's new lag, as long as that stays in the history.
   */
  move(samples: number): void {
    if (this.mode === 'off') return;
    const lag = this.lag + samples;
    if (lag < 0 || lag > this.maxLag) this.stop();
    else this.lag = lag;
  }

  /** Stop cancelling (the residual is the inbound audio) until aimed again. */
  stop(): void {
    this.mode = 'off';
  }

  reset(): void {
    this.stop();
    this.ring.fill(0);
    this.written = 0;
  }

  /**
   * `n` samples of each signal from `offset` (n at most the hop): the reference goes into the
   * history, and `residual` (from 0) gets the inbound audio less the echo the filter predicts, which
   * then adapts to it when `adapt`. Off, the residual is the inbound audio.
   */
  process(
    inbound: Int16Array,
    reference: Int16Array,
    offset: number,
    n: number,
    residual: Float64Array,
    adapt: boolean,
  ): void {
    const { ring, mask } = this;
    for (let i = 0; i < n; i++) ring[(this.written + i) & mask] = reference[offset + i]!;
    this.written += n;
    if (this.mode === 'off') {
      for (let i = 0; i < n; i++) residual[i] = inbound[offset + i]!;
      return;
    }
    // span[j] is the reference at inbound sample (first − lag − taps + 1 + j), for the n samples.
    const { span, weights, taps, lag } = this;
    const first = this.written - n;
    const from = first - lag - taps + 1;
    const length = taps - 1 + n;
    // A span of digital silence (the bot paused) predicts no echo and moves no tap: the tap loops are
    // skipped, with the same result.
    let sounding = false;
    for (let j = 0; j < length; j++) {
      const v = from + j >= 0 ? ring[(from + j) & mask]! : 0;
      span[j] = v;
      if (v !== 0) sounding = true;
    }
    let norm = 0;
    for (let j = 0; j < taps; j++) norm += span[j]! * span[j]!;
    const delta = taps * REGULARISATION;
    const checked = adapt && this.mode === 'locked';
    // Tap k sees span[i + taps − 1 − k] at sample i: the newest reference sample at tap 0. Each pass
    // over the taps updates them for sample i and filters sample i + 1 with the updated ones at once
    // (the same sums in the same order as two passes: half the loads of the weights).
    let y = 0;
    if (sounding) for (let k = 0; k < taps; k++) y += weights[k]! * span[taps - 1 - k]!;
    for (let i = 0; i < n; i++) {
      const newest = i + taps - 1;
      const x = inbound[offset + i]!;
      const e = x - y;
      residual[i] = e;
      if (checked) {
        this.healthIn += x * x;
        this.healthRes += e * e;
      }
      const more = i + 1 < n;
      if (adapt) {
        let u = e;
        if (this.mode === 'locked') {
          // The square root only where the error may reach the clip: under 2.99 RMS (squared, with
          // room for rounding) it cannot, and the clip would leave it as it is.
          if (e * e >= NEAR_CLIP * this.errorPower) {
            const limit = ERROR_CLIP * Math.sqrt(this.errorPower);
            u = Math.max(-limit, Math.min(limit, e));
          }
          this.errorPower = Math.max(
            REGULARISATION,
            this.errorPower + ERROR_ALPHA * (u * u - this.errorPower),
          );
        }
        const g = (this.step * u) / (norm + delta);
        if (sounding && more) {
          y = 0;
          for (let k = 0; k < taps; k++) {
            const w = weights[k]! + g * span[newest - k]!;
            weights[k] = w;
            y += w * span[newest + 1 - k]!;
          }
        } else if (sounding) {
          // The hop's last sample: nothing after it to filter.
          for (let k = 0; k < taps; k++) weights[k] = weights[k]! + g * span[newest - k]!;
        }
      } else if (sounding && more) {
        y = 0;
        for (let k = 0; k < taps; k++) y += weights[k]! * span[newest + 1 - k]!;
      }
      // Slide the window's power by one sample.
      if (more) {
        const enter = span[newest + 1]!;
        const leave = span[i]!;
        norm = Math.max(0, norm + enter * enter - leave * leave);
      }
    }
    if (checked && ++this.healthCalls >= HEALTH_CALLS) {
      this.pathLost = this.healthRes > this.healthIn * UNHEALTHY_RATIO;
      this.healthIn = 0;
      this.healthRes = 0;
      this.healthCalls = 0;
    }
    if (adapt && this.mode === 'acquiring') {
      this.adapted += n;
      if (this.adapted >= this.acquireSamples) this.lock();
    }
  }

  /** Keep the locked taps around the strongest one of the wide filter, and slow the step. */
  private lock(): void {
    const { weights, lockedTaps } = this;
    let strongest = 0;
    for (let k = 1; k < this.taps; k++)
      if (Math.abs(weights[k]!) > Math.abs(weights[strongest]!)) strongest = k;
    const start = Math.max(0, Math.min(this.taps - lockedTaps, strongest - this.lead));
    weights.copyWithin(0, start, start + lockedTaps);
    weights.fill(0, lockedTaps);
    this.lag += start;
    this.taps = lockedTaps;
    this.step = LOCKED_STEP;
    this.mode = 'locked';
  }
}
