/**
 * The echo path's delay: the caller's bits are compared with the reference's at every lag up to
 * `MAX_ECHO_DELAY_MS` (a leaky mean of the bit distance per lag, as WebRTC's delay estimator does). A
 * lag clearly better than the others, held for a while, is the delay; a new one that stays better takes
 * over (a transfer, a speakerphone switched on), and the verdicts wait for its loss to settle. A move
 * within the prediction's slop is the same path.
 */
import { LAGS, SLOP_CELLS, START_SLOP_CELLS } from './cells.js';
import type { ReferenceHistory } from './reference-history.js';

/** Leaky mean of each lag's bit distance: at least this weight on the newest cell. */
const DELAY_ALPHA = 0.02;
/** From this many updates on, the leaky mean's weight is `DELAY_ALPHA` (1 / n no longer exceeds it). */
const MEAN_FROM_UPDATES = Math.ceil(1 / DELAY_ALPHA);
/** A lag needs this many comparisons before it may be chosen (≈ 0.6 s of the bot's speech). */
const MIN_LAG_UPDATES = 80;
/**
 * The best lag must beat the median lag's distance by this much (bits per band), and be under MAX; and
 * to replace a known delay further off than a reply is placed (`START_SLOP_CELLS`), beat the delay's
 * by as much, not be the best by a hair: while the caller talks over a faint echo, every lag's distance
 * drifts towards the others', and under `bench talkers` a chance lag 170–610 ms off the path then took
 * over and stayed, and the next prompts' echo, predicted there, cut the bot. A real new path (a
 * transfer, a speakerphone) leaves the old delay's distance at chance, far over the new one's. Nearer,
 * the delay follows replies placed a few cells off as before (held to this too, eSpeak's replies placed
 * ±30 ms off cut the bot 10 times in `bench echo-offline` against 3).
 */
const DELAY_QUALITY = 0.1;
const DELAY_MAX_DISTANCE = 0.36;
/** The lags' median distance is recomputed every this many cells. */
const MEDIAN_EVERY_CELLS = 8;
/** Cells a new best lag must hold before it replaces the current delay (≈ 0.2 s). */
const DELAY_SWITCH_CELLS = 25;
/**
 * Cells of the bot's speech at a new delay before the verdicts trust it: meanwhile the loss settles
 * (from as loud as the bot, so on the cautious side) and the echo is judged as when not converged.
 */
const SETTLE_CELLS = 60;

export class DelayTracker {
  /** Per lag: leaky mean of the bit distance (fraction of bands), and how many updates. */
  private readonly distance = new Float64Array(LAGS).fill(0.5);
  private readonly updates = new Uint32Array(LAGS);
  private delay: number | undefined;
  /** A lag that beats the delay, and for how many cells in a row. */
  private candidate = -1;
  private candidateCells = 0;
  private readonly sorted = new Float64Array(LAGS);
  private median = 0.5;
  private medianAge = 0;
  /** Cells with the bot audible at the delay since it was (last) set. */
  private settledCells = 0;

  /** The delay (cells), once found. */
  get cells(): number | undefined {
    return this.delay;
  }

  /** A delay is known and its loss has had time to settle. */
  get settled(): boolean {
    return this.delay !== undefined && this.settledCells >= SETTLE_CELLS;
  }

  /** A cell of the bot's speech at the delay went into its loss. */
  settle(): void {
    this.settledCells++;
  }

  /**
   * A cell of the caller's line active, as bits: the bit distance at every lag whose reference cell
   * played, and the delay when one lag stands out. True when a new delay replaced a known one.
   */
  track(bits: number, history: Pick<ReferenceHistory, 'distance'>): boolean {
    for (let lag = 0; lag < LAGS; lag++) {
      const d = history.distance(lag, bits);
      if (d < 0) continue;
      const n = ++this.updates[lag]!;
      // max(DELAY_ALPHA, 1 / n), without a division once 1 / n is the smaller.
      const alpha = n < MEAN_FROM_UPDATES ? 1 / n : DELAY_ALPHA;
      this.distance[lag] = this.distance[lag]! + alpha * (d - this.distance[lag]!);
    }
    let best = -1;
    for (let lag = 0; lag < LAGS; lag++) {
      if (this.updates[lag]! < MIN_LAG_UPDATES) continue;
      if (best < 0 || this.distance[lag]! < this.distance[best]!) best = lag;
    }
    if (best < 0) return false;
    // The median lag moves slowly: sorted again every few cells.
    if (this.medianAge++ % MEDIAN_EVERY_CELLS === 0) {
      this.sorted.set(this.distance);
      this.sorted.sort();
      this.median = this.sorted[LAGS >> 1]!;
    }
    const clear =
      this.distance[best]! < DELAY_MAX_DISTANCE && this.median - this.distance[best]! > DELAY_QUALITY;
    if (!clear) {
      this.candidateCells = 0;
      return false;
    }
    // Within the prediction's slop the path is the same: a delay between two cells (150 ms is) wobbles
    // between its neighbours, by two cells while the caller talks over the bot. Only a move past that
    // is a new path, whose loss must settle (the cautious rule meanwhile; docs/calls.md, _The caller is
    // not the echo getting louder_).
    if (this.delay !== undefined && Math.abs(best - this.delay) <= SLOP_CELLS) {
      this.delay = best;
      this.candidateCells = 0;
      return false;
    }
    // A delay the wide search moved past the lags searched here has no distance to beat.
    if (
      this.delay !== undefined &&
      this.delay < LAGS &&
      Math.abs(best - this.delay) > START_SLOP_CELLS &&
      this.distance[this.delay]! - this.distance[best]! < DELAY_QUALITY
    ) {
      this.candidateCells = 0;
      return false;
    }
    if (best === this.candidate) this.candidateCells++;
    else {
      this.candidate = best;
      this.candidateCells = 1;
    }
    if (this.candidateCells < DELAY_SWITCH_CELLS) return false;
    const replaced = this.delay !== undefined;
    this.delay = best;
    this.candidateCells = 0;
    this.settledCells = 0;
    return replaced;
  }

  /** The delay is now `cells` (the wide search found the echo there, or the reference moved). */
  moveTo(cells: number): void {
    this.delay = cells;
  }

  /**
   * The echo came `k` cells later against the reference from now on: what the search learnt per lag
   * moves with it.
   */
  shift(k: number): void {
    const { distance, updates } = this;
    if (Math.abs(k) >= LAGS) {
      distance.fill(0.5);
      updates.fill(0);
    } else if (k > 0) {
      distance.copyWithin(k, 0, LAGS - k);
      updates.copyWithin(k, 0, LAGS - k);
      distance.fill(0.5, 0, k);
      updates.fill(0, 0, k);
    } else if (k < 0) {
      distance.copyWithin(0, -k);
      updates.copyWithin(0, -k);
      distance.fill(0.5, LAGS + k);
      updates.fill(0, LAGS + k);
    }
    if (this.candidate >= 0) {
      this.candidate += k;
      if (this.candidate < 0 || this.candidate >= LAGS) this.candidate = -1;
    }
    this.medianAge = 0;
  }

  reset(): void {
    this.distance.fill(0.5);
    this.updates.fill(0);
    this.delay = undefined;
    this.candidate = -1;
    this.candidateCells = 0;
    this.median = 0.5;
    this.medianAge = 0;
    this.settledCells = 0;
  }
}
