/**
 * Silero off the event loop: a fixed set of worker threads (one per core by default), each with the
 * model loaded once, so that many calls' frame pacing never waits for an inference and a slow model
 * only makes detection wait in its own queue. Windows queued during one turn of the event loop go to
 * a worker in one message, to the worker with the fewest windows in flight; results come back the
 * same way. Each window carries its call's state, so any worker can run any call's next window.
 *
 * A worker that dies fails the windows it held (`VadWorkerError`: the detector judges them by the
 * energy gate alone), is logged, and is replaced; while no worker is ready, windows fail at once.
 */
import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import { compiledModule } from '../../paths.js';
import type { FromVadWorker, ToVadWorker, VadJob, VadJobResult } from './protocol.js';
import { SileroModel, type SileroResult, type SileroRunner, type VadSampleRate } from './silero.js';

export class VadWorkerError extends Error {
  override readonly name = 'VadWorkerError';
}

export interface VadWorkersOptions {
  /** Worker threads; 'auto' (the default): one per core. */
  workers?: number | 'auto';
  logger?: Logger | undefined;
}

interface Pending {
  resolve: (result: SileroResult) => void;
  reject: (error: Error) => void;
}

interface Slot {
  worker: Worker;
  ready: boolean;
  /** Windows sent and not answered yet. */
  readonly inFlight: Map<number, Pending>;
  /** Windows queued for the next batch. */
  outbox: VadJob[];
}

/** A worker that died while starting is replaced after this long (ms), not at once. */
const RETRY_DEAD_START_MS = 1000;

function workerUrl(): URL {
  const url = compiledModule('audio/vad/worker.js');
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

export class VadWorkerPool implements SileroRunner {
  runtime = 'onnxruntime-web (worker threads)';
  private readonly slots: Slot[] = [];
  private readonly logger: Logger | undefined;
  private readonly url = workerUrl();
  private nextId = 1;
  private flushScheduled = false;
  private readyWaiters: Array<{ resolve: () => void; reject: (error: Error) => void }> = [];
  private closed = false;
  /** Workers that died and were replaced; windows failed because no worker could run them. */
  readonly stats = { restarts: 0, failed: 0 };
  /** The model as detectors use it, run by this pool. */
  readonly model = new SileroModel(this);

  constructor(options: VadWorkersOptions) {
    this.logger = options.logger;
    const count =
      options.workers === undefined || options.workers === 'auto' ? availableParallelism() : options.workers;
    for (let i = 0; i < Math.max(1, count); i++) this.slots.push(this.spawn());
  }

  /** Windows sent or queued and not answered yet, over all workers. */
  get queueDepth(): number {
    let depth = 0;
    for (const slot of this.slots) depth += slot.inFlight.size + slot.outbox.length;
    return depth;
  }

  /** The threads, for diagnostics (and for tests that kill one). */
  get workers(): readonly Worker[] {
    return this.slots.map((slot) => slot.worker);
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

  run(input: Float32Array, state: Float32Array, sampleRate: VadSampleRate): Promise<SileroResult> {
    let best: Slot | undefined;
    for (const slot of this.slots) {
      if (!slot.ready) continue;
      if (!best || slot.inFlight.size + slot.outbox.length < best.inFlight.size + best.outbox.length)
        best = slot;
    }
    if (!best) {
      this.stats.failed++;
      return Promise.reject(
        new VadWorkerError(this.closed ? 'VAD workers closed' : 'no VAD worker is ready'),
      );
    }
    const slot = best;
    const id = this.nextId++;
    return new Promise<SileroResult>((resolve, reject) => {
      slot.inFlight.set(id, { resolve, reject });
      slot.outbox.push({ id, input, state, sampleRate });
      this.scheduleFlush();
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const waiter of this.readyWaiters.splice(0)) waiter.reject(new VadWorkerError('VAD workers closed'));
    const slots = this.slots.splice(0);
    for (const slot of slots) this.fail(slot, new VadWorkerError('VAD workers closed'));
    await Promise.all(slots.map((slot) => slot.worker.terminate()));
  }

  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      for (const slot of this.slots) {
        if (slot.outbox.length === 0) continue;
        const message: ToVadWorker = { type: 'run', jobs: slot.outbox };
        slot.outbox = [];
        slot.worker.postMessage(message);
      }
    });
  }

  private spawn(): Slot {
    const slot: Slot = {
      worker: new Worker(this.url, { name: 'voxbridge-vad' }),
      ready: false,
      inFlight: new Map(),
      outbox: [],
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
    for (const result of message.results) this.settle(slot, result);
  }

  private settle(slot: Slot, result: VadJobResult): void {
    const pending = slot.inFlight.get(result.id);
    if (!pending) return;
    slot.inFlight.delete(result.id);
    if ('error' in result) pending.reject(new VadWorkerError(`inference failed: ${result.error}`));
    else pending.resolve({ p: result.p, state: result.state });
  }

  private fail(slot: Slot, error: Error): void {
    slot.ready = false;
    slot.outbox = [];
    const pending = [...slot.inFlight.values()];
    slot.inFlight.clear();
    this.stats.failed += pending.length;
    for (const p of pending) p.reject(error);
  }

  private onExit(slot: Slot, code: number): void {
    const index = this.slots.indexOf(slot);
    const wasReady = slot.ready;
    this.fail(slot, new VadWorkerError(`VAD worker exited with code ${code}`));
    if (this.closed || index < 0) return;
    this.stats.restarts++;
    this.logger?.warn(
      { code, worker: index },
      'VAD worker exited: its windows are judged by the energy gate alone; starting a new one',
    );
    const replace = (): void => {
      if (!this.closed && this.slots[index] === slot) this.slots[index] = this.spawn();
    };
    // One that died before it was ever ready (a model that does not load) is retried slowly.
    if (wasReady) replace();
    else setTimeout(replace, RETRY_DEAD_START_MS).unref();
  }
}
