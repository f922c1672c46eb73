/**
 * A caller's turns as a voice-activity detector gives them (a phone call's: onsets, the caller's
 * silences, the ends of its own turns), for a relay: each turn recorded, transcribed, and delivered in
 * order.
 *
 * - Batch mode (today's): a turn opens at the detector's onset and ends where the detector says, after
 *   `stt.endOfTurnMs` of silence; its audio goes to the batch API.
 * - Realtime mode: a turn opens at the onset and streams to a realtime session at once, from a
 *   pre-roll before the caller's speech began, in the line's own format (`LineAudio`: μ-law stays
 *   μ-law); its end is decided by the endpointing rule at every silence the detector reports and at
 *   every partial transcript (the words so far and the silence after them: a complete answer ends
 *   fast, a number being dictated or a trailing "and" waits), each decision logged with its reason;
 *   then the turn is committed. A session that failed leaves the turn to batch.
 *
 * It knows no gateway and no app: what it hears, it tells through its options' callbacks.
 */
import type { Logger } from 'pino';
import type { WireFormat } from '../audio/framer.js';
import { decideEndOfTurn, type EndpointDecision } from '../barge-in/endpointing.js';
import type { CallerSilence, SpeechTurn } from '../barge-in/index.js';
import { LineAudio } from './line-audio.js';
import { RealtimeTurn } from './realtime-turn.js';
import { TurnRecorder } from './turn-recorder.js';
import { TurnQueue, type TranscribedTurn, type TurnStt } from './turn-stt.js';

export interface VadTurnsOptions {
  stt: TurnStt;
  /** The rate of the decoded samples `audio` is given. */
  sampleRate: number;
  /**
   * The format of the line bytes `audio` is given, for a realtime session (μ-law 8 kHz as the gateway
   * sent it, or 16-bit PCM); none: no realtime (batch, whatever the mode).
   */
  line: WireFormat | undefined;
  /** The language turns are transcribed in now, if the app set one. */
  language: () => string | undefined;
  signal: AbortSignal;
  log: Logger;
  /** A turn opened (the caller's speech began), or it ended (its end decided). */
  onSpeaking(speaking: boolean): void;
  /** The open turn's words so far (realtime), each time they change. */
  onPartial(turn: number, text: string): void;
  /** A turn's transcript, in the order of the turns. */
  onTranscript(turn: number, transcript: TranscribedTurn & { endpointingMs: number; spokenMs: number }): void;
}

interface OpenTurn {
  readonly id: number;
  /** Where the caller's speech began (inbound ms). */
  readonly startMs: number;
  readonly realtime: RealtimeTurn | undefined;
  /** The caller's silence last reported within it (none: speaking since it opened). */
  silence: CallerSilence | undefined;
}

export class VadTurns {
  private readonly recorder: TurnRecorder;
  private readonly line: LineAudio | undefined;
  private readonly queue: TurnQueue;
  private open: OpenTurn | undefined;
  private nextId = 1;
  /** Where the audio given so far ends (inbound ms). */
  private audioEndMs = 0;

  constructor(private readonly options: VadTurnsOptions) {
    const { stt, line } = options;
    this.recorder = new TurnRecorder({ sampleRate: options.sampleRate });
    this.line =
      stt.realtime && line
        ? new LineAudio({ bytesPerMs: bytesPerMs(line), frameBytes: frameBytes(line) })
        : undefined;
    this.queue = new TurnQueue({ stt, language: options.language, signal: options.signal, log: options.log });
  }

  /** Whether turns stream to realtime speech-to-text and end by the endpointing rule. */
  get realtime(): boolean {
    return this.line !== undefined;
  }

  /** Turns ended and not yet delivered (their transcripts still coming). */
  get pendingTranscripts(): number {
    return this.queue.pending;
  }

  /** The turn open now, if one is: its id, and how long the caller has spoken in it so far (ms). */
  get openTurn(): { id: number; spokenMs: number } | undefined {
    const turn = this.open;
    if (!turn) return undefined;
    const to = turn.silence && turn.silence.quietMs > 0 ? turn.silence.fromMs : this.audioEndMs;
    return { id: turn.id, spokenMs: Math.max(0, to - turn.startMs) };
  }

  /** The caller's audio: decoded samples, and the line's bytes (for a realtime session), at `atMs`. */
  audio(samples: Int16Array, atMs: number, wire?: Uint8Array): void {
    this.recorder.push(samples, atMs);
    this.audioEndMs = atMs + (samples.length / this.options.sampleRate) * 1000;
    if (!wire || !this.line) return;
    this.line.push(wire, atMs);
    this.open?.realtime?.send(wire);
    // A caller who talks on and on: the turn is cut at its longest.
    const turn = this.open;
    if (turn && this.audioEndMs - turn.startMs >= this.options.stt.maxTurnMs)
      this.end(turn, `the longest turn (${this.options.stt.maxTurnMs} ms)`, 0, this.audioEndMs);
  }

  /** The detector confirmed the caller's speech, which began at `speechStartMs`. */
  onset(speechStartMs: number): void {
    if (this.open) return;
    const id = this.nextId++;
    this.recorder.onset(speechStartMs);
    let realtime: RealtimeTurn | undefined;
    const { stt, log, signal } = this.options;
    if (this.line && stt.realtime) {
      realtime = new RealtimeTurn({
        client: stt.realtime,
        format: this.options.line!,
        languageCode: this.options.language(),
        signal,
        log,
        onPartial: (text) => this.partial(id, text),
      });
      // The turn from its pre-roll, byte for byte, then the rest as it comes.
      for (const bytes of this.line.since(speechStartMs - stt.preRollMs)) realtime.send(bytes);
    }
    this.open = { id, startMs: speechStartMs, realtime, silence: undefined };
    this.options.onSpeaking(true);
  }

  /** The silence since the caller last spoke, after each chunk the detector processed. */
  silence(silence: CallerSilence): void {
    const turn = this.open;
    if (!turn || !this.realtime) return;
    // A silence from before the turn's speech is not this turn's.
    if (silence.quietMs > 0 && silence.fromMs < turn.startMs) return;
    turn.silence = silence;
    this.decide(turn);
  }

  /** The detector's own end of a turn (`endOfTurnMs` of silence): batch mode's end. */
  detectorTurnEnd(turn: SpeechTurn): void {
    const open = this.open;
    if (!open || this.realtime) return;
    this.end(
      open,
      `${turn.decidedMs - turn.endMs} ms of silence (stt.endOfTurnMs)`,
      turn.decidedMs - turn.endMs,
      turn.endMs,
    );
  }

  /** The relay ended: the open turn is dropped. */
  close(): void {
    this.open?.realtime?.close();
    this.open = undefined;
  }

  private partial(id: number, text: string): void {
    const turn = this.open;
    if (turn?.id !== id) return;
    this.options.onPartial(id, text);
    // The words changed: the silence so far may now be enough, or not yet.
    if (this.open === turn) this.decide(turn);
  }

  /** Asks the endpointing rule whether the turn is over, with its words so far and its silence. */
  private decide(turn: OpenTurn): void {
    const silence = turn.silence;
    if (!silence || silence.quietMs === 0) return;
    const decision = decideEndOfTurn(
      { transcript: turn.realtime?.text ?? '', silenceMs: silence.quietMs },
      this.options.stt.endpointing,
    );
    if (decision.action === 'end') this.end(turn, decision, silence.quietMs, silence.fromMs);
  }

  /** The turn is over: its end logged with why, its audio and session to the queue. */
  private end(turn: OpenTurn, why: EndpointDecision | string, silenceMs: number, speechEndMs: number): void {
    if (this.open !== turn) return;
    this.open = undefined;
    const endedAt = performance.now();
    const reason = typeof why === 'string' ? `end: ${why}` : why.reason;
    const fields = {
      turn: turn.id,
      turnMs: Math.round(speechEndMs - turn.startMs),
      ...(typeof why === 'string' ? {} : { cue: why.cue, waitMs: why.waitMs }),
      silenceMs: Math.round(silenceMs),
      stt: turn.realtime ? 'realtime' : 'batch',
    };
    this.options.log.info({ ...fields, reason }, 'end of turn');
    this.options.onSpeaking(false);
    const { samples } = this.recorder.takeTurn({ startMs: turn.startMs, endMs: speechEndMs });
    const spokenMs = Math.max(0, speechEndMs - turn.startMs);
    this.queue.submit({ realtime: turn.realtime, audio: samples, endedAt, fields }, (t) =>
      this.options.onTranscript(turn.id, { ...t, endpointingMs: silenceMs, spokenMs }),
    );
  }
}

function bytesPerMs(format: WireFormat): number {
  return (format.sampleRate / 1000) * frameBytes(format);
}

function frameBytes(format: WireFormat): number {
  return (format.encoding === 's16le' ? 2 : 1) * format.channels;
}
