/**
 * The echo's loss per band: the ratio of the caller's audio (less its noise floor) to the reference at
 * the delay, tracked as a running median in dB (steps up and down alike, so a caller talking over the
 * bot, or a pause, does not drag it): the echo path's loss, colour included. Figures: docs/calls.md,
 * _The echo path_, _The caller is not the echo getting louder_ and the echo's loss under _Barge-in_.
 */
import { BANDS, LOSS_SLOP_CELLS } from './cells.js';
import { NOISE_BIAS } from './noise-floor.js';
import type { ReferenceHistory } from './reference-history.js';

/** A band of an active reference cell counts for the loss when within this of the cell's loudest. */
const REF_BAND_RANGE = 10 ** (-30 / 10);
/** Median tracker: step (dB), growing with a streak of steps one way, up to MAX. */
const LOSS_STEP_DB = 0.3;
const LOSS_MAX_STEP_DB = 3;
/**
 * Upward, the streak does not speed the loss past `LOSS_STEP_DB` a cell (37 dB/s), except for
 * `LOSS_RECOVER_CELLS` of the bot at the delay after the echo left it (a gap in the far end's playout,
 * the reference moved), when the echo may be back at full strength at once. A caller talking over a
 * 6 dB echo in noise 10 dB under the caller is taken for the echo in the windows the margins do not
 * pass, and in those, at full pace, the loss climbed towards the caller: the rest of the words were
 * judged against an echo too loud.
 */
const LOSS_RECOVER_CELLS = 250;
/**
 * While the last cell held the caller, the echo may only get louder by this much a cell (12.5 dB/s),
 * without the streak's acceleration: the caller talking over the bot is not its echo getting louder,
 * and at full pace dragged a path's loss towards the caller within the talk-over, so that the rest of
 * the caller's words were judged against an echo far too loud. A path that really got louder is still
 * followed within a second.
 */
const LOSS_CALLER_STEP_DB = 0.1;
/** The loss a band starts at (dB): as loud as the bot, the cautious guess. */
const LOSS_START_DB = 0;
const LOSS_FLOOR_DB = -70;

export class LossTracker {
  /** Per band: the echo's gain (dB) and the median tracker's streak (signed). */
  private readonly lossDb = new Float64Array(BANDS).fill(LOSS_START_DB);
  private readonly streak = new Int32Array(BANDS);
  /**
   * Per band, the echo's gain as a power ratio (`gainOf`) and the loss it was taken from: read two or
   * three times a cell, the loss changing at most once.
   */
  private readonly gain = new Float64Array(BANDS);
  private readonly gainOfDb = new Float64Array(BANDS).fill(Number.NaN);
  /** Cells of the bot at the delay still to come during which the loss may rise at full pace. */
  private recoverCells = 0;

  /** The echo's gain at the delay, the mean over bands (dB). */
  meanDb(): number {
    let sum = 0;
    for (const l of this.lossDb) sum += l;
    return sum / BANDS;
  }

  /** The echo's gain in band `b` as it is now: `10 ** (lossDb / 10)`, worked out when the loss changed. */
  gainOf(b: number): number {
    const db = this.lossDb[b]!;
    // Only ±0 are equal and differ, and both give 1.
    if (db !== this.gainOfDb[b]) {
      this.gainOfDb[b] = db;
      this.gain[b] = 10 ** (db / 10);
    }
    return this.gain[b]!;
  }

  /** The echo left the delay: for a while, it may come back at full strength at once. */
  recover(): void {
    this.recoverCells = LOSS_RECOVER_CELLS;
  }

  /** A cell of the bot at the delay passed (whether or not it tells the loss anything). */
  countCell(): void {
    if (this.recoverCells > 0) this.recoverCells--;
  }

  /**
   * A cell of the bot at `delay`: per band, the loss steps towards (the caller's audio − its noise
   * floor) / the reference there. `callerBefore`: the last cell held the caller.
   */
  update(
    delay: number,
    history: ReferenceHistory,
    inBands: Float64Array,
    noiseFloor: Float64Array,
    callerBefore: boolean,
  ): void {
    const loudest = history.loudestAt(delay);
    for (let b = 0; b < BANDS; b++) {
      const ref = history.around(b, delay, LOSS_SLOP_CELLS);
      if (ref < loudest * REF_BAND_RANGE) continue;
      const noise = noiseFloor[b]! * NOISE_BIAS;
      const above = inBands[b]! - noise;
      let up: boolean;
      if (above > noise) up = 10 * Math.log10(above / ref) > this.lossDb[b]!;
      // At the noise floor: evidence only when the echo, as estimated, would have shown above it.
      else if (ref * this.gainOf(b) > noise) up = false;
      else continue;
      if (up && callerBefore) {
        this.lossDb[b] = Math.min(0, this.lossDb[b]! + LOSS_CALLER_STEP_DB);
        continue;
      }
      const streak = this.streak[b]!;
      this.streak[b] = up ? Math.max(1, streak + 1) : Math.min(-1, streak - 1);
      const step =
        up && this.recoverCells === 0
          ? LOSS_STEP_DB
          : Math.min(LOSS_MAX_STEP_DB, LOSS_STEP_DB * (1 + Math.abs(this.streak[b]!) / 4));
      this.lossDb[b] = Math.max(LOSS_FLOOR_DB, Math.min(0, this.lossDb[b]! + (up ? step : -step)));
    }
  }

  reset(): void {
    this.lossDb.fill(LOSS_START_DB);
    this.streak.fill(0);
    this.recoverCells = 0;
  }
}
