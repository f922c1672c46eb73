/**
 * Echo estimation for barge-in: voxbridge knows what it played and when, so it does not need a full
 * echo canceller to tell the caller from the bot's own echo. Per call, the caller's audio and the
 * bot's audio as played (the reference) are cut into 8 ms cells and 14 bands from 250 Hz to 3.75 kHz:
 *
 * - **Delay**: each cell's spectrum is reduced to one bit per band (above or below that band's running
 *   mean), and the inbound bits are compared with the reference's at every lag up to
 *   `MAX_ECHO_DELAY_MS` (a leaky mean of the Hamming distance per lag, as WebRTC's delay estimator
 *   does). A lag clearly better than the others, held for a while, is the echo path's delay; a new one
 *   that stays better takes over (a transfer, a speakerphone). At each reply's start, whose placement
 *   on the playout clock may be a few tens of ms off the last one's, the echo is looked for within
 *   ±40 ms of the delay, and the delay follows the reply's own best match there.
 * - **Loss**: per band, the ratio of the caller's audio (less its noise floor) to the reference at that
 *   delay, tracked as a running median in dB (steps up and down alike, so a caller talking over the
 *   bot, or a pause, does not drag it): the echo's loss per band, colour of the path included.
 * - **Verdict**: the echo each cell should hold is the reference at the delay (the loudest of the five
 *   cells around it, for timing slop) times the loss. A band more than `ECHO_MARGIN_DB` above that
 *   echo plus its noise floor holds something the echo does not explain; a cell with enough such bands
 *   holds the caller, and so does a window with enough such cells, or whose cells summed hold enough
 *   bands a little over the summed echo and noise.
 *
 * - **Cancellation**: on a settled path with a loud echo, a short NLMS filter around the delay
 *   (canceller.ts) takes the echo out of the caller's audio, and a band whose residual stands over what
 *   the canceller leaves of the echo (tracked per band) holds the caller too, provided the caller's
 *   audio is a little over the echo predicted for it: a soft first syllable over a 6 dB hybrid.
 *
 * - **Gaps and moves**: a gap in the far end's playout makes the echo come later than the reference
 *   says, until the reference is placed afresh where the bot plays; either way the echo is looked for
 *   over the lags it may have moved to, rather than taken for the caller (see `GAP_MIN_CELLS`).
 *
 * Bits and medians are robust to G.711, line noise and a playout clock that is a few ms off, and cost
 * one 16 ms FFT (both signals at once) per 8 ms of audio. Until the delay is found (or found to be
 * absent: the reference played for a while and nothing in the caller's audio followed it) the verdict
 * says `converged: false` and the echo is taken at its loudest over every lag; while a path that moved
 * settles, it says `cautious` and the detector falls back to its cautious rule.
 */
import { fftPlan, type FftPlan } from '../audio/fft.js';
import { EchoCanceller } from './canceller.js';
import type { VadSampleRate } from './silero.js';

/**
 * How far ahead of the caller's audio the reference is taken (ms): reference sample i is the bot's
 * audio estimated to play at the caller's ear this long after inbound sample i was captured. Echo
 * delays are searched from −REFERENCE_ADVANCE_MS to MAX_ECHO_DELAY_MS − REFERENCE_ADVANCE_MS, so a
 * playout estimate that runs a little late does not hide the echo. Kept short: the reference of a chunk
 * is read when the chunk arrives, and a reply after a silence is written as it starts to play, so the
 * first `REFERENCE_ADVANCE_MS` of it are missing from the reference (at 100 ms their echo cut the bot
 * at the start of a reply on lines without noise).
 */
export const REFERENCE_ADVANCE_MS = 20;
/** The longest lag searched between the advanced reference and the caller's audio (ms). */
export const MAX_ECHO_DELAY_MS = 700;

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
   * No echo: none was found, and the line kept to its noise floor while the bot talked (within
   * `CLEAN_BELOW_DB`, stricter than the absent rule). What rises over the noise there is not the bot, so
   * a speech model may judge it; elsewhere a window the verdict calls not-caller is the echo's.
   */
  clean: boolean;
  /** The echo path's delay (ms, on the caller's timeline, reference advance removed) and mean loss (dB). */
  delayMs: number | undefined;
  erlDb: number | undefined;
}

/** One cell: the analysis hop (ms). A VAD window (32 ms) holds four. */
const HOP_MS = 8;
/** FFT bin width is 62.5 Hz at both rates (128 points at 8 kHz, 256 at 16 kHz). */
const FIRST_BIN = 4;
const BINS_PER_BAND = 4;
const BANDS = 14;
/** Lags searched, in cells. */
const LAGS = Math.round(MAX_ECHO_DELAY_MS / HOP_MS) + 1;
/**
 * The echo a cell holds is predicted from the loudest reference cell within this many cells of the
 * delay: the playout estimate of a new prompt lands a few ms from the last one's (more under load), and
 * the delay search takes a second to follow a step of a cell or two.
 */
const SLOP_CELLS = 2;
/**
 * The loss is measured against the loudest reference within this many cells of the delay: fewer than
 * the prediction's, so that the loss is not biased low by the slop (the echo of a steady vowel would
 * then be predicted under itself). Measured end to end (`bench echo-lines`, the 4 echo lines without
 * noise, 4 min of echo alone a run): ±2 cells, 12 false barge-ins, most at the start of replies (and in
 * another run, a line cut at the start of every reply); ±1, none in each of 3 runs.
 */
const LOSS_SLOP_CELLS = 1;
/**
 * A reply's start: each reply is placed on the playout clock afresh, and under load its estimate lands
 * 10–40 ms from the last one's (the path has not moved, its delay as seen has). So when the reference at
 * the delay plays again after `START_GAP_CELLS` of quiet, the echo is predicted from the loudest
 * reference within `START_SLOP_CELLS` of the delay (±40 ms) and the loss is left alone, while the bit
 * distance at each of those lags is summed over the reply's first `REALIGN_CELLS` cells that the echo
 * explains (not the caller, not a key) with the caller's line active. Then the delay moves to the best
 * of them when that one is a clear match (under `REALIGN_MAX_DISTANCE` bits a band, on a line with
 * little noise: a true alignment measures 0.05–0.15) and beats the delay by `REALIGN_QUALITY`; either
 * way the slop narrows again, at the latest after `START_CELLS` cells of the reply. Measured offline
 * (15 lines of echo alone, 130 s each, no noise to 10 dB SNR, each reply placed off by up to ±30 ms):
 * false barge-ins 31 → 5; ±45 ms (past the slop), 57 → 20; placed exactly, 2 → 1.
 */
const START_SLOP_CELLS = 5;
const START_CELLS = 60;
const START_GAP_CELLS = 20;
const REALIGN_CELLS = 20;
const REALIGN_MAX_DISTANCE = 0.3;
const REALIGN_QUALITY = 0.05;
/**
 * A gap in the far end's playout (its buffer ran dry: our frames came late, a stall at the gateway):
 * everything after it plays that much later, and so does its echo, while the reference (placed on our
 * playout clock) goes on as before until returned marks tell it, a second or two later. Its sign is a
 * run of cells where the echo, loud enough to show over the line, is missing (the far end played
 * nothing): `GAP_MIN_CELLS` in a row open it, and cells that tell nothing (the bot quiet at the delay)
 * do not end it; the echo showing again does. Once open, the echo is looked for from the delay to
 * `MAX_GAP_CELLS` beyond it (as at a reply's start: the prediction takes the loudest reference over
 * those lags, the loss is left alone, and the delay moves to the best match once the echo is back;
 * round after round until it is found or the search's time is up). The run's own length is no measure
 * of the gap: the bot may have paused at the delay while it began. A run longer than `MAX_GAP_CELLS` is
 * no gap: the echo got quieter, or went, and the loss follows it again. When the reference catches up
 * (`process`'s `moved`), the lags from the delay to the delay moved are searched the same way.
 * Measured offline (18 lines of 40–300 ms and 6–20 dB, no noise to 10 dB SNR, 75 s of echo alone each,
 * a gap of 20–200 ms every 3–6 s, the reference placed afresh 1.5 s after each as marks reveal it):
 * barge-ins on the echo alone 290 → 25 (the same lines without gaps: 6 before and after; the gap
 * search alone, the reference's moves not told: 144); 253 talk-overs on the same lines without gaps,
 * onset → decision p50 188 → 188 ms, p95 583 → 560–588 (runs differ by a window), at 10 dB SNR 250 /
 * 736 before and after. With the echo's sign at 6 dB over the noise rather than 7.8, 18 barge-ins,
 * but talk-overs at 10 dB SNR p50 / p95 263 / 933 ms: more false gaps, each a search that widens the
 * echo the caller is judged against; likewise in `bench echo-lines`.
 */
const GAP_MIN_CELLS = 2;
const MAX_GAP_CELLS = 30;
/** A band's echo shows over the line when predicted this much over its noise (7.8 dB)… */
const GAP_SHOWS = 6;
/** …and is missing when the caller's audio there is under this much over the noise (3 dB). */
const GAP_MISSING = 2;
/** Lags the realign may span: a reply's start (±`START_SLOP_CELLS`), or a gap and the slop around it. */
const WIDE_LAGS = Math.max(2 * START_SLOP_CELLS, 2 * SLOP_CELLS + MAX_GAP_CELLS) + 1;
/** Reference cells kept: every lag, and the wide slop beyond. */
const HISTORY = LAGS + WIDE_LAGS;
/** Before the delay is known, the echo is taken at its loudest over these lags (every lag, and a reply's slop). */
const UNKNOWN_LAGS = LAGS + START_SLOP_CELLS;
/** A reference cell plays (its energy over all bands, per sample², ≈ −55 dBFS). */
const REF_ACTIVE_POWER = (32768 * 10 ** (-55 / 20)) ** 2;
/** A band of an active reference cell counts for the loss when within this of the cell's loudest. */
const REF_BAND_RANGE = 10 ** (-30 / 10);
/** Leaky mean of each lag's bit distance: at least this weight on the newest cell. */
const DELAY_ALPHA = 0.02;
/** A lag needs this many comparisons before it may be chosen (≈ 0.6 s of the bot's speech). */
const MIN_LAG_UPDATES = 80;
/** The best lag must beat the median lag's distance by this much (bits per band), and be under MAX. */
const DELAY_QUALITY = 0.1;
const DELAY_MAX_DISTANCE = 0.36;
/** The lags' median distance is recomputed every this many cells. */
const MEDIAN_EVERY_CELLS = 8;
/** Cells a new best lag must hold before it replaces the current delay (≈ 0.2 s). */
const DELAY_SWITCH_CELLS = 25;
/**
 * Cells of the bot's speech at a new delay before the verdicts trust it: meanwhile the loss settles
 * (from `LOSS_START_DB`, too loud, so on the cautious side) and the echo is judged as when not converged.
 */
const SETTLE_CELLS = 60;
/**
 * Active reference cells with no delay found after which the echo counts as absent (≈ 2 s), provided
 * the caller's line stayed near its noise floor while the bot talked (its level over the floor, a
 * running mean in dB, under `ABSENT_BELOW_DB`): a line that gets louder whenever the bot talks has an
 * echo, found or not, and stays unconverged (its echo taken at its loudest).
 */
const ABSENT_AFTER_CELLS = 250;
const ABSENT_BELOW_DB = 3.5;
/**
 * A line without echo hovers around its floor while the bot talks (measured: −0.2 to 0.5 dB over it at
 * −30 to −50 dBFS of white noise); one with an echo 2 dB under its noise that the search has not found
 * rises 0.4 to 2.6 dB, and Silero would take that echo for speech. Once under this (after
 * `ABSENT_AFTER_CELLS`), the line is clean until a delay is found: an echo that lets a line get there is
 * some 10 dB under its noise, too weak for Silero. A line whose noise is not steady never gets there,
 * and keeps the estimator's veto.
 */
const CLEAN_BELOW_DB = 0.25;
/**
 * Until the path is found (the first second or two of the bot's speech on a call), the echo is taken
 * to be the bot at its loudest over every lag, this much quieter: 6 dB, a hybrid's worst loss. A caller
 * louder than that is heard after the same short run of speech as on a silent line. Measured on calls'
 * first 4 s (onsets 0.3–2 s in, lines of 40–300 ms and 6–30 dB, no noise to 10 dB SNR, 12 calls per
 * line): the echo alone barges in at the start of 9 % of calls, against 33 % at 12 dB with the 400 ms
 * rule, and onset → decision takes p50 220–340 / p90 320–910 ms per line, against 370–760 / 440–1610.
 */
const UNCONVERGED_GAIN = 10 ** (-6 / 10);
/**
 * Where no delay was found, an echo may still be there, too weak for the search (about the line's
 * noise): up to this much under the bot at its loudest.
 */
const UNSEEN_GAIN = 10 ** (-20 / 10);
/** The caller's line counts for the delay search when this much over its noise floor (≈ 3 dB). */
const IN_ACTIVE = 1.25;
/** Running means of the bit thresholds: weight on the newest active cell. */
const MEAN_ALPHA = 0.02;
/**
 * An echo path whose gain settled under this (dB, the mean over bands) never showed over the line: on a
 * line without echo, the caller's speech can match the bot's at some lag by chance, after a minute or
 * two of talking over it. When the delay then moves, the new one is judged as a first path, not as a
 * path that moved (the cautious rule's 400 ms), and as on a line with no echo in sight (see
 * `quietLine`). Measured offline (30 talk-overs, 130 s, no noise, no echo): onset → decision p95
 * 369 → 320 ms, max 800 → 369; with `quietLine`, 275 ms and 275, as with the bot silent.
 */
const INAUDIBLE_GAIN_DB = -45;
/** Loss median tracker: step (dB), growing with a streak of steps one way, up to MAX. */
const LOSS_STEP_DB = 0.3;
const LOSS_MAX_STEP_DB = 3;
/**
 * Upward, the streak does not speed the loss past `LOSS_STEP_DB` a cell (37 dB/s), except for
 * `LOSS_RECOVER_CELLS` of the bot at the delay after the echo left it (a gap in the far end's playout,
 * the reference moved), when the echo may be back at full strength at once. A caller talking over a
 * 6 dB echo in noise 10 dB under the caller is taken for the echo in the windows the margins do not
 * pass, and in those, at full pace, the loss climbed 2 dB within 0.4 s of speech: the rest of the
 * words were judged against an echo 2 dB too loud. Measured offline (447 talk-overs over 18 lines of
 * 40–300 ms and 6–20 dB, no noise to 10 dB SNR, a 160 ms run): onset → decision p95 281 → 263 ms, at
 * 10 dB SNR 342 → 291 (max 911 → 342); barge-ins on 22.5 min of echo alone 6 → 6; with a gap in the
 * far end's playout every 3–6 s, 28 → 40 (66 without the recovery). Under load (`bench talkers 200`,
 * a 128 ms run, in a build that also took looser first paths) it held false barge-ins down too: 10,
 * 20, 10, 0 and 0 in five runs without it, 2 to 7 in seven with it.
 */
const LOSS_RECOVER_CELLS = 250;
/**
 * While the last cell held the caller, the echo may only get louder by this much a cell (12.5 dB/s),
 * without the streak's acceleration: the caller talking over the bot is not its echo getting louder,
 * and at full pace dragged a 12 dB path's loss to 6 dB within the talk-over, so that the rest of the
 * caller's words were judged against an echo 6 dB too loud. A path that really got louder is still
 * followed within a second. Measured offline (30 talk-overs, 130 s a line): onset → decision p95 at
 * 20 dB SNR 309 → 275 ms (150 ms / 12 dB) and 401 → 384 (40 ms / 6 dB, max 597 → 401); without noise,
 * 40 ms / 6 dB 309 → 273; false barge-ins on echo alone unchanged (1 in 15 lines × 130 s; 0 with
 * replies placed ±30 ms off).
 */
const LOSS_CALLER_STEP_DB = 0.1;
/** The loss a band starts at (dB): as loud as the bot, the cautious guess. */
const LOSS_START_DB = 0;
const LOSS_FLOOR_DB = -70;
/**
 * Noise floor: the minimum of the smoothed band power over the current block of cells and the one
 * before (1–2 s): speech, the bot's echo included, has pauses within that; a noisier line (or one back
 * from a dropout's digital silence) raises it within two blocks.
 */
const NOISE_SMOOTH = 0.3;
const NOISE_BLOCK_CELLS = 125;
/** The floor from minimum statistics sits under the mean noise: this puts it back (≈ 3 dB). */
const NOISE_BIAS = 2;
/** A band holds the caller when above the predicted echo by this much, plus its noise by NOISE_MARGIN. */
const ECHO_MARGIN_DB = 8;
/** Of the predicted echo's power, the share every band is taken to hold at least (−25 dB). */
const ECHO_SPREAD = 10 ** (-25 / 10);
const NOISE_MARGIN = 3;
/**
 * The same over a whole window (four cells' powers summed per band, which vary less than one cell's):
 * a band over the summed echo by `POOLED_ECHO_MARGIN_DB` and over its noise by `POOLED_NOISE_MARGIN_DB`,
 * in `POOLED_CALLER_BANDS` bands, makes the window the caller's too. A soft onset over a loud echo or
 * a noisy line stays a little over them through the window rather than far over them in two cells.
 * Measured offline (30 talk-overs a line, echo alone over 130 s a line, 15 lines): at 10 dB SNR onset
 * → decision p95 864 → 416 ms on 150 ms/12 dB and 981 → 896 on 40 ms/6 dB; false barge-ins 1 → 1.
 */
const POOLED_ECHO_MARGIN_DB = 7;
const POOLED_NOISE_MARGIN_DB = 2;
const POOLED_CALLER_BANDS = 3;
/** Bands over the line that make a cell the caller's; cells that make a window the caller's. */
const CALLER_BANDS = 2;
const CALLER_CELLS = 2;
/** A cell may hold echo when its predicted echo is at least this fraction of the noise floor. */
const ECHO_VS_NOISE = 0.5;

/**
 * The canceller (canceller.ts) runs on a settled path whose echo is louder than this (dB, the mean gain
 * over bands): a quieter echo leaves the caller far over it already.
 */
const CANCEL_ABOVE_DB = -24;
/** Cells of the bot's speech after the canceller locked before its residual is judged (≈ 0.2 s). */
const RESIDUAL_SETTLE_CELLS = 25;
/**
 * What the canceller leaves of the echo, per band: the ratio (dB) of the residual to the caller's
 * audio, both less the noise, over cells where the echo stands over the noise and the caller did not
 * talk, followed fast when it rises (`CANCEL_ATTACK` of the way a cell: a canceller that lost the path,
 * a reply placed a few ms off, leaves the echo at once) and slowly when it falls; never taken for less
 * than 20 dB under the echo (what it leaves is its error and the codec's noise, which vary from cell
 * to cell by 10–30 dB). Measured in `bench echo-lines` with a slow mean instead (weight 0.05 both
 * ways): 3 false barge-ins in a minute on the 40 ms / 6 dB line at 10 dB SNR, whose replies' placement
 * the realign cannot follow in that noise.
 */
const CANCEL_ATTACK = 0.3;
const CANCEL_RELEASE = 0.05;
const MAX_CANCELLATION = 10 ** (-20 / 10);
/**
 * With the canceller working, a band holds the caller when its residual is over the residual echo by
 * `ECHO_MARGIN_DB` (and the noise), provided the caller's audio itself is over the echo predicted for
 * it by `RAW_MARGIN_DB`: a canceller that lost the path (a reply placed afresh) leaves an echo no
 * louder than the one predicted, and that one alone does not pass for the caller.
 */
const RAW_MARGIN_DB = 3;

const ECHO_MARGIN = 10 ** (ECHO_MARGIN_DB / 10);
const RAW_MARGIN = 10 ** (RAW_MARGIN_DB / 10);
/** A cell's judgement, as flags: it may hold echo; it holds the caller. */
const CELL_ECHO = 1;
const CELL_CALLER = 2;
const POOLED_ECHO_MARGIN = 10 ** (POOLED_ECHO_MARGIN_DB / 10);
const POOLED_NOISE_MARGIN = 10 ** (POOLED_NOISE_MARGIN_DB / 10);

function popcount(x: number): number {
  x -= (x >>> 1) & 0x55555555;
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  return (((x + (x >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
}

/** The share of the bands whose bits differ between two cells' patterns (0 alike … 1 opposite). */
function bitDistance(a: number, b: number): number {
  return popcount((a ^ b) & ((1 << BANDS) - 1)) / BANDS;
}

/**
 * A 16 ms Hann-windowed FFT every 8 ms of both signals at once (the caller's audio as the real part,
 * the reference as the imaginary part of one transform, split by symmetry), reduced to band powers
 * (mean power per bin, in sample² units).
 */
class PairAnalyser {
  private readonly hop: number;
  private readonly inFrame: Float64Array;
  private readonly refFrame: Float64Array;
  private readonly resFrame: Float64Array;
  private readonly window: Float64Array;
  private readonly re: Float64Array;
  private readonly im: Float64Array;
  /** Its plan, kept: no look-up by length for each of its two or three transforms a cell. */
  private readonly fft: FftPlan;
  private readonly scale: number;

  constructor(sampleRate: VadSampleRate) {
    this.hop = (sampleRate * HOP_MS) / 1000;
    const n = this.hop * 2;
    this.inFrame = new Float64Array(n);
    this.refFrame = new Float64Array(n);
    this.resFrame = new Float64Array(n);
    this.window = Float64Array.from({ length: n }, (_, i) => 0.5 - 0.5 * Math.cos((2 * Math.PI * i) / n));
    this.re = new Float64Array(n);
    this.im = new Float64Array(n);
    this.fft = fftPlan(n);
    // Parseval with the Hann window's mean square (3/8): a band's value is the signal's power there.
    this.scale = 1 / (n * n * 0.375);
  }

  get hopSamples(): number {
    return this.hop;
  }

  /**
   * The next hop of each signal; writes the bands of the frames ending with them into `inBands` and
   * `refBands`, and returns the reference's total.
   */
  push(
    inbound: Int16Array,
    reference: Int16Array,
    offset: number,
    inBands: Float64Array,
    refBands: Float64Array,
  ): number {
    const { hop, inFrame, refFrame, re, im, window } = this;
    const n = re.length;
    inFrame.copyWithin(0, hop);
    refFrame.copyWithin(0, hop);
    for (let i = 0; i < hop; i++) {
      inFrame[hop + i] = inbound[offset + i]!;
      refFrame[hop + i] = reference[offset + i]!;
    }
    for (let i = 0; i < n; i++) {
      re[i] = inFrame[i]! * window[i]!;
      im[i] = refFrame[i]! * window[i]!;
    }
    this.fft.transform(re, im);
    let refTotal = 0;
    for (let b = 0; b < BANDS; b++) {
      let pIn = 0;
      let pRef = 0;
      const first = FIRST_BIN + b * BINS_PER_BAND;
      for (let k = first; k < first + BINS_PER_BAND; k++) {
        const ar = re[k]!;
        const ai = im[k]!;
        const br = re[n - k]!;
        const bi = im[n - k]!;
        // X[k] = (Z[k] + conj Z[n−k]) / 2, Y[k] = (Z[k] − conj Z[n−k]) / 2i.
        pIn += ((ar + br) ** 2 + (ai - bi) ** 2) / 4;
        pRef += ((ai + bi) ** 2 + (br - ar) ** 2) / 4;
      }
      // Both halves of the spectrum, per bin.
      inBands[b] = (2 * pIn * this.scale) / BINS_PER_BAND;
      refBands[b] = (2 * pRef * this.scale) / BINS_PER_BAND;
      refTotal += refBands[b]!;
    }
    return refTotal;
  }

  /** The next hop of a third signal (the canceller's residual), its bands into `bands`. */
  pushResidual(residual: Float64Array, bands: Float64Array): void {
    const { hop, resFrame, re, im, window } = this;
    const n = re.length;
    resFrame.copyWithin(0, hop);
    for (let i = 0; i < hop; i++) resFrame[hop + i] = residual[i]!;
    for (let i = 0; i < n; i++) {
      re[i] = resFrame[i]! * window[i]!;
      im[i] = 0;
    }
    this.fft.transform(re, im);
    for (let b = 0; b < BANDS; b++) {
      let p = 0;
      const first = FIRST_BIN + b * BINS_PER_BAND;
      for (let k = first; k < first + BINS_PER_BAND; k++) p += re[k]! * re[k]! + im[k]! * im[k]!;
      bands[b] = (2 * p * this.scale) / BINS_PER_BAND;
    }
  }

  reset(): void {
    this.inFrame.fill(0);
    this.refFrame.fill(0);
    this.resFrame.fill(0);
  }
}

export class EchoEstimator {
  private readonly analyser: PairAnalyser;
  private readonly inBands = new Float64Array(BANDS);
  private readonly refBands = new Float64Array(BANDS);
  /** Reference history, newest at `head`: band powers, bits, and whether the cell played. */
  private readonly refPower = new Float64Array(HISTORY * BANDS);
  private readonly refBits = new Uint32Array(HISTORY);
  private readonly refActive = new Uint8Array(HISTORY);
  private head = 0;
  /**
   * Per band, the loudest of the newest `UNKNOWN_LAGS` reference cells (the echo while no delay is
   * known), kept as the cells come in: a scan of them every cell cost more than the rest of the verdict.
   */
  private readonly refPeak = new SlidingMax(BANDS, UNKNOWN_LAGS);
  private readonly refMean = new Float64Array(BANDS);
  private readonly inMean = new Float64Array(BANDS);
  /** This cell's log band powers of the caller's audio, for its running means. */
  private readonly inLog = new Float64Array(BANDS);
  /** Per lag: leaky mean of the bit distance (fraction of bands), and how many updates. */
  private readonly distance = new Float64Array(LAGS).fill(0.5);
  private readonly updates = new Uint32Array(LAGS);
  private delayCells: number | undefined;
  /** Cells with the bot audible at the delay since it was (last) set. */
  private settledCells = 0;
  /** Reference cells at the delay quiet in a row; cells of a reply's start still to judge with the wide slop. */
  private quietCells = 0;
  private startCells = 0;
  /**
   * While `startCells` (a reply's start, a gap in the far end's playout, the reference moved): the lags
   * the echo is looked for at, and per lag among them the summed bit distance and its count; cells summed.
   */
  private wideLo = 0;
  private wideHi = 0;
  /** The search is for an echo known to have left the delay (a gap, a move): it goes on until found. */
  private lost = false;
  /** Cells of the bot at the delay still to come during which the loss may rise at full pace. */
  private recoverCells = 0;
  private readonly realignDistance = new Float64Array(WIDE_LAGS);
  private readonly realignCount = new Uint32Array(WIDE_LAGS);
  private realignCells = 0;
  /**
   * A run of cells where the echo should have shown over the line and did not (a playout gap), with
   * the cells between that told nothing: its length, how many of them showed the echo missing, and
   * whether this cell did.
   */
  private missingCells = 0;
  private missingSeen = 0;
  private missingNow = false;
  /** Cells processed, and moves of the echo against the reference to make when the count gets there. */
  private cells = 0;
  private readonly moves: Array<{ atCell: number; samples: number }> = [];
  /** Of the reference's moves, what does not make a whole cell yet (samples). */
  private pendingMove = 0;
  private candidate = -1;
  private candidateCells = 0;
  private activeCells = 0;
  /** Running mean (dB) of the caller's level over the noise floor while the bot plays. */
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
  /** The last cell held the caller. */
  private callerBefore = false;
  /** Per band: the echo's gain (dB) and the median tracker's streak (signed). */
  private readonly lossDb = new Float64Array(BANDS).fill(LOSS_START_DB);
  private readonly streak = new Int32Array(BANDS);
  /**
   * Per band, the echo's gain as a power ratio (`lossGain`) and the loss it was taken from: read two or
   * three times a cell, the loss changing at most once.
   */
  private readonly gain = new Float64Array(BANDS);
  private readonly gainOfDb = new Float64Array(BANDS).fill(Number.NaN);
  private readonly smoothed = new Float64Array(BANDS);
  private readonly noise = new Float64Array(BANDS);
  /** Minimum of the smoothed power per band in the current block, and in the one before. */
  private readonly blockMin = new Float64Array(BANDS);
  private readonly previousMin = new Float64Array(BANDS);
  private blockCells = 0;
  private started = false;
  private readonly sorted = new Float64Array(LAGS);
  private median = 0.5;
  private medianAge = 0;
  private readonly predicted = new Float64Array(BANDS);
  /** Per band, the echo a cell is judged against (before the margin). */
  private readonly line = new Float64Array(BANDS);
  private readonly pooledIn = new Float64Array(BANDS);
  private readonly pooledEcho = new Float64Array(BANDS);
  private readonly pooledNoise = new Float64Array(BANDS);
  /** The canceller, its residual for the cell and that residual's bands. */
  private readonly canceller: EchoCanceller;
  private readonly residual: Float64Array;
  private readonly resBands = new Float64Array(BANDS);
  /** Per band, once the canceller locked: what it leaves of the echo (dB). */
  private readonly cancelLeftDb = new Float64Array(BANDS);
  /** Cells of the bot at the delay since the canceller locked. */
  private lockedCells = 0;
  /** The realign moved the delay: the canceller is aimed again. */
  private reaim = false;
  /** Per band, the residual echo a cell is judged against. */
  private readonly resLine = new Float64Array(BANDS);

  constructor(readonly sampleRate: VadSampleRate) {
    this.analyser = new PairAnalyser(sampleRate);
    const hop = this.analyser.hopSamples;
    this.canceller = new EchoCanceller(sampleRate, hop, HISTORY * hop);
    this.residual = new Float64Array(hop);
  }

  /**
   * One VAD window of the caller's audio and the reference for the same span (equal lengths).
   * `moved`: the reference was placed afresh within this span while the bot talked (samples; see
   * `EchoReference.read`): the echo comes that much later against it from where that placement reaches
   * the delay (negative: sooner).
   */
  process(inbound: Int16Array, reference: Int16Array, moved = 0): EchoVerdict {
    if (inbound.length !== reference.length) throw new RangeError('inbound and reference lengths differ');
    const hop = this.analyser.hopSamples;
    if (moved !== 0) this.schedule(moved);
    let echoCells = 0;
    let callerCells = 0;
    const { pooledIn, pooledEcho, pooledNoise } = this;
    pooledIn.fill(0);
    pooledEcho.fill(0);
    pooledNoise.fill(0);
    for (let offset = 0; offset + hop <= inbound.length; offset += hop) {
      const cell = this.cell(inbound, reference, offset);
      if (cell & CELL_ECHO) echoCells++;
      if (cell & CELL_CALLER) callerCells++;
      for (let b = 0; b < BANDS; b++) {
        pooledIn[b] = pooledIn[b]! + this.inBands[b]!;
        pooledEcho[b] = pooledEcho[b]! + this.line[b]!;
        pooledNoise[b] = pooledNoise[b]! + this.noise[b]!;
      }
    }
    // The window as a whole: the four cells' powers summed vary less than one cell's, so a band that
    // stays a little over the echo and the noise through the window tells as much as one far over them
    // in a single cell (a soft onset over a loud echo or a noisy line).
    // Before the path is known, the echo is taken at its loudest already: no margin on top (as per cell).
    const echoMargin = this.settled ? POOLED_ECHO_MARGIN : 1;
    let pooledOver = 0;
    for (let b = 0; b < BANDS; b++) {
      const line = pooledEcho[b]! * echoMargin + pooledNoise[b]! * NOISE_BIAS * POOLED_NOISE_MARGIN;
      if (pooledIn[b]! > line) pooledOver++;
    }
    if (pooledOver >= POOLED_CALLER_BANDS) callerCells = Math.max(callerCells, CALLER_CELLS);
    const converged = this.settled || this.absent;
    const erlDb = this.delayCells === undefined ? undefined : -this.meanLossDb();
    return {
      echo: echoCells > 0,
      caller: callerCells >= CALLER_CELLS,
      converged,
      cautious: !converged && this.everSettled,
      clean: this.clean,
      delayMs: this.delayCells === undefined ? undefined : this.delayCells * HOP_MS - REFERENCE_ADVANCE_MS,
      erlDb,
    };
  }

  /**
   * No echo: the bot talked long enough, no delay stood out, and the line stayed quiet meanwhile. Once
   * so, it stays so (the caller talking over the bot later makes the line loud) until a delay is found.
   */
  private get absent(): boolean {
    if (this.delayCells !== undefined) return false;
    this.foundAbsent ||= this.activeCells >= ABSENT_AFTER_CELLS && this.loudnessDb < ABSENT_BELOW_DB;
    return this.foundAbsent;
  }

  /** Absent, and once quiet enough while the bot talked that nothing the bot says can be in it. */
  private get clean(): boolean {
    if (!this.absent) return false;
    this.foundClean ||= this.loudnessDb < CLEAN_BELOW_DB;
    this.quietLine ||= this.foundClean;
    return this.foundClean;
  }

  /** A delay is known and its loss has had time to settle. */
  private get settled(): boolean {
    const settled = this.delayCells !== undefined && this.settledCells >= SETTLE_CELLS;
    this.everSettled ||= settled;
    return settled;
  }

  reset(): void {
    this.settledCells = 0;
    this.quietCells = 0;
    this.startCells = 0;
    this.analyser.reset();
    this.refPower.fill(0);
    this.refBits.fill(0);
    this.refActive.fill(0);
    this.head = 0;
    this.refPeak.clear();
    this.distance.fill(0.5);
    this.updates.fill(0);
    this.delayCells = undefined;
    this.candidate = -1;
    this.candidateCells = 0;
    this.median = 0.5;
    this.medianAge = 0;
    this.activeCells = 0;
    this.loudnessDb = 0;
    this.foundAbsent = false;
    this.foundClean = false;
    this.everSettled = false;
    this.quietLine = false;
    this.lossDb.fill(LOSS_START_DB);
    this.streak.fill(0);
    this.callerBefore = false;
    this.blockCells = 0;
    this.started = false;
    this.canceller.reset();
    this.lockedCells = 0;
    this.reaim = false;
    this.recoverCells = 0;
    this.missingCells = 0;
    this.missingSeen = 0;
    this.missingNow = false;
    this.cells = 0;
    this.moves.length = 0;
    this.pendingMove = 0;
  }

  /**
   * The reference moved by `samples` at some point of the window about to be processed: the echo of
   * what it held before still comes at the old lag, that of what follows at the new one, so the move
   * is made when that point reaches the delay (the delay's length in cells from now, give or take the
   * window).
   */
  private schedule(samples: number): void {
    this.moves.push({ atCell: this.cells + (this.delayCells ?? 0), samples });
  }

  /** Moves whose time came. */
  private dueMoves(): void {
    const moves = this.moves;
    while (moves.length > 0 && this.cells >= moves[0]!.atCell) this.move(moves.shift()!.samples);
  }

  /**
   * The echo now comes `samples` later against the reference, if the delay followed the far end (it
   * did not when the echo is too soft to see a gap in: the reference is then right again, the delay
   * with it). The canceller, locked on the echo itself, moves with it. A move of a cell or two is
   * made; a longer one is looked for, as at a reply's start, over the lags from the delay to the
   * delay moved, and the realign moves the delay to the better of them.
   */
  private move(samples: number): void {
    this.canceller.move(samples);
    const hop = this.analyser.hopSamples;
    this.pendingMove += samples;
    const k = Math.round(this.pendingMove / hop);
    if (k === 0) return;
    this.pendingMove -= k * hop;
    const delay = this.delayCells;
    if (Math.abs(k) > SLOP_CELLS) {
      if (delay !== undefined)
        this.widen(Math.min(delay, delay + k) - SLOP_CELLS, Math.max(delay, delay + k) + SLOP_CELLS, true);
      return;
    }
    this.shiftLags(k);
    if (delay !== undefined) this.delayCells = Math.max(0, Math.min(LAGS - 1, delay + k));
  }

  /**
   * The echo came `k` cells later against the reference from now on: what the delay search learnt
   * per lag moves with it.
   */
  private shiftLags(k: number): void {
    const { distance, updates } = this;
    if (Math.abs(k) >= LAGS) {
      distance.fill(0.5);
      updates.fill(0);
    } else if (k > 0) {
      distance.copyWithin(k, 0, LAGS - k);
      updates.copyWithin(k, 0, LAGS - k);
      distance.fill(0.5, 0, k);
      updates.fill(0, 0, k);
    } else if (k < 0) {
      distance.copyWithin(0, -k);
      updates.copyWithin(0, -k);
      distance.fill(0.5, LAGS + k);
      updates.fill(0, LAGS + k);
    }
    if (this.candidate >= 0) {
      this.candidate += k;
      if (this.candidate < 0 || this.candidate >= LAGS) this.candidate = -1;
    }
    this.medianAge = 0;
  }

  /**
   * The echo is looked for over lags `lo`…`hi` as well (the prediction takes the loudest reference
   * there) until the realign finds where it is, the loss left alone meanwhile. A search under way goes
   * on over both spans, with what it has summed so far.
   */
  private widen(lo: number, hi: number, lost = false): void {
    const going = this.startCells > 0;
    this.lost = lost || (going && this.lost);
    if (lost) this.recoverCells = LOSS_RECOVER_CELLS;
    if (going) {
      lo = Math.min(lo, this.wideLo);
      hi = Math.max(hi, this.wideHi);
    }
    lo = Math.max(0, lo);
    hi = Math.min(HISTORY - 1, hi, lo + WIDE_LAGS - 1);
    this.startCells = START_CELLS;
    if (going && lo === this.wideLo && hi === this.wideHi) return;
    // The lags just added need their cells too: the count starts again (the sums are kept).
    this.realignCells = 0;
    if (going && lo === this.wideLo) {
      this.realignDistance.fill(0, this.wideHi - lo + 1);
      this.realignCount.fill(0, this.wideHi - lo + 1);
      this.wideHi = hi;
      return;
    }
    if (going) {
      // The sums move with the span's first lag; those for lags past its end are dropped.
      const by = this.wideLo - lo;
      this.realignDistance.copyWithin(by, 0, WIDE_LAGS - by).fill(0, 0, by);
      this.realignCount.copyWithin(by, 0, WIDE_LAGS - by).fill(0, 0, by);
      this.realignDistance.fill(0, hi - lo + 1);
      this.realignCount.fill(0, hi - lo + 1);
    } else {
      this.realignDistance.fill(0);
      this.realignCount.fill(0);
    }
    this.wideLo = lo;
    this.wideHi = hi;
  }

  /** The reference cell `lag` cells back from the newest (0 = newest). */
  private slot(lag: number): number {
    return (this.head - lag + HISTORY) % HISTORY;
  }

  private cell(inbound: Int16Array, reference: Int16Array, offset: number): number {
    this.cells++;
    if (this.moves.length > 0) this.dueMoves();
    // The canceller first: it adapts while the bot played at the delay (the cell about to be there)
    // and the caller did not talk in the last cell, unless the echo left the delay and is being looked
    // for (the delay may be wrong: adapting there pulls the filter off the path, which then has to be
    // acquired anew; offline, with a gap every 1–3 s, 52 → 32 acquisitions a minute, 98 → 81 µs a
    // window, barge-ins and talk-overs as before).
    const hop = this.analyser.hopSamples;
    const canceller = this.canceller;
    const before = canceller.state;
    const adapt =
      before !== 'off' &&
      this.delayCells !== undefined &&
      this.refActive[this.slot(Math.max(0, this.delayCells - 1))] === 1 &&
      !this.callerBefore &&
      !(this.lost && this.startCells > 0);
    canceller.process(inbound, reference, offset, hop, this.residual, adapt);
    const refTotal = this.analyser.push(inbound, reference, offset, this.inBands, this.refBands);
    if (canceller.state !== 'off') {
      this.analyser.pushResidual(this.residual, this.resBands);
      if (before === 'acquiring' && canceller.state === 'locked') {
        this.cancelLeftDb.fill(0);
        this.lockedCells = 0;
      }
    }
    const refOn = refTotal > REF_ACTIVE_POWER;
    // The reference history.
    this.head = (this.head + 1) % HISTORY;
    const at = this.head * BANDS;
    let refBits = 0;
    for (let b = 0; b < BANDS; b++) {
      const p = this.refBands[b]!;
      this.refPower[at + b] = p;
      const l = Math.log(p + 1e-3);
      if (refOn) this.refMean[b] = this.refMean[b]! + MEAN_ALPHA * (l - this.refMean[b]!);
      if (l > this.refMean[b]!) refBits |= 1 << b;
    }
    this.refPeak.push(this.refPower, at);
    this.refBits[this.head] = refBits;
    this.refActive[this.head] = refOn ? 1 : 0;
    // The caller's side: noise floor, and bits.
    let inBits = 0;
    let inTotal = 0;
    let noiseTotal = 0;
    for (let b = 0; b < BANDS; b++) {
      const p = this.inBands[b]!;
      inTotal += p;
      if (!this.started) this.smoothed[b] = p;
      this.smoothed[b] = this.smoothed[b]! + NOISE_SMOOTH * (p - this.smoothed[b]!);
      const s = this.smoothed[b]!;
      if (!this.started) this.previousMin[b] = s;
      this.blockMin[b] = this.blockCells === 0 ? s : Math.min(this.blockMin[b]!, s);
      this.noise[b] = Math.min(this.blockMin[b]!, this.previousMin[b]!);
      noiseTotal += this.noise[b]! * NOISE_BIAS;
      const l = Math.log(p + 1e-3);
      this.inLog[b] = l;
      if (!this.started) this.inMean[b] = l;
      if (l > this.inMean[b]!) inBits |= 1 << b;
    }
    this.started = true;
    if (++this.blockCells >= NOISE_BLOCK_CELLS) {
      this.previousMin.set(this.blockMin);
      this.blockCells = 0;
    }
    const inOn = inTotal > noiseTotal * IN_ACTIVE;
    if (inOn)
      for (let b = 0; b < BANDS; b++)
        this.inMean[b] = this.inMean[b]! + MEAN_ALPHA * (this.inLog[b]! - this.inMean[b]!);
    if (refOn) {
      this.activeCells++;
      const overDb = Math.max(-10, Math.min(30, 10 * Math.log10((inTotal + 1e-6) / (noiseTotal + 1e-6))));
      this.loudnessDb += Math.max(MEAN_ALPHA, 1 / this.activeCells) * (overDb - this.loudnessDb);
    }
    if (inOn) this.trackDelay(inBits);
    this.watchForGap();
    if (this.delayCells !== undefined) this.trackLoss();
    this.steer();
    const cell = this.judge(noiseTotal);
    this.callerBefore = (cell & CELL_CALLER) !== 0;
    // Only what the echo (within the wide slop) explains tells where it is: not the caller, nor a key.
    if (inOn && this.startCells > 0 && !(cell & CELL_CALLER)) this.realign(inBits);
    return cell;
  }

  /** Bit distance at every lag whose reference cell played; the delay when one lag stands out. */
  private trackDelay(inBits: number): void {
    for (let lag = 0; lag < LAGS; lag++) {
      const s = this.slot(lag);
      if (this.refActive[s] === 0) continue;
      const d = bitDistance(inBits, this.refBits[s]!);
      const n = ++this.updates[lag]!;
      const alpha = Math.max(DELAY_ALPHA, 1 / n);
      this.distance[lag] = this.distance[lag]! + alpha * (d - this.distance[lag]!);
    }
    let best = -1;
    for (let lag = 0; lag < LAGS; lag++) {
      if (this.updates[lag]! < MIN_LAG_UPDATES) continue;
      if (best < 0 || this.distance[lag]! < this.distance[best]!) best = lag;
    }
    if (best < 0) return;
    // The median lag moves slowly: sorted again every few cells.
    if (this.medianAge++ % MEDIAN_EVERY_CELLS === 0) {
      this.sorted.set(this.distance);
      this.sorted.sort();
      this.median = this.sorted[LAGS >> 1]!;
    }
    const median = this.median;
    const clear = this.distance[best]! < DELAY_MAX_DISTANCE && median - this.distance[best]! > DELAY_QUALITY;
    if (!clear) {
      this.candidateCells = 0;
      return;
    }
    // Within the prediction's slop the path is the same: a delay between two cells (150 ms is) wobbles
    // between its neighbours, by two cells while the caller talks over the bot. Only a move past that
    // is a new path, whose loss must settle (the cautious rule meanwhile). Measured offline (30
    // talk-overs, 130 s, lines of 150 ms / 12 dB and 40 ms / 6 dB at 20 dB SNR): onset → decision p95
    // 320 → 309 and 757 → 401 ms (max 1310 → 597); echo alone with each reply placed off by up to
    // ±30 ms (15 lines): false barge-ins 5 → 0. With ±1 cell, 150 ms lines went cautious every minute.
    if (this.delayCells !== undefined && Math.abs(best - this.delayCells) <= SLOP_CELLS) {
      this.delayCells = best;
      this.candidateCells = 0;
      return;
    }
    if (best === this.candidate) this.candidateCells++;
    else {
      this.candidate = best;
      this.candidateCells = 1;
    }
    if (this.candidateCells >= DELAY_SWITCH_CELLS) {
      // A path whose echo never showed over the line (a chance match of the caller's speech with the
      // bot's, on a line without echo) was no path: the new delay is judged as a first one.
      if (this.delayCells !== undefined) {
        const inaudible = this.meanLossDb() < INAUDIBLE_GAIN_DB;
        if (inaudible) this.everSettled = false;
        this.quietLine = inaudible;
      }
      this.delayCells = best;
      this.candidateCells = 0;
      this.settledCells = 0;
    }
  }

  /**
   * While the echo is looked for over the wide lags (a reply's start, a gap, the reference moved): the
   * bit distance at each of them from then on; once enough cells are in, the delay moves to the best
   * of them when it is a clear match, and the slop narrows again.
   */
  private realign(inBits: number): void {
    const { wideLo: lo, wideHi: hi } = this;
    for (let lag = lo; lag <= hi; lag++) {
      const s = this.slot(lag);
      if (this.refActive[s] === 0) continue;
      const d = bitDistance(inBits, this.refBits[s]!);
      const i = lag - lo;
      this.realignDistance[i] = this.realignDistance[i]! + d;
      this.realignCount[i] = this.realignCount[i]! + 1;
    }
    if (++this.realignCells < REALIGN_CELLS) return;
    // Mean distance per lag, among lags whose reference played in at least half the cells.
    const mean = (i: number): number =>
      this.realignCount[i]! < REALIGN_CELLS / 2
        ? Number.POSITIVE_INFINITY
        : this.realignDistance[i]! / this.realignCount[i]!;
    const at = Math.max(0, Math.min(hi - lo, this.delayCells! - lo));
    let best = at;
    for (let i = 0; i <= hi - lo; i++) if (mean(i) < mean(best)) best = i;
    if (best !== at && mean(best) < REALIGN_MAX_DISTANCE && mean(at) - mean(best) > REALIGN_QUALITY) {
      this.delayCells = lo + best;
      this.shiftLags(best - at);
      // The whole path moved (a gap, the reference moved): the canceller keeps its taps there, to a
      // cell; its health check aims it afresh if that was not close enough. Its residual is not judged
      // until it has stayed locked a while again: the taps moved by whole cells, and after a 120 ms gap
      // the delay moved one cell short of the path, whose echo the residual then held for 4 windows.
      // A reply placed afresh may be off by any part of a cell: aimed anew.
      if (this.lost) {
        this.canceller.move((best - at) * this.analyser.hopSamples);
        this.lockedCells = 0;
      } else this.reaim = true;
    } else if (this.lost && this.startCells > 0 && !(best === at && mean(at) < REALIGN_MAX_DISTANCE)) {
      // The echo left the delay and is not found back there yet: another round, on the cells from now
      // on, while the search lasts.
      this.realignDistance.fill(0);
      this.realignCount.fill(0);
      this.realignCells = 0;
      return;
    }
    this.startCells = 0;
  }

  /**
   * A gap in the far end's playout (see `GAP_MIN_CELLS`): cells where the bot played at the delay, its
   * echo as predicted would show over the line in a few bands, and the line holds only its noise
   * there. From a few in a row on, the echo is looked for up to `MAX_GAP_CELLS` beyond the delay.
   */
  private watchForGap(): void {
    const delay = this.delayCells;
    this.missingNow = false;
    if (delay === undefined || !this.settled) {
      this.missingCells = 0;
      this.missingSeen = 0;
      return;
    }
    let shows = 0;
    let missing = 0;
    if (this.refActive[this.slot(delay)] === 1)
      for (let b = 0; b < BANDS; b++) {
        const noise = this.noise[b]! * NOISE_BIAS;
        const echo = this.refAround(b, delay, LOSS_SLOP_CELLS) * this.lossGain(b);
        if (echo < noise * GAP_SHOWS) continue;
        shows++;
        if (this.inBands[b]! < noise * GAP_MISSING) missing++;
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
      return;
    }
    this.missingCells++;
    if (gap) this.missingSeen++;
    if (this.missingSeen < GAP_MIN_CELLS || this.missingCells > MAX_GAP_CELLS) return;
    this.widen(delay - SLOP_CELLS, delay + SLOP_CELLS + MAX_GAP_CELLS, true);
  }

  /** The echo's gain at the delay, the mean over bands (dB). */
  private meanLossDb(): number {
    let sum = 0;
    for (const l of this.lossDb) sum += l;
    return sum / BANDS;
  }

  /** The echo's gain in band `b` as it is now: `10 ** (lossDb / 10)`, worked out when the loss changed. */
  private lossGain(b: number): number {
    const db = this.lossDb[b]!;
    // Only ±0 are equal and differ, and both give 1.
    if (db !== this.gainOfDb[b]) {
      this.gainOfDb[b] = db;
      this.gain[b] = 10 ** (db / 10);
    }
    return this.gain[b]!;
  }

  /** The loudest reference band `b` within `slop` cells of the delay. */
  private refAround(b: number, delay: number, slop: number): number {
    return this.refOver(b, delay - slop, delay + slop);
  }

  /** The loudest reference band `b` over lags `lo`…`hi`. */
  private refOver(b: number, lo: number, hi: number): number {
    let max = 0;
    const last = Math.min(HISTORY - 1, hi);
    for (let lag = Math.max(0, lo); lag <= last; lag++) {
      const p = this.refPower[this.slot(lag) * BANDS + b]!;
      if (p > max) max = p;
    }
    return max;
  }

  /** Per band, the running median of (caller's audio − noise) / reference at the delay, in dB. */
  private trackLoss(): void {
    const delay = this.delayCells!;
    const s = this.slot(delay);
    if (this.refActive[s] === 0) {
      this.quietCells++;
      return;
    }
    if (this.quietCells >= START_GAP_CELLS) this.widen(delay - START_SLOP_CELLS, delay + START_SLOP_CELLS);
    this.quietCells = 0;
    if (this.startCells > 0) {
      this.startCells--;
      return;
    }
    this.settledCells++;
    if (this.recoverCells > 0) this.recoverCells--;
    // A gap in the far end's playout says nothing of the echo's loss (until it lasts too long for one).
    if (this.missingNow && this.missingCells <= MAX_GAP_CELLS) return;
    let loudest = 0;
    for (let b = 0; b < BANDS; b++) loudest = Math.max(loudest, this.refPower[s * BANDS + b]!);
    for (let b = 0; b < BANDS; b++) {
      const ref = this.refAround(b, delay, LOSS_SLOP_CELLS);
      if (ref < loudest * REF_BAND_RANGE) continue;
      const noise = this.noise[b]! * NOISE_BIAS;
      const above = this.inBands[b]! - noise;
      let up: boolean;
      if (above > noise) up = 10 * Math.log10(above / ref) > this.lossDb[b]!;
      // At the noise floor: evidence only when the echo, as estimated, would have shown above it.
      else if (ref * this.lossGain(b) > noise) up = false;
      else continue;
      if (up && this.callerBefore) {
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
    if (this.canceller.state === 'locked') this.trackCancellation();
  }

  /**
   * Per band, how much of the echo the canceller leaves (`CANCEL_ATTACK`), over cells where the echo
   * stands over the noise and the caller did not talk.
   */
  private trackCancellation(): void {
    this.lockedCells++;
    if (this.callerBefore) return;
    for (let b = 0; b < BANDS; b++) {
      const noise = this.noise[b]! * NOISE_BIAS;
      const above = this.inBands[b]! - noise;
      if (above < noise) continue;
      const left = Math.max(above * 1e-4, this.resBands[b]! - noise);
      const x = 10 * Math.log10(left / above);
      const alpha = x > this.cancelLeftDb[b]! ? CANCEL_ATTACK : CANCEL_RELEASE;
      this.cancelLeftDb[b] = this.cancelLeftDb[b]! + alpha * (x - this.cancelLeftDb[b]!);
    }
  }

  /**
   * The canceller runs on a settled path loud enough to need it, aimed at the delay when it starts, when
   * the realign moved the delay (a reply placed afresh) or when it lost the path.
   */
  private steer(): void {
    const canceller = this.canceller;
    if (!this.settled || this.meanLossDb() <= CANCEL_ABOVE_DB) {
      if (canceller.state !== 'off') canceller.stop();
      return;
    }
    if (canceller.state !== 'off' && !this.reaim && !canceller.lost) return;
    canceller.aim(this.delayCells! * this.analyser.hopSamples);
    this.reaim = false;
  }

  /**
   * On a settled path (the caller checks), the canceller's residual is judged: it locked a while ago,
   * and no reply is starting.
   */
  private get cancelling(): boolean {
    return (
      this.canceller.state === 'locked' && this.lockedCells >= RESIDUAL_SETTLE_CELLS && this.startCells === 0
    );
  }

  /**
   * This cell: may it hold echo (`CELL_ECHO`), and does it hold more than the echo and the noise
   * explain (`CELL_CALLER`)? Flags, not an object: this runs every 8 ms of every call.
   */
  private judge(noiseTotal: number): number {
    const delay = this.settled ? this.delayCells : undefined;
    // No delay known: any lag may hold the echo, as loud as a hybrid's loss lets it be; none was
    // found, or the line has shown none (a chance match settling), it may still be there, under what
    // the search sees.
    const unknownGain =
      delay !== undefined ? 0 : this.absent || this.quietLine ? UNSEEN_GAIN : UNCONVERGED_GAIN;
    const echo = this.predicted;
    const cancelling = delay !== undefined && this.cancelling;
    let echoTotal = 0;
    let resTotal = 0;
    for (let b = 0; b < BANDS; b++) {
      let e: number;
      if (delay !== undefined) {
        const ref =
          this.startCells > 0
            ? this.refOver(b, this.wideLo, this.wideHi)
            : this.refAround(b, delay, SLOP_CELLS);
        e = ref * this.lossGain(b);
        if (cancelling) {
          const left = Math.min(1, Math.max(MAX_CANCELLATION, 10 ** (this.cancelLeftDb[b]! / 10)));
          this.resLine[b] = e * left;
          resTotal += this.resLine[b]!;
        }
      } else {
        // The newest UNKNOWN_LAGS cells of the ring. Slots of the ring not written since the reset
        // hold 0, and no power is less: the loudest of the cells written is the loudest of the slots.
        e = this.refPeak.max(b) * unknownGain;
      }
      echo[b] = e;
      echoTotal += e;
    }
    // The echo is never cleaner than the line: codec noise and the path's distortion spread a little
    // of it over every band, which the reference does not have.
    const spread = (echoTotal * ECHO_SPREAD) / BANDS;
    // Not converged, the echo is taken at its loudest already: no margin on top.
    const margin = delay === undefined ? 1 : ECHO_MARGIN;
    const resSpread = (resTotal * ECHO_SPREAD) / BANDS;
    let over = 0;
    for (let b = 0; b < BANDS; b++) {
      this.line[b] = Math.max(echo[b]!, spread);
      const noise = this.noise[b]! * NOISE_BIAS * NOISE_MARGIN;
      if (cancelling) this.resLine[b] = Math.max(this.resLine[b]!, resSpread);
      if (this.inBands[b]! > this.line[b]! * margin + noise) over++;
      else if (cancelling) {
        // What the canceller leaves: over what it leaves of the echo, the caller's audio being over
        // the echo predicted for it.
        if (
          this.inBands[b]! > this.line[b]! * RAW_MARGIN + noise &&
          this.resBands[b]! > this.resLine[b]! * ECHO_MARGIN + noise
        )
          over++;
      }
    }
    return (
      (echoTotal >= noiseTotal * ECHO_VS_NOISE ? CELL_ECHO : 0) | (over >= CALLER_BANDS ? CELL_CALLER : 0)
    );
  }
}

/**
 * Per lane, the largest of the last `span` values pushed (0 before any; the values must not be NaN):
 * a monotonic deque per lane, of the values that may still be the largest, oldest and largest first,
 * each with when it was pushed. Amortised a few steps a value, where a scan costs `span`.
 */
class SlidingMax {
  /** Per lane, a ring of `span` entries from `first` on, `count` of them: the values and their times. */
  private readonly values: Float64Array;
  private readonly times: Float64Array;
  private readonly first: Int32Array;
  private readonly count: Int32Array;
  /** Values pushed per lane since the last clear. */
  private pushed = 0;

  constructor(
    private readonly lanes: number,
    private readonly span: number,
  ) {
    this.values = new Float64Array(lanes * span);
    this.times = new Float64Array(lanes * span);
    this.first = new Int32Array(lanes);
    this.count = new Int32Array(lanes);
  }

  /** The next value of each lane: `from[at + lane]`. */
  push(from: Float64Array, at: number): void {
    const { values, times, span } = this;
    const now = this.pushed++;
    for (let lane = 0; lane < this.lanes; lane++) {
      const base = lane * span;
      let first = this.first[lane]!;
      let count = this.count[lane]!;
      // The oldest leaves the window (one at most: times are consecutive).
      if (count > 0 && times[base + first]! <= now - span) {
        first = first + 1 === span ? 0 : first + 1;
        count--;
      }
      // Those no larger than the new value can no longer be the largest.
      const v = from[at + lane]!;
      while (count > 0) {
        const last = first + count - 1;
        if (values[base + (last >= span ? last - span : last)]! > v) break;
        count--;
      }
      const end = first + count;
      const slot = base + (end >= span ? end - span : end);
      values[slot] = v;
      times[slot] = now;
      this.first[lane] = first;
      this.count[lane] = count + 1;
    }
  }

  /** The largest of lane `lane`'s last `span` values. */
  max(lane: number): number {
    return this.count[lane]! > 0 ? this.values[lane * this.span + this.first[lane]!]! : 0;
  }

  clear(): void {
    this.first.fill(0);
    this.count.fill(0);
    this.pushed = 0;
  }
}
