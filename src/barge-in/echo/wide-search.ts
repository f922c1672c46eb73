/**
 * Looking for the echo over wide lags, where its delay as seen may have moved: at a reply's start
 * (each reply is placed on the playout clock afresh, and under load lands some tens of ms from the last
 * one's: the path has not moved, its delay as seen has), after a gap in the far end's playout, and when
 * the reference moved. Meanwhile the echo is predicted from the loudest reference over those lags and
 * the loss is left alone, while the bit distance at each of them is summed over `REALIGN_CELLS` cells
 * that the echo explains (not the caller, not a key) with the caller's line active (at a reply's start,
 * `START_REALIGN_CELLS`). Then the delay
 * moves to the best of them when that one is a clear match and beats the delay; either way the search
 * ends, at the latest after `START_CELLS` cells of the bot at the delay. A search for an echo known to
 * have left the delay (`lost`: a gap, a move) goes on, round after round, until it is found.
 *
 * Figures: docs/calls.md, _A reply's placement_ and _Gaps in the far end's playout_.
 */
import { HISTORY, WIDE_LAGS } from './cells.js';
import type { ReferenceHistory } from './reference-history.js';

/** Cells of the bot at the delay a search lasts at most. */
const START_CELLS = 60;
/** Reference cells quiet at the delay in a row, after which the bot playing there again starts a reply. */
const START_GAP_CELLS = 20;
/** Cells whose bit distances are summed before the delay may move. */
const REALIGN_CELLS = 20;
/**
 * At a reply's start, cells summed before the search decides (240 ms of the echo): its first syllables
 * match neighbouring lags about as well, and after 20 cells the search kept a delay up to 3 cells off
 * on near-silent lines, whose echo then passed for the caller (docs/calls.md, _A reply's placement_).
 */
export const START_REALIGN_CELLS = 30;
/**
 * A clear match: under this many bits a band, on a line with little noise (what a true alignment
 * measures: docs/calls.md, _A reply's placement_).
 */
const REALIGN_MAX_DISTANCE = 0.3;
/** …and better than the delay's by this much. */
const REALIGN_QUALITY = 0.05;

export class WideSearch {
  /** After a `realign` that moved the delay: where to, and by how many cells from where it was. */
  movedTo = 0;
  movedBy = 0;
  /** Reference cells at the delay quiet in a row; cells of the search still to come. */
  private quietCells = 0;
  private startCells = 0;
  /** The lags searched, and per lag among them the summed bit distance and its count; cells summed. */
  private lo = 0;
  private hi = 0;
  private readonly distance = new Float64Array(WIDE_LAGS);
  private readonly count = new Uint32Array(WIDE_LAGS);
  private cells = 0;
  /** The search is for an echo known to have left the delay (a gap, a move): it goes on until found. */
  private lostEcho = false;

  /** A search is under way. */
  get searching(): boolean {
    return this.startCells > 0;
  }

  /** A search for an echo that left the delay is under way (the delay may be wrong meanwhile). */
  get searchingLost(): boolean {
    return this.lostEcho && this.startCells > 0;
  }

  /** The search is for an echo that left the delay. */
  get lost(): boolean {
    return this.lostEcho;
  }

  /** The first and last lag searched. */
  get from(): number {
    return this.lo;
  }

  get to(): number {
    return this.hi;
  }

  /** The reference at the delay was quiet in this cell. */
  quiet(): void {
    this.quietCells++;
  }

  /** The reference at the delay played in this cell: true when that starts a reply. */
  plays(): boolean {
    const starts = this.quietCells >= START_GAP_CELLS;
    this.quietCells = 0;
    return starts;
  }

  /** One of the search's cells of the bot at the delay passes: true while the search lasts. */
  hold(): boolean {
    if (this.startCells === 0) return false;
    this.startCells--;
    return true;
  }

  /**
   * The echo is looked for over lags `lo`…`hi` as well (`lost`: it left the delay) until `realign`
   * finds where it is. A search under way goes on over both spans, with what it has summed so far.
   */
  widen(lo: number, hi: number, lost = false): void {
    const going = this.startCells > 0;
    this.lostEcho = lost || (going && this.lostEcho);
    if (going) {
      lo = Math.min(lo, this.lo);
      hi = Math.max(hi, this.hi);
    }
    lo = Math.max(0, lo);
    hi = Math.min(HISTORY - 1, hi, lo + WIDE_LAGS - 1);
    this.startCells = START_CELLS;
    if (going && lo === this.lo && hi === this.hi) return;
    // The lags just added need their cells too: the count starts again (the sums are kept).
    this.cells = 0;
    if (going && lo === this.lo) {
      this.distance.fill(0, this.hi - lo + 1);
      this.count.fill(0, this.hi - lo + 1);
      this.hi = hi;
      return;
    }
    if (going) {
      // The sums move with the span's first lag; those for lags past its end are dropped.
      const by = this.lo - lo;
      this.distance.copyWithin(by, 0, WIDE_LAGS - by).fill(0, 0, by);
      this.count.copyWithin(by, 0, WIDE_LAGS - by).fill(0, 0, by);
      this.distance.fill(0, hi - lo + 1);
      this.count.fill(0, hi - lo + 1);
    } else {
      this.distance.fill(0);
      this.count.fill(0);
    }
    this.lo = lo;
    this.hi = hi;
  }

  /**
   * A cell the echo explains, as the caller's bits, the delay being `delay`: the bit distance at each
   * lag searched. Once enough cells are in, true when the delay moves (to `movedTo`, by `movedBy`): the
   * best lag is a clear match. The search then ends, unless the echo left the delay and was not found
   * yet: then another round starts, on the cells from now on.
   */
  realign(bits: number, history: Pick<ReferenceHistory, 'distance'>, delay: number): boolean {
    const { lo, hi } = this;
    for (let lag = lo; lag <= hi; lag++) {
      const d = history.distance(lag, bits);
      if (d < 0) continue;
      const i = lag - lo;
      this.distance[i] = this.distance[i]! + d;
      this.count[i] = this.count[i]! + 1;
    }
    const needed = this.lostEcho ? REALIGN_CELLS : START_REALIGN_CELLS;
    if (++this.cells < needed) return false;
    // Mean distance per lag, among lags whose reference played in at least half the cells.
    const mean = (i: number): number =>
      this.count[i]! < needed / 2 ? Number.POSITIVE_INFINITY : this.distance[i]! / this.count[i]!;
    const at = Math.max(0, Math.min(hi - lo, delay - lo));
    let best = at;
    for (let i = 0; i <= hi - lo; i++) if (mean(i) < mean(best)) best = i;
    if (best !== at && mean(best) < REALIGN_MAX_DISTANCE && mean(at) - mean(best) > REALIGN_QUALITY) {
      this.movedTo = lo + best;
      this.movedBy = best - at;
      this.startCells = 0;
      return true;
    }
    if (this.lostEcho && this.startCells > 0 && !(best === at && mean(at) < REALIGN_MAX_DISTANCE)) {
      this.distance.fill(0);
      this.count.fill(0);
      this.cells = 0;
      return false;
    }
    this.startCells = 0;
    return false;
  }

  /** No search under way; the next `widen` starts one afresh. */
  reset(): void {
    this.quietCells = 0;
    this.startCells = 0;
    this.lostEcho = false;
  }
}
