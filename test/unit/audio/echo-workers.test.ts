/**
 * Echo estimation in worker threads (src/audio/vad/pool.ts): a call's echo stream sticks to one
 * worker, where its estimator lives, and gets the verdicts an estimator in this thread gives for the
 * same windows; streams stay apart; closing a stream frees its estimator; a worker that dies fails
 * the windows it held and the stream starts afresh on another worker.
 *
 * The verdicts are compared with an `EchoEstimator` run here, whatever the estimator does, so these
 * tests hold for any deterministic one.
 */
import { setImmediate as turn } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  EchoEstimator,
  REFERENCE_ADVANCE_MS,
  SileroModel,
  SileroSession,
  startVadWorkers,
  VadWorkerError,
  type EchoStream,
  type EchoVerdict,
  type VadSampleRate,
  type VadWorkerPool,
} from '../../../src/audio/vad/index.js';
import { EchoLine } from '../../../testkit/echo-line.js';
import { seeded } from '../../../testkit/random.js';

interface EchoWindow {
  inbound: Int16Array;
  reference: Int16Array;
}

interface CallOptions {
  sampleRate: VadSampleRate;
  seconds: number;
  delayMs: number;
  erlDb: number;
  seed: number;
}

/** Uniform noise of RMS −20 dBFS has this amplitude (RMS × √3). */
const BURST_AMPLITUDE = 32768 * 0.1 * Math.sqrt(3);

/**
 * A call on a line that echoes the bot: the bot plays noise bursts (200–500 ms, with gaps), the line
 * sends them back delayed and attenuated through mu-law with line noise, and the caller makes a sound
 * of their own for 600 ms from 4 s on. Each window: the inbound audio and the bot's reference for the
 * same span, taken REFERENCE_ADVANCE_MS ahead as echo.ts specifies. Deterministic for a seed.
 */
function echoCall(options: CallOptions): EchoWindow[] {
  const { sampleRate: rate, seed } = options;
  const w = rate === 8000 ? 256 : 512;
  const count = Math.floor((options.seconds * rate) / w);
  const n = count * w;
  const advance = (REFERENCE_ADVANCE_MS * rate) / 1000;
  const random = seeded(seed);
  const bot = new Int16Array(n + advance);
  for (let at = Math.round(0.2 * rate); at < bot.length;) {
    const length = Math.round((0.2 + 0.3 * random()) * rate);
    for (let i = at; i < Math.min(at + length, bot.length); i++)
      bot[i] = Math.round((random() * 2 - 1) * BURST_AMPLITUDE);
    at += length + Math.round((0.15 + 0.3 * random()) * rate);
  }
  const caller = new Int16Array(n);
  for (let i = 4 * rate; i < Math.min(4.6 * rate, n); i++)
    caller[i] = Math.round((random() * 2 - 1) * BURST_AMPLITUDE * Math.sin((2 * Math.PI * 180 * i) / rate));
  const line = new EchoLine({
    sampleRate: rate,
    delayMs: options.delayMs,
    erlDb: options.erlDb,
    noiseDbfs: -50,
    seed,
  });
  const windows: EchoWindow[] = [];
  for (let o = 0; o < n; o += w)
    windows.push({
      inbound: line.next(bot.subarray(o, o + w), w, caller.subarray(o, o + w)),
      reference: bot.slice(o + advance, o + advance + w),
    });
  return windows;
}

/** A snapshot: the estimator may hand back one object it updates. */
function copy(verdict: EchoVerdict): EchoVerdict {
  return { ...verdict };
}

/** The verdicts of an estimator in this thread, fed `windows` one after another. */
function inThread(sampleRate: VadSampleRate, windows: readonly EchoWindow[]): EchoVerdict[] {
  const estimator = new EchoEstimator(sampleRate);
  return windows.map((w) => copy(estimator.process(w.inbound, w.reference)));
}

/**
 * The verdicts of `stream`, its windows given `perTurn` at a time, one turn of the event loop after
 * another, without waiting for answers: batches follow each other to the worker.
 */
async function viaStream(
  stream: EchoStream,
  windows: readonly EchoWindow[],
  perTurn = 8,
): Promise<EchoVerdict[]> {
  const verdicts: Array<Promise<EchoVerdict>> = [];
  for (let k = 0; k < windows.length; k++) {
    verdicts.push(stream.process(windows[k]!.inbound, windows[k]!.reference));
    if (k % perTurn === perTurn - 1) await turn();
  }
  return (await Promise.all(verdicts)).map(copy);
}

function expectSameVerdicts(there: readonly EchoVerdict[], here: readonly EchoVerdict[]): void {
  expect(there).toHaveLength(here.length);
  for (let i = 0; i < here.length; i++) {
    expect(there[i], `window ${i}`).toStrictEqual(here[i]);
    expect(there[i]!.delayMs, `window ${i}`).toBe(here[i]!.delayMs);
    expect(there[i]!.erlDb, `window ${i}`).toBe(here[i]!.erlDb);
  }
}

const sum = (values: readonly number[]): number => values.reduce((a, b) => a + b, 0);

let pool: VadWorkerPool;
beforeAll(async () => {
  pool = await startVadWorkers({ workers: 2 });
}, 60_000);
afterAll(async () => {
  await pool?.close();
});

describe('echo estimation in worker threads', () => {
  it('gives the verdicts an estimator in this thread gives, window by window', async () => {
    const windows = echoCall({ sampleRate: 8000, seconds: 8, delayMs: 120, erlDb: 12, seed: 3 });
    const here = inThread(8000, windows);
    const stream = pool.model.echoStream(8000);
    expect(stream.windowSamples).toBe(256);
    try {
      expectSameVerdicts(await viaStream(stream, windows), here);
    } finally {
      stream.close();
    }
    // And a model run in this thread, through its session's estimators.
    const session = await SileroSession.create(0);
    const localStream = new SileroModel(session).echoStream(8000);
    try {
      expectSameVerdicts(await viaStream(localStream, windows), here);
      expect(session.echoStreams).toBe(1);
    } finally {
      localStream.close();
    }
    expect(session.echoStreams).toBe(0);
  });

  it("keeps many calls' streams apart, each stuck to the worker it started on", async () => {
    const calls: CallOptions[] = [
      { sampleRate: 8000, seconds: 6, delayMs: 40, erlDb: 6, seed: 11 },
      { sampleRate: 8000, seconds: 6, delayMs: 300, erlDb: 30, seed: 12 },
      { sampleRate: 8000, seconds: 6, delayMs: 150, erlDb: 18, seed: 13 },
      { sampleRate: 8000, seconds: 6, delayMs: 80, erlDb: 10, seed: 14 },
      { sampleRate: 8000, seconds: 6, delayMs: 220, erlDb: 24, seed: 15 },
      { sampleRate: 16_000, seconds: 6, delayMs: 100, erlDb: 12, seed: 16 },
    ];
    const windows = calls.map(echoCall);
    const here = calls.map((c, k) => inThread(c.sampleRate, windows[k]!));
    const streams = calls.map((c) => pool.model.echoStream(c.sampleRate));
    try {
      // One window of every call per turn, as calls' frames arrive: each batch mixes the calls.
      const verdicts: Array<Array<Promise<EchoVerdict>>> = streams.map(() => []);
      const workerOf: Array<number | undefined> = [];
      const length = Math.max(...windows.map((w) => w.length));
      for (let i = 0; i < length; i++) {
        streams.forEach((stream, k) => {
          const w = windows[k]![i];
          if (!w) return;
          verdicts[k]!.push(stream.process(w.inbound, w.reference));
          const worker = pool.echoWorker(stream.streamId);
          expect(worker).toBeDefined();
          if (i === 0) workerOf[k] = worker;
          else expect(worker, `call ${k}, window ${i}`).toBe(workerOf[k]);
        });
        await turn();
      }
      for (let k = 0; k < streams.length; k++)
        expectSameVerdicts((await Promise.all(verdicts[k]!)).map(copy), here[k]!);
      // Spread over both workers, and each worker holds the estimators of its own streams only.
      expect(pool.echoStreams).toEqual([3, 3]);
      expect(await pool.echoEstimators()).toEqual([3, 3]);
    } finally {
      for (const stream of streams) stream.close();
    }
    // Closing frees the estimators in the workers.
    expect(pool.echoStreams).toEqual([0, 0]);
    expect(await pool.echoEstimators()).toEqual([0, 0]);
  });

  it('starts a fresh estimator after reset() and frees the old one', async () => {
    const windows = echoCall({ sampleRate: 8000, seconds: 6, delayMs: 200, erlDb: 15, seed: 21 });
    const cut = 100;
    const stream = pool.model.echoStream(8000);
    try {
      const before = await viaStream(stream, windows.slice(0, cut));
      const oldId = stream.streamId;
      stream.reset();
      expect(stream.streamId).not.toBe(oldId);
      expect(pool.echoWorker(oldId)).toBeUndefined();
      const after = await viaStream(stream, windows.slice(cut));
      expectSameVerdicts(before, inThread(8000, windows.slice(0, cut)));
      expectSameVerdicts(after, inThread(8000, windows.slice(cut)));
      expect(after[0]!.converged).toBe(false);
      expect(sum(await pool.echoEstimators())).toBe(1);
    } finally {
      stream.close();
    }
    expect(sum(await pool.echoEstimators())).toBe(0);
    await expect(stream.process(windows[0]!.inbound, windows[0]!.reference)).rejects.toThrow(/closed/);
  });

  it('refuses windows whose inbound and reference lengths differ', async () => {
    const stream = pool.model.echoStream(8000);
    try {
      await expect(stream.process(new Int16Array(256), new Int16Array(255))).rejects.toBeInstanceOf(
        RangeError,
      );
    } finally {
      stream.close();
    }
  });

  it('survives a worker that dies mid-call: its windows fail, the stream starts afresh on another', async () => {
    const crashing = await startVadWorkers({ workers: 2 });
    try {
      const windows = echoCall({ sampleRate: 8000, seconds: 8, delayMs: 120, erlDb: 12, seed: 31 });
      const cut = 120;
      const lost = 5;
      const stream = crashing.model.echoStream(8000);
      // Another call on the other worker, which must not notice.
      const bystander = crashing.model.echoStream(8000);
      const bystanderWindows = echoCall({ sampleRate: 8000, seconds: 8, delayMs: 60, erlDb: 20, seed: 32 });
      const bystanderRun = viaStream(bystander, bystanderWindows, 4);
      expectSameVerdicts(
        await viaStream(stream, windows.slice(0, cut)),
        inThread(8000, windows.slice(0, cut)),
      );
      const worker = crashing.echoWorker(stream.streamId)!;
      expect(crashing.echoWorker(bystander.streamId)).toBe(1 - worker);

      // Windows in flight when the thread dies fail with a clear error, and are counted.
      const inFlight = windows.slice(cut, cut + lost).map((w) =>
        stream.process(w.inbound, w.reference).then(
          () => undefined,
          (error: unknown) => error,
        ),
      );
      await crashing.workers[worker]!.terminate();
      for (const outcome of await Promise.all(inFlight)) expect(outcome).toBeInstanceOf(VadWorkerError);
      expect(crashing.stats.failed).toBe(lost);
      expect(crashing.echoWorker(stream.streamId)).toBeUndefined();

      // The next window goes to a ready worker, where a fresh estimator starts: the verdicts are those
      // of a new estimator fed the windows from there on.
      const rest = windows.slice(cut + lost);
      const after = await viaStream(stream, rest);
      expect(after[0]!.converged).toBe(false);
      expectSameVerdicts(after, inThread(8000, rest));
      expect(crashing.echoWorker(stream.streamId)).toBeDefined();
      expectSameVerdicts(await bystanderRun, inThread(8000, bystanderWindows));
      expect(crashing.stats.failed).toBe(lost);
      expect(crashing.stats.restarts).toBe(1);

      await crashing.ready();
      expect(sum(crashing.echoStreams)).toBe(2);
      expect(sum(await crashing.echoEstimators())).toBe(2);
      stream.close();
      bystander.close();
      expect(await crashing.echoEstimators()).toEqual([0, 0]);
    } finally {
      await crashing.close();
    }
  });

  it('refuses echo windows once closed, and counts them', async () => {
    const closing = await startVadWorkers({ workers: 1 });
    await closing.close();
    const stream = closing.model.echoStream(8000);
    await expect(stream.process(new Int16Array(256), new Int16Array(256))).rejects.toBeInstanceOf(
      VadWorkerError,
    );
    expect(closing.stats.failed).toBe(1);
  });
});
