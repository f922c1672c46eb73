/** One utterance of a `Speaker`: its options, its text and what of it was heard, and its lifecycle. */
import { randomUUID } from 'node:crypto';
import type { SpeechVoiceSettings } from '../speech/client.js';
import { TextLedger } from './ledger.js';

/**
 * Audio to play as it is, instead of text to speak: s16le mono 24 kHz (the speaker's own format), with
 * a text that stands for it in results (what was "heard"). It may still be on its way (a file being
 * fetched): the utterance keeps its place in the queue and plays once it is there, or fails with its
 * error.
 */
export interface AudioInput {
  readonly audio: Uint8Array | Promise<Uint8Array>;
  readonly text: string;
  /** Played this many times over (default 1), the same memory each time. */
  readonly repeat?: number | undefined;
}

export interface SayOptions {
  voiceId?: string | undefined;
  modelId?: string | undefined;
  voiceSettings?: SpeechVoiceSettings | undefined;
  /** Whether barge-in may cut it (default true). `interrupt({ force: true })` cuts it anyway. */
  interruptible?: boolean | undefined;
  /** 'now' cuts the current utterance (when interruptible) and speaks before the queue. Default 'queue'. */
  priority?: 'queue' | 'now' | undefined;
  /** Aborting it ends this utterance as interrupted. */
  signal?: AbortSignal;
}

export interface UtteranceMetrics {
  /** say() → first audio byte of the first segment (ms). */
  firstByteMs: number | undefined;
  /** say() → first frame handed to the sink (ms). */
  firstFrameMs: number | undefined;
  /** Times the sink needed a frame that was not ready. */
  underruns: number;
  /** Segments served by the phrase cache, and requested from the service. */
  cachedSegments: number;
  requestedSegments: number;
}

export interface UtteranceResult {
  status: 'played' | 'interrupted' | 'failed';
  /** Audio the listener heard (the sink's playout), not what was sent. */
  playedMs: number;
  /** The text up to what was heard, cut at a word. */
  heardText: string;
  error?: unknown;
  metrics: UtteranceMetrics;
}

/**
 * An utterance's life, one status at a time, changed only in `Utterance.setState`: queued → speaking
 * (its frames are being produced and sent) → draining (all written, still playing at the far end) →
 * done; any of them may go straight to done (interrupted, failed).
 */
export type UtteranceState =
  | { status: 'queued' }
  | { status: 'speaking'; controller: AbortController }
  | { status: 'draining'; controller: AbortController }
  | { status: 'done'; result: UtteranceResult };

/** The abort reason of an utterance's work once it stops speaking or draining. */
export const INTERRUPTED = 'interrupted';

export class Utterance {
  readonly id = randomUUID();
  readonly createdAt = performance.now();
  #state: UtteranceState = { status: 'queued' };
  /** The text so far (grows while a streaming input is read). */
  text = '';
  readonly ledger = new TextLedger();
  /** Sink timeline position of this utterance's first frame. */
  startPos: number | undefined;
  framesWritten = 0;
  /** Segments whose audio has begun to be read; and whether the last of them has been read to its end. */
  segmentsBegun = 0;
  segmentsRead = false;
  error: unknown;
  readonly metrics: UtteranceMetrics = {
    firstByteMs: undefined,
    firstFrameMs: undefined,
    underruns: 0,
    cachedSegments: 0,
    requestedSegments: 0,
  };
  #settle!: (r: UtteranceResult) => void;
  readonly result = new Promise<UtteranceResult>((resolve) => (this.#settle = resolve));
  #heard!: (heard: boolean) => void;
  /** Settles before `result`: true once the listener began to hear it, false when it ended unheard. */
  readonly audible = new Promise<boolean>((resolve) => (this.#heard = resolve));
  /** Aborted once it is done: what waits on its behalf (its start being heard) stops there. */
  readonly #life = new AbortController();

  constructor(
    readonly input: string | AsyncIterable<string> | AudioInput,
    readonly options: SayOptions,
    /** Told of every change, after its teardown. */
    private readonly onStateChange: (
      u: Utterance,
      oldState: UtteranceState,
      newState: UtteranceState,
    ) => void,
  ) {
    if (typeof input === 'string') this.text = input;
    else if (isAudioInput(input)) {
      this.text = input.text;
      // Audio still on its way may fail before its turn: its error is the utterance's, when it plays.
      if (input.audio instanceof Promise) input.audio.catch(() => undefined);
    }
  }

  get state(): UtteranceState {
    return this.#state;
  }

  get interruptible(): boolean {
    return this.options.interruptible !== false;
  }

  /** Aborted once the utterance is done. */
  get ended(): AbortSignal {
    return this.#life.signal;
  }

  /** The listener began to hear it (ignored once it is done: it ended unheard). */
  heard(): void {
    if (this.#state.status !== 'done') this.#heard(true);
  }

  /**
   * The one place the state changes. Leaving speaking or draining aborts that phase's controller (a
   * request still open, a wait for playout); entering done settles `result`. Done is final: a later
   * change is ignored.
   */
  setState(next: UtteranceState): void {
    const old = this.#state;
    if (old.status === 'done') return;
    this.#state = next;
    if (old.status === 'speaking' || old.status === 'draining') old.controller.abort(INTERRUPTED);
    if (next.status === 'done') {
      // `audible` first: whoever follows both hears of the start before the end.
      this.#heard(false);
      this.#life.abort(INTERRUPTED);
      this.#settle(next.result);
    }
    this.onStateChange(this, old, next);
  }
}

export function isAudioInput(input: string | AsyncIterable<string> | AudioInput): input is AudioInput {
  return typeof input === 'object' && 'audio' in input;
}
