/**
 * The caller's audio as the delay search sees it: per cell one bit per band, above or below that band's
 * running mean (of the log power, over cells where the line is active), as WebRTC's delay estimator
 * does. Bits shrug off G.711, line noise and the echo path's colour.
 */
import { BANDS, MEAN_ALPHA } from './cells.js';

export class InboundBits {
  private readonly mean = new Float64Array(BANDS);
  /** The last cell's log band powers, for `learn`. */
  private readonly log = new Float64Array(BANDS);
  private started = false;

  /** The pattern of a cell's band powers, against the means so far (the first cell's are its own). */
  bits(powers: Float64Array): number {
    let bits = 0;
    for (let b = 0; b < BANDS; b++) {
      const l = Math.log(powers[b]! + 1e-3);
      this.log[b] = l;
      if (!this.started) this.mean[b] = l;
      if (l > this.mean[b]!) bits |= 1 << b;
    }
    this.started = true;
    return bits;
  }

  /** The line was active in the last cell: the means follow it. */
  learn(): void {
    for (let b = 0; b < BANDS; b++)
      this.mean[b] = this.mean[b]! + MEAN_ALPHA * (this.log[b]! - this.mean[b]!);
  }

  /** The next cell starts the means afresh. */
  reset(): void {
    this.started = false;
  }
}
