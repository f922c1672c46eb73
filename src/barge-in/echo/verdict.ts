/**
 * The verdict: the echo each cell should hold is the reference at the delay (the loudest of the cells
 * around it, for timing slop) times the loss. A band more than `ECHO_MARGIN_DB` above that echo plus
 * its noise floor holds something the echo does not explain; a cell with enough such bands holds the
 * caller, and so does a window with enough such cells, or whose cells summed hold enough bands a little
 * over the summed echo and noise. With the canceller judged, a band whose residual stands over what it
 * leaves of the echo holds the caller too, provided the caller's audio is a little over the echo
 * predicted for it. Figures: docs/calls.md, _The verdict_ and _The canceller_.
 */
import type { Cancellation } from './cancellation.js';
import type { EchoBound } from './echo-bound.js';
import { BANDS } from './cells.js';
import type { LossTracker } from './loss-tracker.js';
import { NOISE_BIAS } from './noise-floor.js';
import type { ReferenceHistory } from './reference-history.js';

/** A band holds the caller when above the predicted echo by this much, plus its noise by NOISE_MARGIN. */
const ECHO_MARGIN_DB = 8;
/** Of the predicted echo's power, the share every band is taken to hold at least (−25 dB). */
const ECHO_SPREAD = 10 ** (-25 / 10);
const NOISE_MARGIN = 3;
/**
 * The same over a whole window (four cells' powers summed per band, which vary less than one cell's):
 * a band over the summed echo by `POOLED_ECHO_MARGIN_DB` and over its noise by `POOLED_NOISE_MARGIN_DB`,
 * in `POOLED_CALLER_BANDS` bands, makes the window the caller's too. A soft onset over a loud echo or
 * a noisy line stays a little over them through the window rather than far over them in two cells.
 */
const POOLED_ECHO_MARGIN_DB = 7;
const POOLED_NOISE_MARGIN_DB = 2;
const POOLED_CALLER_BANDS = 3;
/** Bands over the line that make a cell the caller's; cells that make a window the caller's. */
const CALLER_BANDS = 2;
const CALLER_CELLS = 2;
/** A cell may hold echo when its predicted echo is at least this fraction of the noise floor. */
const ECHO_VS_NOISE = 0.5;
/**
 * With the canceller working, a band holds the caller when its residual is over the residual echo by
 * `ECHO_MARGIN_DB` (and the noise), provided the caller's audio itself is over the echo predicted for
 * it by `RAW_MARGIN_DB`: a canceller that lost the path (a reply placed afresh) leaves an echo no
 * louder than the one predicted, and that one alone does not pass for the caller.
 */
const RAW_MARGIN_DB = 3;
/**
 * With no delay known and the echo bounded lag by lag (echo-bound.ts), a band holds the caller over
 * the bound by this much: the bound is near the echo itself on a line whose path it has learnt, and
 * the echo scatters around it.
 */
const BOUNDED_MARGIN_DB = 3;
const BOUNDED_MARGIN = 10 ** (BOUNDED_MARGIN_DB / 10);

const ECHO_MARGIN = 10 ** (ECHO_MARGIN_DB / 10);
const RAW_MARGIN = 10 ** (RAW_MARGIN_DB / 10);
const POOLED_ECHO_MARGIN = 10 ** (POOLED_ECHO_MARGIN_DB / 10);
const POOLED_NOISE_MARGIN = 10 ** (POOLED_NOISE_MARGIN_DB / 10);

/** A cell's or a window's judgement, as flags: it may hold echo; it holds the caller. */
export const HOLDS_ECHO = 1;
export const HOLDS_CALLER = 2;

/**
 * One window's verdict, cell by cell: for each, `predict` (or `predictUnknown`) then `judgeCell`; then
 * `judgeWindow`. Flags, not objects: this runs every 8 ms of every call.
 */
export class Verdict {
  /** Per band, the echo predicted for the cell, and with the canceller judged what it leaves of it. */
  private readonly echo = new Float64Array(BANDS);
  private readonly residualEcho = new Float64Array(BANDS);
  /** Per band, the echo a cell is judged against (before the margin). */
  private readonly line = new Float64Array(BANDS);
  /** The cell's prediction is at a known delay; the canceller's residual is judged. */
  private known = false;
  /** The cell's prediction with no delay known is bounded lag by lag (`predictBounded`). */
  private bounded = false;
  private cancellation: Cancellation | undefined;
  /** The window so far: its cells' powers summed per band, and its cells that may hold echo or the caller. */
  private readonly pooledIn = new Float64Array(BANDS);
  private readonly pooledEcho = new Float64Array(BANDS);
  private readonly pooledNoise = new Float64Array(BANDS);
  private echoCells = 0;
  private callerCells = 0;

  /** A new window. */
  startWindow(): void {
    this.pooledIn.fill(0);
    this.pooledEcho.fill(0);
    this.pooledNoise.fill(0);
    this.echoCells = 0;
    this.callerCells = 0;
  }

  /**
   * The cell's echo at a known delay: per band, the loudest reference over lags `lo`…`hi` (the delay and
   * its slop, or the lags searched) times the loss; `cancellation` when its residual is judged.
   */
  predict(
    history: ReferenceHistory,
    loss: LossTracker,
    lo: number,
    hi: number,
    cancellation: Cancellation | undefined,
  ): void {
    this.known = true;
    this.bounded = false;
    this.cancellation = cancellation;
    for (let b = 0; b < BANDS; b++) {
      const e = history.over(b, lo, hi) * loss.gainOf(b);
      this.echo[b] = e;
      if (cancellation) this.residualEcho[b] = e * cancellation.left(b);
    }
  }

  /** The cell's echo with no delay known: the bot at its loudest over every lag, times `gain`. */
  predictUnknown(history: ReferenceHistory, gain: number): void {
    this.known = false;
    this.bounded = false;
    this.cancellation = undefined;
    for (let b = 0; b < BANDS; b++) this.echo[b] = history.peakOf(b) * gain;
  }

  /**
   * The cell's echo with no delay known, as `bound` has it once it has learnt the cell (`inBands`):
   * at most `gain` under the reference.
   */
  predictBounded(inBands: Float64Array, history: ReferenceHistory, bound: EchoBound, gain: number): void {
    this.known = false;
    this.bounded = true;
    this.cancellation = undefined;
    bound.next(inBands, history, gain, this.echo);
  }

  /**
   * The cell as predicted: may it hold echo (`HOLDS_ECHO`), and does it hold more than the echo and the
   * noise explain (`HOLDS_CALLER`)? `noiseTotal`: the line's mean noise over all bands.
   */
  judgeCell(inBands: Float64Array, noiseFloor: Float64Array, noiseTotal: number): number {
    const { echo, residualEcho, line, cancellation } = this;
    let echoTotal = 0;
    let resTotal = 0;
    for (let b = 0; b < BANDS; b++) {
      echoTotal += echo[b]!;
      if (cancellation) resTotal += residualEcho[b]!;
    }
    // The echo is never cleaner than the line: codec noise and the path's distortion spread a little
    // of it over every band, which the reference does not have.
    const spread = (echoTotal * ECHO_SPREAD) / BANDS;
    // With no delay known, the echo is taken at its loudest already: no margin on top; as bounded
    // lag by lag, it is near the echo itself, and the echo scatters around it.
    const margin = this.known ? ECHO_MARGIN : this.bounded ? BOUNDED_MARGIN : 1;
    const resSpread = (resTotal * ECHO_SPREAD) / BANDS;
    let over = 0;
    for (let b = 0; b < BANDS; b++) {
      line[b] = Math.max(echo[b]!, spread);
      const noise = noiseFloor[b]! * NOISE_BIAS * NOISE_MARGIN;
      if (cancellation) residualEcho[b] = Math.max(residualEcho[b]!, resSpread);
      if (inBands[b]! > line[b]! * margin + noise) over++;
      else if (cancellation) {
        // What the canceller leaves: over what it leaves of the echo, the caller's audio being over
        // the echo predicted for it. A residual louder than the caller's audio is the canceller's
        // own error (off the path: a reply placed a part of a cell off), not the caller.
        const residual = Math.min(cancellation.bands[b]!, inBands[b]!);
        if (inBands[b]! > line[b]! * RAW_MARGIN + noise && residual > residualEcho[b]! * ECHO_MARGIN + noise)
          over++;
      }
    }
    const cell =
      (echoTotal >= noiseTotal * ECHO_VS_NOISE ? HOLDS_ECHO : 0) | (over >= CALLER_BANDS ? HOLDS_CALLER : 0);
    if (cell & HOLDS_ECHO) this.echoCells++;
    if (cell & HOLDS_CALLER) this.callerCells++;
    for (let b = 0; b < BANDS; b++) {
      this.pooledIn[b] = this.pooledIn[b]! + inBands[b]!;
      this.pooledEcho[b] = this.pooledEcho[b]! + line[b]!;
      this.pooledNoise[b] = this.pooledNoise[b]! + noiseFloor[b]!;
    }
    return cell;
  }

  /**
   * The window as a whole: the four cells' powers summed vary less than one cell's, so a band that
   * stays a little over the echo and the noise through the window tells as much as one far over them
   * in a single cell (a soft onset over a loud echo or a noisy line). `settled`: the path is known
   * (before, the echo is taken at its loudest already: no margin on top, as per cell).
   */
  judgeWindow(settled: boolean): number {
    const echoMargin = settled ? POOLED_ECHO_MARGIN : 1;
    let pooledOver = 0;
    for (let b = 0; b < BANDS; b++) {
      const line = this.pooledEcho[b]! * echoMargin + this.pooledNoise[b]! * NOISE_BIAS * POOLED_NOISE_MARGIN;
      if (this.pooledIn[b]! > line) pooledOver++;
    }
    const callerCells =
      pooledOver >= POOLED_CALLER_BANDS ? Math.max(this.callerCells, CALLER_CELLS) : this.callerCells;
    return (this.echoCells > 0 ? HOLDS_ECHO : 0) | (callerCells >= CALLER_CELLS ? HOLDS_CALLER : 0);
  }
}
