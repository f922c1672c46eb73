/**
 * Silero off the event loop: a fixed set of worker threads (one per core by default), each with the
 * model loaded once, so that many calls' frame pacing never waits for an inference and a slow model
 * only makes detection wait in its own queue. Windows queued during one turn of the event loop go to
 * a worker in one message, to the worker with the fewest windows in flight; results come back the
 * same way. Each window carries its call's state, so any worker can run any call's next window.
 *
 * The echo estimation (echo.ts) is the exception: an estimator's state (the echo path it tracks) stays
 * in the worker that runs it, so a call's echo stream is sticky. On its first window it is assigned
 * to the ready worker with the fewest echo streams, and all its windows go there, in order, batched
 * with the Silero windows of the same turn.
 *
 * A worker that dies fails the windows it held (`VadWorkerError`: the detector judges them by the
 * energy gate alone), is logged, and is replaced; while no worker is ready, windows fail at once. Its
 * echo streams lose their estimators: each is assigned again on its next window, and starts afresh.
 */
import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import { compiledModule } from '../../paths.js';
import type { EchoVerdict } from './echo.js';
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

type Pending =
  | { kind: 'silero'; resolve: (result: SileroResult) => void; reject: (error: Error) => void }
  | { kind: 'echo'; resolve: (verdict: EchoVerdict) => void; reject: (error: Error) => void };

interface Probe {
  resolve: (echoStreams: number) => void;
  reject: (error: Error) => void;
}

interface Slot {
  worker: Worker;
  ready: boolean;
  /** Windows sent and not answered yet. */
  readonly inFlight: Map<number, Pending>;
  /** Windows queued for the next batch. */
  outbox: VadJob[];
  /** Echo streams assigned to this worker (their estimators live there). */
  readonly echoStreams: Set<number>;
  /** Echo streams to close after the next batch. */
  closing: number[];
  /** Diagnostic probes sent and not answered yet. */
  readonly probes: Map<number, Probe>;
}

/** The array itself when it spans its whole buffer, else a copy that does. */
function whole(samples: Int16Array): Int16Array {
  return samples.byteOffset === 0 && samples.byteLength === samples.buffer.byteLength
    ? samples
    : samples.slice();
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
  /** Each echo stream's worker, from its first window until it is closed or its worker dies. */
  private readonly echoSlots = new Map<number, Slot>();
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

  /** Echo streams assigned to each worker (indexed as `workers`), for diagnostics. */
  get echoStreams(): number[] {
    return this.slots.map((slot) => slot.echoStreams.size);
  }

  /** The index (in `workers`) of the worker that holds echo `stream`'s estimator, if one does. */
  echoWorker(stream: number): number | undefined {
    const slot = this.echoSlots.get(stream);
    return slot ? this.slots.indexOf(slot) : undefined;
  }

  /**
   * Diagnostics: how many echo estimators each worker holds, asked of the workers themselves after
   * everything queued so far (a worker that is not ready counts none).
   */
  async echoEstimators(): Promise<number[]> {
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

  run(input: Float32Array, state: Float32Array, sampleRate: VadSampleRate): Promise<SileroResult> {
    let best: Slot | undefined;
    for (const slot of this.slots) {
      if (!slot.ready) continue;
      if (!best || load(slot) < load(best)) best = slot;
    }
    if (!best) return this.refuse();
    const slot = best;
    const id = this.nextId++;
    return new Promise<SileroResult>((resolve, reject) => {
      slot.inFlight.set(id, { kind: 'silero', resolve, reject });
      slot.outbox.push({ kind: 'silero', id, input, state, sampleRate });
      this.scheduleFlush();
    });
  }

  echo(
    stream: number,
    inbound: Int16Array,
    reference: Int16Array,
    sampleRate: VadSampleRate,
  ): Promise<EchoVerdict> {
    const slot = this.echoSlots.get(stream) ?? this.assignEcho(stream);
    if (!slot) return this.refuse();
    const id = this.nextId++;
    return new Promise<EchoVerdict>((resolve, reject) => {
      slot.inFlight.set(id, { kind: 'echo', resolve, reject });
      // Handed over as they are (the caller keeps its hands off them); a view would carry its whole
      // buffer through the structured clone, so only a view is copied.
      slot.outbox.push({
        kind: 'echo',
        id,
        stream,
        inbound: whole(inbound),
        reference: whole(reference),
        sampleRate,
      });
      this.scheduleFlush();
    });
  }

  closeEcho(stream: number): void {
    const slot = this.echoSlots.get(stream);
    if (!slot) return;
    this.echoSlots.delete(stream);
    slot.echoStreams.delete(stream);
    slot.closing.push(stream);
    this.scheduleFlush();
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const waiter of this.readyWaiters.splice(0)) waiter.reject(new VadWorkerError('VAD workers closed'));
    const slots = this.slots.splice(0);
    for (const slot of slots) this.fail(slot, new VadWorkerError('VAD workers closed'));
    await Promise.all(slots.map((slot) => slot.worker.terminate()));
  }

  /** A window no worker can take: refused at once, and counted. */
  private refuse(): Promise<never> {
    this.stats.failed++;
    return Promise.reject(new VadWorkerError(this.closed ? 'VAD workers closed' : 'no VAD worker is ready'));
  }

  /** The ready worker with the fewest echo streams (then the fewest windows) takes `stream`. */
  private assignEcho(stream: number): Slot | undefined {
    let best: Slot | undefined;
    for (const slot of this.slots) {
      if (!slot.ready) continue;
      if (
        !best ||
        slot.echoStreams.size < best.echoStreams.size ||
        (slot.echoStreams.size === best.echoStreams.size && load(slot) < load(best))
      )
        best = slot;
    }
    if (!best) return undefined;
    best.echoStreams.add(stream);
    this.echoSlots.set(stream, best);
    return best;
  }

  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      this.flush();
    });
  }

  /** Sends each worker its batch, then the echo streams to close after it. */
  private flush(): void {
    for (const slot of this.slots) {
      if (slot.outbox.length > 0) {
        const jobs = slot.outbox;
        slot.outbox = [];
        this.post(slot, { type: 'run', jobs });
      }
      if (slot.closing.length > 0) {
        const streams = slot.closing;
        slot.closing = [];
        this.post(slot, { type: 'closeEcho', streams });
      }
    }
  }

  private post(slot: Slot, message: ToVadWorker): void {
    slot.worker.postMessage(message);
  }

  private spawn(): Slot {
    const slot: Slot = {
      worker: new Worker(this.url, { name: 'voxbridge-vad' }),
      ready: false,
      inFlight: new Map(),
      outbox: [],
      echoStreams: new Set(),
      closing: [],
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
      probe?.resolve(message.echoStreams);
      return;
    }
    for (const result of message.results) this.settle(slot, result);
  }

  private settle(slot: Slot, result: VadJobResult): void {
    const pending = slot.inFlight.get(result.id);
    if (!pending) return;
    slot.inFlight.delete(result.id);
    if ('error' in result) {
      const what = pending.kind === 'echo' ? 'echo estimation' : 'inference';
      pending.reject(new VadWorkerError(`${what} failed: ${result.error}`));
    } else if (pending.kind === 'silero' && 'p' in result)
      pending.resolve({ p: result.p, state: result.state });
    else if (pending.kind === 'echo' && 'verdict' in result) pending.resolve(result.verdict);
    else
      pending.reject(
        new VadWorkerError(`VAD worker answered a ${pending.kind} window with the wrong result`),
      );
  }

  private fail(slot: Slot, error: Error): void {
    slot.ready = false;
    slot.outbox = [];
    slot.closing = [];
    // Its echo streams' estimators died with it: each is assigned again on its next window.
    for (const stream of slot.echoStreams) this.echoSlots.delete(stream);
    slot.echoStreams.clear();
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

/** Windows a worker holds: sent and not answered, or queued for its next batch. */
function load(slot: Slot): number {
  return slot.inFlight.size + slot.outbox.length;
}
