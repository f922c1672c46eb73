/**
 * The reference (the bot's audio as played) cell by cell, newest first: per cell its band powers, its
 * bit pattern (each band above or below its running mean, for the delay search) and whether the bot
 * played in it, for every lag the estimator looks at (`HISTORY` cells).
 */
import { BANDS, bitDistance, HISTORY, MEAN_ALPHA, UNKNOWN_LAGS } from './cells.js';
import { SlidingMax } from './sliding-max.js';

/** A reference cell plays (its energy over all bands, per sample², ≈ −55 dBFS). */
const REF_ACTIVE_POWER = (32768 * 10 ** (-55 / 20)) ** 2;

export class ReferenceHistory {
  /** A ring, newest at `head`: band powers, bits, and whether the cell played. */
  private readonly power = new Float64Array(HISTORY * BANDS);
  private readonly bits = new Uint32Array(HISTORY);
  private readonly active = new Uint8Array(HISTORY);
  private head = 0;
  /**
   * Per band, the loudest of the newest `UNKNOWN_LAGS` cells (the echo while no delay is known), kept
   * as the cells come in: a scan of them every cell cost more than the rest of the verdict.
   */
  private readonly peak = new SlidingMax(BANDS, UNKNOWN_LAGS);
  /** Per band, the running mean of the log power over cells that played: the bits' thresholds. */
  private readonly mean = new Float64Array(BANDS);

  /** The next cell's band powers and their total; whether the bot played in it. */
  push(bands: Float64Array, total: number): boolean {
    const on = total > REF_ACTIVE_POWER;
    this.head = (this.head + 1) % HISTORY;
    const at = this.head * BANDS;
    let bits = 0;
    for (let b = 0; b < BANDS; b++) {
      const p = bands[b]!;
      this.power[at + b] = p;
      const l = Math.log(p + 1e-3);
      if (on) this.mean[b] = this.mean[b]! + MEAN_ALPHA * (l - this.mean[b]!);
      if (l > this.mean[b]!) bits |= 1 << b;
    }
    this.peak.push(this.power, at);
    this.bits[this.head] = bits;
    this.active[this.head] = on ? 1 : 0;
    return on;
  }

  /** Whether the bot played in the cell `lag` cells back from the newest (0 = newest). */
  played(lag: number): boolean {
    return this.active[this.slot(lag)] === 1;
  }

  /** The bit distance of `bits` from the cell `lag` cells back, or −1 when the bot did not play there. */
  distance(lag: number, bits: number): number {
    const s = this.slot(lag);
    return this.active[s] === 0 ? -1 : bitDistance(bits, this.bits[s]!);
  }

  /** The loudest reference band `b` over lags `lo`…`hi` (those kept). */
  over(b: number, lo: number, hi: number): number {
    let max = 0;
    const last = Math.min(HISTORY - 1, hi);
    for (let lag = Math.max(0, lo); lag <= last; lag++) {
      const p = this.power[this.slot(lag) * BANDS + b]!;
      if (p > max) max = p;
    }
    return max;
  }

  /** The loudest reference band `b` within `slop` cells of lag `delay`. */
  around(b: number, delay: number, slop: number): number {
    return this.over(b, delay - slop, delay + slop);
  }

  /**
   * Every band of the cells `first` … `first + count − 1` back, band by band into `into` (band b's at
   * `b × count + i`; 0 for lags not kept or negative), and whether the bot played in each into `played`.
   */
  bandsOver(first: number, count: number, into: Float64Array, played: Uint8Array): void {
    for (let i = 0; i < count; i++) {
      const lag = first + i;
      if (lag < 0 || lag >= HISTORY) {
        for (let b = 0; b < BANDS; b++) into[b * count + i] = 0;
        played[i] = 0;
        continue;
      }
      const s = this.slot(lag);
      const at = s * BANDS;
      for (let b = 0; b < BANDS; b++) into[b * count + i] = this.power[at + b]!;
      played[i] = this.active[s]!;
    }
  }

  /** The loudest band of the cell `lag` cells back. */
  loudestAt(lag: number): number {
    const at = this.slot(lag) * BANDS;
    let loudest = 0;
    for (let b = 0; b < BANDS; b++) loudest = Math.max(loudest, this.power[at + b]!);
    return loudest;
  }

  /**
   * Band `b` at its loudest over the newest `UNKNOWN_LAGS` cells. Slots of the ring not written since
   * the reset hold 0, and no power is less: the loudest of the cells written is the loudest of the slots.
   */
  peakOf(b: number): number {
    return this.peak.max(b);
  }

  /** Band `b`'s usual power while the bot plays (the running mean of its log). */
  usualOf(b: number): number {
    return Math.exp(this.mean[b]!);
  }

  /** Forgets the cells; the bands' running means are kept. */
  reset(): void {
    this.power.fill(0);
    this.bits.fill(0);
    this.active.fill(0);
    this.head = 0;
    this.peak.clear();
  }

  /** The ring's slot of the cell `lag` cells back from the newest. */
  private slot(lag: number): number {
    return (this.head - lag + HISTORY) % HISTORY;
  }
}
