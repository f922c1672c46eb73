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
 * A worker that dies fails the pushes it held (`VadWorkerError`: a `PooledDetector` resolves them
 * without an onset, and counts them), is logged, and is replaced; while no worker is ready, pushes fail
 * at once. Its streams lose their detectors: each is assigned again on its next push, and starts afresh.
 */
import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import { compiledModule } from '../paths.js';
import type {
  DetectorOptions,
  DetectorSource,
  PushInfo,
  SpeechDetector,
  SpeechOnset,
  SpeechTurn,
} from './detector.js';
import {
  PUSH_FIELDS,
  RESULT_FIELDS,
  sharedNow,
  type FromVadWorker,
  type HostedDetectorOptions,
  type PushResults,
  type ToVadWorker,
} from './protocol.js';
import type { VadSampleRate } from './silero.js';

export class VadWorkerError extends Error {
  override readonly name = 'VadWorkerError';
}

export interface VadWorkersOptions {
  /** Worker threads; 'auto' (the default): one per core. */
  workers?: number | 'auto';
  logger?: Logger | undefined;
}

/** What a push comes back with: the onset it completed, and the turns that ended in it. */
export interface PushOutcome {
  onset: SpeechOnset | undefined;
  turns: readonly SpeechTurn[];
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

interface Slot {
  worker: Worker;
  ready: boolean;
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
/** A worker that died while starting is replaced after this long (ms), not at once. */
const RETRY_DEAD_START_MS = 1000;
/**
 * Batches leave at most this often (ms): the pushes of the turns in between wait and go together. A
 * message costs the main thread some microseconds whatever it holds, and 200 calls' 20 ms chunks
 * arriving each in its own turn made a message per chunk (`postMessage` was the main thread's largest
 * cost under `bench talkers 200` after garbage collection: 6 % of its time).
 */
const BATCH_EVERY_MS = 4;

function workerUrl(): URL {
  const url = compiledModule('barge-in/worker.js');
  if (!existsSync(fileURLToPath(url)))
    throw new Error(`VAD worker ${fileURLToPath(url)} is missing: run \`npm run build\` first`);
  return url;
}

/** Starts the pool and waits until every worker has its model loaded and warmed up. */
export async function startVadWorkers(options: VadWorkersOptions = {}): Promise<VadWorkerPool> {
  const pool = new VadWorkerPool(options);
  try {
    await pool.started();
  } catch (error) {
    await pool.close();
    throw error;
  }
  return pool;
}

export class VadWorkerPool implements DetectorSource {
  runtime = 'onnxruntime-web (worker threads)';
  private readonly slots: Slot[] = [];
  private readonly logger: Logger | undefined;
  private readonly url = workerUrl();
  private nextId = 1;
  private nextStream = 1;
  private flushScheduled = false;
  private lastFlushAt = Number.NEGATIVE_INFINITY;
  private readyWaiters: Array<{ resolve: () => void; reject: (error: Error) => void }> = [];
  private closed = false;
  /** Each stream's worker, from its first push until it is closed or its worker dies. */
  private readonly streamSlots = new Map<number, Slot>();
  /**
   * Workers that died and were replaced; pushes failed because no worker could run them; batches
   * sent; over all the workers' detectors, windows judged by the energy gate alone because their
   * detector was behind (a busy machine: `MAX_LAG_MS`), and Silero inferences run.
   */
  readonly stats = { restarts: 0, failed: 0, batches: 0, skippedWindows: 0, inferences: 0 };

  constructor(options: VadWorkersOptions) {
    this.logger = options.logger;
    const count =
      options.workers === undefined || options.workers === 'auto' ? availableParallelism() : options.workers;
    for (let i = 0; i < Math.max(1, count); i++) this.slots.push(this.spawn());
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

  /** The threads, for diagnostics (and for tests that kill one). */
  get workers(): readonly Worker[] {
    return this.slots.map((slot) => slot.worker);
  }

  /** Streams assigned to each worker (indexed as `workers`), for diagnostics. */
  get streams(): number[] {
    return this.slots.map((slot) => slot.streams.size);
  }

  /** The index (in `workers`) of the worker that holds `stream`'s detector, if one does. */
  workerOf(stream: number): number | undefined {
    const slot = this.streamSlots.get(stream);
    return slot ? this.slots.indexOf(slot) : undefined;
  }

  /**
   * Diagnostics: how many detectors each worker holds, asked of the workers themselves after
   * everything queued so far (a worker that is not ready counts none).
   */
  async hostedDetectors(): Promise<number[]> {
    this.flush();
    return Promise.all(
      this.slots.map((slot) => {
        if (!slot.ready) return Promise.resolve(0);
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
    if (this.closed) return Promise.reject(new VadWorkerError('VAD workers closed'));
    if (this.slots.every((slot) => slot.ready)) return Promise.resolve();
    return new Promise((resolve, reject) => this.readyWaiters.push({ resolve, reject }));
  }

  /** @internal the first start: rejects if a worker dies before it is ready. */
  async started(): Promise<void> {
    await Promise.all(this.slots.map((slot) => this.whenReady(slot)));
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
    this.closed = true;
    for (const waiter of this.readyWaiters.splice(0)) waiter.reject(new VadWorkerError('VAD workers closed'));
    const slots = this.slots.splice(0);
    for (const slot of slots) this.fail(slot, new VadWorkerError('VAD workers closed'));
    await Promise.all(slots.map((slot) => slot.worker.terminate()));
  }

  /** A push no worker can take: refused at once, and counted. */
  private refuse(): Promise<never> {
    this.stats.failed++;
    return Promise.reject(new VadWorkerError(this.closed ? 'VAD workers closed' : 'no VAD worker is ready'));
  }

  /** The ready worker with the fewest streams (then the fewest pushes in flight) takes `stream`. */
  private assign(stream: number): Slot | undefined {
    let best: Slot | undefined;
    for (const slot of this.slots) {
      if (!slot.ready) continue;
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

  private post(slot: Slot, message: ToVadWorker, transfer: ArrayBuffer[] = []): void {
    slot.worker.postMessage(message, transfer);
  }

  private spawn(): Slot {
    const slot: Slot = {
      worker: new Worker(this.url, { name: 'voxbridge-vad' }),
      ready: false,
      inFlight: new Map(),
      opens: [],
      pushes: [],
      closes: [],
      streams: new Set(),
      probes: new Map(),
    };
    slot.worker.on('message', (message: FromVadWorker) => this.onMessage(slot, message));
    slot.worker.on('error', (error) => this.logger?.error({ err: error }, 'VAD worker failed'));
    slot.worker.on('exit', (code) => this.onExit(slot, code));
    // A worker holds no request of its own: it must not keep the process alive.
    slot.worker.unref();
    return slot;
  }

  private whenReady(slot: Slot): Promise<void> {
    if (slot.ready) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const onMessage = (m: FromVadWorker): void => {
        if (m.type !== 'ready') return;
        slot.worker.off('exit', onExit);
        slot.worker.off('message', onMessage);
        resolve();
      };
      const onExit = (code: number): void =>
        reject(new VadWorkerError(`VAD worker exited with code ${code} while starting`));
      slot.worker.on('message', onMessage);
      slot.worker.once('exit', onExit);
    });
  }

  private onMessage(slot: Slot, message: FromVadWorker): void {
    if (message.type === 'ready') {
      slot.ready = true;
      this.runtime = `${message.runtime} × ${this.slots.length} worker threads`;
      if (this.slots.every((s) => s.ready))
        for (const waiter of this.readyWaiters.splice(0)) waiter.resolve();
      return;
    }
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
          ? { onsetMs: meta[r + 2]!, detectedMs: meta[r + 3]!, probability: meta[r + 4]! }
          : undefined;
      pending.resolve({ onset, turns: turns.get(id) ?? NO_TURNS });
    }
  }

  private fail(slot: Slot, error: Error): void {
    slot.ready = false;
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

  private onExit(slot: Slot, code: number): void {
    const index = this.slots.indexOf(slot);
    const wasReady = slot.ready;
    this.fail(slot, new VadWorkerError(`VAD worker exited with code ${code}`));
    if (this.closed || index < 0) return;
    this.stats.restarts++;
    this.logger?.warn(
      { code, worker: index },
      'VAD worker exited: its calls hear no onset until their next audio reaches a new detector; starting a new one',
    );
    const replace = (): void => {
      if (!this.closed && this.slots[index] === slot) this.slots[index] = this.spawn();
    };
    // One that died before it was ever ready (a model that does not load) is retried slowly.
    if (wasReady) replace();
    else setTimeout(replace, RETRY_DEAD_START_MS).unref();
  }
}

/**
 * A call's detector in a VAD worker. Pushes resolve in order, with the onset the worker's detector
 * found; one its worker could not run (it died, or none was ready) resolves without an onset and is
 * counted in `stats.failed`: the caller then goes unheard until the stream's next push starts a fresh
 * detector on a ready worker. `reset()` starts a new stream (a fresh detector) and drops the old one
 * after the pushes it was given.
 */
export class PooledDetector implements SpeechDetector {
  readonly sampleRate: VadSampleRate;
  readonly stats = { pushes: 0, failed: 0 };
  private stream: number;
  private readonly options: HostedDetectorOptions;
  private readonly onTurnEnd: ((turn: SpeechTurn) => void) | undefined;
  /** Bumped by reset() and close(): what pushes before it bring back is dropped. */
  private epoch = 0;
  private closed = false;

  constructor(
    private readonly pool: VadWorkerPool,
    options: DetectorOptions,
  ) {
    // The clock stays behind (the worker's own times its windows), and the hook is called from here.
    const { now: _now, onTurnEnd, ...rest } = options;
    this.sampleRate = options.sampleRate;
    this.onTurnEnd = onTurnEnd;
    this.options = { ...rest, turns: onTurnEnd !== undefined };
    this.stream = pool.openStream();
  }

  /** The pool's key for this detector's stream (it changes on `reset()`), for diagnostics. */
  get streamId(): number {
    return this.stream;
  }

  /** Not `async`: a call pushes fifty times a second, and each await is another promise on the event loop. */
  push(samples: Int16Array, info: PushInfo): Promise<SpeechOnset | undefined> {
    if (this.closed) return Promise.resolve(undefined);
    if (info.reference && info.reference.length !== samples.length)
      return Promise.reject(new RangeError('the reference must be as long as the samples'));
    const epoch = this.epoch;
    this.stats.pushes++;
    return this.pool.push(this.stream, this.options, samples, info).then(
      (outcome) => {
        if (epoch !== this.epoch) return undefined;
        for (const turn of outcome.turns) this.onTurnEnd?.(turn);
        return outcome.onset;
      },
      (error: unknown) => {
        if (!(error instanceof VadWorkerError)) throw error;
        this.stats.failed++;
        return undefined;
      },
    );
  }

  reset(): void {
    if (this.closed) return;
    this.epoch++;
    this.pool.closeStream(this.stream);
    this.stream = this.pool.openStream();
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.epoch++;
    this.pool.closeStream(this.stream);
  }
}
