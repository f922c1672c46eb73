/**
 * The caller's line's noise floor per band: the minimum of the smoothed band power over the current
 * block of cells and the one before (1–2 s). Speech, the bot's echo included, has pauses within that;
 * a noisier line (or one back from a dropout's digital silence) raises it within two blocks.
 *
 * What the caller must stand over (`line`, and the total `push` returns) never goes under
 * `LINE_FLOOR_DBFS`: on a line with no noise the floor is the codec's crumbs, and the faint tail of a
 * bot's word (a voice whose pauses are not digital silence, as Flite's are not) echoes as crumbs a few
 * dB over them that no prediction follows (docs/calls.md, _The echo of Flite's speech_). The floor itself
 * (`bands`) stays the crumbs': the far end's playout stopping (a gap) shows as the line falling to them.
 */
import type { VadSampleRate } from '../sample-rate.js';
import { bandPowerOfNoise } from './analyser.js';
import { BANDS } from './cells.js';

/**
 * The floor's least level, as white noise over the line's band (dBFS RMS): 30 dB under the quietest
 * speech the detector takes (its energy gate's −50 dBFS, at a line's level of −20 to −40), and over
 * G.711's crumbs near zero (−75 to −85 dBFS).
 */
export const LINE_FLOOR_DBFS = -70;

/** The floor from minimum statistics sits under the mean noise: this puts it back (≈ 3 dB). */
export const NOISE_BIAS = 2;
const NOISE_SMOOTH = 0.3;
const NOISE_BLOCK_CELLS = 125;

export class NoiseFloor {
  /** Per band, the floor (under the mean noise: times `NOISE_BIAS` for that). */
  readonly bands = new Float64Array(BANDS);
  /** Per band, the floor no lower than `LINE_FLOOR_DBFS`: what the caller must stand over. */
  readonly line = new Float64Array(BANDS);
  private readonly smoothed = new Float64Array(BANDS);
  /** Minimum of the smoothed power per band in the current block, and in the one before. */
  private readonly blockMin = new Float64Array(BANDS);
  private readonly previousMin = new Float64Array(BANDS);
  private blockCells = 0;
  private started = false;
  /** A cell was pushed since the reset (the analyser's frames are whole from the next one on). */
  private framed = false;
  /** `LINE_FLOOR_DBFS` as a band's power. */
  private readonly least: number;
  /** The mean noise over all bands, as the last `push` returned it (`line` times the bias, summed). */
  private total = 0;

  constructor(sampleRate: VadSampleRate) {
    this.least = bandPowerOfNoise(sampleRate, LINE_FLOOR_DBFS);
    this.startLine();
  }

  /** The mean noise over all bands now (what the last `push` returned). */
  get lineTotal(): number {
    return this.total;
  }

  /**
   * The next cell's band powers; returns the mean noise over all bands (`line` times the bias). The
   * first cell after a reset is not learnt: its transform's frame is half empty (3 dB under the line),
   * and as the floor for two blocks it let the noise alone pass for the caller in a call's first
   * seconds.
   */
  push(powers: Float64Array): number {
    if (!this.framed) {
      this.framed = true;
      return this.total;
    }
    let total = 0;
    for (let b = 0; b < BANDS; b++) {
      const p = powers[b]!;
      if (!this.started) this.smoothed[b] = p;
      this.smoothed[b] = this.smoothed[b]! + NOISE_SMOOTH * (p - this.smoothed[b]!);
      const s = this.smoothed[b]!;
      if (!this.started) this.previousMin[b] = s;
      this.blockMin[b] = this.blockCells === 0 ? s : Math.min(this.blockMin[b]!, s);
      this.bands[b] = Math.min(this.blockMin[b]!, this.previousMin[b]!);
      this.line[b] = Math.max(this.least, this.bands[b]!);
      total += this.line[b]! * NOISE_BIAS;
    }
    this.started = true;
    if (++this.blockCells >= NOISE_BLOCK_CELLS) {
      this.previousMin.set(this.blockMin);
      this.blockCells = 0;
    }
    this.total = total;
    return total;
  }

  /** From the next cell on, as on a new line. */
  reset(): void {
    this.blockCells = 0;
    this.started = false;
    this.framed = false;
    this.startLine();
  }

  /** The line before any cell: `LINE_FLOOR_DBFS` in every band. */
  private startLine(): void {
    this.line.fill(this.least);
    let total = 0;
    for (let b = 0; b < BANDS; b++) total += this.line[b]! * NOISE_BIAS;
    this.total = total;
  }
}
