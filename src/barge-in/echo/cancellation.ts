/**
 * Cancellation: on a settled path with a loud echo, a short NLMS filter around the delay (canceller.ts)
 * takes the echo out of the caller's audio, and this tracks per band how much of the echo it leaves,
 * over cells where the echo stands over the noise and the caller did not talk. The verdict (verdict.ts)
 * then takes a band whose residual stands over that for the caller's. Figures: docs/calls.md, _The
 * canceller_.
 */
import { EchoCanceller, type CancellerState } from '../canceller.js';
import type { VadSampleRate } from '../sample-rate.js';
import { SignalAnalyser, hopSamples } from './analyser.js';
import { BANDS, HISTORY } from './cells.js';
import { NOISE_BIAS } from './noise-floor.js';

/**
 * The canceller runs on a settled path whose echo is louder than this (dB, the mean gain over bands): a
 * quieter echo leaves the caller far over it already.
 */
const CANCEL_ABOVE_DB = -24;
/** Cells of the bot's speech after the canceller locked before its residual is judged (≈ 0.2 s). */
const RESIDUAL_SETTLE_CELLS = 25;
/**
 * What the canceller leaves of the echo, per band: the ratio (dB) of the residual to the caller's
 * audio, both less the noise, followed fast when it rises (`CANCEL_ATTACK` of the way a cell: a
 * canceller that lost the path, a reply placed a few ms off, leaves the echo at once) and slowly when it
 * falls; never taken for less than `MAX_CANCELLATION` (what it leaves is its error and the codec's
 * noise, which vary a lot from cell to cell).
 */
const CANCEL_ATTACK = 0.3;
const CANCEL_RELEASE = 0.05;
const MAX_CANCELLATION = 10 ** (-20 / 10);

export class Cancellation {
  /** The residual's bands for the cell, while the canceller runs. */
  readonly bands = new Float64Array(BANDS);
  private readonly canceller: EchoCanceller;
  private readonly hop: number;
  private readonly residual: Float64Array;
  private readonly analyser: SignalAnalyser;
  /** Per band, once the canceller locked: what it leaves of the echo (dB). */
  private readonly leftDb = new Float64Array(BANDS);
  /** Cells of the bot at the delay since the canceller locked. */
  private lockedCells = 0;
  /** The delay moved (a reply placed afresh): the canceller is aimed again. */
  private reaim = false;

  constructor(sampleRate: VadSampleRate) {
    this.hop = hopSamples(sampleRate);
    this.canceller = new EchoCanceller(sampleRate, this.hop, HISTORY * this.hop);
    this.residual = new Float64Array(this.hop);
    this.analyser = new SignalAnalyser(sampleRate);
  }

  get state(): CancellerState {
    return this.canceller.state;
  }

  /**
   * The next cell of both signals goes through the canceller, which adapts on it when running and
   * `adapt` (the caller decides: double talk would pull the filter off the path); its residual's bands
   * are taken.
   */
  process(inbound: Int16Array, reference: Int16Array, offset: number, adapt: boolean): void {
    const canceller = this.canceller;
    const before = canceller.state;
    canceller.process(inbound, reference, offset, this.hop, this.residual, before !== 'off' && adapt);
    if (canceller.state === 'off') return;
    this.analyser.push(this.residual, this.bands);
    if (before === 'acquiring' && canceller.state === 'locked') {
      this.leftDb.fill(0);
      this.lockedCells = 0;
    }
  }

  /**
   * Runs the canceller on a settled path (`delayCells`; undefined: none) loud enough to need it, aimed at
   * the delay when it starts, when the delay moved (`aimAgain`) or when it lost the path.
   */
  steer(delayCells: number | undefined, meanLossDb: number): void {
    const canceller = this.canceller;
    if (delayCells === undefined || meanLossDb <= CANCEL_ABOVE_DB) {
      if (canceller.state !== 'off') canceller.stop();
      return;
    }
    if (canceller.state !== 'off' && !this.reaim && !canceller.lost) return;
    canceller.aim(delayCells * this.hop);
    this.reaim = false;
  }

  /**
   * A cell of the bot at the delay: per band, how much of the echo the canceller leaves (`CANCEL_ATTACK`),
   * where the echo stands over the noise and the caller did not talk in the last cell.
   */
  track(callerBefore: boolean, inBands: Float64Array, noiseFloor: Float64Array): void {
    if (this.canceller.state !== 'locked') return;
    this.lockedCells++;
    if (callerBefore) return;
    for (let b = 0; b < BANDS; b++) {
      const noise = noiseFloor[b]! * NOISE_BIAS;
      const above = inBands[b]! - noise;
      if (above < noise) continue;
      const left = Math.max(above * 1e-4, this.bands[b]! - noise);
      const x = 10 * Math.log10(left / above);
      const alpha = x > this.leftDb[b]! ? CANCEL_ATTACK : CANCEL_RELEASE;
      this.leftDb[b] = this.leftDb[b]! + alpha * (x - this.leftDb[b]!);
    }
  }

  /**
   * The residual is to be judged: the canceller locked a while ago, and no search is under way
   * (`searching`: a reply is starting, the echo may have moved).
   */
  judging(searching: boolean): boolean {
    return this.canceller.state === 'locked' && this.lockedCells >= RESIDUAL_SETTLE_CELLS && !searching;
  }

  /** The share of band `b`'s echo the canceller leaves, as a power ratio. */
  left(b: number): number {
    return Math.min(1, Math.max(MAX_CANCELLATION, 10 ** (this.leftDb[b]! / 10)));
  }

  /** The echo comes `samples` later against the reference: the filter keeps its taps on the path. */
  move(samples: number): void {
    this.canceller.move(samples);
  }

  /**
   * The whole path moved by `samples` (a gap, the reference moved): the canceller keeps its taps there,
   * to a cell; its health check aims it afresh if that was not close enough. Its residual is not judged
   * until it has stayed locked a while again: the taps moved by whole cells, and after a gap the delay
   * can land one cell short of the path, whose echo the residual then holds for a few windows.
   */
  follow(samples: number): void {
    this.canceller.move(samples);
    this.lockedCells = 0;
  }

  /** The delay moved, by any part of a cell (a reply placed afresh): aimed anew at the next `steer`. */
  aimAgain(): void {
    this.reaim = true;
  }

  reset(): void {
    this.canceller.reset();
    this.analyser.reset();
    this.lockedCells = 0;
    this.reaim = false;
  }
}
