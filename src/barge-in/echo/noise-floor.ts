/**
 * The caller's line's noise floor per band: the minimum of the smoothed band power over the current
 * block of cells and the one before (1–2 s). Speech, the bot's echo included, has pauses within that;
 * a noisier line (or one back from a dropout's digital silence) raises it within two blocks.
 */
import { BANDS } from './cells.js';

/** The floor from minimum statistics sits under the mean noise: this puts it back (≈ 3 dB). */
export const NOISE_BIAS = 2;
const NOISE_SMOOTH = 0.3;
const NOISE_BLOCK_CELLS = 125;

export class NoiseFloor {
  /** Per band, the floor (under the mean noise: times `NOISE_BIAS` for that). */
  readonly bands = new Float64Array(BANDS);
  private readonly smoothed = new Float64Array(BANDS);
  /** Minimum of the smoothed power per band in the current block, and in the one before. */
  private readonly blockMin = new Float64Array(BANDS);
  private readonly previousMin = new Float64Array(BANDS);
  private blockCells = 0;
  private started = false;

  /** The next cell's band powers; returns the mean noise over all bands (the floor times the bias). */
  push(powers: Float64Array): number {
    let total = 0;
    for (let b = 0; b < BANDS; b++) {
      const p = powers[b]!;
      if (!this.started) this.smoothed[b] = p;
      this.smoothed[b] = this.smoothed[b]! + NOISE_SMOOTH * (p - this.smoothed[b]!);
      const s = this.smoothed[b]!;
      if (!this.started) this.previousMin[b] = s;
      this.blockMin[b] = this.blockCells === 0 ? s : Math.min(this.blockMin[b]!, s);
      this.bands[b] = Math.min(this.blockMin[b]!, this.previousMin[b]!);
      total += this.bands[b]! * NOISE_BIAS;
    }
    this.started = true;
    if (++this.blockCells >= NOISE_BLOCK_CELLS) {
      this.previousMin.set(this.blockMin);
      this.blockCells = 0;
    }
    return total;
  }

  /** From the next cell on, as on a new line. */
  reset(): void {
    this.blockCells = 0;
    this.started = false;
  }
}
