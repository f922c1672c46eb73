/**
 * Detection off the event loop: a fixed set of worker threads (one per core by default), each with
 * the Silero model loaded once, hosting whole detectors (detector.ts). A call's detector lives in one
 * worker, its Silero state and its echo estimator beside it, so a window needs no round trip between
 * the echo's verdict, the windows before it and Silero's: the call's audio goes out, its onsets come
 * back. The main thread only decodes the caller's audio and hands it over.
 *
 * Each stream (a call's detector, or the fresh one a `reset()` starts) is assigned on its first push
 * to the ready worker with the fewest streams, and all its pushes go there, in order. The pushes queued
 * for a worker go in one message (protocol.ts) at most every `BATCH_EVERY_MS`. The worker runs each
 * stream's pushes in order, a stream whose caller may be speaking before the others (worker.ts), and
 * sends their results back a few milliseconds of work at a time, at once after a push that found an
 * onset. The time a push waited in the worker counts as its detector's lag (`PushInfo.waitedMs`):
 * past `MAX_LAG_MS`, it judges by the energy gate alone until it catches up.
 *
 * The threads' lifecycle is the shared `WorkerPool`'s (src/async/worker-pool.ts): spawning, readiness,
 * replacement. A worker that dies fails the pushes it held (`VadWorkerError`: a `PooledDetector`
 * resolves them without an onset, and counts them), is logged, and is replaced; while no worker is
 * ready, pushes fail at once. Its streams lose their detectors: each is assigned again on its next push,
 * and starts afresh (until then their calls hear no onset).
 */
import { availableParallelism } from 'node:os';
import type { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import { WorkerPool, WorkerPoolError } from '../async/worker-pool.js';
import { compiledModule } from '../paths.js';
import type { DetectorOptions, DetectorSource, PushInfo, SpeechTurn } from './detector.js';
import { PooledDetector, VadWorkerError, type DetectorHost, type PushOutcome } from './pooled-detector.js';
import {
  PUSH_FIELDS,
  RESULT_FIELDS,
  sharedNow,
  type FromVadWorker,
  type HostedDetectorOptions,
  type PushResults,
  type ToVadWorker,
  type VadWorkerReady,
} from './protocol.js';
import { WASM_FALLBACK_LOG, type SileroSessionOptions } from './silero.js';

export interface VadWorkersOptions {
  /** Worker threads; 'auto' (the default): one per core. */
  workers?: number | 'auto';
  logger?: Logger | undefined;
  /** Which ONNX Runtime each worker runs Silero on (silero.ts): by default the native one when it loads. */
  silero?: SileroSessionOptions | undefined;
}

interface Pending {
  resolve: (outcome: PushOutcome) => void;
  reject: (error: Error) => void;
}

interface Probe {
  resolve: (detectors: number) => void;
  reject: (error: Error) => void;
}

/** A push, queued for the next batch and then in flight: one record for both (fifty a second a call). */
interface QueuedPush extends Pending {
  id: number;
  stream: number;
  samples: Int16Array;
  info: PushInfo;
}

/** What the pool keeps for one worker (the `WorkerPool`'s slot of the same index). */
interface Slot {
  readonly index: number;
  /** Pushes sent and not answered yet. */
  readonly inFlight: Map<number, Pending>;
  /** For the next batch: streams to start, pushes, streams to drop. */
  opens: Array<{ stream: number; options: HostedDetectorOptions }>;
  pushes: QueuedPush[];
  closes: number[];
  /** Streams assigned to this worker (their detectors live there). */
  readonly streams: Set<number>;
  /** Diagnostic probes sent and not answered yet. */
  readonly probes: Map<number, Probe>;
}

/** The turns of a push that ended none (nearly every push): one array for all of them. */
const NO_TURNS: readonly SpeechTurn[] = Object.freeze([]);
/**
 * Batches leave at most this often (ms): the pushes of the turns in between wait and go together. A
 * message costs the main thread some microseconds whatever it holds, and hundreds of calls' 20 ms
 * chunks arriving each in its own turn made a message per chunk (`postMessage` was the main thread's
 * largest cost under load after garbage collection; figures: docs/calls.md, «The bot's own echo», on
 * the VAD worker threads).
 */
const BATCH_EVERY_MS = 4;

/** Starts the pool and waits until every worker has its model loaded and warmed up. */
export async function startVadWorkers(options: VadWorkersOptions = {}): Promise<VadWorkerPool> {
  const pool = new VadWorkerPool(options);
  try {
    await pool.started();
  } catch (error) {
    await pool.close();
    throw vadError(error);
  }
  return pool;
}

/** The pool's own failures as the `VadWorkerError` its users know (the pool's error as its cause). */
function vadError(error: unknown): unknown {
  return error instanceof WorkerPoolError ? new VadWorkerError(error.message, { cause: error }) : error;
}

export class VadWorkerPool implements DetectorSource, DetectorHost {
  runtime = 'ONNX Runtime (worker threads)';
  /** The threads, one per slot of `slots`. */
  private readonly threads: WorkerPool<ToVadWorker, FromVadWorker, VadWorkerReady>;
  private readonly slots: Slot[] = [];
  private nextId = 1;
  private nextStream = 1;
  private flushScheduled = false;
  private fallbackLogged = false;
  private lastFlushAt = Number.NEGATIVE_INFINITY;
  /** Each stream's worker, from its first push until it is closed or its worker dies. */
  private readonly streamSlots = new Map<number, Slot>();
  /**
   * Workers that died and were replaced; pushes failed because no worker could run them; batches
   * sent; over all the workers' detectors, windows judged by the energy gate alone because their
   * detector was behind (a busy machine: `MAX_LAG_MS`), and Silero inferences run.
   */
  readonly stats = { restarts: 0, failed: 0, batches: 0, skippedWindows: 0, inferences: 0 };

  constructor(options: VadWorkersOptions) {
    const count = Math.max(
      1,
      options.workers === undefined || options.workers === 'auto' ? availableParallelism() : options.workers,
    );
    for (let index = 0; index < count; index++)
      this.slots.push({
        index,
        inFlight: new Map(),
        opens: [],
        pushes: [],
        closes: [],
        streams: new Set(),
        probes: new Map(),
      });
    this.threads = new WorkerPool({
      module: compiledModule('barge-in/worker.js'),
      name: 'VAD worker',
      threadName: 'voxbridge-vad',
      workers: count,
      workerData: () => options.silero ?? {},
      // A worker holds no request of its own: it must not keep the process alive.
      unref: true,
      logger: options.logger,
      onReady: (_slot, message) => {
        this.runtime = `${message.runtime} × ${count} worker threads`;
        // Every worker falls back alike (and again when one is replaced): said once.
        if (message.fallback !== undefined && !this.fallbackLogged) {
          this.fallbackLogged = true;
          options.logger?.warn({ runtime: message.runtime, reason: message.fallback }, WASM_FALLBACK_LOG);
        }
      },
      onMessage: (slot, message) => this.onMessage(this.slots[slot]!, message),
      onExit: (slot, error) => {
        this.fail(this.slots[slot]!, new VadWorkerError(error.message, { cause: error }));
        this.stats.restarts++;
      },
    });
  }

  /** A call's detector, run in a worker (`now` is the worker's own clock). */
  detector(options: DetectorOptions): PooledDetector {
    return new PooledDetector(this, options);
  }

  /** Pushes sent or queued and not answered yet, over all workers. */
  get queueDepth(): number {
    let depth = 0;
    for (const slot of this.slots) depth += slot.inFlight.size + slot.pushes.length;
    return depth;
  }

  /** The threads (none for one waiting to be replaced), for diagnostics (and for tests that kill one). */
  get workers(): ReadonlyArray<Worker | undefined> {
    return this.slots.map((slot) => this.threads.worker(slot.index));
  }

  /** Streams assigned to each worker (indexed as `workers`), for diagnostics. */
  get streams(): number[] {
    return this.slots.map((slot) => slot.streams.size);
  }

  /** The index (in `workers`) of the worker that holds `stream`'s detector, if one does. */
  workerOf(stream: number): number | undefined {
    return this.streamSlots.get(stream)?.index;
  }

  /**
   * Diagnostics: how many detectors each worker holds, asked of the workers themselves after
   * everything queued so far (a worker that is not ready counts none).
   */
  async hostedDetectors(): Promise<number[]> {
    this.flush();
    return Promise.all(
      this.slots.map((slot) => {
        if (!this.threads.isReady(slot.index)) return Promise.resolve(0);
        const id = this.nextId++;
        return new Promise<number>((resolve, reject) => {
          slot.probes.set(id, { resolve, reject });
          this.post(slot, { type: 'probe', id });
        });
      }),
    );
  }

  /** Resolves once every worker is ready (after a restart, once its replacement is). */
  ready(): Promise<void> {
    return this.threads.ready().catch((error: unknown) => {
      throw vadError(error);
    });
  }

  /** @internal the first start: rejects if a worker dies before it is ready. */
  started(): Promise<void> {
    return this.threads.started();
  }

  /** @internal a new stream's id (a detector's, or the fresh one its reset starts). */
  openStream(): number {
    return this.nextStream++;
  }

  /**
   * @internal one chunk of `stream`'s audio, to the stream's worker (assigned now if it has none,
   * where a detector with `options` starts). The arrays are handed over: not to be changed afterwards.
   */
  push(
    stream: number,
    options: HostedDetectorOptions,
    samples: Int16Array,
    info: PushInfo,
  ): Promise<PushOutcome> {
    let slot = this.streamSlots.get(stream);
    if (!slot) {
      slot = this.assign(stream);
      if (!slot) return this.refuse();
      slot.opens.push({ stream, options });
    }
    const target = slot;
    const id = this.nextId++;
    return new Promise<PushOutcome>((resolve, reject) => {
      const push: QueuedPush = { id, stream, samples, info, resolve, reject };
      target.inFlight.set(id, push);
      target.pushes.push(push);
      this.scheduleFlush();
    });
  }

  /** @internal frees `stream`'s detector once the pushes already given have been run; none follow. */
  closeStream(stream: number): void {
    const slot = this.streamSlots.get(stream);
    if (!slot) return;
    this.streamSlots.delete(stream);
    slot.streams.delete(stream);
    slot.closes.push(stream);
    this.scheduleFlush();
  }

  async close(): Promise<void> {
    if (this.threads.closed) return this.threads.close();
    const error = new VadWorkerError('VAD workers closed');
    for (const slot of this.slots) this.fail(slot, error);
    await this.threads.close();
  }

  /** A push no worker can take: refused at once, and counted. */
  private refuse(): Promise<never> {
    this.stats.failed++;
    return Promise.reject(
      new VadWorkerError(this.threads.closed ? 'VAD workers closed' : 'no VAD worker is ready'),
    );
  }

  /** The ready worker with the fewest streams (then the fewest pushes in flight) takes `stream`. */
  private assign(stream: number): Slot | undefined {
    let best: Slot | undefined;
    for (const slot of this.slots) {
      if (!this.threads.isReady(slot.index)) continue;
      if (
        !best ||
        slot.streams.size < best.streams.size ||
        (slot.streams.size === best.streams.size && slot.inFlight.size < best.inFlight.size)
      )
        best = slot;
    }
    if (!best) return undefined;
    best.streams.add(stream);
    this.streamSlots.set(stream, best);
    return best;
  }

  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    const wait = this.lastFlushAt + BATCH_EVERY_MS - performance.now();
    if (wait <= 0) setImmediate(this.scheduledFlush);
    else setTimeout(this.scheduledFlush, wait);
  }

  private readonly scheduledFlush = (): void => {
    this.flushScheduled = false;
    this.lastFlushAt = performance.now();
    this.flush();
  };

  /** Sends each worker its batch: the streams to start, the pushes packed, the streams to drop. */
  private flush(): void {
    for (const slot of this.slots) {
      const { opens, pushes, closes } = slot;
      if (opens.length === 0 && pushes.length === 0 && closes.length === 0) continue;
      slot.opens = [];
      slot.pushes = [];
      slot.closes = [];
      const meta = new Float64Array(pushes.length * PUSH_FIELDS);
      let samples = 0;
      for (const p of pushes) samples += p.samples.length + (p.info.reference?.length ?? 0);
      const audio = new Int16Array(samples);
      let offset = 0;
      pushes.forEach((p, i) => {
        const m = i * PUSH_FIELDS;
        meta[m] = p.id;
        meta[m + 1] = p.stream;
        meta[m + 2] = p.info.timestampMs ?? Number.NaN;
        meta[m + 3] = p.info.botAudible ? 1 : 0;
        meta[m + 4] = p.samples.length;
        meta[m + 5] = p.info.reference?.length ?? 0;
        meta[m + 6] = p.info.referenceMoved ?? 0;
        audio.set(p.samples, offset);
        offset += p.samples.length;
        if (p.info.reference) {
          audio.set(p.info.reference, offset);
          offset += p.info.reference.length;
        }
      });
      this.stats.batches++;
      this.post(slot, { type: 'batch', opens, meta, audio, sentAt: sharedNow(), closes }, [
        meta.buffer,
        audio.buffer,
      ]);
    }
  }

  private post(slot: Slot, message: ToVadWorker, transfer?: ArrayBuffer[]): void {
    this.threads.post(slot.index, message, transfer);
  }

  private onMessage(slot: Slot, message: FromVadWorker): void {
    if (message.type === 'probe') {
      const probe = slot.probes.get(message.id);
      slot.probes.delete(message.id);
      probe?.resolve(message.detectors);
      return;
    }
    this.settle(slot, message);
  }

  private settle(slot: Slot, results: PushResults): void {
    this.stats.skippedWindows += results.skipped;
    this.stats.inferences += results.inferences;
    const turns = new Map<number, SpeechTurn[]>();
    for (const { id, turn } of results.turns) {
      const list = turns.get(id);
      if (list) list.push(turn);
      else turns.set(id, [turn]);
    }
    for (const { id, error } of results.errors) {
      const pending = slot.inFlight.get(id);
      slot.inFlight.delete(id);
      pending?.reject(new VadWorkerError(`detection failed: ${error}`));
    }
    const { meta } = results;
    for (let r = 0; r < meta.length; r += RESULT_FIELDS) {
      const id = meta[r]!;
      const pending = slot.inFlight.get(id);
      if (!pending) continue;
      slot.inFlight.delete(id);
      const onset =
        meta[r + 1] === 1
          ? {
              onsetMs: meta[r + 2]!,
              detectedMs: meta[r + 3]!,
              probability: meta[r + 4]!,
              speechStartMs: meta[r + 5]!,
            }
          : undefined;
      const quietMs = meta[r + 7]!;
      const silence = Number.isNaN(quietMs) ? undefined : { fromMs: meta[r + 6]!, quietMs };
      pending.resolve({ onset, turns: turns.get(id) ?? NO_TURNS, silence });
    }
  }

  private fail(slot: Slot, error: Error): void {
    slot.opens = [];
    slot.pushes = [];
    slot.closes = [];
    // Its streams' detectors died with it: each is assigned again on its next push.
    for (const stream of slot.streams) this.streamSlots.delete(stream);
    slot.streams.clear();
    const pending = [...slot.inFlight.values()];
    slot.inFlight.clear();
    this.stats.failed += pending.length;
    for (const p of pending) p.reject(error);
    const probes = [...slot.probes.values()];
    slot.probes.clear();
    for (const p of probes) p.reject(error);
  }
}
