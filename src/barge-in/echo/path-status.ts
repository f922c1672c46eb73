/**
 * What is known of the echo path, beyond its delay and loss: whether one has ever settled on this call
 * (a path that moves then settles under the detector's cautious rule), and until a delay is found,
 * whether there is any echo at all. A line whose level stayed near its noise floor while the bot talked
 * has none (`absent`: a carrier cancelled it); one that stayed closer still is `clean`, and what rises
 * over its noise there is not the bot. Figures: docs/calls.md, _Before the path is known_ and _A clean
 * line_.
 */
import { BANDS, MEAN_ALPHA } from './cells.js';
import type { ReferenceHistory } from './reference-history.js';

/**
 * Active reference cells with no delay found after which the echo counts as absent (≈ 2 s), provided
 * the caller's line stayed near its noise floor while the bot talked (its level over the floor, a
 * running mean in dB, under `ABSENT_BELOW_DB`): a line that gets louder whenever the bot talks has an
 * echo, found or not, and stays unconverged (its echo taken at its loudest).
 */
const ABSENT_AFTER_CELLS = 250;
const ABSENT_BELOW_DB = 3.5;
/**
 * A line without echo hovers around its floor while the bot talks; one with an echo 2 dB under its
 * noise that the search has not found rises over it, and Silero would take that echo for speech. Once
 * under this (after `ABSENT_AFTER_CELLS`), the line is clean until a delay is found: an echo that lets a
 * line get there is far under its noise, too weak for Silero. A line whose noise is not steady
 * never gets there, and keeps the estimator's veto.
 */
const CLEAN_BELOW_DB = 0.25;
/**
 * Until the path is found (the first second or two of the bot's speech on a call), the echo is taken
 * to be the bot at its loudest over every lag, this much quieter: 6 dB, a hybrid's worst loss. A caller
 * louder than that is heard after the same short run of speech as on a silent line.
 */
const UNCONVERGED_GAIN = 10 ** (-6 / 10);
/**
 * Where no delay was found, an echo may still be there, too weak for the search (about the line's
 * noise): up to this much under the bot at its loudest.
 */
const UNSEEN_GAIN = 10 ** (-20 / 10);
/**
 * …or as loud as the line's noise over the bot's usual level lets it hide, up to 12 dB under the bot: a
 * quiet bot's echo on a noisy line (Flite's, 7 dB under eSpeak's, on a 12 dB path) sat at a −40 dBFS
 * line's noise, was never found, and passed for the caller 11 times in 2 min of `bench echo-offline`
 * (none with this). Up to a hybrid's worst (6 dB), eSpeak's talk-overs on a 10 dB SNR line slowed from
 * p95 264 to 1045 ms (295 ms with 12); up to 15 dB, `bench talkers 150` was cut 8–15 times a run (0–1).
 */
const MAX_UNSEEN_GAIN = 10 ** (-12 / 10);
/**
 * An echo path whose gain settled under this (dB, the mean over bands) never showed over the line: on a
 * line without echo, the caller's speech can match the bot's at some lag by chance, after a minute or
 * two of talking over it. When the delay then moves, the new one is judged as a first path, not as a
 * path that moved (the cautious rule's 400 ms), and as on a line with no echo in sight (`quietLine`).
 */
const INAUDIBLE_GAIN_DB = -45;

export class PathStatus {
  /** Cells the bot played in, and the running mean (dB) of the caller's level over its floor in them. */
  private activeCells = 0;
  private loudnessDb = 0;
  private foundAbsent = false;
  private foundClean = false;
  /** A path was known (settled) at some point on this call. */
  private everSettled = false;
  /**
   * The line has shown no echo: it was found clean, or the last path known never showed over it. A
   * delay found then is most likely a chance match of the caller's speech with the bot's, and while it
   * settles the echo is taken to be under what the search sees (`UNSEEN_GAIN`, as while absent), not
   * at a hybrid's worst (`UNCONVERGED_GAIN`). Cleared when an audible path moves.
   */
  private quietLine = false;

  /** Cells the bot played in on this call. */
  get playedCells(): number {
    return this.activeCells;
  }

  /** A path has settled before on this call. */
  get settledBefore(): boolean {
    return this.everSettled;
  }

  /** Whether a path is settled now (returned as given), remembered once it was. */
  settle(settled: boolean): boolean {
    this.everSettled ||= settled;
    return settled;
  }

  /** A cell the bot played in: the caller's line's total power, and its noise's. */
  hear(inTotal: number, noiseTotal: number): void {
    this.activeCells++;
    const overDb = Math.max(-10, Math.min(30, 10 * Math.log10((inTotal + 1e-6) / (noiseTotal + 1e-6))));
    this.loudnessDb += Math.max(MEAN_ALPHA, 1 / this.activeCells) * (overDb - this.loudnessDb);
  }

  /**
   * No echo: none found (`delayFound` false), the bot talked long enough, and the line stayed quiet
   * meanwhile. Once so, it stays so (the caller talking over the bot later makes the line loud) until a
   * delay is found.
   */
  absent(delayFound: boolean): boolean {
    if (delayFound) return false;
    this.foundAbsent ||= this.activeCells >= ABSENT_AFTER_CELLS && this.loudnessDb < ABSENT_BELOW_DB;
    return this.foundAbsent;
  }

  /** Absent, and once quiet enough while the bot talked that nothing the bot says can be in it. */
  clean(delayFound: boolean): boolean {
    if (!this.absent(delayFound)) return false;
    this.foundClean ||= this.loudnessDb < CLEAN_BELOW_DB;
    this.quietLine ||= this.foundClean;
    return this.foundClean;
  }

  /** Whether the line was found clean (as `clean` last found it), without looking again. */
  wasClean(delayFound: boolean): boolean {
    return !delayFound && this.foundAbsent && this.foundClean;
  }

  /**
   * With no settled path, how loud the echo may be against the bot at its loudest: a hybrid's worst;
   * or where none was found or the line has shown none, under what the search sees, but at least as
   * loud as an echo of the bot's usual level could be and hide in the line's noise (`noiseTotal`, the
   * line a caller must stand over, summed over bands with its bias, against the bot's usual power over
   * all bands, `history`: the line's loudness is how an echo shows, and the bot's strong bands stand
   * over a white noise first), up to `MAX_UNSEEN_GAIN`.
   */
  unknownGain(delayFound: boolean, history: ReferenceHistory, noiseTotal: number): number {
    if (!this.absent(delayFound) && !this.quietLine) return UNCONVERGED_GAIN;
    let usual = 0;
    for (let b = 0; b < BANDS; b++) usual += history.usualOf(b);
    // In whole dB: the first seconds' bound recomputes its gains whenever this changes.
    const db = Math.round(
      10 * Math.log10(Math.max(UNSEEN_GAIN, Math.min(MAX_UNSEEN_GAIN, noiseTotal / usual))),
    );
    return 10 ** (db / 10);
  }

  /**
   * A new delay replaced a known one, whose echo's mean gain was `meanLossDb`. A path whose echo never
   * showed over the line (a chance match on a line without echo) was no path: the new delay is judged
   * as a first one.
   */
  pathMoved(meanLossDb: number): void {
    const inaudible = meanLossDb < INAUDIBLE_GAIN_DB;
    if (inaudible) this.everSettled = false;
    this.quietLine = inaudible;
  }

  reset(): void {
    this.activeCells = 0;
    this.loudnessDb = 0;
    this.foundAbsent = false;
    this.foundClean = false;
    this.everSettled = false;
    this.quietLine = false;
  }
}
