import type { Logger } from 'pino';
import { AsyncQueue } from '../../async/queue.js';
import { WorkerPool, type WorkerJob } from '../../async/worker-pool.js';
import { compiledModule } from '../../paths.js';
import { OUTPUT_SAMPLE_RATE, type EngineDescriptor, type EngineId, type WordTiming } from './engine.js';
import type { EngineOptions, EngineUnavailable } from './engines.js';
import { inspectOnnxModels, type OnnxModelConfig } from './onnx/model-dir.js';
import {
  CANCEL_SLOT,
  type EngineWorkerReady,
  type FromWorker,
  type SynthJob,
  type ToWorker,
} from './protocol.js';
import { pieceOffsets, splitForEngine } from './sentences.js';
import type { VoiceParams } from './voice-params.js';

export class EngineError extends Error {
  override readonly name = 'EngineError';
}

/**
 * Chunks of one job's audio the consumer has not pulled yet, at most. The worker cannot be paused
 * mid-piece, so the bound is the audio of one text piece: `PIECE_MAX_CHARS` of text is under a minute
 * of speech even at an engine's slowest rate, and this is ~100 s of ~100 ms chunks (every engine
 * hands its audio out in chunks of about that size). A job past it is broken, not slow, and is failed.
 */
const MAX_QUEUED_CHUNKS = 1024;
/**
 * Pieces waiting for a worker, at most. A request waits with one piece at a time, so this is a bound on
 * requests waiting: above the server's default connection cap (4000), and past it a request is refused
 * (`WorkerQueueFullError`, a 503) rather than queued behind a backlog nobody will hear in time.
 */
const MAX_QUEUED_JOBS = 4096;

/** Words of one `words` message, in the piece's own positions and times. */
interface WordBatch {
  readonly words: readonly WordTiming[];
}

interface Job extends WorkerJob<ToWorker, FromWorker> {
  readonly message: SynthJob;
  /**
   * Audio of the job, and its word timings when asked for (each batch ahead of the audio it came
   * with), pulled by its consumer; closed (with the error, if any) when the job ends.
   */
  readonly chunks: AsyncQueue<Int16Array | WordBatch>;
}

/** A chunk of speech and the words whose timings the engine finished with it. */
export interface TimedAudio {
  readonly samples: Int16Array;
  /** Code points of the whole text; milliseconds from the first sample of its whole audio. */
  readonly words: readonly WordTiming[];
}

const NO_SAMPLES = new Int16Array(0);

export interface EnginePoolOptions {
  /** Worker threads, each with one instance of every engine that loads. */
  workers: number;
  /** Neural voices the operator brings (`service.engines.onnx.models`); none by default. */
  onnxModels?: readonly OnnxModelConfig[] | undefined;
  logger?: Logger | undefined;
}

/**
 * What each engine says first, in every worker: the first syntheses of a process are slow (the
 * WebAssembly is compiled function by function as it is first called, and optimized once it runs
 * hot). Flite's diphone voice (the default) and one of its recorded voices take different paths
 * through it.
 */
const WARM_TEXT = 'Warming up: the quick brown fox jumps over the lazy dog, 23 times.';
/** ONNX Runtime's first run of a model allocates its buffers; words only, which any lexicon has. */
const ONNX_WARM_TEXT = 'Warming up: the quick brown fox jumps over the lazy dog.';
const WARM_VOICES: Readonly<Record<Exclude<EngineId, 'onnx'>, readonly VoiceParams[]>> = {
  flite: [
    { engine: 'flite', voice: 'kal16', f0Hz: 95, f0RangeHz: 11, rate: 1 },
    { engine: 'flite', voice: 'rms', f0Hz: 98, f0RangeHz: 24, rate: 1 },
  ],
  'espeak-ng': [
    { engine: 'espeak-ng', language: 'en-us', variant: 'm3', pitch: 50, range: 50, rateWpm: 175 },
  ],
};

/** What to warm an engine with: its stock voices, or the first voice of each ONNX model. */
function warmVoices(engine: EngineDescriptor): readonly VoiceParams[] {
  if (engine.id !== 'onnx') return WARM_VOICES[engine.id];
  const byModel = new Map<string, VoiceParams>();
  for (const v of engine.voices)
    if (v.params?.engine === 'onnx' && !byModel.has(v.params.model)) byModel.set(v.params.model, v.params);
  return [...byModel.values()];
}

/**
 * A fixed set of engine workers fed from one queue. A request synthesizes its text piece by piece, one
 * queued job at a time, so concurrent requests share the workers round-robin; the first piece of every
 * request jumps the queue, so a new request gets its first audio quickly even under load.
 */
export class EnginePool {
  private nextJobId = 1;
  /** Jobs finished by the engine, and jobs stopped part-way because nobody wanted them any more. */
  readonly stats = { completed: 0, cancelled: 0 };

  private constructor(
    private readonly workers: WorkerPool<ToWorker, FromWorker, EngineWorkerReady>,
    /** Each worker's cancel slot (protocol.ts), by its slot in `workers`. */
    private readonly cancels: readonly Int32Array[],
    /** The engines every worker loaded, and those it could not (the same in every worker). */
    readonly engines: readonly EngineDescriptor[],
    readonly unavailable: readonly EngineUnavailable[],
  ) {}

  /** Starts the workers and warms each engine (the first synthesis of a process is slow). */
  static async start(options: EnginePoolOptions): Promise<EnginePool> {
    const count = Math.max(1, options.workers);
    const cancels = Array.from({ length: count }, () => new Int32Array(new SharedArrayBuffer(4)));
    // Checked here, before any worker hands a model to sherpa-onnx, which ends the process on some
    // faults of a model instead of throwing (onnx/model-dir.ts).
    const onnx = await inspectOnnxModels(options.onnxModels ?? []);
    const engineOptions: EngineOptions = { onnxModels: onnx.models };
    let ready: EngineWorkerReady | undefined;
    const workers = await WorkerPool.start<ToWorker, FromWorker, EngineWorkerReady>({
      // The worker runs compiled JavaScript, also when this file runs from source under the test runner.
      module: compiledModule('service/engine/worker.js'),
      name: 'engine worker',
      workers: count,
      // A replacement shares its slot's cancel word: job ids are never reused, so none is stale.
      workerData: (slot) => ({ cancel: cancels[slot]!.buffer, options: engineOptions }),
      maxQueuedJobs: MAX_QUEUED_JOBS,
      logger: options.logger,
      onReady: (_slot, message) => {
        ready ??= message;
      },
    });
    const pool = new EnginePool(workers, cancels, ready!.engines, ready!.unavailable);
    for (const { id, reason } of pool.unavailable)
      options.logger?.[id === 'onnx' ? 'warn' : 'info'](
        { engine: id },
        `speech engine ${id} is not available: ${reason}`,
      );
    for (const { what, reason } of [...onnx.skipped, ...(pool.engine('onnx')?.skipped ?? [])])
      options.logger?.warn({ engine: 'onnx' }, `speech engine onnx: skipped ${what}: ${reason}`);
    try {
      await Promise.all(
        cancels.map(async () => {
          for (const engine of pool.engines)
            for (const voice of warmVoices(engine))
              // With timings: the path of voxbridge's own requests (Flite's token pass included).
              for await (const _ of pool.synthesizeTimed(
                engine.id === 'onnx' ? ONNX_WARM_TEXT : WARM_TEXT,
                voice,
                AbortSignal.timeout(30_000),
              )) {
                /* discard */
              }
        }),
      );
    } catch (error) {
      await pool.close();
      throw error;
    }
    return pool;
  }

  /** Jobs waiting for a worker: the local engine's queue depth. */
  get queueDepth(): number {
    return this.workers.queued;
  }

  get workerCount(): number {
    return this.workers.size;
  }

  /** The engine, if the workers loaded it. */
  engine(id: EngineId): EngineDescriptor | undefined {
    return this.engines.find((e) => e.id === id);
  }

  /** Speech for `text` as 24 kHz mono chunks, piece by piece. Aborting stops synthesis within a chunk. */
  async *synthesize(text: string, voice: VoiceParams, signal: AbortSignal): AsyncGenerator<Int16Array> {
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
  async *synthesizeTimed(text: string, voice: VoiceParams, signal: AbortSignal): AsyncGenerator<TimedAudio> {
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
    voice: VoiceParams,
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

  /** Stops the workers: jobs queued or running fail with `WorkerPoolClosedError`. */
  close(): Promise<void> {
    return this.workers.close();
  }

  /** Queues one piece (the first of a request ahead of the others). */
  private enqueue(text: string, voice: VoiceParams, first: boolean, timings: boolean): Job {
    const chunks = new AsyncQueue<Int16Array | WordBatch>(
      // At most one batch of words per chunk of audio, and one more at the end.
      timings ? 2 * MAX_QUEUED_CHUNKS + 1 : MAX_QUEUED_CHUNKS,
    );
    const job: Job = {
      message: { type: 'synth', jobId: this.nextJobId++, text, voice, timings },
      chunks,
      onMessage: (message, slot) => this.onMessage(job, message, slot),
      onFail: (error) => chunks.close(error),
    };
    this.workers.submit(job, first);
    return job;
  }

  /** A message of the worker running `job`: true when it ends the job. */
  private onMessage(job: Job, message: FromWorker, slot: number): boolean {
    const { jobId } = job.message;
    if (message.jobId !== jobId) return false; // a cancelled job's late chunk
    if (message.type === 'audio' || message.type === 'words') {
      if (!job.chunks.tryPush(message.type === 'audio' ? message.samples : { words: message.words })) {
        job.chunks.close(new EngineError(`job ${jobId} produced more than ${MAX_QUEUED_CHUNKS} chunks`));
        Atomics.store(this.cancels[slot]!, CANCEL_SLOT, jobId);
      }
      return false;
    }
    if (message.type === 'failed') job.chunks.close(new EngineError(`synthesis failed: ${message.message}`));
    else {
      if (message.cancelled) this.stats.cancelled++;
      else this.stats.completed++;
      job.chunks.close();
    }
    return true;
  }

  private cancel(job: Job): void {
    if (this.workers.cancel(job)) {
      this.stats.cancelled++;
      job.chunks.close();
      return;
    }
    const slot = this.workers.slotOf(job);
    if (slot !== undefined) Atomics.store(this.cancels[slot]!, CANCEL_SLOT, job.message.jobId);
  }
}
