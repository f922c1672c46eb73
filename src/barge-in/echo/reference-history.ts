/**
 * The reference (the bot's audio as played) cell by cell, newest first: per cell its band powers, its
 * bit pattern (each band above or below its running mean, for the delay search) and whether the bot
 * played in it, for every lag the estimator looks at (`HISTORY` cells).
 */
import { BANDS, bitDistance, HISTORY, MEAN_ALPHA, UNKNOWN_LAGS } from './cells.js';
import { SlidingMax } from './sliding-max.js';

/** A reference cell plays (its energy over all bands, per sample², ≈ −55 dBFS). */
const REF_ACTIVE_POWER = (32768 * 10 ** (-55 / 20)) ** 2;
/** A run of cells in the rings: every lag kept, twice over. */
export const RUN = 2 * HISTORY;

export class ReferenceHistory {
  /**
   * The cells newest first, each kept twice (a ring of `HISTORY` slots read from `lag0`, its copy right
   * after it), so that every run of lags is contiguous: no wrap to work out per lag in the loops that
   * read every lag each cell (the delay search, the first seconds' bound). Band by band: band b's cell
   * `lag` back is `powers[b × RUN + lag0 + lag]`; the cell's bits and whether it played are at
   * `lag0 + lag` of theirs.
   */
  readonly powers = new Float64Array(BANDS * RUN);
  private readonly bits = new Uint32Array(RUN);
  readonly playedAt = new Uint8Array(RUN);
  /** Where lag 0 (the newest cell) is in each run. */
  private newest = 0;
  /**
   * Per band, the loudest of the newest `UNKNOWN_LAGS` cells (the echo while no delay is known), kept
   * as the cells come in: a scan of them every cell cost more than the rest of the verdict.
   */
  private readonly peak = new SlidingMax(BANDS, UNKNOWN_LAGS);
  /** Per band, the running mean of the log power over cells that played: the bits' thresholds. */
  private readonly mean = new Float64Array(BANDS);
  /** Per band, the running mean of the power over cells that played: how loud the bot is. */
  private readonly meanPower = new Float64Array(BANDS);

  /** Where lag 0 is in the runs (`powers`, `playedAt`): lag `lag` is at `lag0 + lag`, for every lag kept. */
  get lag0(): number {
    return this.newest;
  }

  /** The next cell's band powers and their total; whether the bot played in it. */
  push(bands: Float64Array, total: number): boolean {
    const on = total > REF_ACTIVE_POWER;
    const at = (this.newest = this.newest === 0 ? HISTORY - 1 : this.newest - 1);
    let bits = 0;
    for (let b = 0; b < BANDS; b++) {
      const p = bands[b]!;
      this.powers[b * RUN + at] = p;
      this.powers[b * RUN + at + HISTORY] = p;
      const l = Math.log(p + 1e-3);
      if (on) {
        this.mean[b] = this.mean[b]! + MEAN_ALPHA * (l - this.mean[b]!);
        this.meanPower[b] = this.meanPower[b]! + MEAN_ALPHA * (p - this.meanPower[b]!);
      }
      if (l > this.mean[b]!) bits |= 1 << b;
    }
    this.peak.push(bands, 0);
    this.bits[at] = bits;
    this.bits[at + HISTORY] = bits;
    this.playedAt[at] = on ? 1 : 0;
    this.playedAt[at + HISTORY] = on ? 1 : 0;
    return on;
  }

  /** Whether the bot played in the cell `lag` cells back from the newest (0 = newest). */
  played(lag: number): boolean {
    return this.playedAt[this.newest + lag] === 1;
  }

  /** The bit distance of `bits` from the cell `lag` cells back, or −1 when the bot did not play there. */
  distance(lag: number, bits: number): number {
    const s = this.newest + lag;
    return this.playedAt[s] === 0 ? -1 : bitDistance(bits, this.bits[s]!);
  }

  /** The loudest reference band `b` over lags `lo`…`hi` (those kept). */
  over(b: number, lo: number, hi: number): number {
    let max = 0;
    const run = b * RUN + this.newest;
    const last = run + Math.min(HISTORY - 1, hi);
    for (let at = run + Math.max(0, lo); at <= last; at++) {
      const p = this.powers[at]!;
      if (p > max) max = p;
    }
    return max;
  }

  /** The loudest reference band `b` within `slop` cells of lag `delay`. */
  around(b: number, delay: number, slop: number): number {
    return this.over(b, delay - slop, delay + slop);
  }

  /** The loudest band of the cell `lag` cells back. */
  loudestAt(lag: number): number {
    let loudest = 0;
    for (let b = 0; b < BANDS; b++) loudest = Math.max(loudest, this.powers[b * RUN + this.newest + lag]!);
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

  /** Band `b`'s mean power while the bot plays (a running mean). */
  powerOf(b: number): number {
    return this.meanPower[b]!;
  }

  /** Forgets the cells; the bands' running means are kept. */
  reset(): void {
    this.powers.fill(0);
    this.bits.fill(0);
    this.playedAt.fill(0);
    this.newest = 0;
    this.peak.clear();
  }
}
