import { Worker } from 'node:worker_threads';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import { AsyncQueue } from '../../async/queue.js';
import { compiledModule } from '../../paths.js';
import type { EngineVoiceParams } from '../voices/params.js';
import {
  CANCEL_SLOT,
  OUTPUT_SAMPLE_RATE,
  type FromWorker,
  type SynthJob,
  type WordTiming,
} from './protocol.js';
import { pieceOffsets, splitForEngine } from './sentences.js';

/** The worker runs compiled JavaScript, also when this file runs from source under the test runner. */
function workerUrl(): URL {
  const url = compiledModule('service/engine/worker.js');
  if (!existsSync(fileURLToPath(url)))
    throw new Error(`engine worker ${fileURLToPath(url)} is missing: run \`npm run build\` first`);
  return url;
}

export class EngineError extends Error {
  override readonly name = 'EngineError';
}

/**
 * Chunks of one job's audio the consumer has not pulled yet, at most. The worker cannot be paused
 * mid-piece, so the bound is the audio of one text piece: `PIECE_MAX_CHARS` of text is under a minute
 * of speech even at eSpeak's slowest rate, and this is ~100 s of ~100 ms chunks. A job past it is
 * broken, not slow, and is failed.
 */
const MAX_QUEUED_CHUNKS = 1024;

/** Words of one `words` message, in the piece's own positions and times. */
interface WordBatch {
  readonly words: readonly WordTiming[];
}

interface Job {
  readonly message: SynthJob;
  /**
   * Audio of the job, and its word timings when asked for (each batch ahead of the audio it came
   * with), pulled by its consumer; closed (with the error, if any) when the job ends.
   */
  readonly chunks: AsyncQueue<Int16Array | WordBatch>;
  slot: Slot | undefined;
}

/** A chunk of speech and the words whose timings the engine finished with it. */
export interface TimedAudio {
  readonly samples: Int16Array;
  /** Code points of the whole text; milliseconds from the first sample of its whole audio. */
  readonly words: readonly WordTiming[];
}

const NO_SAMPLES = new Int16Array(0);

interface Slot {
  worker: Worker;
  readonly cancel: Int32Array;
  job: Job | undefined;
  ready: boolean;
}

export interface EnginePoolOptions {
  /** Worker threads, one engine each. */
  workers: number;
  logger?: Logger | undefined;
}

/**
 * A fixed set of engine workers fed from one queue. A request synthesizes its text piece by piece, one
 * queued job at a time, so concurrent requests share the workers round-robin; the first piece of every
 * request jumps the queue, so a new request gets its first audio quickly even under load.
 */
export class EnginePool {
  private readonly slots: Slot[] = [];
  private readonly firstPieces: Job[] = [];
  private readonly laterPieces: Job[] = [];
  private nextJobId = 1;
  /** Jobs finished by the engine, and jobs stopped part-way because nobody wanted them any more. */
  readonly stats = { completed: 0, cancelled: 0 };
  private closed = false;
  private readonly logger: Logger | undefined;
  private readonly url = workerUrl();

  private constructor(options: EnginePoolOptions) {
    this.logger = options.logger;
  }

  /** Starts the workers and warms each engine (the first synthesis of a process is slow). */
  static async start(options: EnginePoolOptions): Promise<EnginePool> {
    const pool = new EnginePool(options);
    const count = Math.max(1, options.workers);
    for (let i = 0; i < count; i++) pool.slots.push(pool.spawn());
    await Promise.all(pool.slots.map((slot) => pool.whenReady(slot)));
    const warmVoice: EngineVoiceParams = {
      language: 'en-us',
      variant: 'm3',
      pitch: 50,
      range: 50,
      rateWpm: 175,
    };
    await Promise.all(
      pool.slots.map(async () => {
        for await (const _ of pool.synthesize('Warming up.', warmVoice, AbortSignal.timeout(30_000))) {
          /* discard */
        }
      }),
    );
    return pool;
  }

  /** Jobs waiting for a worker: the local engine's queue depth. */
  get queueDepth(): number {
    return this.firstPieces.length + this.laterPieces.length;
  }

  get workerCount(): number {
    return this.slots.length;
  }

  /** Speech for `text` as 24 kHz mono chunks, piece by piece. Aborting stops synthesis within a chunk. */
  async *synthesize(text: string, voice: EngineVoiceParams, signal: AbortSignal): AsyncGenerator<Int16Array> {
    const pieces = splitForEngine(text);
    for (let i = 0; i < pieces.length; i++) {
      for await (const item of this.run(pieces[i]!, voice, i === 0, false, signal))
        if (item instanceof Int16Array) yield item;
    }
  }

  /**
   * The same speech, each chunk with the words the engine finished along with it: positions in `text`
   * (code points), times from the first sample of the whole audio. Words still unfinished at the last
   * chunk come with an empty one.
   */
  async *synthesizeTimed(
    text: string,
    voice: EngineVoiceParams,
    signal: AbortSignal,
  ): AsyncGenerator<TimedAudio> {
    const pieces = splitForEngine(text);
    const offsets = pieceOffsets(text, pieces);
    let samplesBefore = 0;
    let words: WordTiming[] = [];
    for (let i = 0; i < pieces.length; i++) {
      const offset = offsets[i]!;
      const offsetMs = (samplesBefore * 1000) / OUTPUT_SAMPLE_RATE;
      for await (const item of this.run(pieces[i]!, voice, i === 0, true, signal)) {
        if (item instanceof Int16Array) {
          samplesBefore += item.length;
          yield { samples: item, words };
          words = [];
          continue;
        }
        for (const w of item.words)
          words.push({
            start: w.start + offset,
            end: w.end + offset,
            startMs: w.startMs + offsetMs,
            endMs: w.endMs + offsetMs,
          });
      }
    }
    if (words.length > 0) yield { samples: NO_SAMPLES, words };
  }

  /** One piece as one job: what it produces, until it ends. */
  private async *run(
    piece: string,
    voice: EngineVoiceParams,
    first: boolean,
    timings: boolean,
    signal: AbortSignal,
  ): AsyncGenerator<Int16Array | WordBatch> {
    signal.throwIfAborted();
    const job = this.enqueue(piece, voice, first, timings);
    const onAbort = (): void => this.cancel(job);
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      for await (const item of job.chunks) {
        signal.throwIfAborted();
        yield item;
      }
    } finally {
      signal.removeEventListener('abort', onAbort);
      // Reached when the consumer stops early too: the engine must not keep working for nobody.
      this.cancel(job);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    const error = new EngineError('engine pool closed');
    for (const job of [...this.firstPieces, ...this.laterPieces]) job.chunks.close(error);
    this.firstPieces.length = 0;
    this.laterPieces.length = 0;
    await Promise.all(this.slots.map((slot) => slot.worker.terminate()));
  }

  private spawn(): Slot {
    const shared = new SharedArrayBuffer(4);
    const slot: Slot = {
      worker: undefined as unknown as Worker,
      cancel: new Int32Array(shared),
      job: undefined,
      ready: false,
    };
    const worker = new Worker(this.url, { workerData: { cancel: shared } });
    slot.worker = worker;
    worker.on('message', (message: FromWorker) => this.onMessage(slot, message));
    worker.on('error', (error) => this.logger?.error({ err: error }, 'engine worker failed'));
    worker.on('exit', (code) => this.onExit(slot, code));
    return slot;
  }

  private whenReady(slot: Slot): Promise<void> {
    if (slot.ready) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const onMessage = (m: FromWorker): void => {
        if (m.type !== 'ready') return;
        slot.worker.off('exit', onExit);
        slot.worker.off('message', onMessage);
        resolve();
      };
      const onExit = (code: number): void =>
        reject(new EngineError(`engine worker exited with code ${code} while starting`));
      slot.worker.on('message', onMessage);
      slot.worker.once('exit', onExit);
    });
  }

  private onMessage(slot: Slot, message: FromWorker): void {
    if (message.type === 'ready') {
      slot.ready = true;
      this.dispatch();
      return;
    }
    const job = slot.job;
    if (!job || job.message.jobId !== message.jobId) return; // a cancelled job's late chunk
    if (message.type === 'audio' || message.type === 'words') {
      if (!job.chunks.tryPush(message.type === 'audio' ? message.samples : { words: message.words })) {
        job.chunks.close(
          new EngineError(`job ${job.message.jobId} produced more than ${MAX_QUEUED_CHUNKS} chunks`),
        );
        Atomics.store(slot.cancel, CANCEL_SLOT, job.message.jobId);
      }
      return;
    }
    slot.job = undefined;
    job.slot = undefined;
    if (message.type === 'failed') job.chunks.close(new EngineError(`synthesis failed: ${message.message}`));
    else {
      if (message.cancelled) this.stats.cancelled++;
      else this.stats.completed++;
      job.chunks.close();
    }
    this.dispatch();
  }

  private onExit(slot: Slot, code: number): void {
    const job = slot.job;
    slot.job = undefined;
    slot.ready = false;
    job?.chunks.close(new EngineError(`engine worker exited with code ${code}`));
    if (this.closed) return;
    this.logger?.warn({ code }, 'engine worker exited; starting a new one');
    const index = this.slots.indexOf(slot);
    if (index >= 0) this.slots[index] = this.spawn();
  }

  private enqueue(text: string, voice: EngineVoiceParams, first: boolean, timings: boolean): Job {
    if (this.closed) throw new EngineError('engine pool closed');
    const job: Job = {
      message: { type: 'synth', jobId: this.nextJobId++, text, voice, timings },
      // At most one batch of words per chunk of audio, and one more at the end.
      chunks: new AsyncQueue<Int16Array | WordBatch>(timings ? 2 * MAX_QUEUED_CHUNKS + 1 : MAX_QUEUED_CHUNKS),
      slot: undefined,
    };
    (first ? this.firstPieces : this.laterPieces).push(job);
    this.dispatch();
    return job;
  }

  private cancel(job: Job): void {
    for (const queue of [this.firstPieces, this.laterPieces]) {
      const i = queue.indexOf(job);
      if (i >= 0) {
        queue.splice(i, 1);
        this.stats.cancelled++;
        job.chunks.close();
        return;
      }
    }
    if (job.slot) Atomics.store(job.slot.cancel, CANCEL_SLOT, job.message.jobId);
  }

  private dispatch(): void {
    for (const slot of this.slots) {
      if (!slot.ready || slot.job) continue;
      const job = this.firstPieces.shift() ?? this.laterPieces.shift();
      if (!job) return;
      slot.job = job;
      job.slot = slot;
      slot.worker.postMessage(job.message);
    }
  }
}
