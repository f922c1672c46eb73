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
import type { ReferenceHistory } from './reference-history.js';

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
  /** Every band's reference over the lags read (band by band), and whether the bot played there. */
  private readonly ref = new Float64Array(BANDS * READ);
  private readonly played = new Uint8Array(READ);
  /** One band's sliding maxima (van Herk / Gil-Werman). */
  private readonly ahead = new Float64Array(READ);
  private readonly behind = new Float64Array(READ);

  constructor() {
    this.reset();
  }

  /**
   * One cell of the line (`inBands`): learnt against the reference at every lag where the bot played,
   * then, per band into `out`, the loudest echo the line may hold now: at each lag the bound (at most
   * `gain`, a hybrid's worst; `gain` where the lag was not heard long enough to bound it) times the
   * reference at its loudest around the lag.
   */
  next(inBands: Float64Array, history: ReferenceHistory, gain: number, out: Float64Array): void {
    const { least, cells, ref, played, ahead, behind } = this;
    // ref[b × READ + i] is band b at lag i − SPREAD.
    history.bandsOver(-SPREAD, READ, ref, played);
    for (let b = 0; b < BANDS; b++) {
      const r0 = b * READ;
      const base = b * UNKNOWN_LAGS;
      const line = inBands[b]!;
      // Learn: against the least of the reference cells either side of the lag (the echo of a cell
      // spans parts of them when the delay falls between two), where the bot played.
      for (let lag = 0; lag < UNKNOWN_LAGS; lag++) {
        const i = lag + SPREAD;
        if (played[i] === 0) continue;
        let r = ref[r0 + i]!;
        const before = lag > 0 ? ref[r0 + i - 1]! : r; // no cell is newer than lag 0
        const after = ref[r0 + i + 1]!;
        if (before < r) r = before;
        if (after < r) r = after;
        if (r < REF_BAND_MIN_POWER) continue;
        const at = base + lag;
        // line / r < least, without a division in the common case (it is not).
        if (line < least[at]! * r) least[at] = line / r;
        if (cells[at]! < MIN_CELLS) cells[at]!++;
      }
      // The reference's maximum over every run of SPAN lags: a forward and a backward pass in blocks
      // of SPAN, then the loudest bound echo.
      for (let i = 0, k = 0; i < READ; i++, k = k + 1 === SPAN ? 0 : k + 1) {
        const v = ref[r0 + i]!;
        ahead[i] = k === 0 || ahead[i - 1]! < v ? v : ahead[i - 1]!;
      }
      for (let i = READ - 1, k = (READ - 1) % SPAN; i >= 0; i--, k = k === 0 ? SPAN - 1 : k - 1) {
        const v = ref[r0 + i]!;
        behind[i] = i === READ - 1 || k === SPAN - 1 || behind[i + 1]! < v ? v : behind[i + 1]!;
      }
      let e = 0;
      for (let lag = 0; lag < UNKNOWN_LAGS; lag++) {
        // Lags lag − SPREAD … lag + SPREAD are ref[lag] … ref[lag + SPAN − 1].
        const a = behind[lag]!;
        const z = ahead[lag + SPAN - 1]!;
        const around = a > z ? a : z;
        if (around === 0) continue;
        const at = base + lag;
        let g = gain;
        if (cells[at]! >= MIN_CELLS) {
          const bound = least[at]! * MARGIN;
          if (bound < g) g = bound;
        }
        const v = g * around;
        if (v > e) e = v;
      }
      out[b] = e;
    }
  }

  reset(): void {
    this.least.fill(Number.POSITIVE_INFINITY);
    this.cells.fill(0);
  }
}
