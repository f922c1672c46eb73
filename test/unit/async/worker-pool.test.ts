/**
 * The worker-thread primitive (src/async/worker-pool.ts), on a real worker module
 * (test/fixtures/pool-worker.mjs): workers start and say they are ready, jobs run one at a time per
 * worker, the queue is bounded, a worker that dies fails its job with a coded error and comes back (one
 * that dies at start is retried ever more slowly), and closing fails what is pending.
 */
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import {
  WorkerCrashedError,
  WorkerPool,
  WorkerPoolClosedError,
  WorkerQueueFullError,
  type WorkerJob,
  type WorkerPoolOptions,
} from '../../../src/async/worker-pool.js';

type In =
  | { type: 'echo'; value: number }
  | { type: 'later'; value: number; ms: number }
  | { type: 'count'; to: number }
  | { type: 'exit'; code: number }
  | { type: 'throw'; text: string };
interface Out {
  type: 'echo' | 'tick';
  value: number;
  threadId: number;
}
interface Ready {
  type: 'ready';
  threadId: number;
  slot: number | undefined;
}

const MODULE = new URL('../../fixtures/pool-worker.mjs', import.meta.url);

const pools: Array<WorkerPool<In, Out, Ready>> = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((pool) => pool.close()));
});

function options(more: Partial<WorkerPoolOptions<Out, Ready>> = {}): WorkerPoolOptions<Out, Ready> {
  return { module: MODULE, name: 'test worker', workers: 1, ...more };
}

async function start(more: Partial<WorkerPoolOptions<Out, Ready>> = {}): Promise<WorkerPool<In, Out, Ready>> {
  const pool = await WorkerPool.start<In, Out, Ready>(options(more));
  pools.push(pool);
  return pool;
}

/** A job that collects its messages and ends at its `echo`. */
function collecting(message: In): { job: WorkerJob<In, Out>; done: Promise<Out[]> } {
  const seen: Out[] = [];
  let job!: WorkerJob<In, Out>;
  const done = new Promise<Out[]>((resolve, reject) => {
    job = {
      message,
      onMessage: (m) => {
        seen.push(m);
        if (m.type !== 'echo') return false;
        resolve(seen);
        return true;
      },
      onFail: reject,
    };
  });
  return { job, done };
}

describe('WorkerPool', () => {
  it('starts every worker, each with its own workerData, and resolves once all are ready', async () => {
    const ready: Array<{ slot: number; message: Ready }> = [];
    const pool = await start({
      workers: 2,
      workerData: (slot) => ({ slot }),
      onReady: (slot, message) => ready.push({ slot, message }),
    });
    expect(pool.size).toBe(2);
    expect([pool.isReady(0), pool.isReady(1)]).toEqual([true, true]);
    expect(ready.map((r) => [r.slot, r.message.slot]).sort()).toEqual([
      [0, 0],
      [1, 1],
    ]);
    expect(ready.map((r) => r.message.threadId).sort()).toEqual(
      [pool.worker(0)!.threadId, pool.worker(1)!.threadId].sort(),
    );
    await pool.ready();
  });

  it('runs a job on an idle worker, handing it every message up to its last', async () => {
    const pool = await start({ workers: 2, maxQueuedJobs: 4 });
    expect((await pool.request({ type: 'echo', value: 7 })).value).toBe(7);
    const { job, done } = collecting({ type: 'count', to: 3 });
    pool.submit(job);
    expect((await done).map((m) => `${m.type} ${m.value}`)).toEqual(['tick 0', 'tick 1', 'tick 2', 'echo 3']);
    // Two jobs at once run on both workers.
    const both = await Promise.all([
      pool.request({ type: 'later', value: 1, ms: 50 }),
      pool.request({ type: 'later', value: 2, ms: 50 }),
    ]);
    expect(new Set(both.map((m) => m.threadId)).size).toBe(2);
  });

  it('runs one job at a time per worker, urgent ones first, each kind in order; a queued one can be cancelled', async () => {
    const pool = await start({ maxQueuedJobs: 5 });
    const order: number[] = [];
    const run = (value: number, urgent = false): { job: WorkerJob<In, Out>; done: Promise<Out[]> } => {
      const c = collecting({ type: 'echo', value });
      pool.submit(c.job, urgent);
      void c.done.then(() => order.push(value));
      return c;
    };
    const first = pool.request({ type: 'later', value: 0, ms: 50 });
    const a = run(1);
    const b = run(2);
    const gone = run(3);
    const c = run(4, true);
    const d = run(5, true);
    expect(pool.queued).toBe(5);
    expect(pool.cancel(gone.job)).toBe(true);
    expect(pool.cancel(gone.job)).toBe(false);
    expect(pool.queued).toBe(4);
    await Promise.all([first, a.done, b.done, c.done, d.done]);
    expect(order).toEqual([4, 5, 1, 2]);
    expect(pool.queued).toBe(0);
  });

  it('refuses a job past its queue bound with a coded error, and takes jobs again once there is room', async () => {
    const pool = await start({ maxQueuedJobs: 1 });
    const running = pool.request({ type: 'later', value: 1, ms: 100 });
    const queued = pool.request({ type: 'echo', value: 2 });
    const refused = pool.request({ type: 'echo', value: 3 });
    await expect(refused).rejects.toBeInstanceOf(WorkerQueueFullError);
    await expect(refused).rejects.toMatchObject({ code: 'queue_full' });
    expect(pool.queued).toBe(1);
    expect((await running).value).toBe(1);
    expect((await queued).value).toBe(2);
    expect((await pool.request({ type: 'echo', value: 4 })).value).toBe(4);
  });

  it('fails the job of a worker that dies with WorkerCrashedError, replaces the worker, and runs the queued jobs on it', async () => {
    const exits: Array<{ slot: number; error: WorkerCrashedError }> = [];
    const pool = await start({ maxQueuedJobs: 2, onExit: (slot, error) => exits.push({ slot, error }) });
    const before = pool.worker(0)!.threadId;
    const crashed = pool.request({ type: 'exit', code: 7 });
    const queued = pool.request({ type: 'echo', value: 5 });
    await expect(crashed).rejects.toBeInstanceOf(WorkerCrashedError);
    await expect(crashed).rejects.toMatchObject({ code: 'worker_crashed', exitCode: 7 });
    const answer = await queued;
    expect(answer.value).toBe(5);
    expect(answer.threadId).not.toBe(before);
    expect(exits.map((e) => [e.slot, e.error.exitCode])).toEqual([[0, 7]]);
    // A worker that throws: the error it threw is the cause.
    const thrown = pool.request({ type: 'throw', text: 'boom' });
    await expect(thrown).rejects.toMatchObject({ code: 'worker_crashed', cause: { message: 'boom' } });
    await pool.ready();
    expect(pool.isReady(0)).toBe(true);
    expect((await pool.request({ type: 'echo', value: 6 })).value).toBe(6);
  });

  it('retries a worker that dies before it is ready after a doubling delay, not in a loop', async () => {
    const atStart = WorkerPool.start<In, Out, Ready>(options({ workerData: () => ({ exitAtStart: 3 }) }));
    await expect(atStart).rejects.toBeInstanceOf(WorkerCrashedError);
    await expect(atStart).rejects.toThrow(/exited with code 3 while starting/);

    const delays: number[] = [];
    const logger = pino(
      { level: 'warn' },
      {
        write: (line: string) => delays.push((JSON.parse(line) as { restartInMs: number }).restartInMs),
      },
    );
    const pool = new WorkerPool<In, Out, Ready>(
      options({ workerData: () => ({ exitAtStart: 3 }), restartDelayMs: { first: 100, max: 200 }, logger }),
    );
    pools.push(pool);
    await expect(pool.started()).rejects.toBeInstanceOf(WorkerCrashedError);
    await new Promise((resolve) => setTimeout(resolve, 700));
    // Spun, it would have died every few tens of milliseconds.
    expect(delays.length).toBeGreaterThanOrEqual(2);
    expect(delays.length).toBeLessThanOrEqual(5);
    expect(delays.slice(0, 3)).toEqual([100, 200, 200].slice(0, Math.min(3, delays.length)));
    expect(pool.isReady(0)).toBe(false);
  });

  it('fails the jobs running and queued at close() with WorkerPoolClosedError, and refuses new ones', async () => {
    const exits: number[] = [];
    const pool = await start({ maxQueuedJobs: 2, onExit: (slot) => exits.push(slot) });
    const running = pool.request({ type: 'later', value: 1, ms: 10_000 });
    const queued = pool.request({ type: 'echo', value: 2 });
    const outcomes = Promise.allSettled([running, queued]);
    const thread = pool.worker(0)!;
    const exited = new Promise((resolve) => thread.once('exit', resolve));
    await pool.close();
    const [r, q] = await outcomes;
    expect(r.status === 'rejected' && r.reason).toBeInstanceOf(WorkerPoolClosedError);
    expect(q.status === 'rejected' && q.reason).toMatchObject({ code: 'pool_closed' });
    await exited;
    expect(pool.worker(0)).toBeUndefined();
    expect(exits).toEqual([]);
    await expect(pool.request({ type: 'echo', value: 3 })).rejects.toBeInstanceOf(WorkerPoolClosedError);
    await expect(pool.ready()).rejects.toBeInstanceOf(WorkerPoolClosedError);
    expect(pool.post(0, { type: 'echo', value: 4 })).toBe(false);
  });

  it('posts to one worker and hands its messages that belong to no job to onMessage', async () => {
    const messages: Array<{ slot: number; message: Out }> = [];
    let resolve!: () => void;
    const arrived = new Promise<void>((r) => (resolve = r));
    const pool = await start({
      workers: 2,
      onMessage: (slot, message) => {
        messages.push({ slot, message });
        resolve();
      },
    });
    expect(pool.post(1, { type: 'echo', value: 9 })).toBe(true);
    await arrived;
    expect(messages).toEqual([
      { slot: 1, message: { type: 'echo', value: 9, threadId: pool.worker(1)!.threadId } },
    ]);
  });

  it('says to build first when the module is missing', () => {
    expect(
      () => new WorkerPool(options({ module: new URL('../../fixtures/missing.mjs', import.meta.url) })),
    ).toThrow(/missing: run `npm run build` first/);
  });
});
