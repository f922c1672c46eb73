/**
 * Echo estimation for barge-in: voxbridge knows what it played and when, so it does not need a full
 * echo canceller to tell the caller from the bot's own echo. Per call, the caller's audio and the
 * bot's audio as played (the reference) are cut into 8 ms cells and 14 bands from 250 Hz to 3.75 kHz
 * (echo/analyser.ts, echo/reference-history.ts, echo/noise-floor.ts), and `EchoEstimator` runs its
 * parts on each cell:
 *
 * - **Delay** (echo/delay-tracker.ts): the caller's bits (echo/inbound-bits.ts) against the
 *   reference's at every lag; a lag clearly better than the others, held for a while, is the delay.
 *   At each reply's start the echo is looked for within ±64 ms of it, and the delay follows the
 *   reply's own best match there (echo/wide-search.ts).
 * - **Loss** (echo/loss-tracker.ts): per band, the running median of the caller's audio over the
 *   reference at the delay, in dB.
 * - **Verdict** (echo/verdict.ts): the echo each cell and window should hold, and whether the caller's
 *   audio holds more than that and the noise explain.
 * - **Cancellation** (echo/cancellation.ts): on a settled path with a loud echo, a short NLMS filter
 *   (canceller.ts) takes the echo out, and a band whose residual stands over what it leaves holds the
 *   caller too.
 * - **Gaps and moves** (echo/playout-gaps.ts, echo/reference-moves.ts): a gap in the far end's
 *   playout, or the reference placed afresh, makes the echo come later than the reference says; it is
 *   looked for over the lags it may have moved to (echo/wide-search.ts), rather than taken for the
 *   caller.
 *
 * Bits and medians are robust to G.711, line noise and a playout clock that is a few ms off, and cost
 * one 16 ms FFT (both signals at once) per 8 ms of audio. Until the delay is found (or found to be
 * absent: the reference played for a while and nothing in the caller's audio followed it;
 * echo/path-status.ts) the verdict says `converged: false` and the echo is taken at its loudest over
 * every lag; while a path that moved settles, it says `cautious` and the detector falls back to its
 * cautious rule. docs/calls.md (_The bot's own echo_) has the measurements behind the constants.
 */
import { bandPowerOfNoise, PairAnalyser } from './echo/analyser.js';
import { Cancellation } from './echo/cancellation.js';
import {
  BANDS,
  HOP_MS,
  LAGS,
  MAX_ECHO_DELAY_MS,
  MAX_GAP_CELLS,
  SLOP_CELLS,
  START_SLOP_CELLS,
} from './echo/cells.js';
import { DelayTracker } from './echo/delay-tracker.js';
import { EchoBound } from './echo/echo-bound.js';
import { InboundBits } from './echo/inbound-bits.js';
import { LossTracker } from './echo/loss-tracker.js';
import { NoiseFloor } from './echo/noise-floor.js';
import { PathStatus } from './echo/path-status.js';
import { GapWatch } from './echo/playout-gaps.js';
import { ReferenceHistory } from './echo/reference-history.js';
import { ReferenceMoves } from './echo/reference-moves.js';
import { HOLDS_CALLER, HOLDS_ECHO, Verdict } from './echo/verdict.js';
import { WideSearch } from './echo/wide-search.js';
import type { VadSampleRate } from './sample-rate.js';

/**
 * The bot's cells (8 ms) on a call through which the echo is bounded lag by lag while no path is known
 * (3 s: a call's first seconds; echo/echo-bound.ts costs several times the rule after them). Offline
 * every path is found within them, and 8 s gave the same verdicts; under load a path found later is
 * judged by the rule after them, the cautious one (with 8 s, a 60 ms, 6 dB line in two busy CI runs
 * cut the bot 3 times in its 3rd to 12th second, twice with no stall of the process; a 6 dB echo is
 * at the bound's cap, a hybrid's worst loss).
 */
const BOUND_CELLS = 375;

export { MAX_ECHO_DELAY_MS };

/**
 * How far ahead of the caller's audio the reference is taken (ms): reference sample i is the bot's
 * audio estimated to play at the caller's ear this long after inbound sample i was captured. Echo
 * delays are searched from −REFERENCE_ADVANCE_MS to MAX_ECHO_DELAY_MS − REFERENCE_ADVANCE_MS, so a
 * playout estimate that runs a little late does not hide the echo. Kept short: the reference of a chunk
 * is read when the chunk arrives, and a reply after a silence is written as it starts to play, so the
 * first `REFERENCE_ADVANCE_MS` of it are missing from the reference (their echo, at 100 ms, cut the bot
 * at the start of replies on quiet lines: docs/calls.md, _The reference_).
 */
export const REFERENCE_ADVANCE_MS = 20;

export interface EchoVerdict {
  /** The bot's echo may be in this window (its predicted level is not far under the line's noise). */
  echo: boolean;
  /** Energy in this window that the echo does not explain (someone else, the caller, is there). */
  caller: boolean;
  /** The path is known (or known to be absent): the verdicts can be trusted. */
  converged: boolean;
  /**
   * Not converged, and a path was known before (it moved: a transfer, a speakerphone): the new one is
   * settling. Silero hears the old path's echo under anything loud (a key's tones, a click) as speech,
   * so the detector's cautious rule applies until it has settled. Before the first path is known the
   * echo is taken at its loudest instead, and speech over that counts as on a silent line.
   */
  cautious: boolean;
  /**
   * No echo: none was found, and the line kept to its noise floor while the bot talked (stricter than
   * the absent rule: echo/path-status.ts). What rises over the noise there is not the bot, so a speech
   * model may judge it; elsewhere a window the verdict calls not-caller is the echo's.
   */
  clean: boolean;
  /** The echo path's delay (ms, on the caller's timeline, reference advance removed) and mean loss (dB). */
  delayMs: number | undefined;
  erlDb: number | undefined;
}

/**
 * A faint echo: the bot's mean power at the path's loss, over all bands, under `FAINT_ECHO` over the
 * line's noise (10 dB) and under `FAINT_ECHO_DBFS` (as loud as white noise there: 17 dB under a caller
 * at −20 dBFS). The search seldom sees so faint an echo move (a gap in the far end's playout shows as
 * the echo missing only where it stood 7.8 dB over the noise), nor tells its delay from a chance match:
 * under load, `bench talkers` lines 3–4 dB over their noise held delays 180 ms off the path, and at
 * each new prompt the echo came before the delay and cut the bot. Such an echo is predicted at every
 * lag it may be at (echo.ts, `judge`); a caller stands far over that too. Figures: docs/calls.md, _A
 * faint echo_.
 */
const FAINT_ECHO = 10;
const FAINT_ECHO_DBFS = -37;
/** The caller's line counts for the delay search when this much over its noise floor (≈ 3 dB). */
const IN_ACTIVE = 1.25;

export class EchoEstimator {
  private readonly analyser: PairAnalyser;
  private readonly hop: number;
  /** This cell's band powers: the caller's audio, the reference. */
  private readonly inBands = new Float64Array(BANDS);
  private readonly refBands = new Float64Array(BANDS);
  private readonly history = new ReferenceHistory();
  private readonly noise: NoiseFloor;
  private readonly inBits = new InboundBits();
  private readonly delay = new DelayTracker();
  private readonly search = new WideSearch();
  private readonly loss = new LossTracker();
  private readonly gaps = new GapWatch();
  private readonly moves: ReferenceMoves;
  private readonly cancellation: Cancellation;
  private readonly status = new PathStatus();
  private readonly bound = new EchoBound();
  private readonly verdict = new Verdict();
  /** The last cell held the caller. */
  private callerBefore = false;
  /** This window's echo is faint (`FAINT_ECHO`): predicted at every lag it may be at. */
  private faint = false;
  /** A band's power of white noise at `FAINT_ECHO_DBFS`. */
  private readonly quiet: number;

  constructor(readonly sampleRate: VadSampleRate) {
    this.quiet = bandPowerOfNoise(sampleRate, FAINT_ECHO_DBFS);
    this.analyser = new PairAnalyser(sampleRate);
    this.hop = this.analyser.hopSamples;
    this.moves = new ReferenceMoves(this.hop);
    this.noise = new NoiseFloor(sampleRate);
    this.cancellation = new Cancellation(sampleRate);
  }

  /**
   * One VAD window of the caller's audio and the reference for the same span (equal lengths).
   * `moved`: the reference was placed afresh within this span while the bot talked (samples; see
   * `EchoReference.read`): the echo comes that much later against it from where that placement reaches
   * the delay (negative: sooner).
   */
  process(inbound: Int16Array, reference: Int16Array, moved = 0): EchoVerdict {
    if (inbound.length !== reference.length) throw new RangeError('inbound and reference lengths differ');
    if (moved !== 0) this.moves.schedule(moved, this.delay.cells);
    this.verdict.startWindow();
    this.faint = this.settled && this.faintEcho();
    for (let offset = 0; offset + this.hop <= inbound.length; offset += this.hop)
      this.cell(inbound, reference, offset);
    const window = this.verdict.judgeWindow(this.settled);
    const delayCells = this.delay.cells;
    const converged = this.settled || this.status.absent(delayCells !== undefined);
    const erlDb = delayCells === undefined ? undefined : -this.loss.meanDb();
    return {
      echo: (window & HOLDS_ECHO) !== 0,
      caller: (window & HOLDS_CALLER) !== 0,
      converged,
      cautious: !converged && this.status.settledBefore,
      clean: this.status.clean(delayCells !== undefined),
      delayMs: delayCells === undefined ? undefined : delayCells * HOP_MS - REFERENCE_ADVANCE_MS,
      erlDb,
    };
  }

  /** The echo is faint (`FAINT_ECHO`, `FAINT_ECHO_DBFS`). */
  private faintEcho(): boolean {
    let echo = 0;
    for (let b = 0; b < BANDS; b++) echo += this.history.powerOf(b) * this.loss.gainOf(b);
    return echo < this.noise.lineTotal * FAINT_ECHO && echo < BANDS * this.quiet;
  }

  /** A delay is known and its loss has had time to settle (remembered by the path's status). */
  private get settled(): boolean {
    return this.status.settle(this.delay.settled);
  }

  reset(): void {
    this.analyser.reset();
    this.history.reset();
    this.noise.reset();
    this.inBits.reset();
    this.delay.reset();
    this.search.reset();
    this.loss.reset();
    this.gaps.reset();
    this.moves.reset();
    this.cancellation.reset();
    this.status.reset();
    this.bound.reset();
    this.callerBefore = false;
  }

  private cell(inbound: Int16Array, reference: Int16Array, offset: number): void {
    this.moves.nextCell();
    for (let samples = this.moves.due(); samples !== undefined; samples = this.moves.due())
      this.move(samples);
    // The canceller first: it adapts while the bot played at the delay (the cell about to be there)
    // and the caller did not talk in the last cell, unless the echo left the delay and is being looked
    // for (the delay may be wrong: adapting there pulls the filter off the path, which then has to be
    // acquired anew; docs/calls.md, _Gaps in the far end's playout_).
    const delay = this.delay.cells;
    const adapt =
      delay !== undefined &&
      this.history.played(Math.max(0, delay - 1)) &&
      !this.callerBefore &&
      !this.search.searchingLost;
    this.cancellation.process(inbound, reference, offset, adapt);
    const refTotal = this.analyser.push(inbound, reference, offset, this.inBands, this.refBands);
    const refOn = this.history.push(this.refBands, refTotal);
    // The caller's side: its noise floor, and bits.
    let inTotal = 0;
    for (let b = 0; b < BANDS; b++) inTotal += this.inBands[b]!;
    const noiseTotal = this.noise.push(this.inBands);
    const inBits = this.inBits.bits(this.inBands);
    const inOn = inTotal > noiseTotal * IN_ACTIVE;
    if (inOn) this.inBits.learn();
    if (refOn) this.status.hear(inTotal, noiseTotal);
    if (inOn && this.delay.track(inBits, this.history)) this.status.pathMoved(this.loss.meanDb());
    const settledDelay = this.settled ? this.delay.cells : undefined;
    if (this.gaps.watch(settledDelay, this.history, this.loss, this.inBands, this.noise.bands))
      this.widen(settledDelay! - SLOP_CELLS, settledDelay! + SLOP_CELLS + MAX_GAP_CELLS, true);
    if (this.delay.cells !== undefined) this.trackLoss(this.delay.cells);
    this.steer();
    const cell = this.judge(noiseTotal);
    this.callerBefore = (cell & HOLDS_CALLER) !== 0;
    // Only what the echo (within the wide slop) explains tells where it is: not the caller, nor a key.
    if (inOn && this.search.searching && !(cell & HOLDS_CALLER)) this.realign(inBits);
  }

  /**
   * A cell at `delay`: a reply's start (the bot at the delay after a quiet) opens a search; while one
   * lasts, or a gap holds, the loss is left alone; otherwise it and what the canceller leaves follow.
   */
  private trackLoss(delay: number): void {
    // A reply starts where the bot plays after a quiet at the soonest lag a reply placed early may
    // show at: its echo can come up to `START_SLOP_CELLS` before the reference at the delay plays.
    if (!this.history.played(Math.max(0, delay - START_SLOP_CELLS))) this.search.quiet();
    else if (this.search.plays()) this.widen(delay - START_SLOP_CELLS, delay + START_SLOP_CELLS);
    if (!this.history.played(delay)) return;
    if (this.search.hold()) {
      // The loss is left alone, but what the canceller leaves of this reply's echo is followed from
      // its first cells: a reply placed afresh a part of a cell off leaves the canceller off the path.
      this.cancellation.track(this.callerBefore, this.inBands, this.noise.bands);
      return;
    }
    this.delay.settle();
    this.loss.countCell();
    // A gap in the far end's playout says nothing of the echo's loss (until it lasts too long for one).
    if (this.gaps.holding) return;
    this.loss.update(delay, this.history, this.inBands, this.noise.bands, this.callerBefore);
    this.cancellation.track(this.callerBefore, this.inBands, this.noise.bands);
  }

  /** The canceller runs on a settled path loud enough to need it. */
  private steer(): void {
    this.cancellation.steer(this.settled ? this.delay.cells : undefined, this.loss.meanDb());
  }

  /** This cell's verdict (`HOLDS_ECHO`, `HOLDS_CALLER`), against the echo predicted as far as it is known. */
  private judge(noiseTotal: number): number {
    const delay = this.settled ? this.delay.cells : undefined;
    if (delay === undefined) {
      // No delay known: any lag may hold the echo, as loud as a hybrid's loss lets it be; none was
      // found, or the line has shown none (a chance match settling), it may still be there, under what
      // the search sees.
      const found = this.delay.cells !== undefined;
      const gain = this.status.unknownGain(found, this.history, noiseTotal);
      // A call's first seconds: the echo as bounded lag by lag (echo/echo-bound.ts); later, on a line
      // whose path is still unknown, the bot at its loudest again, which costs a tenth as much; and so
      // on a clean line, where the detector heeds no verdict (Silero judges it as a silent line).
      if (this.status.playedCells <= BOUND_CELLS && !this.status.wasClean(found))
        this.verdict.predictBounded(this.inBands, this.history, this.bound, gain);
      else this.verdict.predictUnknown(this.history, gain);
    } else {
      const searching = this.search.searching;
      let lo = searching ? this.search.from : delay - SLOP_CELLS;
      let hi = searching ? this.search.to : delay + SLOP_CELLS;
      // A faint echo is predicted at every lag it may be at unseen: any lag up to the delay (a delay the
      // search settled on may be a chance match, so close to the noise is the echo), and as far after
      // it as a gap in the far end's playout reaches.
      if (this.faint) {
        lo = 0;
        hi = Math.max(hi, delay + SLOP_CELLS + MAX_GAP_CELLS);
      }
      this.verdict.predict(
        this.history,
        this.loss,
        lo,
        hi,
        this.cancellation.judging(searching) ? this.cancellation : undefined,
      );
    }
    return this.verdict.judgeCell(this.inBands, this.noise.line, noiseTotal);
  }

  /** The echo is looked for over lags `lo`…`hi` (`lost`: it left the delay, and may be back at once). */
  private widen(lo: number, hi: number, lost = false): void {
    this.search.widen(lo, hi, lost);
    if (lost) this.loss.recover();
  }

  /** The wide search's cell; when it moves the delay, the delay search and the canceller follow. */
  private realign(inBits: number): void {
    if (!this.search.realign(inBits, this.history, this.delay.cells!)) return;
    const { movedTo, movedBy } = this.search;
    this.delay.moveTo(movedTo);
    this.delay.shift(movedBy);
    // The whole path moved (a gap, the reference moved): the canceller keeps its taps there, to a cell.
    // A reply placed afresh may be off by any part of a cell: aimed anew.
    if (this.search.lost) this.cancellation.follow(movedBy * this.hop);
    else this.cancellation.aimAgain();
  }

  /**
   * The echo now comes `samples` later against the reference, if the delay followed the far end (it
   * did not when the echo is too soft to see a gap in: the reference is then right again, the delay
   * with it). The canceller, locked on the echo itself, moves with it. A move of a cell or two is
   * made; a longer one is looked for, as at a reply's start, over the lags from the delay to the
   * delay moved, and the realign moves the delay to the better of them.
   */
  private move(samples: number): void {
    this.cancellation.move(samples);
    const k = this.moves.wholeCells(samples);
    if (k === 0) return;
    const delay = this.delay.cells;
    if (Math.abs(k) > SLOP_CELLS) {
      if (delay !== undefined)
        this.widen(Math.min(delay, delay + k) - SLOP_CELLS, Math.max(delay, delay + k) + SLOP_CELLS, true);
      return;
    }
    this.delay.shift(k);
    if (delay !== undefined) this.delay.moveTo(Math.max(0, Math.min(LAGS - 1, delay + k)));
  }
}
