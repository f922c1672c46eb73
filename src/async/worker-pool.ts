/**
 * A fixed set of worker threads, each in a slot that outlives the thread in it: spawned from a compiled
 * module, ready once the module says so (`{ type: 'ready' }`, its first message), replaced when it
 * dies. What runs on it comes in two ways:
 *
 * - jobs (`submit`, `request`): one at a time per worker, taken from a bounded queue (urgent ones
 *   first) by whichever worker is ready and idle; each message of that worker goes to its job until
 *   the job says it was the last. A queue past its bound refuses (`WorkerQueueFullError`); a worker
 *   that dies fails the job it held (`WorkerCrashedError`), and the queued ones wait for the next.
 * - messages a user posts to a slot itself (`post`, `onMessage`), for work pinned to one thread (the
 *   VAD pool keeps each call's detector on one worker and batches its pushes itself).
 *
 * A worker that dies is replaced: at once if it had been ready, else after a delay that doubles with
 * each death before ready (`restartDelayMs`), so a module that cannot start is retried slowly rather
 * than spun. `close()` terminates the threads and fails every job, queued or running
 * (`WorkerPoolClosedError`).
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker, type TransferListItem } from 'node:worker_threads';
import type { Logger } from 'pino';
import { Waiters } from './waiters.js';

export type WorkerPoolErrorCode = 'worker_crashed' | 'queue_full' | 'pool_closed';

export abstract class WorkerPoolError extends Error {
  abstract readonly code: WorkerPoolErrorCode;
}

/** The worker running a job (or starting) exited; `cause` is the error it threw, if it threw one. */
export class WorkerCrashedError extends WorkerPoolError {
  override readonly name = 'WorkerCrashedError';
  readonly code = 'worker_crashed';
  constructor(
    message: string,
    readonly exitCode: number,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** `submit()` with `maxQueuedJobs` jobs already waiting: the job was not queued. */
export class WorkerQueueFullError extends WorkerPoolError {
  override readonly name = 'WorkerQueueFullError';
  readonly code = 'queue_full';
}

export class WorkerPoolClosedError extends WorkerPoolError {
  override readonly name = 'WorkerPoolClosedError';
  readonly code = 'pool_closed';
}

/** A worker module's first message: it can take work. */
export interface WorkerReady {
  readonly type: 'ready';
}

/** What a worker posts besides its ready message: its jobs' messages and any other. */
export interface WorkerMessage {
  readonly type: string;
}

export interface WorkerJob<In, Out> {
  readonly message: In;
  readonly transfer?: readonly TransferListItem[] | undefined;
  /** A message of the worker running the job (in `slot`); true when it is the job's last. */
  onMessage(message: Out, slot: number): boolean;
  /** The job will not end by itself: its worker died, or the pool closed (not after its last message). */
  onFail(error: Error): void;
}

export interface WorkerPoolOptions<Out, Ready extends WorkerReady = WorkerReady> {
  /** The compiled module each thread runs (`compiledModule()`: a worker cannot run TypeScript). */
  module: URL;
  workers: number;
  /** For logs and errors, e.g. 'engine worker'. */
  name: string;
  /** The threads' own name (seen in profiles). */
  threadName?: string | undefined;
  /** Each thread's `workerData`, by slot; called again for a replacement. */
  workerData?: ((slot: number) => unknown) | undefined;
  /** Jobs that may wait for a worker; 0 (the default) for a pool whose users only `post`. */
  maxQueuedJobs?: number | undefined;
  /** Threads that must not keep the process alive (they hold no request of their own). */
  unref?: boolean | undefined;
  /** Delay before replacing a worker that died before it was ready: doubling from `first` to `max`. */
  restartDelayMs?: { first: number; max: number } | undefined;
  logger?: Logger | undefined;
  /** A worker became ready, with its ready message. */
  onReady?: ((slot: number, message: Ready) => void) | undefined;
  /** A message that belongs to no job. */
  onMessage?: ((slot: number, message: Out) => void) | undefined;
  /** A worker died (not at `close()`), after its job was failed; its replacement is on its way. */
  onExit?: ((slot: number, error: WorkerCrashedError) => void) | undefined;
}

type SlotState<In, Out> =
  | { readonly status: 'starting'; readonly worker: Worker }
  | { readonly status: 'idle'; readonly worker: Worker }
  | { readonly status: 'busy'; readonly worker: Worker; readonly job: WorkerJob<In, Out> }
  /** Dead, its replacement due when the timer fires. */
  | { readonly status: 'restarting'; readonly timer: NodeJS.Timeout }
  | { readonly status: 'closed' };

interface Slot<In, Out> {
  readonly index: number;
  state: SlotState<In, Out>;
  /** Deaths before ready since it was last ready: the next restart's delay. */
  failedStarts: number;
  everReady: boolean;
  /** The error its thread threw, the cause of its exit. */
  lastError: Error | undefined;
}

const RESTART_DELAY_MS = { first: 1000, max: 30_000 };

function isReady<Ready extends WorkerReady, Out extends WorkerMessage>(
  message: Ready | Out,
): message is Ready {
  return message.type === 'ready';
}

/** `In`: what goes to a worker; `Out`: what comes back after its ready message (`Ready`). */
export class WorkerPool<In, Out extends WorkerMessage, Ready extends WorkerReady = WorkerReady> {
  private readonly slots: Array<Slot<In, Out>> = [];
  private readonly urgent: Array<WorkerJob<In, Out>> = [];
  private readonly queue: Array<WorkerJob<In, Out>> = [];
  private readonly changes = new Waiters();
  private readonly maxQueuedJobs: number;
  private readonly restartDelayMs: { first: number; max: number };
  private startError: WorkerCrashedError | undefined;
  private isClosed = false;
  private closing: Promise<void> | undefined;

  /** Spawns the workers; `started()` says when they are ready. */
  constructor(private readonly options: WorkerPoolOptions<Out, Ready>) {
    const path = fileURLToPath(options.module);
    if (!existsSync(path)) throw new Error(`${options.name} ${path} is missing: run \`npm run build\` first`);
    this.maxQueuedJobs = options.maxQueuedJobs ?? 0;
    this.restartDelayMs = options.restartDelayMs ?? RESTART_DELAY_MS;
    const count = Math.max(1, options.workers);
    for (let index = 0; index < count; index++) {
      const slot: Slot<In, Out> = {
        index,
        state: { status: 'closed' },
        failedStarts: 0,
        everReady: false,
        lastError: undefined,
      };
      this.slots.push(slot);
      this.spawn(slot);
    }
  }

  /** A pool whose workers are all ready; closed again if one dies first. */
  static async start<In, Out extends WorkerMessage, Ready extends WorkerReady = WorkerReady>(
    options: WorkerPoolOptions<Out, Ready>,
  ): Promise<WorkerPool<In, Out, Ready>> {
    const pool = new WorkerPool<In, Out, Ready>(options);
    try {
      await pool.started();
    } catch (error) {
      await pool.close();
      throw error;
    }
    return pool;
  }

  get size(): number {
    return this.slots.length;
  }

  /** Jobs waiting for a worker. */
  get queued(): number {
    return this.urgent.length + this.queue.length;
  }

  get closed(): boolean {
    return this.isClosed;
  }

  isReady(slot: number): boolean {
    const status = this.slots[slot]?.state.status;
    return status === 'idle' || status === 'busy';
  }

  /** The thread in `slot` now (none while it waits to be replaced), for diagnostics and tests. */
  worker(slot: number): Worker | undefined {
    const state = this.slots[slot]?.state;
    return state && 'worker' in state ? state.worker : undefined;
  }

  /** Resolves once every worker has been ready; rejects if one dies before it ever was. */
  async started(): Promise<void> {
    for (;;) {
      if (this.startError) throw this.startError;
      if (this.closed) throw this.closedError();
      if (this.slots.every((slot) => slot.everReady)) return;
      await this.changes.wait();
    }
  }

  /** Resolves once every worker is ready now (after a restart, once its replacement is). */
  async ready(): Promise<void> {
    for (;;) {
      if (this.closed) throw this.closedError();
      if (this.slots.every((slot) => this.isReady(slot.index))) return;
      await this.changes.wait();
    }
  }

  /** Posts to `slot`'s thread; false (nothing sent) while it has none. */
  post(slot: number, message: In, transfer?: readonly TransferListItem[]): boolean {
    const state = this.slots[slot]?.state;
    if (!state || !('worker' in state)) return false;
    state.worker.postMessage(message, transfer);
    return true;
  }

  /**
   * Runs `job` on the next idle worker, `urgent` ones before the others (each kind in order). Throws
   * `WorkerQueueFullError` when `maxQueuedJobs` already wait, `WorkerPoolClosedError` once closed.
   */
  submit(job: WorkerJob<In, Out>, urgent = false): void {
    if (this.closed) throw this.closedError();
    if (this.queued >= this.maxQueuedJobs && !this.slots.some((slot) => slot.state.status === 'idle'))
      throw new WorkerQueueFullError(`${this.maxQueuedJobs} jobs already wait for a ${this.options.name}`);
    (urgent ? this.urgent : this.queue).push(job);
    this.dispatch();
  }

  /** A job whose first message is its answer. */
  request(message: In, transfer?: readonly TransferListItem[]): Promise<Out> {
    return new Promise((resolve, reject) =>
      this.submit({
        message,
        transfer,
        onMessage: (answer) => {
          resolve(answer);
          return true;
        },
        onFail: reject,
      }),
    );
  }

  /** Takes `job` out of the queue: false if it is not waiting (it runs, or it ended). */
  cancel(job: WorkerJob<In, Out>): boolean {
    for (const queue of [this.urgent, this.queue]) {
      const i = queue.indexOf(job);
      if (i >= 0) {
        queue.splice(i, 1);
        return true;
      }
    }
    return false;
  }

  /** The slot running `job`, if one is. */
  slotOf(job: WorkerJob<In, Out>): number | undefined {
    return this.slots.find((slot) => slot.state.status === 'busy' && slot.state.job === job)?.index;
  }

  /** Terminates the threads; every job, queued or running, fails with `WorkerPoolClosedError`. */
  close(): Promise<void> {
    if (!this.closing) {
      this.isClosed = true;
      this.closing = this.shutDown();
    }
    return this.closing;
  }

  private async shutDown(): Promise<void> {
    const error = this.closedError();
    const failed = [...this.urgent.splice(0), ...this.queue.splice(0)];
    const threads: Worker[] = [];
    for (const slot of this.slots) {
      const { state } = slot;
      if (state.status === 'busy') failed.push(state.job);
      if (state.status === 'restarting') clearTimeout(state.timer);
      if ('worker' in state) threads.push(state.worker);
      slot.state = { status: 'closed' };
    }
    this.changes.wakeAll();
    for (const job of failed) job.onFail(error);
    await Promise.all(threads.map((worker) => worker.terminate()));
  }

  private closedError(): WorkerPoolClosedError {
    return new WorkerPoolClosedError(`the ${this.options.name}s are closed`);
  }

  private spawn(slot: Slot<In, Out>): void {
    const { options } = this;
    const worker = new Worker(options.module, {
      name: options.threadName,
      workerData: options.workerData?.(slot.index),
    });
    worker.on('message', (message: Ready | Out) => this.onMessage(slot, worker, message));
    worker.on('error', (error) => {
      slot.lastError = error;
      options.logger?.error({ err: error, worker: slot.index }, `${options.name} failed`);
    });
    worker.on('exit', (code) => this.onExit(slot, worker, code));
    if (options.unref) worker.unref();
    slot.lastError = undefined;
    slot.state = { status: 'starting', worker };
  }

  private onMessage(slot: Slot<In, Out>, worker: Worker, message: Ready | Out): void {
    const { state } = slot;
    if (!('worker' in state) || state.worker !== worker) return;
    if (isReady(message)) {
      if (state.status !== 'starting') return;
      slot.state = { status: 'idle', worker };
      slot.failedStarts = 0;
      slot.everReady = true;
      this.changes.wakeAll();
      this.options.onReady?.(slot.index, message);
      this.dispatch();
      return;
    }
    if (state.status !== 'busy') {
      this.options.onMessage?.(slot.index, message);
      return;
    }
    if (!state.job.onMessage(message, slot.index)) return;
    slot.state = { status: 'idle', worker };
    this.dispatch();
  }

  private onExit(slot: Slot<In, Out>, worker: Worker, code: number): void {
    const { state } = slot;
    // Closed: the pool terminated it, and failed its job already.
    if (!('worker' in state) || state.worker !== worker) return;
    const { name, logger } = this.options;
    const starting = state.status === 'starting';
    const error = new WorkerCrashedError(
      `${name} exited with code ${code}${starting ? ' while starting' : ''}`,
      code,
      slot.lastError && { cause: slot.lastError },
    );
    const delayMs = starting
      ? Math.min(this.restartDelayMs.max, this.restartDelayMs.first * 2 ** slot.failedStarts++)
      : 0;
    if (delayMs > 0) {
      const timer = setTimeout(() => this.spawn(slot), delayMs);
      timer.unref();
      slot.state = { status: 'restarting', timer };
    } else this.spawn(slot);
    if (!slot.everReady) this.startError ??= error;
    this.changes.wakeAll();
    logger?.warn({ code, worker: slot.index, restartInMs: delayMs }, `${name} exited; starting a new one`);
    if (state.status === 'busy') state.job.onFail(error);
    this.options.onExit?.(slot.index, error);
  }

  private dispatch(): void {
    for (const slot of this.slots) {
      while (slot.state.status === 'idle') {
        const job = this.urgent.shift() ?? this.queue.shift();
        if (!job) return;
        const { worker } = slot.state;
        slot.state = { status: 'busy', worker, job };
        try {
          worker.postMessage(job.message, job.transfer);
        } catch (error) {
          // A message that cannot be cloned: the job's fault, not the worker's.
          slot.state = { status: 'idle', worker };
          job.onFail(error instanceof Error ? error : new Error(String(error)));
        }
      }
    }
  }
}
