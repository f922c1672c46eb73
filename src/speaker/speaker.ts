// Over 450 lines: the queue, barge-in and the producer and sender of one listener share the utterance states and the epoch.
import { orAbort } from '../async/abortable.js';
import { EventEmitter } from 'node:events';
import type { SpeechVoiceSettings } from '../speech/client.js';
import { systemClock, type Clock } from './clock.js';
import { FramePipeline } from './frame-pipeline.js';
import { FrameQueue } from './frame-queue.js';
import { Pacer } from './pacer.js';
import type { PhraseCache } from './phrase-cache.js';
import { openSegment, SPEAKER_SAMPLE_RATE, type SegmentAudio, type SpeechSource } from './segment-audio.js';
import { EAGER_FIRST, segmentStream, segmentText, type Segment } from './segmenter.js';
import type { AudioSink } from './sink.js';
import { characterTimings, type Aligner } from './word-alignment.js';
import {
  INTERRUPTED,
  isAudioInput,
  Utterance,
  type AudioInput,
  type SayOptions,
  type UtteranceMetrics,
  type UtteranceResult,
  type UtteranceState,
} from './utterance.js';

/** s16le mono at the speaker's rate. */
const BYTES_PER_MS = (2 * SPEAKER_SAMPLE_RATE) / 1000;
/** A rendition goes into the frames this much at a time (ms), as a response's chunks would. */
const RENDITION_PIECE_MS = 100;
/** A segment's audio kept for a forced alignment, at most (ms): a longer one is estimated. */
const MAX_ALIGNED_MS = 60_000;
/**
 * A streamed answer's next segment is cut before its sentence ends once the audio queued is down to
 * what a new segment takes to start (followed per speaker: request → first byte, smoothed by
 * `LEAD_SMOOTHING`; `INITIAL_LEAD_MS` until one is measured) plus `RUNWAY_MARGIN_MS` (the sink's lead,
 * the pipeline, the service's jitter), and never shorter than `RUNWAY_MIN_CHARS` (segmenter.ts).
 */
const INITIAL_LEAD_MS = 250;
const LEAD_SMOOTHING = 0.3;
const RUNWAY_MARGIN_MS = 200;
const RUNWAY_MIN_CHARS = 12;
/** The text either side of a segment sent with it for prosody (`previous_text`, `next_text`), at most. */
const CONTEXT_CHARS = 300;
/**
 * What may wait its turn in one speaker, by default: a backlog of hours that nobody will sit through,
 * and the most a peer that keeps asking can make one call hold (about 200,000 characters: 400 KB).
 */
export const DEFAULT_QUEUE_LIMITS = { utterances: 64, chars: 200_000 } as const;

/** `say()` past the queue's limits: nothing was queued. */
export class SpeakerQueueFullError extends Error {
  override readonly name = 'SpeakerQueueFullError';
  readonly code = 'queue_full';
  constructor(readonly limits: { utterances: number; chars: number }) {
    super(
      `the queue is full: at most ${limits.utterances} utterances and ${limits.chars} characters wait to be spoken`,
    );
  }
}

export type {
  AudioInput,
  SayOptions,
  UtteranceMetrics,
  UtteranceResult,
  UtteranceState,
} from './utterance.js';

export interface SpeakerOptions {
  /** Where speech comes from: a `SpeechClient`. */
  source: SpeechSource;
  sink: AudioSink;
  /** Default voice of this listener. */
  voiceId: string;
  modelId?: string | undefined;
  voiceSettings?: SpeechVoiceSettings;
  cache?: PhraseCache | undefined;
  clock?: Clock;
  /** Frames produced ahead of the sender, beyond the sink's lead; bounds memory per speaker. Default 1000 ms. */
  bufferMs?: number;
  /** What may wait its turn (utterances, characters of text); `say()` past it throws `SpeakerQueueFullError`. */
  queueLimits?: { utterances: number; chars: number };
  /**
   * A streamed text's later segment is cut before its sentence ends when the audio queued would run
   * out first (segmenter.ts, `runway`). Default true; false waits for whole sentences.
   */
  keepTalking?: boolean;
  /**
   * Times the words of a segment whose response carried no character timings, from its audio (a
   * recogniser's forced alignment, off the event loop), so that what the listener heard is cut at a
   * whole word rather than estimated. Undefined: estimated.
   */
  aligner?: Aligner | undefined;
}

export interface UtteranceHandle {
  readonly id: string;
  /**
   * Settles (never rejects) before `result`: true once the listener begins to hear it (its first frame
   * went out to a far end with nothing else left to play, or the audio queued ahead of it has played
   * out), false when it ends with none of it heard. Utterances are heard one after another: the one
   * ahead has settled its `result` before the next one's `audible` settles.
   */
  readonly audible: Promise<boolean>;
  /** Settles (never rejects) when the utterance has ended. */
  readonly result: Promise<UtteranceResult>;
  /**
   * Its metrics as they are now (first byte and first frame are set by the time `audible` settles
   * true); the result has them as they ended. Read-only: the speaker's own.
   */
  readonly metrics?: Readonly<UtteranceMetrics>;
}

export interface InterruptResult {
  interrupted: boolean;
  playedMs: number;
  heardText: string;
}

export interface SpeakerEvents {
  utteranceStart: [{ id: string }];
  utteranceEnd: [{ id: string; result: UtteranceResult }];
  interrupted: [{ id: string; playedMs: number; heardText: string }];
  /** Every change of an utterance's state (`UtteranceState`), after its teardown. */
  utteranceStateChange: [id: string, oldState: UtteranceState, newState: UtteranceState];
  /** A segment's words were timed by the aligner (`words`: 0 when it failed). */
  aligned: [{ id: string; words: number }];
}

/**
 * Speaks text for one listener (a call, a guild): requests `/stream` as PCM 24 kHz, turns the chunks
 * into the sink's frames as they arrive, and paces them out on one absolute-deadline clock. Utterances
 * queue; segments of one utterance are requested one ahead (prefetch) so joins have no gap.
 *
 * Barge-in (`interrupt`) aborts the request, drops every queued frame, clears the sink and bumps the
 * epoch: no frame of the interrupted utterance reaches the sink afterwards. `hold()` keeps the queue
 * from starting its next utterance until `release()` (while a call judges whether a barge-in was real).
 */
export class Speaker extends EventEmitter<SpeakerEvents> {
  private readonly queue: Utterance[] = [];
  /** Characters of text in `queue` (a streamed text counts as it was when queued: nothing). */
  private queuedChars = 0;
  /** The one utterance producing frames now. */
  private current: Utterance | undefined;
  /** Utterances whose frames are all written, still playing out at the far end. */
  private readonly draining = new Set<Utterance>();
  private epoch = 0;
  /** What a new segment takes to start playing (ms): request → first byte, smoothed. */
  private segmentLeadMs = INITIAL_LEAD_MS;
  private running = false;
  /** While the queue is held (`hold()`): the utterances queued when the hold began. */
  private held: Set<Utterance> | undefined;
  private closed = false;
  private readonly clock: Clock;
  private readonly pacer: Pacer;
  private readonly frameCapacity: number;

  constructor(private readonly options: SpeakerOptions) {
    super();
    this.clock = options.clock ?? systemClock;
    const { sink } = options;
    this.pacer = new Pacer(this.clock, {
      frameMs: sink.frameMs,
      leadMs: sink.leadMs,
      ...(sink.burstFrames === undefined ? {} : { burstFrames: sink.burstFrames }),
    });
    this.frameCapacity = Math.max(2, Math.ceil((options.bufferMs ?? 1000) / sink.frameMs));
  }

  /**
   * Queues `text` (or a stream of text, as an LLM produces it), or audio to play as it is (tones, a
   * recording: `AudioInput`), paced and interruptible like speech. Throws `SpeakerQueueFullError`
   * when `maxQueued` utterances already wait: a peer that keeps asking cannot grow the queue.
   */
  say(text: string | AsyncIterable<string> | AudioInput, options: SayOptions = {}): UtteranceHandle {
    const chars = typeof text === 'string' ? text.length : isAudioInput(text) ? text.text.length : 0;
    if (!this.closed && !this.fits(1, chars)) throw new SpeakerQueueFullError(this.queueLimits);
    const u = new Utterance(text, options, (changed, oldState, newState) =>
      this.emit('utteranceStateChange', changed.id, oldState, newState),
    );
    if (this.closed) {
      this.finish(u, 'failed', new Error('speaker is closed'));
      return { id: u.id, audible: u.audible, result: u.result, metrics: u.metrics };
    }
    if (options.signal) {
      const signal = options.signal;
      if (signal.aborted) this.finish(u, 'interrupted');
      else signal.addEventListener('abort', () => this.cancel(u), { once: true });
    }
    if (u.state.status === 'queued') {
      if (options.priority === 'now') {
        this.queue.unshift(u);
        this.queuedChars += u.text.length;
        if (this.current?.interruptible) this.interrupt({ keepQueue: true });
      } else {
        this.queue.push(u);
        this.queuedChars += u.text.length;
      }
      this.pump();
    }
    return { id: u.id, audible: u.audible, result: u.result, metrics: u.metrics };
  }

  /** The utterance speaking now, if any. */
  get speakingId(): string | undefined {
    return this.current?.id;
  }

  /** Whether something is speaking or still playing out at the far end. */
  get audible(): boolean {
    return this.current !== undefined || this.draining.size > 0;
  }

  get queued(): number {
    return this.queue.length;
  }

  /** Whether `utterances` more, with `chars` characters of text in all, would be queued now. */
  fits(utterances: number, chars: number): boolean {
    const limits = this.queueLimits;
    return this.queue.length + utterances <= limits.utterances && this.queuedChars + chars <= limits.chars;
  }

  /** What may wait its turn. */
  get queueLimits(): { utterances: number; chars: number } {
    return this.options.queueLimits ?? DEFAULT_QUEUE_LIMITS;
  }

  /**
   * Barge-in. Stops what the listener hears now (the current utterance and any still playing out) if
   * it is interruptible, or always with `force`; also drops the queue unless `keepQueue`.
   */
  interrupt(options: { force?: boolean; keepQueue?: boolean } = {}): InterruptResult {
    const audible = [...this.draining, ...(this.current ? [this.current] : [])];
    if (audible.length === 0 || (!options.force && audible.some((u) => !u.interruptible))) {
      if (!options.keepQueue && audible.length === 0) this.dropQueue(options.force ?? false);
      return { interrupted: false, playedMs: 0, heardText: '' };
    }
    // Measure what was heard before the clear moves the timeline.
    const heard = audible.map((u) => ({ u, ...this.heard(u) }));
    this.epoch++;
    // Stopped before the clear (`setState` would abort them too, when they are settled below).
    for (const { u } of heard) {
      if (u.state.status === 'speaking' || u.state.status === 'draining')
        u.state.controller.abort(INTERRUPTED);
    }
    this.options.sink.clear();
    this.pacer.reset();
    for (const { u, playedMs, heardText } of heard) {
      this.draining.delete(u);
      this.emit('interrupted', { id: u.id, playedMs, heardText });
      this.settle(u, { status: 'interrupted', playedMs, heardText });
    }
    if (!options.keepQueue) this.dropQueue(options.force ?? false);
    const last = heard.at(-1)!;
    return { interrupted: true, playedMs: last.playedMs, heardText: last.heardText };
  }

  /**
   * Holds the queue: nothing queued starts until `release()`; what speaks now goes on. A call holds it
   * after a barge-in while it decides whether the barge-in was real (the caller talks) or false (a
   * cough: the cut utterance resumes first). One holder at a time; holding again changes nothing.
   */
  hold(): void {
    this.held ??= new Set(this.queue);
  }

  /** Whether the queue is held. */
  get holding(): boolean {
    return this.held !== undefined;
  }

  /**
   * Ends the hold and lets the queue go on. With `drop`, the interruptible utterances that were queued
   * when the hold began end as interrupted first, as the barge-in would have dropped them; those queued
   * since (an app's answer to the barge-in) are kept.
   */
  release(options: { drop?: boolean } = {}): void {
    const held = this.held;
    if (!held) return;
    this.held = undefined;
    if (options.drop)
      for (const u of held) if (u.state.status === 'queued' && u.interruptible) this.cancel(u);
    this.pump();
  }

  /** Interrupts everything and refuses new utterances. */
  async close(): Promise<void> {
    this.closed = true;
    this.held = undefined;
    this.interrupt({ force: true });
    this.dropQueue(true);
    while (this.running) await new Promise((r) => setImmediate(r));
  }

  private dropQueue(force: boolean): void {
    for (const u of [...this.queue]) if (force || u.interruptible) this.cancel(u);
  }

  /** Ends one utterance early, wherever it is. */
  private cancel(u: Utterance): void {
    if (u.state.status === 'queued') {
      this.queue.splice(this.queue.indexOf(u), 1);
      this.queuedChars -= u.text.length;
      this.finish(u, 'interrupted');
    } else if (u === this.current || this.draining.has(u)) this.interrupt({ force: true, keepQueue: true });
  }

  private heard(u: Utterance, playedOut = false): { playedMs: number; heardText: string } {
    if (u.startPos === undefined) return { playedMs: 0, heardText: '' };
    const frameMs = this.options.sink.frameMs;
    // Whole milliseconds: a playout clock's fractions are noise, not information.
    const playedMs = Math.round(
      Math.max(0, Math.min(u.framesWritten * frameMs, this.options.sink.playedMs() - u.startPos)),
    );
    // Played out (its last frame played at the far end), it was heard whole: the position can still
    // read a few ms short of the audio's end, and the timings then dropped a last "?" (seen in a test
    // of 100 relay calls at once).
    const heardText =
      playedOut || (playedMs >= u.ledger.totalMs && u.framesWritten > 0 && u.state.status === 'draining')
        ? u.text.trim()
        : u.text.slice(0, u.ledger.heardOffset(playedMs, u.text)).trimEnd();
    return { playedMs, heardText };
  }

  private finish(u: Utterance, status: UtteranceResult['status'], error?: unknown): void {
    const { playedMs, heardText } = this.heard(u, status === 'played');
    this.settle(u, { status, playedMs, heardText, ...(error === undefined ? {} : { error }) });
  }

  private settle(u: Utterance, r: Omit<UtteranceResult, 'metrics'>): void {
    if (u.state.status === 'done') return;
    const result: UtteranceResult = { ...r, metrics: { ...u.metrics } };
    u.setState({ status: 'done', result });
    this.emit('utteranceEnd', { id: u.id, result });
  }

  private pump(): void {
    if (this.running || this.held) return;
    this.running = true;
    void (async () => {
      try {
        // A hold stops the loop before the next utterance; `release()` starts it again.
        for (let u = this.next(); u; u = this.next()) {
          if (u.state.status !== 'queued') continue;
          await this.speak(u);
        }
      } finally {
        this.running = false;
      }
    })();
  }

  private next(): Utterance | undefined {
    if (this.held) return undefined;
    const u = this.queue.shift();
    if (u) this.queuedChars -= u.text.length;
    return u;
  }

  /** Produces and sends one utterance; returns when its last frame is written (it may still be playing). */
  private async speak(u: Utterance): Promise<void> {
    const controller = new AbortController();
    u.setState({ status: 'speaking', controller });
    this.current = u;
    this.emit('utteranceStart', { id: u.id });
    const signal = controller.signal;
    const epoch = this.epoch;
    const frames = new FrameQueue<Uint8Array>(this.frameCapacity);
    const production = this.produce(u, frames, signal).then(
      () => frames.close(),
      (error: unknown) => {
        if (!signal.aborted) u.error = error;
        frames.close();
      },
    );
    try {
      await this.send(u, frames, epoch, signal);
    } catch (error) {
      if (!signal.aborted) u.error ??= error;
    } finally {
      controller.abort(INTERRUPTED); // whatever is still in flight (a prefetched request) ends here
      await production;
      if (this.current === u) this.current = undefined;
    }
    if (u.state.status !== 'speaking') return; // interrupted: already settled
    // What was written must play, even when the rest failed.
    this.options.sink.flush?.();
    if (u.error !== undefined) {
      this.finish(u, 'failed', u.error);
      return;
    }
    // Every frame is written; the utterance is 'played' once the far end has played its last one.
    const drain = new AbortController();
    u.setState({ status: 'draining', controller: drain });
    this.draining.add(u);
    const end = (u.startPos ?? 0) + u.framesWritten * this.options.sink.frameMs;
    void this.options.sink.whenPlayed(end, drain.signal).then(
      () => {
        if (u.state.status !== 'draining') return;
        this.draining.delete(u);
        this.finish(u, 'played');
      },
      () => undefined,
    );
  }

  /** The sender: paces frames out to the sink and counts the ones that were not ready in time. */
  private async send(
    u: Utterance,
    frames: FrameQueue<Uint8Array>,
    epoch: number,
    signal: AbortSignal,
  ): Promise<void> {
    const { sink } = this.options;
    for (;;) {
      const waitedFrom = frames.empty && u.framesWritten > 0 ? this.clock.now() : undefined;
      const payload = await frames.shift(signal);
      if (payload === undefined) return;
      if (!sink.selfPaced) {
        const { lateMs } = await this.pacer.next(signal);
        if (u.framesWritten > 0 && lateMs > sink.leadMs) u.metrics.underruns++;
      } else if (waitedFrom !== undefined && this.clock.now() - waitedFrom > sink.leadMs + sink.frameMs) {
        u.metrics.underruns++;
      }
      if (signal.aborted || epoch !== this.epoch) return;
      const first = u.startPos === undefined;
      // Whether the far end has played everything before this frame: then it plays as it arrives.
      const idle = first && sink.playedMs() >= sink.writtenMs();
      if (first) {
        u.startPos = sink.writtenMs();
        u.metrics.firstFrameMs = performance.now() - u.createdAt;
      }
      u.framesWritten++;
      await sink.write({ payload, epoch, utteranceId: u.id });
      if (first) this.whenHeard(u, idle);
    }
  }

  /**
   * Tells `u` when the listener begins to hear it (`audible`): now, when its first frame went to a far
   * end with nothing left to play; otherwise once what is queued ahead of it has played out (the
   * utterances still draining end first, so their end is known before this one's start).
   */
  private whenHeard(u: Utterance, idle: boolean): void {
    if (idle) {
      u.heard();
      return;
    }
    const ahead = [...this.draining].map((d) => d.result);
    const startPos = u.startPos!;
    const { sink } = this.options;
    void (async () => {
      await Promise.all(ahead);
      // Audio ahead of it that no utterance is waiting for (one that failed mid-way) plays out first.
      if (sink.playedMs() < startPos) await sink.whenPlayed(startPos, u.ended);
      u.heard();
    })().catch(() => undefined); // it ended first: `audible` says false
  }

  /**
   * The producer: segments the text, opens each segment one ahead of the one being read (prefetch), and
   * turns the audio into sink frames. Waits whenever the frame queue is full.
   *
   * A cached phrase plays from its rendition at the sink's rate when the cache holds one; otherwise the
   * segment is resampled as it is read, and a phrase the cache holds (replayed, or recorded by this
   * response) keeps what came out as its rendition.
   */
  private async produce(u: Utterance, frames: FrameQueue<Uint8Array>, signal: AbortSignal): Promise<void> {
    const { sink, cache } = this.options;
    const pipeline = new FramePipeline(SPEAKER_SAMPLE_RATE, sink.format, sink.frameMs);
    const format = pipeline.renditionFormat;
    const push = async (out: Uint8Array[]): Promise<void> => {
      for (const f of out) await frames.push(f, signal);
    };
    const opened = this.openAhead(u, signal);
    for await (const audio of opened) {
      u.segmentsBegun++;
      u.segmentsRead = false;
      const span = u.ledger.beginSegment(audio.segment, audio.alignment);
      const cached = audio.fromCache ? audio.phrase() : undefined;
      const rendition = cache && format && cached ? cache.rendition(cached, format) : undefined;
      if (cached && rendition) {
        await this.playRendition(u, pipeline, rendition, cached.audioBytes / BYTES_PER_MS, push, signal);
        u.segmentsRead = true;
        continue;
      }
      if (cache && format) pipeline.recordSegment(cache.maxEntryBytes);
      // Kept for a forced alignment when the service sent no timings (bounded: a longer one is estimated).
      let kept: Uint8Array[] | undefined = this.options.aligner && !audio.alignment ? [] : undefined;
      let keptBytes = 0;
      for await (const chunk of audio.chunks) {
        signal.throwIfAborted();
        u.ledger.addAudio(chunk.byteLength / BYTES_PER_MS);
        if (kept) {
          keptBytes += chunk.byteLength;
          if (keptBytes > MAX_ALIGNED_MS * BYTES_PER_MS) kept = undefined;
          else kept.push(chunk);
        }
        await push(pipeline.push(chunk));
      }
      u.segmentsRead = true;
      if (kept) this.alignSegment(u, span, audio.segment.text, kept);
      await push(pipeline.endSegment());
      // Read to the end: the response was complete (and recorded, when it was not a replay).
      const recorded = pipeline.takeRendition();
      const phrase = audio.phrase();
      if (recorded && phrase) cache!.keepRendition(phrase, format!, recorded);
    }
    // The last partial frame is padded, never dropped.
    await push(pipeline.finish());
  }

  /**
   * Times the words of a segment's audio (the aligner, off the event loop) and gives the ledger its
   * character timings when they come; a barge-in before then is estimated. A failure is only logged at
   * debug level: the estimate stands.
   */
  private alignSegment(u: Utterance, span: number, text: string, chunks: Uint8Array[]): void {
    const aligner = this.options.aligner!;
    const bytes = Buffer.concat(chunks);
    const samples = new Int16Array(bytes.buffer, bytes.byteOffset, bytes.byteLength >> 1);
    aligner(text, samples, SPEAKER_SAMPLE_RATE, u.ended).then(
      (words) => {
        if (words.length > 0) u.ledger.align(span, characterTimings(text, words));
        this.emit('aligned', { id: u.id, words: words.length });
      },
      () => this.emit('aligned', { id: u.id, words: 0 }),
    );
  }

  /**
   * A rendition into the frames in pieces as long as a source chunk's worth, each adding its share of
   * the phrase's `ms` to the ledger (as a replay of the chunks would).
   */
  private async playRendition(
    u: Utterance,
    pipeline: FramePipeline,
    rendition: Int16Array,
    ms: number,
    push: (out: Uint8Array[]) => Promise<void>,
    signal: AbortSignal,
  ): Promise<void> {
    const step = Math.max(1, Math.round((rendition.length * RENDITION_PIECE_MS) / ms));
    let addedMs = 0;
    for (let at = 0; at < rendition.length; at += step) {
      signal.throwIfAborted();
      const end = Math.min(rendition.length, at + step);
      const upTo = end === rendition.length ? ms : (ms * end) / rendition.length;
      u.ledger.addAudio(upTo - addedMs);
      addedMs = upTo;
      await push(pipeline.pushRendered(rendition.subarray(at, end)));
    }
  }

  /** Segments opened in order, the next one requested while the previous is still being read. */
  private async *openAhead(u: Utterance, signal: AbortSignal): AsyncGenerator<SegmentAudio> {
    const request = {
      voiceId: u.options.voiceId ?? this.options.voiceId,
      ...((u.options.modelId ?? this.options.modelId) === undefined
        ? {}
        : { modelId: (u.options.modelId ?? this.options.modelId)! }),
      ...((u.options.voiceSettings ?? this.options.voiceSettings) === undefined
        ? {}
        : { voiceSettings: (u.options.voiceSettings ?? this.options.voiceSettings)! }),
    };
    const input = u.input;
    if (isAudioInput(input)) {
      // Audio as it is: one segment, no request (once it is there, if it is on its way).
      const audio = await orAbort(Promise.resolve(input.audio), signal);
      u.metrics.firstByteMs = performance.now() - u.createdAt;
      yield {
        segment: { text: input.text, start: 0, end: input.text.length },
        chunks: (async function* (times: number) {
          for (let k = 0; k < times; k++) yield audio;
        })(Math.max(1, Math.floor(input.repeat ?? 1))),
        fromCache: false,
        alignment: undefined,
        phrase: () => undefined,
      };
      return;
    }
    const segments: AsyncIterator<Segment> =
      typeof input === 'string'
        ? (async function* (all: Segment[]) {
            yield* all;
          })(segmentText(input))
        : this.textOf(
            u,
            segmentStream(input, {
              signal,
              eagerFirst: EAGER_FIRST,
              runway:
                this.options.keepTalking === false
                  ? undefined
                  : {
                      remainingMs: () => this.runwayOf(u),
                      begun: () => u.segmentsBegun,
                      leadMs: () => this.segmentLeadMs + RUNWAY_MARGIN_MS,
                      minChars: RUNWAY_MIN_CHARS,
                    },
            }),
          );
    const whole = typeof input === 'string' ? input : undefined;
    const open = async (): Promise<SegmentAudio | undefined> => {
      const next = await segments.next();
      if (next.done) return undefined;
      const segment = next.value;
      const openedAt = performance.now();
      const audio = await openSegment(
        this.options.source,
        this.options.cache,
        { ...request, ...contextOf(whole ?? u.text, segment, whole !== undefined) },
        segment,
        signal,
      );
      if (audio.fromCache) u.metrics.cachedSegments++;
      else {
        u.metrics.requestedSegments++;
        // What a new segment takes to start: followed, so that a cut comes early enough.
        this.segmentLeadMs += LEAD_SMOOTHING * (performance.now() - openedAt - this.segmentLeadMs);
      }
      u.metrics.firstByteMs ??= performance.now() - u.createdAt;
      return audio;
    };
    let pending = open();
    for (;;) {
      const audio = await pending;
      if (!audio) return;
      // Prefetch: request the next segment now, while this one plays.
      pending = open();
      pending.catch(() => undefined);
      yield audio;
    }
  }

  /**
   * The audio of `u` queued and not yet played (ms), once every segment begun has been read; Infinity
   * while one is still arriving (its length is not known yet).
   */
  private runwayOf(u: Utterance): number {
    if (!u.segmentsRead) return Number.POSITIVE_INFINITY;
    const played = u.startPos === undefined ? 0 : Math.max(0, this.options.sink.playedMs() - u.startPos);
    return Math.max(0, u.ledger.totalMs - played);
  }

  /** Keeps `u.text` up to date with a streaming input, segment by segment. */
  private async *textOf(u: Utterance, segments: AsyncGenerator<Segment>): AsyncGenerator<Segment> {
    for await (const s of segments) {
      // Offsets are into the concatenated input; the whitespace between segments is not kept.
      u.text = u.text.padEnd(s.start, ' ') + s.text;
      yield s;
    }
  }
}

/**
 * The text either side of `segment` in `text`, for the service's prosody (`previousText`,
 * `nextText`): at most `CONTEXT_CHARS` each, cut at a word; the text after only when it is all known
 * (`whole`: not a stream still arriving).
 */
function contextOf(
  text: string,
  segment: Segment,
  whole: boolean,
): { previousText?: string; nextText?: string } {
  const context: { previousText?: string; nextText?: string } = {};
  let before = text.slice(Math.max(0, segment.start - CONTEXT_CHARS), segment.start);
  // Cut at a word (never inside a character): with no space in it, none of it.
  if (segment.start > CONTEXT_CHARS) before = before.slice(before.search(/\s/) + 1 || before.length);
  before = before.trim();
  if (before !== '') context.previousText = before;
  if (whole) {
    let after = text.slice(segment.end, segment.end + CONTEXT_CHARS);
    if (segment.end + CONTEXT_CHARS < text.length) {
      const cut = after.search(/\s\S*$/);
      after = cut > 0 ? after.slice(0, cut) : '';
    }
    after = after.trim();
    if (after !== '') context.nextText = after;
  }
  return context;
}
