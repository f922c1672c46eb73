/**
 * The grid the echo estimator (echo.ts) and its parts work on: the caller's audio and the reference
 * are cut into cells of `HOP_MS`, each reduced to `BANDS` band powers (analyser.ts), and the reference
 * is kept for every lag searched and the wide search beyond (reference-history.ts).
 */

/** The longest lag searched between the advanced reference and the caller's audio (ms). */
export const MAX_ECHO_DELAY_MS = 700;
/** One cell: the analysis hop (ms). A VAD window (32 ms) holds four. */
export const HOP_MS = 8;
/** Bands of 250 Hz from 250 Hz to 3.75 kHz. */
export const BANDS = 14;
/** Lags searched, in cells. */
export const LAGS = Math.round(MAX_ECHO_DELAY_MS / HOP_MS) + 1;
/**
 * The echo a cell holds is predicted from the loudest reference cell within this many cells of the
 * delay: the playout estimate of a new prompt lands a few ms from the last one's (more under load), and
 * the delay search takes a second to follow a step of a cell or two. Within it, a new delay is the same
 * path (delay-tracker.ts).
 */
export const SLOP_CELLS = 2;
/**
 * The loss is measured against the loudest reference within this many cells of the delay: fewer than
 * the prediction's, so that the loss is not biased low by the slop (the echo of a steady vowel would
 * then be predicted under itself). ±2 cells cut lines without noise at the start of replies
 * (docs/calls.md, _The echo path_).
 */
export const LOSS_SLOP_CELLS = 1;
/**
 * At a reply's start, the echo is looked for within this many cells of the delay (wide-search.ts): ±64
 * ms. Each reply is placed afresh, some tens of ms from where the path is, and so was the last one: the
 * two can be 60 ms apart (at ±40 ms, replies placed ±30 ms off on near-silent lines were still cut
 * where the two were 45–56 ms apart; docs/calls.md, _A reply's placement_).
 */
export const START_SLOP_CELLS = 8;
/** A gap in the far end's playout is looked for up to this many cells past the delay (playout-gaps.ts). */
export const MAX_GAP_CELLS = 30;
/** Lags the realign may span: a reply's start (±`START_SLOP_CELLS`), or a gap and the slop around it. */
export const WIDE_LAGS = Math.max(2 * START_SLOP_CELLS, 2 * SLOP_CELLS + MAX_GAP_CELLS) + 1;
/** Reference cells kept: every lag, and the wide slop beyond. */
export const HISTORY = LAGS + WIDE_LAGS;
/**
 * With no delay known, the echo is taken at its loudest over these lags: every lag, and 40 ms beyond
 * (a reply's slop as it was when the bound of a call's first seconds, echo-bound.ts, was measured).
 */
export const UNKNOWN_LAGS = LAGS + 5;
/** Running means of the bit thresholds and of the line's level: weight on the newest active cell. */
export const MEAN_ALPHA = 0.02;

function popcount(x: number): number {
  x -= (x >>> 1) & 0x55555555;
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  return (((x + (x >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
}

/** The share of the bands whose bits differ between two cells' patterns (0 alike … 1 opposite). */
export function bitDistance(a: number, b: number): number {
  return popcount((a ^ b) & ((1 << BANDS) - 1)) / BANDS;
}
