/**
 * Answering-machine detection on the callee's audio itself, so that it works on every gateway: a
 * person who answers says something short ("Hello?", "Hi, this is Sam") and then waits for an answer;
 * a machine plays a greeting of several sentences with only short pauses between them, often ending in
 * a beep. So, from the first seconds of the call:
 *
 * - speech that goes on for `machineSpeechMs` (2.4 s, Twilio's `MachineDetectionSpeechThreshold`)
 *   with no pause of `humanSilenceMs` in it is a **machine** (`long-speech`);
 * - speech shorter than that followed by `humanSilenceMs` (800 ms, Asterisk's
 *   `after_greeting_silence`) of silence is a **human** (`short-speech`): a person waiting;
 * - a beep (a steady single tone of 400–3000 Hz, 200 ms to 2 s) is a **machine** (`beep`);
 * - nothing said for `silenceTimeoutMs` (5 s, Twilio's `MachineDetectionSilenceTimeout`) is
 *   **unknown** (`silence`).
 *
 * Once speech has begun, a decision comes within `machineSpeechMs + humanSilenceMs`; with none, at
 * `silenceTimeoutMs`. Then, for a machine (or whenever `waitForGreetingEnd()` asks), a second phase
 * waits for the end of its greeting, as a `voicemail` node must before it speaks: a `beep` (reported as
 * it ends, with its frequency), or `greeting-end` after `greetingEndSilenceMs` (1.5 s) of silence, or
 * `greeting-timeout` after `maxGreetingWaitMs`.
 *
 * Speech is a run of at least `minSpeechMs` (100 ms) of windows that the energy gate (`energy-gate.ts`,
 * its noise floor the quietest window of the last 1.5 s, learnt from the line's own first windows)
 * finds `openAboveFloorDb` (6 dB) above the line's noise, one of them at least `speechPeakDb` (12 dB)
 * above it: the low threshold keeps the soft ends of words (a greeting's pause must not grow in line
 * noise, or a machine sounds like a person waiting), the high one keeps the noise's own swells (pink
 * noise lifts 128 ms by 6 dB now and then) from counting as a word. A click or a crackle is not speech
 * and does not break a silence. Beeps are `src/audio/tone.ts`'s. Everything runs on frame time (the
 * audio pushed so far, in 32 ms blocks), never on a wall clock: the same audio gives the same decision
 * at the same moment, however it is chunked, and tests and benchmarks run faster than real time. No neural model: LiveKit's `amd.ts` sends a transcript to an LLM, which tells a voicemail
 * from an IVR menu; this tells a person from a machine from timing alone, as Twilio's and Asterisk's do.
 */
import { TONE_BLOCK_MS, ToneDetector, type Tone } from '../audio/tone.js';
import { EnergyGate } from './energy-gate.js';
import { BlockFiller } from '../audio/blocks.js';

export type AmdResult = 'human' | 'machine' | 'unknown';
/**
 * `short-speech`: a short utterance, then silence (a person waiting); `long-speech`: speech past
 * `machineSpeechMs` without a pause; `beep`: a machine's beep; `silence`: nothing said.
 */
export type AmdReason = 'short-speech' | 'long-speech' | 'beep' | 'silence';

export interface AmdDecision {
  readonly result: AmdResult;
  readonly reason: AmdReason;
  /** When it was decided: milliseconds of audio pushed before it (frame time). */
  readonly decidedAtMs: number;
  /** When the callee's first speech began; undefined when none was heard. */
  readonly speechStartMs: number | undefined;
  /** Audible speech heard by then (ms, pauses left out). */
  readonly speechMs: number;
  /** From the start of the first speech to the end of the latest (ms, pauses included). */
  readonly greetingMs: number;
  /** Silence since the latest speech, or since the start when there was none (ms). */
  readonly silenceMs: number;
  /** The line's noise floor at the decision (dBFS). */
  readonly noiseFloorDbfs: number;
  /** The beep that decided it (reason `beep`). */
  readonly beep?: Tone;
}

export type AmdEvent =
  | { readonly type: 'decision'; readonly atMs: number; readonly decision: AmdDecision }
  /** A beep ended at `beep.endMs`: the machine records from here. */
  | { readonly type: 'beep'; readonly atMs: number; readonly beep: Tone }
  /** `silenceMs` of silence since the greeting's latest sound, which ended at `lastSoundMs`. */
  | {
      readonly type: 'greeting-end';
      readonly atMs: number;
      readonly lastSoundMs: number;
      readonly silenceMs: number;
    }
  /** Neither came within `maxGreetingWaitMs` of the wait's start. */
  | { readonly type: 'greeting-timeout'; readonly atMs: number };

/** The wait for a greeting's end: not asked for, under way, or over with the event that ended it. */
export type GreetingWatch =
  | { readonly status: 'idle' }
  | {
      readonly status: 'waiting';
      readonly sinceMs: number;
      /** The silence that ends the greeting (ms). */
      readonly endSilenceMs: number;
      readonly deadlineMs: number;
    }
  | {
      readonly status: 'ended';
      readonly event: Extract<AmdEvent, { type: 'beep' | 'greeting-end' | 'greeting-timeout' }>;
    };

export interface AmdOptions {
  /** Of the audio pushed (Hz): any rate from 8 kHz to 48 kHz. */
  sampleRate: number;
  /** No speech by then is `unknown` (ms). Default 5000, within [1000, 60 000]. */
  silenceTimeoutMs?: number;
  /** Speech without a `humanSilenceMs` pause for this long is a machine (ms). Default 2400, [800, 10 000]. */
  machineSpeechMs?: number;
  /** Silence after shorter speech that makes it a person waiting (ms). Default 800, [200, 5000]. */
  humanSilenceMs?: number;
  /** Shortest run of sound that counts as speech (ms, up to whole 32 ms blocks). Default 100, [32, 1000]. */
  minSpeechMs?: number;
  /** Silence after a greeting that ends it (ms). Default 1500, [300, 10 000]. */
  greetingEndSilenceMs?: number;
  /** The longest wait for a greeting's end (ms). Default 30 000 (Twilio's detection timeout), [1000, 120 000]. */
  maxGreetingWaitMs?: number;
  /** Whether a machine decision starts the wait for its greeting's end. Default true. */
  waitForGreetingEndAfterMachine?: boolean;
  /**
   * A beep's shortest and longest (ms). Defaults 200 and 2000, within [40, 10 000]: a voice's harmonic
   * can hold still for 160 ms; machines beep for 0.25–1 s.
   */
  beepMinMs?: number;
  beepMaxMs?: number;
  /** A beep's frequency band (Hz). Defaults 400 and 3000 (capped at 45 % of the sample rate). */
  beepMinHz?: number;
  beepMaxHz?: number;
  /** Speech is this far above the noise floor (dB). Default 6, within [3, 30]. */
  openAboveFloorDb?: number;
  /** …and at least this loud (dBFS). Default −50, within [−90, −10]. */
  minLevelDbfs?: number;
  /** A run of sound is speech when one of its windows is this far above the floor (dB). Default 12, [3, 40]. */
  speechPeakDb?: number;
}

export const AMD_DEFAULTS = Object.freeze({
  silenceTimeoutMs: 5000,
  machineSpeechMs: 2400,
  humanSilenceMs: 800,
  minSpeechMs: 100,
  greetingEndSilenceMs: 1500,
  maxGreetingWaitMs: 30_000,
  waitForGreetingEndAfterMachine: true,
  beepMinMs: 200,
  beepMaxMs: 2000,
  beepMinHz: 400,
  beepMaxHz: 3000,
  openAboveFloorDb: 6,
  minLevelDbfs: -50,
  speechPeakDb: 12,
});

/**
 * The noise floor is the quietest window of the last 1.5 s: a greeting's sentences are shorter than
 * that, so the pauses between them keep the floor on the line's noise.
 */
const FLOOR_MS = 1500;

export interface AnsweringMachineDetector {
  /**
   * Takes the next stretch of the callee's audio (mono s16 at `sampleRate`, any length) and returns
   * what it settled: the decision, then (in the second phase) the greeting's end. Mostly nothing.
   */
  push(samples: Int16Array): readonly AmdEvent[];
  /**
   * Starts (or restarts, after one ended) the wait for the end of a greeting from now: a `beep`,
   * `greeting-end` after `silenceMs` of silence (a greeting already over by then ends it at once), or
   * `greeting-timeout` after `maxWaitMs`. Defaults: the detector's options.
   */
  waitForGreetingEnd(options?: { silenceMs?: number; maxWaitMs?: number }): void;
  /** The decision, once made. */
  readonly decision: AmdDecision | undefined;
  readonly greeting: GreetingWatch;
  /** Audio pushed and judged so far (ms): the detector's clock. */
  readonly nowMs: number;
}

function bounded(name: string, value: number, min: number, max: number): number {
  if (!Number.isFinite(value) || value < min || value > max)
    throw new RangeError(`answering-machine detection: ${name} ${value} is not within [${min}, ${max}]`);
  return value;
}

type Settings = Required<Omit<AmdOptions, 'sampleRate'>> & { sampleRate: number };

function settings(options: AmdOptions): Settings {
  // An option given as undefined (from JavaScript) takes its default too.
  const given = Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined));
  const o = { ...AMD_DEFAULTS, ...given } as Settings;
  bounded('sampleRate', o.sampleRate, 8000, 48_000);
  bounded('silenceTimeoutMs', o.silenceTimeoutMs, 1000, 60_000);
  bounded('machineSpeechMs', o.machineSpeechMs, 800, 10_000);
  bounded('humanSilenceMs', o.humanSilenceMs, 200, 5000);
  bounded('minSpeechMs', o.minSpeechMs, 32, 1000);
  bounded('greetingEndSilenceMs', o.greetingEndSilenceMs, 300, 10_000);
  bounded('maxGreetingWaitMs', o.maxGreetingWaitMs, 1000, 120_000);
  bounded('beepMinMs', o.beepMinMs, 40, 10_000);
  bounded('beepMaxMs', o.beepMaxMs, o.beepMinMs, 10_000);
  bounded('beepMinHz', o.beepMinHz, 100, 0.45 * o.sampleRate);
  bounded('beepMaxHz', o.beepMaxHz, o.beepMinHz, 20_000);
  bounded('openAboveFloorDb', o.openAboveFloorDb, 3, 30);
  bounded('minLevelDbfs', o.minLevelDbfs, -90, -10);
  bounded('speechPeakDb', o.speechPeakDb, o.openAboveFloorDb, 40);
  return o;
}

const NO_EVENTS: readonly AmdEvent[] = Object.freeze([]);

class Detector implements AnsweringMachineDetector {
  private readonly o: Settings;
  private readonly gate: EnergyGate;
  private readonly tones: ToneDetector;
  private readonly blockSamples: number;
  private readonly blockMs: number;
  /** The callee's audio, block by block (the tone detector's blocks). */
  private readonly filler: BlockFiller;
  private readonly onBlock = (block: Int16Array): void => this.block(block);
  private blocks = 0;
  /** The run of loud blocks under way: its length and start. */
  private runBlocks = 0;
  private runStartMs = 0;
  /** Its loudest block, above the floor it was judged against (dB). */
  private runPeakDb = 0;
  private readonly minRunBlocks: number;
  private runIsSpeech = false;
  private speechStartMs: number | undefined;
  private lastSpeechEndMs: number | undefined;
  private speechMs = 0;
  private decided: AmdDecision | undefined;
  private watch: GreetingWatch = { status: 'idle' };
  private events: AmdEvent[] | undefined;

  constructor(options: AmdOptions) {
    this.o = settings(options);
    this.tones = new ToneDetector(this.o.sampleRate, {
      minHz: this.o.beepMinHz,
      maxHz: this.o.beepMaxHz,
      minToneMs: this.o.beepMinMs,
    });
    this.blockSamples = this.tones.blockSamples;
    this.blockMs = (this.blockSamples * 1000) / this.o.sampleRate;
    this.filler = new BlockFiller(this.blockSamples);
    this.gate = new EnergyGate({
      openAboveFloorDb: this.o.openAboveFloorDb,
      minLevelDbfs: this.o.minLevelDbfs,
      floorWindows: Math.round(FLOOR_MS / TONE_BLOCK_MS),
      floorFromSeenWindows: true,
    });
    this.minRunBlocks = Math.max(1, Math.ceil(this.o.minSpeechMs / this.blockMs - 1e-9));
  }

  get decision(): AmdDecision | undefined {
    return this.decided;
  }

  get greeting(): GreetingWatch {
    return this.watch;
  }

  get nowMs(): number {
    return this.blocks * this.blockMs;
  }

  push(samples: Int16Array): readonly AmdEvent[] {
    this.events = undefined;
    this.filler.push(samples, this.onBlock);
    const events = this.events ?? NO_EVENTS;
    this.events = undefined;
    return events;
  }

  waitForGreetingEnd(options: { silenceMs?: number; maxWaitMs?: number } = {}): void {
    if (this.watch.status === 'waiting') return;
    const silenceMs = bounded('silenceMs', options.silenceMs ?? this.o.greetingEndSilenceMs, 300, 10_000);
    const maxWaitMs = bounded('maxWaitMs', options.maxWaitMs ?? this.o.maxGreetingWaitMs, 1000, 120_000);
    this.watch = {
      status: 'waiting',
      sinceMs: this.nowMs,
      endSilenceMs: silenceMs,
      deadlineMs: this.nowMs + maxWaitMs,
    };
  }

  private emit(event: AmdEvent): void {
    (this.events ??= []).push(event);
  }

  private block(samples: Int16Array): void {
    const startMs = this.nowMs;
    this.blocks++;
    const nowMs = this.nowMs;
    const floor = this.gate.noiseFloorDbfs;
    const open = this.gate.open(samples);
    const aboveFloor = this.gate.lastLevelDbfs - floor;
    const beep = this.tones.push(samples).find((t) => t.durationMs <= this.o.beepMaxMs);
    if (open) {
      if (this.runBlocks === 0) {
        this.runStartMs = startMs;
        this.runPeakDb = aboveFloor;
      }
      this.runBlocks++;
      const wasSpeech = this.runIsSpeech;
      this.runPeakDb = Math.max(this.runPeakDb, aboveFloor);
      this.runIsSpeech = this.runBlocks >= this.minRunBlocks && this.runPeakDb >= this.o.speechPeakDb;
      if (this.runIsSpeech) {
        // The run is speech from its first block: all of it counts once it is long enough.
        this.speechMs += wasSpeech ? this.blockMs : this.runBlocks * this.blockMs;
        this.speechStartMs ??= this.runStartMs;
        this.lastSpeechEndMs = nowMs;
      }
    } else {
      this.runBlocks = 0;
      this.runIsSpeech = false;
    }
    if (!this.decided) this.decide(nowMs, beep);
    if (this.watch.status === 'waiting') this.watchGreeting(nowMs, beep);
  }

  private decide(nowMs: number, beep: Tone | undefined): void {
    const start = this.speechStartMs;
    const end = this.lastSpeechEndMs;
    let result: AmdResult | undefined;
    let reason: AmdReason | undefined;
    if (beep) [result, reason] = ['machine', 'beep'];
    else if (start !== undefined && end !== undefined) {
      if (end - start >= this.o.machineSpeechMs) [result, reason] = ['machine', 'long-speech'];
      else if (nowMs - end >= this.o.humanSilenceMs) [result, reason] = ['human', 'short-speech'];
    } else if (nowMs >= this.o.silenceTimeoutMs) [result, reason] = ['unknown', 'silence'];
    if (!result || !reason) return;
    this.decided = {
      result,
      reason,
      decidedAtMs: nowMs,
      speechStartMs: start,
      speechMs: this.speechMs,
      greetingMs: start !== undefined && end !== undefined ? end - start : 0,
      silenceMs: nowMs - (end ?? 0),
      noiseFloorDbfs: this.gate.noiseFloorDbfs,
      ...(beep ? { beep } : {}),
    };
    this.emit({ type: 'decision', atMs: nowMs, decision: this.decided });
    if (result === 'machine' && this.o.waitForGreetingEndAfterMachine) this.waitForGreetingEnd();
  }

  private watchGreeting(nowMs: number, beep: Tone | undefined): void {
    const watch = this.watch;
    if (watch.status !== 'waiting') return;
    const end = this.lastSpeechEndMs;
    let event: Extract<GreetingWatch, { status: 'ended' }>['event'] | undefined;
    if (beep) event = { type: 'beep', atMs: nowMs, beep };
    // A tone under way is not silence, however faint next to the greeting: it may be the beep.
    else if (end !== undefined && nowMs - end >= watch.endSilenceMs && !this.tones.inTone)
      event = { type: 'greeting-end', atMs: nowMs, lastSoundMs: end, silenceMs: nowMs - end };
    else if (nowMs >= watch.deadlineMs) event = { type: 'greeting-timeout', atMs: nowMs };
    if (!event) return;
    this.watch = { status: 'ended', event };
    this.emit(event);
  }
}

/** A detector for one call's callee, from the first sample of their audio. */
export function createAnsweringMachineDetector(options: AmdOptions): AnsweringMachineDetector {
  return new Detector(options);
}
