// Over 450 lines: one call's window-by-window decision (gate, suppressor, Silero, echo verdict, runs, turns) reads best whole; its parts live beside it.
/**
 * Finds where a caller starts talking, for barge-in: the energy gate decides which windows deserve a
 * look, Silero decides whether they are speech (hearing them through the noise suppressor, which keeps
 * up with the line's noise on every window and cleans those Silero hears), and a run of speech long
 * enough (longer while the bot is audible, so its own echo does not interrupt it) is reported once, with
 * the time it began on the inbound timeline. Re-armed after a silence.
 *
 * Pushes are processed in order, one after another, whatever their size. Work is bounded: a window
 * whose turn comes while the detector is behind skips Silero and is judged by the gate alone, which
 * costs microseconds, until the detector has caught up. Behind means more than `MAX_QUEUED_WINDOWS`
 * windows pushed and not yet processed (a caller that does not wait for its pushes), or more than
 * `MAX_LAG_MS` of lag built up by windows that took longer to process than they last (the model is
 * shared, so this is every call's load: a caller that waits for each push falls behind the line by that
 * much). The gate alone never starts a run of speech (tones and clicks open it); it only carries on one
 * that Silero began, or ends one.
 */
import { DtmfToneDetector } from '../audio/dtmf.js';
import { isClick } from '../audio/level.js';
import type { EchoVerdict } from './echo.js';
import { EnergyGate } from './energy-gate.js';
import { NoiseSuppressor } from './noise-suppressor.js';
import type { EchoStream, SileroModel, SileroStream, VadSampleRate } from './silero.js';

export interface DetectorOptions {
  sampleRate: VadSampleRate;
  /** Speech needed before it counts (ms). Default 128. */
  minSpeechMs?: number | undefined;
  /**
   * Speech needed while the bot is audible and its echo cannot be told apart (ms): no echo detection,
   * or no reference for the window. Default 400.
   */
  minSpeechWhileAudibleMs?: number | undefined;
  /**
   * Tell the caller from the bot's echo (echo.ts), with the reference each push carries: where the echo
   * explains a window, it is not speech; where it does not, `minSpeechMs` suffices while the bot
   * talks. Default false.
   */
  echo?: boolean | undefined;
  /**
   * Silero probability at which a window is speech. Default `SPEECH_THRESHOLD`; a window that may hold
   * the bot's echo needs `OVER_ECHO_THRESHOLD` (or this, if higher).
   */
  threshold?: number | undefined;
  /**
   * Take the line's steady noise out of what Silero hears (noise-suppressor.ts). Default true; false
   * for comparisons.
   */
  denoise?: boolean | undefined;
  /** The clock (ms) that times each window's processing, to tell when it falls behind. Default `performance.now`. */
  now?: () => number;
  /**
   * Told when a turn of the caller's ends: speech that was reported as an onset, then `endOfTurnMs` of
   * silence. Unset: turns are not tracked.
   */
  onTurnEnd?: ((turn: SpeechTurn) => void) | undefined;
  /**
   * Told after each push, from the caller's first onset on, of the silence since their last speech
   * (`callerSilence`), across the ends of turns: what a rule that ends turns by their words reads.
   */
  onSilence?: ((silence: CallerSilence) => void) | undefined;
  /** Silence that ends a turn (ms). Default 700. */
  endOfTurnMs?: number | undefined;
  /**
   * Lag (ms) past which Silero is skipped (`MAX_LAG_MS`, the default). Infinity never skips it: a test
   * that compares verdicts, not lateness, on a machine whose load it does not control.
   */
  maxLagMs?: number | undefined;
}

/** One turn of the caller's, on the inbound timeline. */
export interface SpeechTurn {
  /** Where its speech began (its first onset's `speechStartMs`). */
  startMs: number;
  /** Where its last speech ended (the start of the silence that ended it). */
  endMs: number;
  /** Where that silence reached `endOfTurnMs`: when the turn was known to be over. */
  decidedMs: number;
}

/**
 * The silence since the caller last spoke, on the inbound timeline (ms), whether a turn is under way
 * or the detector's own `endOfTurnMs` ended it: a relay that ends turns by their words waits longer
 * than that when the words say so (endpointing.ts).
 */
export interface CallerSilence {
  /** Where the silence began (the end of the caller's last speech); meaningless while `quietMs` is 0. */
  readonly fromMs: number;
  /** How long it has lasted: whole windows; 0 while the caller speaks. */
  readonly quietMs: number;
}

/** The silence a turn under way ends in so far, on the inbound timeline (ms). */
export interface TurnSilence {
  readonly turnStartMs: number;
  /** Where the silence began (the end of the caller's last speech). */
  readonly fromMs: number;
  /** How long it has lasted: whole windows, so `fromMs + quietMs` is the end of the last one judged. */
  readonly quietMs: number;
}

export interface PushInfo {
  /**
   * The inbound time of the chunk's first sample (ms), from the gateway's timestamps when it sends
   * them. Default: straight after the previous chunk (0 for the first).
   */
  timestampMs?: number | undefined;
  /** Whether the caller can hear the bot right now (from the playout clock, not from synthesis). */
  botAudible: boolean;
  /**
   * The bot's audio as played for the same span (same length, see echo.ts for its alignment), for a
   * detector with `echo`; absent while the bot has been quiet longer than any echo lasts.
   */
  reference?: Int16Array | undefined;
  /**
   * The reference was placed afresh within this chunk while the bot talked (samples at the detector's
   * rate, `EchoReference.read`): the bot's echo comes that much later against it from there on.
   */
  referenceMoved?: number | undefined;
  /**
   * How long the chunk waited before it reached the detector (ms): a VAD worker's queue. It counts as
   * lag (`MAX_LAG_MS`): a detector that gets its audio that late skips Silero until it gets it sooner.
   */
  waitedMs?: number | undefined;
}

/** A detector as a call uses it, wherever it runs (this thread, or a VAD worker's: pool.ts). */
export interface SpeechDetector {
  readonly sampleRate: VadSampleRate;
  /** The caller's audio in order; resolves with an onset when this chunk completed a run of speech. */
  push(samples: Int16Array, info: PushInfo): Promise<SpeechOnset | undefined>;
  /** Forgets everything (a new stream, or the caller's audio restarts); queued pushes resolve empty. */
  reset(): void;
  /** The call is over: frees what the detector holds, wherever it is. */
  close(): void;
}

/** Where calls' detectors come from: this thread's model, or the VAD worker pool. */
export interface DetectorSource {
  detector(options: DetectorOptions): SpeechDetector;
}

/** Detectors that run in this thread, on `model`. */
export function inThreadDetectors(model: SileroModel): DetectorSource {
  return { detector: (options) => new SpeechOnsetDetector(model, options) };
}

export interface SpeechOnset {
  /** Where the run of speech that confirmed it began, on the inbound timeline (ms): barge-in's onset. */
  onsetMs: number;
  /**
   * Where the caller's speech began (same timeline): the first run of speech since a silence of
   * `SPEECH_RESET_MS`, which may be earlier than `onsetMs` when shorter runs came first (syllables
   * with pauses between them, or windows the bot's echo hid, while the bot talked), at most
   * `MAX_SPEECH_LEAD_MS` earlier. Where a turn's audio starts.
   */
  speechStartMs: number;
  /** Where it was confirmed (the end of the deciding window), same timeline. */
  detectedMs: number;
  /** Silero's highest speech probability within the run. */
  probability: number;
}

export interface DetectorStats {
  /** Windows processed. */
  windows: number;
  /** Silero inferences run (windows, plus the earlier ones checked when it wakes). */
  inferences: number;
  /** Windows that would have woken Silero but were judged by the gate alone, the detector being behind. */
  skipped: number;
  /** Inferences or echo estimations that failed: their windows were judged by the gate alone. */
  failed: number;
  /** Windows the echo estimator judged, and those it found to hold the bot's echo alone. */
  echoWindows: number;
  echoOnly: number;
}

/**
 * Silero probability at which a window is speech. Lower than the model's customary 0.5: in line noise
 * Silero's probabilities for speech sink under it for long stretches, while the gate keeps it asleep
 * on the noise itself and the echo estimator on the bot's echo. In noise it catches more onsets, and
 * sooner, with no more false triggers on non-speech; on echo lines (0.5 kept over the echo) talk-overs
 * are decided sooner, with the same barge-ins on the echo alone (figures: docs/calls.md, «Barge-in», on
 * `SPEECH_THRESHOLD`).
 */
export const SPEECH_THRESHOLD = 0.3;
/**
 * The threshold for a window that may hold the bot's echo (the estimator predicts it over the line's
 * noise, or the bot is audible and there is no estimate): Silero hears the echo under anything else as
 * speech, and at 0.3 a burst of noise over it (a line going noisy, a loud hiss) made a run.
 */
export const OVER_ECHO_THRESHOLD = 0.5;
/**
 * A run of speech counts only once one of its windows reached this: hum, a key's tones after the line
 * went quiet, or a change of noise (pink after white, before the suppressor has followed it) hold
 * Silero between the threshold and this for a run's length, where speech gets over it within its first
 * syllables, also in loud noise through the suppressor. Onsets are caught as before, and fewer runs
 * come from non-speech: none from hum, what is left a loud white noise turning pink (figures:
 * docs/calls.md, «Barge-in», on `RUN_PEAK`).
 */
const RUN_PEAK = 0.5;
/** A window under this probability (or the threshold, if lower) ends a run of speech once enough follow. */
const SILENCE_BELOW = 0.35;
/** Non-speech within a run that does not end it (ms): gaps between syllables and a comma's pause. */
const RUN_GAP_MS = 250;
/**
 * On a path whose echo comes back this much under the bot (mean loss, dB) or more, windows the echo
 * alone explains end a run of speech once `ECHO_ENDS_RUN_WINDOWS` of them came since its last window
 * of speech, rather than counting as a gap in it. So faint an echo cannot hide a caller who talks over
 * it: the caller's syllables show over it, and a run whose speech comes in pairs of windows among the
 * echo's is the echo leaking past the estimator (under load, after a reply placed a few ms off): nearly
 * all the false barge-ins traced under load were on such faint echoes. On a loud echo a talk-over does
 * look like that (`ESEEESSEEES`), and the gap rule stays. Under load it cuts the false barge-ins on
 * echo lines and catches as many onsets (figures: docs/calls.md, «Barge-in», on `WEAK_ECHO_ERL_DB`).
 */
const WEAK_ECHO_ERL_DB = 14;
const ECHO_ENDS_RUN_WINDOWS = 2;
/**
 * A run of speech takes in up to `LEAD_IN_WINDOWS` windows just before it that Silero heard over the
 * line (the gate open; no echo alone, tone or click there) and put at `LEAD_IN_MIN_P` or more, short of
 * speech: the first consonants (the /ɛks/ of "Excuse me", a breathy "Sorry"), where Silero says speech
 * from the vowel on. They count toward its length, so the vowel confirms it sooner. Decisions come
 * sooner with and without echo, with about as many false barge-ins on the echo alone and runs on
 * non-speech. At a `LEAD_IN_MIN_P` of 0, faster still, but a change of noise made runs on non-speech.
 * Kept off the windows over the echo, it gained nothing on echo lines, so it takes them in (figures:
 * docs/calls.md, «Barge-in», on `LEAD_IN_WINDOWS`).
 */
const LEAD_IN_WINDOWS = 2;
const LEAD_IN_MIN_P = 0.1;
/** Silence that re-arms detection after an onset was reported (ms). */
const REARM_SILENCE_MS = 300;
/**
 * The runs of speech before the one that confirms an onset count as the start of the caller's speech
 * unless this much silence came after them (ms): the default silence that ends a turn. A caller who
 * talks over the bot ("Hi, yes, | I'd like…") is often confirmed only by a later, longer run (the
 * 400 ms rule over an unknown echo, or the echo hiding the first syllables), and the words before it
 * are part of the turn: a turn that started there lost them (issue 45, the first turn over a welcome).
 */
export const SPEECH_RESET_MS = 700;
/**
 * How much earlier than the confirming run the speech may be taken to begin (ms): the latest
 * detections over a talking bot come 1–2 s into a sentence; runs further back are not reached for
 * (on a line whose echo the detector cannot tell from the caller, they may be the bot's). A turn
 * recorder keeps at least this much audio, with its pre-roll, before an onset is reported.
 */
export const MAX_SPEECH_LEAD_MS = 2500;
/** Windows kept before the gate opens and checked first, so the onset is not missed by the gate. */
const PREROLL_WINDOWS = 2;
/**
 * A window whose loudest 1 ms holds half its energy is a click (the line's crackle, a knock), not
 * speech. With the bot talking over clicks, far fewer barge-ins (most of those left in a call's first
 * seconds), and a caller talking over the bot is heard as soon as before (figures: docs/calls.md, «The
 * bot's own echo», on clicks).
 */
const CLICK_MS = 1;
/** Silero idle this long starts over from a fresh state. */
const RESET_AFTER_IDLE_MS = 1000;
/** Windows pushed but not yet processed beyond which Silero is skipped (≈ 0.5 s of audio). */
export const MAX_QUEUED_WINDOWS = 16;
/**
 * Lag (ms) beyond which Silero is skipped: the sum over windows of (wall time spent on the window,
 * waiting for the shared model included, − the window's duration), never below 0. It measures only
 * the detector's own slowness, so pauses in the line or jumps in its timestamps do not count.
 */
export const MAX_LAG_MS = 400;

interface Window {
  samples: Int16Array;
  startMs: number;
  /** The reference for the window, when the bot played within an echo's reach. */
  reference: Int16Array | undefined;
  /** How far the reference moved within the window (samples). */
  moved: number;
  /**
   * The echo estimator's verdict, asked for as soon as the window is whole: every window's estimation
   * is under way at once (in order, on the call's worker), not one round trip after another.
   */
  verdict?: Promise<EchoVerdict | undefined>;
  /** Set once processed: the echo estimator found the bot's echo alone in it. */
  echoOnly?: boolean;
  /** Set once processed: it held the echo alone, a key's tones or a click, so it is no speech. */
  notSpeech?: boolean;
  /** Set once processed: the probability at which it is speech (higher where the echo may be). */
  threshold?: number;
  /** How long its push waited before it reached the detector (ms). */
  waitedMs: number;
}

export class SpeechOnsetDetector implements SpeechDetector {
  readonly sampleRate: VadSampleRate;
  private readonly silero: SileroStream;
  private readonly echo: EchoStream | undefined;
  /** The reference of the samples in `partial`, and whether any of them had one. */
  private readonly partialReference: Int16Array;
  private partialHasReference = false;
  /** How far the reference moved within the samples in `partial`. */
  private partialMoved = 0;
  private readonly gate = new EnergyGate();
  /** Cleans what Silero hears of the line (absent: it hears the samples). */
  private readonly suppressor: NoiseSuppressor | undefined;
  private readonly tones: DtmfToneDetector;
  /** A click's longest burst, in samples. */
  private readonly clickSamples: number;
  private readonly windowSamples: number;
  private readonly windowMs: number;
  private readonly minSpeechMs: number;
  private readonly minSpeechWhileAudibleMs: number;
  private readonly threshold: number;
  private readonly overEchoThreshold: number;
  private readonly silenceBelow: number;
  private readonly now: () => number;
  /** Samples not yet making a whole window, and the inbound time of the first of them. */
  private readonly partial: Int16Array;
  private partialLength = 0;
  private partialStartMs = 0;
  /** The inbound time just after the last sample pushed. */
  private nextMs = 0;
  /** How far processing has fallen behind the audio's own pace (ms). */
  private lagMs = 0;
  private readonly maxLagMs: number;
  private readonly preroll: Window[] = [];
  /** Windows since Silero last ran, and since the gate last opened. */
  private idleWindows = Number.POSITIVE_INFINITY;
  private gateClosedMs = Number.POSITIVE_INFINITY;
  private runStartMs: number | undefined;
  private runSpeechMs = 0;
  private runGapMs = 0;
  private runEchoWindows = 0;
  private runPeak = 0;
  /** Windows in a row, up to the last, that may lead into a run of speech (at most `LEAD_IN_WINDOWS`). */
  private leadIn = 0;
  private reported = false;
  private silenceMs = 0;
  private queued = 0;
  /** Bumped by reset(): work queued before it is dropped. */
  private epoch = 0;
  private chain: Promise<unknown> = Promise.resolve();
  private readonly counts: DetectorStats = {
    windows: 0,
    inferences: 0,
    skipped: 0,
    failed: 0,
    echoWindows: 0,
    echoOnly: 0,
  };
  private readonly onTurnEnd: ((turn: SpeechTurn) => void) | undefined;
  private readonly endOfTurnMs: number;
  /** Where the turn under way began (its first onset), while one is. */
  private turnStartMs: number | undefined;
  /** Quiet windows in a row within the turn under way (ms), and where they began. */
  private quietMs = 0;
  private quietFromMs = 0;
  /** The probability the last window was judged with (0 for one the gate judged closed). */
  private lastP = 0;
  /** Where the first run of speech since a silence of `SPEECH_RESET_MS` began, until an onset or that silence. */
  private speechFromMs: number | undefined;
  /** The silence since the caller's last speech, from their first onset on (`callerSilence`). */
  private heardSince: { fromMs: number; quietMs: number } | undefined;
  private readonly onSilence: ((silence: CallerSilence) => void) | undefined;

  constructor(model: SileroModel, options: DetectorOptions) {
    this.sampleRate = options.sampleRate;
    this.silero = model.stream(options.sampleRate);
    this.windowSamples = this.silero.windowSamples;
    this.windowMs = (this.windowSamples / options.sampleRate) * 1000;
    this.minSpeechMs = options.minSpeechMs ?? 128;
    this.minSpeechWhileAudibleMs = options.minSpeechWhileAudibleMs ?? 400;
    this.threshold = options.threshold ?? SPEECH_THRESHOLD;
    this.overEchoThreshold = Math.max(OVER_ECHO_THRESHOLD, this.threshold);
    this.silenceBelow = Math.min(SILENCE_BELOW, this.threshold);
    this.now = options.now ?? (() => performance.now());
    this.maxLagMs = options.maxLagMs ?? MAX_LAG_MS;
    this.tones = new DtmfToneDetector(options.sampleRate);
    this.clickSamples = Math.round((options.sampleRate * CLICK_MS) / 1000);
    this.partial = new Int16Array(this.windowSamples);
    this.partialReference = new Int16Array(this.windowSamples);
    this.suppressor =
      options.denoise === false ? undefined : new NoiseSuppressor(options.sampleRate, this.windowSamples);
    this.echo = options.echo ? model.echoStream(options.sampleRate) : undefined;
    this.onTurnEnd = options.onTurnEnd;
    this.onSilence = options.onSilence;
    this.endOfTurnMs = options.endOfTurnMs ?? 700;
  }

  /**
   * The caller's audio (Int16 at `sampleRate`), in order. Resolves, once this chunk has been
   * processed, with an onset when it completed a long enough run of speech.
   */
  push(samples: Int16Array, info: PushInfo): Promise<SpeechOnset | undefined> {
    const startMs = info.timestampMs ?? this.nextMs;
    const msPerSample = 1000 / this.sampleRate;
    this.nextMs = startMs + samples.length * msPerSample;
    const windows: Window[] = [];
    let offset = 0;
    if (this.partialLength === 0) this.partialStartMs = startMs;
    const reference = this.echo ? info.reference : undefined;
    if (reference && reference.length !== samples.length)
      throw new RangeError('the reference must be as long as the samples');
    if (reference && info.referenceMoved) this.partialMoved += info.referenceMoved;
    while (offset < samples.length) {
      const take = Math.min(this.windowSamples - this.partialLength, samples.length - offset);
      this.partial.set(samples.subarray(offset, offset + take), this.partialLength);
      if (reference) {
        this.partialReference.set(reference.subarray(offset, offset + take), this.partialLength);
        this.partialHasReference = true;
      } else this.partialReference.fill(0, this.partialLength, this.partialLength + take);
      this.partialLength += take;
      offset += take;
      if (this.partialLength === this.windowSamples) {
        const window: Window = {
          samples: this.partial.slice(),
          startMs: this.partialStartMs,
          reference: this.partialHasReference ? this.partialReference.slice() : undefined,
          moved: this.partialMoved,
          waitedMs: info.waitedMs ?? 0,
        };
        this.partialMoved = 0;
        window.verdict = this.echoVerdict(window);
        windows.push(window);
        this.partialHasReference = false;
        this.partialLength = 0;
        this.partialStartMs = startMs + offset * msPerSample;
      }
    }
    const epoch = this.epoch;
    if (windows.length === 0) return this.chain.then(() => undefined);
    this.queued += windows.length;
    const result = this.chain.then(() => this.process(windows, info.botAudible, epoch));
    this.chain = result.catch(() => undefined);
    return result;
  }

  /** Forgets everything (a new stream, or the caller's audio restarts); queued pushes resolve empty. */
  reset(): void {
    this.epoch++;
    this.queued = 0;
    this.partialLength = 0;
    this.partialHasReference = false;
    this.partialMoved = 0;
    this.echo?.reset();
    this.nextMs = 0;
    this.lagMs = 0;
    this.preroll.length = 0;
    this.idleWindows = Number.POSITIVE_INFINITY;
    this.gateClosedMs = Number.POSITIVE_INFINITY;
    this.endRun();
    this.reported = false;
    this.silenceMs = 0;
    this.turnStartMs = undefined;
    this.quietMs = 0;
    this.speechFromMs = undefined;
    this.heardSince = undefined;
    this.gate.reset();
    this.suppressor?.reset();
    this.silero.reset();
  }

  /** The call is over: forgets everything and frees the echo estimator wherever it runs. */
  close(): void {
    this.reset();
    this.echo?.close();
  }

  /**
   * Whether the caller may be speaking: Silero heard the last window processed (the echo, the line's
   * noise, a tone or a click did not explain it), or a run of speech is under way. A VAD worker runs
   * such a detector's audio before other calls' (worker.ts).
   */
  get listening(): boolean {
    return this.idleWindows === 0 || this.runStartMs !== undefined;
  }

  /**
   * Counters since construction, for benchmarks and diagnostics: the live counters, read-only, not a
   * copy (a VAD worker reads them around every push).
   */
  get stats(): Readonly<DetectorStats> {
    return this.counts;
  }

  /**
   * The turn under way, as the last window processed left it: where it began, and the silence it ends
   * in (quiet windows in a row, `trackTurn`'s count that `endOfTurnMs` is held against; 0 while the
   * caller speaks, `fromMs` then meaningless). Undefined between turns. What a rule that ends turns by
   * their words reads alongside the transcript (endpointing.ts; bench/turns.ts replays it).
   */
  get turnSilence(): TurnSilence | undefined {
    if (this.turnStartMs === undefined) return undefined;
    return { turnStartMs: this.turnStartMs, fromMs: this.quietFromMs, quietMs: this.quietMs };
  }

  /**
   * The silence since the caller last spoke, as the last window processed left it, counted as
   * `turnSilence` counts it but on past the end of a turn (until the caller speaks again); undefined
   * before their first onset.
   */
  get callerSilence(): CallerSilence | undefined {
    return this.heardSince && { fromMs: this.heardSince.fromMs, quietMs: this.heardSince.quietMs };
  }

  private async process(
    windows: Window[],
    botAudible: boolean,
    epoch: number,
  ): Promise<SpeechOnset | undefined> {
    let onset: SpeechOnset | undefined;
    let remaining = windows.length;
    try {
      for (const w of windows) {
        if (epoch !== this.epoch) return undefined;
        remaining--;
        this.queued--;
        onset ??= await this.processWindow(w, botAudible, epoch);
      }
    } finally {
      if (epoch === this.epoch) this.queued -= remaining;
    }
    if (epoch !== this.epoch) return undefined;
    const silence = this.callerSilence;
    if (silence) this.onSilence?.(silence);
    return onset;
  }

  private async processWindow(
    w: Window,
    botAudible: boolean,
    epoch: number,
  ): Promise<SpeechOnset | undefined> {
    this.counts.windows++;
    const startedAt = this.now();
    const verdict = await w.verdict;
    if (epoch !== this.epoch) return undefined;
    // The bot's echo and the line's noise explain the window: it is not the caller, whatever Silero
    // would say (it says speech for the echo, and for a while after it).
    // On a line with no echo, what the verdict calls not-caller holds only the line's noise and maybe
    // a soft onset in it: Silero tells those apart better than the estimator's energy rule does.
    w.echoOnly = verdict !== undefined && !verdict.caller && !verdict.clean;
    if (w.echoOnly && verdict?.echo) this.counts.echoOnly++;
    // The cautious rule holds while the bot is audible and there is no verdict on its echo, or the
    // verdict says so (the path moved and the new one is settling). Before the path is first known the
    // verdict takes the echo at its loudest instead (echo.ts).
    const audible = verdict === undefined ? botAudible : verdict.cautious;
    const overEcho = verdict === undefined ? botAudible : verdict.echo && !verdict.clean;
    const threshold = overEcho ? this.overEchoThreshold : this.threshold;
    w.threshold = threshold;
    const open = this.gate.open(w.samples);
    this.gateClosedMs = open ? 0 : this.gateClosedMs + this.windowMs;
    // Silero keeps listening through a run of speech and briefly after the gate closes (the gaps
    // between syllables); otherwise it sleeps, and it is not asked about the bot's echo.
    const wanted = !w.echoOnly && (open || this.runStartMs !== undefined || this.gateClosedMs <= RUN_GAP_MS);
    // A key pressed over the bot: the echo does not explain its tones, and Silero takes the echo under
    // them for speech. A tone is not speech, and ends a run: the bits of a key's first and last 16 ms
    // that its window shares with the echo never add up to a run, however many keys follow.
    const tone = open && !w.echoOnly && this.tones.holdsTone(w.samples);
    if (tone) this.endRun();
    // A click (a crackle on the line, a knock) is not the echo either, and Silero hears the echo under
    // it: no speech, though a run it falls into goes on (speech is never one click).
    const click = open && !w.echoOnly && !tone && isClick(w.samples, this.clickSamples);
    let onset: SpeechOnset | undefined;
    w.notSpeech = w.echoOnly || tone || click;
    if (w.notSpeech) {
      this.suppressor?.listen(w.samples);
      this.idleWindows++;
      onset = this.judge(0, w.startMs, audible, threshold);
      // Within a run, the windows a faint echo alone explains end it (`WEAK_ECHO_ERL_DB`).
      const faintEcho =
        this.runStartMs !== undefined &&
        w.echoOnly &&
        verdict?.converged === true &&
        (verdict.erlDb ?? 0) >= WEAK_ECHO_ERL_DB;
      if (faintEcho && ++this.runEchoWindows >= ECHO_ENDS_RUN_WINDOWS) this.endRun();
    } else if (wanted && !this.behind(w)) {
      if (this.idleWindows * this.windowMs >= RESET_AFTER_IDLE_MS) this.silero.reset();
      // The windows just before the gate opened may hold the first syllable: speech there moves the
      // onset earlier (silence there was already counted).
      // Within a run (Silero was skipped while behind) they only bring its state up to date.
      const judgeEarlier = this.runStartMs === undefined;
      const missed = Math.min(this.idleWindows, this.preroll.length);
      // Silero hears them cleaned, which they were not: the suppressor goes back to them.
      if (missed > 0) this.suppressor?.goBack(this.preroll[this.preroll.length - missed - 1]?.samples);
      const earlierWindows = this.preroll.slice(this.preroll.length - missed);
      const earlierHeard = earlierWindows.map((e) => this.suppressor?.clean(e.samples, false) ?? e.samples);
      const heard = this.suppressor?.clean(w.samples, true) ?? w.samples;
      for (const [i, earlier] of earlierWindows.entries()) {
        const pe = await this.infer(earlierHeard[i]!);
        if (epoch !== this.epoch) return undefined;
        if (pe === undefined) break;
        const earlierThreshold = earlier.threshold ?? threshold;
        if (judgeEarlier && !earlier.notSpeech && pe >= earlierThreshold)
          onset ??= this.judge(pe, earlier.startMs, audible, earlierThreshold);
      }
      this.idleWindows = 0;
      const p = await this.infer(heard);
      if (epoch !== this.epoch) return undefined;
      onset ??=
        p === undefined
          ? this.gateAlone(open, w.startMs, audible, threshold)
          : this.judge(p, w.startMs, audible, threshold, open);
    } else {
      this.suppressor?.listen(w.samples);
      this.idleWindows++;
      if (wanted) this.counts.skipped++;
      onset ??= this.gateAlone(open, w.startMs, audible, threshold);
    }
    this.trackTurn(open, w.startMs);
    this.preroll.push(w);
    if (this.preroll.length > PREROLL_WINDOWS) this.preroll.shift();
    this.lagMs = Math.max(0, this.lagMs + this.now() - startedAt - this.windowMs);
    return onset;
  }

  /**
   * The echo estimator's verdict on the window: undefined without echo detection, for a window with no
   * reference (the bot quiet for longer than an echo lasts), and when the estimator could not run (a
   * model failed: the cautious rule then applies through `botAudible`).
   */
  private async echoVerdict(w: Window): Promise<EchoVerdict | undefined> {
    if (!this.echo || !w.reference) return undefined;
    this.counts.echoWindows++;
    try {
      return await this.echo.process(w.samples, w.reference, w.moved);
    } catch {
      this.counts.failed++;
      return undefined;
    }
  }

  /** Silero's probability for a window's audio as it hears it; undefined when it could not run. */
  private async infer(heard: Int16Array): Promise<number | undefined> {
    this.counts.inferences++;
    try {
      return await this.silero.probability(heard);
    } catch {
      this.counts.failed++;
      return undefined;
    }
  }

  /** Without Silero (behind, or its worker gone): the gate carries on a run Silero began, never starts one. */
  private gateAlone(
    open: boolean,
    startMs: number,
    botAudible: boolean,
    threshold: number,
  ): SpeechOnset | undefined {
    if (!open) return this.judge(0, startMs, botAudible, threshold);
    if (this.runStartMs !== undefined) return this.judge(threshold, startMs, botAudible, threshold);
    // Unheard: no lead into a run.
    this.leadIn = 0;
    return undefined;
  }

  /** Too much queued, too slow of late, or `w` too late in coming, for Silero to be worth its time now. */
  private behind(w: Window): boolean {
    const { maxLagMs } = this;
    return this.queued > MAX_QUEUED_WINDOWS || this.lagMs > maxLagMs || w.waitedMs > maxLagMs;
  }

  /** Folds one window's probability into the current run; an onset when the run is long enough. */
  /**
   * The end of a turn: `endOfTurnMs` of quiet windows in a row, a window being quiet when the gate
   * finds nothing above the line's noise or Silero finds no speech in it. The gate reacts to the end
   * of speech at once, where Silero's probability takes a few windows to fall: counting from the first
   * of the two puts the turn's end where the speech ended, not where the model let go of it.
   */
  private trackTurn(open: boolean, startMs: number): void {
    const speech = open && this.lastP >= this.silenceBelow;
    const since = this.heardSince;
    if (since) {
      if (speech) since.quietMs = 0;
      else {
        if (since.quietMs === 0) since.fromMs = startMs;
        since.quietMs += this.windowMs;
      }
    }
    if (this.turnStartMs === undefined) return;
    if (speech) {
      this.quietMs = 0;
      return;
    }
    if (this.quietMs === 0) this.quietFromMs = startMs;
    this.quietMs += this.windowMs;
    if (this.quietMs < this.endOfTurnMs) return;
    const turn = { startMs: this.turnStartMs, endMs: this.quietFromMs, decidedMs: startMs + this.windowMs };
    this.turnStartMs = undefined;
    this.quietMs = 0;
    this.onTurnEnd?.(turn);
  }

  private judge(
    p: number,
    startMs: number,
    botAudible: boolean,
    threshold: number,
    /** Silero heard the window over the line: it may lead into a run. */
    heard = false,
  ): SpeechOnset | undefined {
    this.lastP = p;
    if (p >= threshold) {
      this.silenceMs = 0;
      this.runGapMs = 0;
      this.runEchoWindows = 0;
      if (this.runStartMs === undefined) {
        this.runStartMs = startMs - this.leadIn * this.windowMs;
        this.runSpeechMs += this.leadIn * this.windowMs;
        this.speechFromMs ??= this.runStartMs;
      }
      this.leadIn = 0;
      this.runSpeechMs += this.windowMs;
      this.runPeak = Math.max(this.runPeak, p);
      const needed = botAudible ? this.minSpeechWhileAudibleMs : this.minSpeechMs;
      if (!this.reported && this.runSpeechMs >= needed && this.runPeak >= RUN_PEAK) {
        this.reported = true;
        const speechStartMs = Math.max(
          Math.min(this.speechFromMs ?? this.runStartMs, this.runStartMs),
          this.runStartMs - MAX_SPEECH_LEAD_MS,
        );
        this.speechFromMs = undefined;
        this.turnStartMs ??= speechStartMs;
        // From now on the caller's silences are followed, across turns (`callerSilence`).
        this.heardSince ??= { fromMs: startMs, quietMs: 0 };
        return {
          onsetMs: this.runStartMs,
          speechStartMs,
          detectedMs: startMs + this.windowMs,
          probability: this.runPeak,
        };
      }
      return undefined;
    }
    this.leadIn =
      heard && p >= LEAD_IN_MIN_P && this.runStartMs === undefined
        ? Math.min(this.leadIn + 1, LEAD_IN_WINDOWS)
        : 0;
    if (p < this.silenceBelow) {
      this.silenceMs += this.windowMs;
      if (this.silenceMs >= REARM_SILENCE_MS) this.reported = false;
      if (this.silenceMs >= SPEECH_RESET_MS) this.speechFromMs = undefined;
    }
    if (this.runStartMs !== undefined) {
      this.runGapMs += this.windowMs;
      if (this.runGapMs > RUN_GAP_MS) this.endRun();
    }
    return undefined;
  }

  private endRun(): void {
    this.leadIn = 0;
    this.runEchoWindows = 0;
    this.runStartMs = undefined;
    this.runSpeechMs = 0;
    this.runGapMs = 0;
    this.runPeak = 0;
  }
}
