/**
 * Gaps in the far end's playout (its buffer ran dry: our frames came late, a stall at the gateway):
 * everything after a gap plays that much later, and so does its echo, while the reference (placed on
 * our playout clock) goes on as before until returned marks tell it, a second or two later. The sign
 * of one is a run of cells where the echo, loud enough to show over the line, is missing (the far end
 * played nothing): `GAP_MIN_CELLS` in a row open it, and cells that tell nothing (the bot quiet at the
 * delay) do not end it; the echo showing again does. Once open, the echo is looked for from the delay to
 * `MAX_GAP_CELLS` beyond it (wide-search.ts), the loss left alone. The run's own length is no measure
 * of the gap: the bot may have paused at the delay while it began. A run longer than `MAX_GAP_CELLS`
 * is no gap: the echo got quieter, or went, and the loss follows it again. Figures, and why the echo
 * must be predicted 7.8 dB over the noise: docs/calls.md, _Gaps in the far end's playout_.
 */
import { BANDS, LOSS_SLOP_CELLS, MAX_GAP_CELLS } from './cells.js';
import type { LossTracker } from './loss-tracker.js';
import { NOISE_BIAS } from './noise-floor.js';
import type { ReferenceHistory } from './reference-history.js';

const GAP_MIN_CELLS = 2;
/** A band's echo shows over the line when predicted this much over its noise (7.8 dB)… */
const GAP_SHOWS = 6;
/** …and is missing when the caller's audio there is under this much over the noise (3 dB). */
const GAP_MISSING = 2;

export class GapWatch {
  /**
   * The run of cells where the echo should have shown over the line and did not, with the cells between
   * that told nothing: its length, how many of them showed the echo missing, and whether this cell did.
   */
  private missingCells = 0;
  private missingSeen = 0;
  private missingNow = false;

  /** This cell showed the echo missing, in a run short enough to be a gap: it tells nothing of the loss. */
  get holding(): boolean {
    return this.missingNow && this.missingCells <= MAX_GAP_CELLS;
  }

  /**
   * The next cell, `delay` being the settled path's delay (undefined: none): true when a gap is open,
   * and the echo is to be looked for up to `MAX_GAP_CELLS` past the delay.
   */
  watch(
    delay: number | undefined,
    history: ReferenceHistory,
    loss: LossTracker,
    inBands: Float64Array,
    noiseFloor: Float64Array,
  ): boolean {
    this.missingNow = false;
    if (delay === undefined) {
      this.missingCells = 0;
      this.missingSeen = 0;
      return false;
    }
    let shows = 0;
    let missing = 0;
    if (history.played(delay))
      for (let b = 0; b < BANDS; b++) {
        const noise = noiseFloor[b]! * NOISE_BIAS;
        const echo = history.around(b, delay, LOSS_SLOP_CELLS) * loss.gainOf(b);
        if (echo < noise * GAP_SHOWS) continue;
        shows++;
        if (inBands[b]! < noise * GAP_MISSING) missing++;
      }
    // A run goes on until the echo shows again: a cell that tells nothing (the bot quiet at the delay,
    // or too soft to show) is still part of the gap.
    const gap = missing >= 3 && missing * 4 >= shows * 3;
    const shown = shows >= 3 && !gap;
    this.missingNow = gap;
    // It starts with the echo missing in cells in a row (one alone is the end of a word).
    const open = this.missingSeen >= GAP_MIN_CELLS;
    if (shown || (!gap && !open)) {
      this.missingCells = 0;
      this.missingSeen = 0;
      return false;
    }
    this.missingCells++;
    if (gap) this.missingSeen++;
    return this.missingSeen >= GAP_MIN_CELLS && this.missingCells <= MAX_GAP_CELLS;
  }

  reset(): void {
    this.missingCells = 0;
    this.missingSeen = 0;
    this.missingNow = false;
  }
}
