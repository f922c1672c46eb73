/**
 * What the echo could be, before its path is known. The echo at the path's lag is never louder than
 * what the line held while the bot played (echo, noise and the caller together), so per lag and band
 * the least ratio of the line's band power to the reference's there bounds the path's gain at that
 * lag; at a wrong lag the ratio soon falls wherever the bot was loud there and the line was not. The
 * echo a cell may hold is then the loudest, over every lag, of that bound times the reference around
 * the lag, capped by a hybrid's worst loss: on a line whose echo is soft, or absent, it is far under
 * the bot at its loudest (the rule before this part), and a short "Hello?" over a call's first words
 * stands over it. Figures: docs/calls.md, _Before the path is known_.
 */
import { BANDS, UNKNOWN_LAGS } from './cells.js';
import { RUN, type ReferenceHistory } from './reference-history.js';

/**
 * A reference band counts towards a lag's bound only this loud (per sample², ≈ −50 dBFS over the
 * bands): under it, the ratio says more of the line's noise than of the echo.
 */
const REF_BAND_MIN_POWER = (32768 * 10 ** (-50 / 20)) ** 2 / BANDS;
/**
 * The bound is taken this much over the least ratio seen (6 dB): an 8 ms band power of the echo
 * scatters around the reference's times the path's gain.
 */
const MARGIN = 10 ** (6 / 10);
/**
 * The prediction takes the reference at its loudest within this many cells of each lag (±40 ms): a
 * reply after a silence reaches the reference 20 ms after it starts to play (`REFERENCE_ADVANCE_MS`),
 * and its echo then has no reference at its own lag; and replies land a little off where the
 * reference has them.
 */
const SPREAD = 5;
/** Cells heard at a lag and band before its bound counts (32 ms of the bot playing there). */
const MIN_CELLS = 4;
/** Lags with the spread either side, for the sliding maximum. */
const SPAN = 2 * SPREAD + 1;
/** The lags read per band: every lag, and the spread beyond both ends. */
const READ = UNKNOWN_LAGS + 2 * SPREAD;

export class EchoBound {
  /** Per band and lag: the least ratio of the line's band power to the reference's there. */
  private readonly least = new Float64Array(BANDS * UNKNOWN_LAGS);
  /** Per band and lag: the cells counted (up to `MIN_CELLS`). */
  private readonly cells = new Uint8Array(BANDS * UNKNOWN_LAGS);
  /**
   * Per band and reference cell read: the largest gain of the lags whose spread takes the cell in
   * (`gainAround`), kept until a bound of the band, or the cap, changes (after the first second or
   * two, seldom: the bounds only fall, and soon stop falling).
   */
  private readonly around = new Float64Array(BANDS * READ);
  private readonly stale = new Uint8Array(BANDS);
  private cap = Number.NaN;
  /** One band's gains per lag, and their sliding maxima (van Herk / Gil-Werman). */
  private readonly gains = new Float64Array(UNKNOWN_LAGS);
  private readonly ahead = new Float64Array(UNKNOWN_LAGS);
  private readonly behind = new Float64Array(UNKNOWN_LAGS);

  constructor() {
    this.reset();
  }

  /**
   * One cell of the line (`inBands`): learnt against the reference at every lag where the bot played,
   * then, per band into `out`, the loudest echo the line may hold now: at each lag the bound (at most
   * `gain`, a hybrid's worst; `gain` where the lag was not heard long enough to bound it) times the
   * reference at its loudest around the lag. Taken reference cell by reference cell (each times the
   * largest gain of the lags around it), which is the same maximum over the same products.
   */
  next(inBands: Float64Array, history: ReferenceHistory, gain: number, out: Float64Array): void {
    const { least, cells, around, stale } = this;
    if (gain !== this.cap) {
      this.cap = gain;
      stale.fill(1);
    }
    // The reference is read where the history keeps it, every lag in a row (reference-history.ts): band
    // b's lag `lag` at `powers[b × RUN + lag0 + lag]`. Lags before 0 (the spread before the newest
    // cell) hold no reference.
    const { powers, playedAt, lag0 } = history;
    for (let b = 0; b < BANDS; b++) {
      const run = b * RUN + lag0;
      const base = b * UNKNOWN_LAGS;
      const line = inBands[b]!;
      // Learn: against the least of the reference cells either side of the lag (the echo of a cell
      // spans parts of them when the delay falls between two), where the bot played.
      for (let lag = 0; lag < UNKNOWN_LAGS; lag++) {
        if (playedAt[lag0 + lag] === 0) continue;
        const at = run + lag;
        let r = powers[at]!;
        const before = lag > 0 ? powers[at - 1]! : r; // no cell is newer than lag 0
        const after = powers[at + 1]!;
        if (before < r) r = before;
        if (after < r) r = after;
        if (r < REF_BAND_MIN_POWER) continue;
        const l = base + lag;
        const c = cells[l]!;
        // line / r < least, without a division in the common case (it is not).
        if (line < least[l]! * r) {
          least[l] = line / r;
          if (c >= MIN_CELLS) stale[b] = 1;
        }
        if (c < MIN_CELLS) {
          cells[l] = c + 1;
          if (c + 1 === MIN_CELLS) stale[b] = 1;
        }
      }
      if (stale[b] === 1) {
        this.gainAround(b, gain);
        stale[b] = 0;
      }
      // around[b × READ + i] is for the reference at lag i − SPREAD: from lag 0 on.
      const r0 = b * READ + SPREAD;
      let e = 0;
      for (let lag = 0; lag < READ - SPREAD; lag++) {
        const v = powers[run + lag]! * around[r0 + lag]!;
        if (v > e) e = v;
      }
      out[b] = e;
    }
  }

  /**
   * Band `b`'s gain per lag (its bound, at most `gain`; `gain` where not heard long enough), and for
   * each reference cell read the largest of those of the lags within `SPREAD` of it: reference cell i
   * (lag i − SPREAD) is around lags i − 2·SPREAD … i.
   */
  private gainAround(b: number, gain: number): void {
    const { least, cells, gains, ahead, behind, around } = this;
    const base = b * UNKNOWN_LAGS;
    for (let lag = 0; lag < UNKNOWN_LAGS; lag++) {
      let g = gain;
      if (cells[base + lag]! >= MIN_CELLS) {
        const bound = least[base + lag]! * MARGIN;
        if (bound < g) g = bound;
      }
      gains[lag] = g;
    }
    // Sliding maxima over every run of SPAN lags: a forward and a backward pass in blocks of SPAN.
    const n = UNKNOWN_LAGS;
    for (let i = 0, k = 0; i < n; i++, k = k + 1 === SPAN ? 0 : k + 1) {
      const v = gains[i]!;
      ahead[i] = k === 0 || ahead[i - 1]! < v ? v : ahead[i - 1]!;
    }
    for (let i = n - 1, k = (n - 1) % SPAN; i >= 0; i--, k = k === 0 ? SPAN - 1 : k - 1) {
      const v = gains[i]!;
      behind[i] = i === n - 1 || k === SPAN - 1 || behind[i + 1]! < v ? v : behind[i + 1]!;
    }
    const r0 = b * READ;
    for (let i = 0; i < READ; i++) {
      // Lags lo … hi, clipped to those there are.
      const lo = i - SPAN + 1 < 0 ? 0 : i - SPAN + 1;
      const hi = i < n ? i : n - 1;
      let m: number;
      if (hi - lo + 1 === SPAN) {
        const a = behind[lo]!;
        const z = ahead[hi]!;
        m = a > z ? a : z;
      } else {
        m = 0;
        for (let lag = lo; lag <= hi; lag++) if (gains[lag]! > m) m = gains[lag]!;
      }
      around[r0 + i] = m;
    }
  }

  reset(): void {
    this.least.fill(Number.POSITIVE_INFINITY);
    this.cells.fill(0);
    this.stale.fill(1);
    this.cap = Number.NaN;
  }
}
