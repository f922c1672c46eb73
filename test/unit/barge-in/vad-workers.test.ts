// Over 450 lines: one pool of VAD workers and one corpus shared by every check against the in-thread detector.
/**
 * Detectors in worker threads (src/barge-in/pool.ts): a call's detector runs whole in one worker, its
 * Silero state and echo estimator beside it, and finds what the same detector finds in this thread,
 * whether its pushes come one at a time or all at once; many calls' detectors stay apart, each stuck
 * to its worker; reset() and close() free them; a worker that dies costs only the pushes it held, and
 * its calls start afresh on a new worker.
 */
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resampleWhole } from '../../../src/audio/resampler.js';
import {
  EchoEstimator,
  REFERENCE_ADVANCE_MS,
  SileroModel,
  SileroSession,
  SpeechOnsetDetector,
  startVadWorkers,
  type DetectorOptions,
  type PushInfo,
  type SpeechDetector,
  type SpeechOnset,
  type SpeechTurn,
  type CallerSilence,
  type VadSampleRate,
  type VadWorkerPool,
} from '../../../src/barge-in/index.js';
import { espeakSpeech } from '../../../testkit/audio.js';
import { atLevel, EchoLine } from '../../../testkit/echo-line.js';
import { noisyUtterance, UTTERANCES, VOICES, type TestUtterance } from '../../../testkit/vad-audio.js';

const RATE = 8000;
const CHUNK = 160;
const ADVANCE = (REFERENCE_ADVANCE_MS * RATE) / 1000;

/** One push: the caller's audio for 20 ms and what the detector is told with it. */
interface Chunk {
  samples: Int16Array;
  info: PushInfo;
}

let local: SileroModel;
let pool: VadWorkerPool;
let speech: TestUtterance;
/** The bot's speech at −20 dBFS, 8 kHz. */
let bot: Int16Array;
/** A caller's utterance at −20 dBFS, 8 kHz. */
let caller: Int16Array;
beforeAll(async () => {
  let botSpeech: Int16Array;
  let callerSpeech: Int16Array;
  [local, pool, speech, botSpeech, callerSpeech] = await Promise.all([
    SileroModel.load(),
    startVadWorkers({ workers: 2 }),
    noisyUtterance('I would like to book a table for two.', VOICES[1]!, RATE, 20, 7),
    espeakSpeech(
      'You can interrupt me at any moment simply by speaking, and I will stop and listen.',
      'en-us',
      50,
    ),
    espeakSpeech(UTTERANCES[4]!, 'en-gb+f2', 70),
  ]);
  bot = atLevel(resampleWhole(botSpeech, 22_050, RATE), -20);
  caller = atLevel(resampleWhole(callerSpeech, 22_050, RATE), -20);
}, 60_000);
afterAll(async () => {
  await pool?.close();
});

/** `samples` as 20 ms pushes with the bot quiet. */
function quietLine(samples: Int16Array, fromMs = 0): Chunk[] {
  const chunks: Chunk[] = [];
  for (let o = 0; o + CHUNK <= samples.length; o += CHUNK)
    chunks.push({
      samples: samples.slice(o, o + CHUNK),
      info: { timestampMs: fromMs + o / 8, botAudible: false },
    });
  return chunks;
}

/**
 * A line that echoes the bot (the bot's speech over and over, with pauses), the caller saying their
 * utterance over it at `callerAtS`: 20 ms pushes, each with the bot's reference for its span. With a
 * `gap`, the far end's playout stops for its `ms` at `atS` (the bot plays that much later from then
 * on), and the reference is placed afresh where it plays at `placedAtS`, the push saying so.
 */
function echoLine(options: {
  seconds: number;
  delayMs: number;
  erlDb: number;
  callerAtS: number;
  seed: number;
  gap?: { atS: number; ms: number; placedAtS: number };
}): Chunk[] {
  const n = options.seconds * RATE;
  const played = new Int16Array(n + ADVANCE);
  for (let at = 0; at < played.length; at += bot.length + RATE / 2)
    played.set(bot.subarray(0, Math.min(bot.length, played.length - at)), at);
  const voice = new Int16Array(n);
  const start = options.callerAtS * RATE;
  voice.set(caller.subarray(0, Math.min(caller.length, n - start)), start);
  const line = new EchoLine({
    sampleRate: RATE,
    delayMs: options.delayMs,
    erlDb: options.erlDb,
    noiseDbfs: -50,
    seed: options.seed,
  });
  const { gap } = options;
  const gapAt = gap ? gap.atS * RATE : n;
  const gapSamples = gap ? (gap.ms * RATE) / 1000 : 0;
  const heard = new Int16Array(n);
  for (let i = 0; i < n; i++)
    heard[i] = i < gapAt ? played[i]! : i < gapAt + gapSamples ? 0 : played[i - gapSamples]!;
  const placedAt = gap ? gap.placedAtS * RATE : n;
  const chunks: Chunk[] = [];
  for (let o = 0; o + CHUNK <= n; o += CHUNK) {
    const from = o + ADVANCE - (o >= placedAt ? gapSamples : 0);
    chunks.push({
      samples: line.next(heard.subarray(o, o + CHUNK), CHUNK, voice.subarray(o, o + CHUNK)),
      info: {
        timestampMs: o / 8,
        botAudible: true,
        reference: played.slice(from, from + CHUNK),
        referenceMoved: o === placedAt ? -gapSamples : 0,
      },
    });
  }
  return chunks;
}

/** The onsets `detector` finds in `chunks`: each push awaited (`'awaited'`), or all made at once. */
async function onsets(
  detector: SpeechDetector,
  chunks: readonly Chunk[],
  mode: 'awaited' | 'at once',
): Promise<SpeechOnset[]> {
  const found: SpeechOnset[] = [];
  if (mode === 'awaited') {
    for (const c of chunks) {
      const onset = await detector.push(c.samples, c.info);
      if (onset) found.push(onset);
    }
  } else {
    const all = await Promise.all(chunks.map((c) => detector.push(c.samples, c.info)));
    for (const onset of all) if (onset) found.push(onset);
  }
  return found;
}

/**
 * A worker's detector that never skips Silero for lateness (`maxLagMs`), to compare its verdicts with
 * this thread's: pushes made all at once wait in the worker's queue, and on a loaded machine (the
 * suite's other files) past `MAX_LAG_MS`, where the gate alone judges by design.
 */
function unhurried(options: DetectorOptions): DetectorOptions {
  return { ...options, maxLagMs: Infinity };
}

/** The same detector in this thread, on a clock that never lags. */
function inThread(options: DetectorOptions): SpeechOnsetDetector {
  return new SpeechOnsetDetector(local, { ...options, now: () => 0 });
}

describe('detectors in worker threads', () => {
  it('find the onset the detector finds in this thread, pushes awaited or made all at once', async () => {
    const chunks = quietLine(speech.samples);
    const here = await onsets(inThread({ sampleRate: RATE }), chunks, 'awaited');
    expect(here).toHaveLength(1);
    for (const mode of ['awaited', 'at once'] as const) {
      const detector = pool.detector(unhurried({ sampleRate: RATE }));
      try {
        expect(await onsets(detector, chunks, mode), mode).toEqual(here);
        expect(detector.stats).toEqual({ pushes: chunks.length, failed: 0 });
      } finally {
        detector.close();
      }
    }
  });

  it("tell the caller from the bot's echo as in this thread: the estimator runs beside the detector", async () => {
    const line = { seconds: 12, delayMs: 120, erlDb: 10, callerAtS: 8, seed: 3 };
    const chunks = echoLine(line);
    const options: DetectorOptions = { sampleRate: RATE, echo: true, minSpeechWhileAudibleMs: 400 };
    const here = await onsets(inThread(options), chunks, 'awaited');
    // The caller is heard, and the echo before them is not.
    expect(here).toHaveLength(1);
    expect(here[0]!.onsetMs).toBeGreaterThan(line.callerAtS * 1000 - 100);
    const detector = pool.detector(unhurried(options));
    try {
      expect(await onsets(detector, chunks, 'at once')).toEqual(here);
    } finally {
      detector.close();
    }
  });

  it("follow the reference where it is placed afresh, as in this thread (a gap in the far end's playout)", async () => {
    const line = { seconds: 14, delayMs: 120, erlDb: 10, callerAtS: 11, seed: 4 };
    const chunks = echoLine({ ...line, gap: { atS: 5, ms: 150, placedAtS: 6.5 } });
    const options: DetectorOptions = { sampleRate: RATE, echo: true };
    const here = await onsets(inThread(options), chunks, 'awaited');
    // The caller alone is heard: neither the gap nor the reference catching up cut the bot.
    expect(here).toHaveLength(1);
    expect(here[0]!.onsetMs).toBeGreaterThan(line.callerAtS * 1000 - 100);
    const detector = pool.detector(unhurried(options));
    try {
      expect(await onsets(detector, chunks, 'at once')).toEqual(here);
    } finally {
      detector.close();
    }
    // Told nothing of the move, the detector takes the echo, suddenly sooner, for the caller.
    const untold = chunks.map((c) => ({ ...c, info: { ...c.info, referenceMoved: 0 } }));
    expect((await onsets(inThread(options), untold, 'awaited')).length).toBeGreaterThan(1);
  });

  it("bring back the ends of turns, and the caller's silences after each push", async () => {
    const chunks = quietLine(speech.samples);
    const turns = (into: SpeechTurn[], silences: CallerSilence[]): DetectorOptions => ({
      sampleRate: RATE,
      endOfTurnMs: 500,
      onTurnEnd: (turn) => into.push(turn),
      onSilence: (s) => silences.push(s),
    });
    const here: SpeechTurn[] = [];
    const silencesHere: CallerSilence[] = [];
    const onsetsHere = await onsets(inThread(turns(here, silencesHere)), chunks, 'awaited');
    expect(here).toHaveLength(1);
    expect(silencesHere.length).toBeGreaterThan(10);
    expect(Math.max(...silencesHere.map((s) => s.quietMs))).toBeGreaterThan(500);
    const there: SpeechTurn[] = [];
    const silencesThere: CallerSilence[] = [];
    const detector = pool.detector(unhurried(turns(there, silencesThere)));
    try {
      // The onset, with where the speech began, comes back whole.
      expect(await onsets(detector, chunks, 'at once')).toEqual(onsetsHere);
      expect(onsetsHere[0]!.speechStartMs).toBeLessThanOrEqual(onsetsHere[0]!.onsetMs);
      expect(there).toEqual(here);
      // After every push there, after each push that completed a window here: the same silences.
      const changes = (list: CallerSilence[]): CallerSilence[] =>
        list.filter(
          (s, i) => i === 0 || s.quietMs !== list[i - 1]!.quietMs || s.fromMs !== list[i - 1]!.fromMs,
        );
      expect(changes(silencesThere)).toEqual(changes(silencesHere));
    } finally {
      detector.close();
    }
  });

  it("keep many calls' detectors apart, each stuck to the worker it started on", async () => {
    // Six calls, each with the utterance at another place: every call's onset is its own.
    const calls = Array.from({ length: 6 }, (_, k) => quietLine(speech.samples.subarray(k * 1600)));
    const here = await Promise.all(calls.map((c) => onsets(inThread({ sampleRate: RATE }), c, 'awaited')));
    const detectors = calls.map(() => pool.detector(unhurried({ sampleRate: RATE })));
    try {
      // One push of every call per turn, as calls' audio arrives: each batch mixes the calls.
      const found: SpeechOnset[][] = calls.map(() => []);
      const workerOf: Array<number | undefined> = [];
      const length = Math.max(...calls.map((c) => c.length));
      for (let i = 0; i < length; i++) {
        await Promise.all(
          detectors.map(async (detector, k) => {
            const c = calls[k]![i];
            if (!c) return;
            const pushed = detector.push(c.samples, c.info);
            const worker = pool.workerOf(detector.streamId);
            expect(worker).toBeDefined();
            if (i === 0) workerOf[k] = worker;
            else expect(worker, `call ${k}, push ${i}`).toBe(workerOf[k]);
            const onset = await pushed;
            if (onset) found[k]!.push(onset);
          }),
        );
      }
      expect(found).toEqual(here);
      expect(here.every((h) => h.length === 1)).toBe(true);
      // Spread over both workers, each holding its own streams' detectors only.
      expect(pool.streams).toEqual([3, 3]);
      expect(await pool.hostedDetectors()).toEqual([3, 3]);
    } finally {
      for (const detector of detectors) detector.close();
    }
    expect(pool.streams).toEqual([0, 0]);
    expect(await pool.hostedDetectors()).toEqual([0, 0]);
  });

  it("answer a push that found an onset at once, not after the rest of its batch (other calls' windows)", async () => {
    const chunks = quietLine(speech.samples);
    // The push that completes the run of speech, found in this thread.
    const here = inThread({ sampleRate: RATE });
    let at = -1;
    for (const [i, c] of chunks.entries()) if ((await here.push(c.samples, c.info)) && at < 0) at = i;
    expect(at).toBeGreaterThan(0);
    const caller = pool.detector({ sampleRate: RATE });
    const others = Array.from({ length: 12 }, () => pool.detector({ sampleRate: RATE, echo: true }));
    try {
      for (const c of chunks.slice(0, at)) expect(await caller.push(c.samples, c.info)).toBeUndefined();
      // Calls on the same worker (assigned at their first push), each with 30 s of a line to judge over
      // the bot's reference (the echo estimator runs on every window, Silero on 16 at most).
      await Promise.all(
        others.map((d) => d.push(new Int16Array(CHUNK), { timestampMs: 0, botAudible: false })),
      );
      const busy = others.filter((d) => pool.workerOf(d.streamId) === pool.workerOf(caller.streamId));
      expect(busy.length).toBeGreaterThanOrEqual(4);
      const start = performance.now();
      let answeredAt = 0;
      const onset = caller.push(chunks[at]!.samples, chunks[at]!.info).then((o) => {
        answeredAt = performance.now();
        return o;
      });
      // 30 s each: the rest takes seconds of the worker, so the onset's lead over it stays far above
      // the bound below even when this machine is busy with other work.
      const line = new Int16Array(30 * RATE);
      const reference = new Int16Array(line.length);
      for (let o = 0; o < line.length; o += speech.samples.length) {
        line.set(speech.samples.subarray(0, line.length - o), o);
        reference.set(bot.subarray(0, reference.length - o), o);
      }
      const rest = busy.map((d) => d.push(line, { timestampMs: 20, botAudible: true, reference }));
      expect(await onset).toBeDefined();
      await Promise.all(rest);
      const restAt = performance.now();
      // Sent back with the batch, the onset would come with the rest.
      expect(
        restAt - answeredAt,
        `onset ${answeredAt - start} ms, rest ${restAt - start} ms`,
      ).toBeGreaterThan(100);
    } finally {
      caller.close();
      for (const d of others) d.close();
    }
  });

  it("run a caller who has begun to speak before other calls' backlog, each call's audio in order", async () => {
    const chunks = quietLine(speech.samples);
    // The push that completes the run of speech, found in this thread, and whether the detector was
    // listening (Silero heard the caller) before it.
    const here = inThread({ sampleRate: RATE });
    let at = -1;
    let listeningBefore = false;
    let expected: SpeechOnset | undefined;
    for (const [i, c] of chunks.entries()) {
      listeningBefore = here.listening;
      expected = await here.push(c.samples, c.info);
      if (expected) {
        at = i;
        break;
      }
    }
    expect(at).toBeGreaterThan(0);
    expect(listeningBefore).toBe(true);
    const single = await startVadWorkers({ workers: 1 });
    try {
      const caller = single.detector({ sampleRate: RATE });
      for (const c of chunks.slice(0, at)) expect(await caller.push(c.samples, c.info)).toBeUndefined();
      // Six other calls' backlog on the same worker: 4 s of a line echoing the bot each, 20 ms a push,
      // all sent before the caller's next push.
      const line = echoLine({ seconds: 4, delayMs: 120, erlDb: 12, callerAtS: 4, seed: 3 });
      const others = Array.from({ length: 6 }, () => single.detector({ sampleRate: RATE, echo: true }));
      let answered = 0;
      const backlog = others.flatMap((d) =>
        line.map((c) => d.push(c.samples, c.info).then(() => answered++)),
      );
      let answeredBefore = -1;
      const onset = caller.push(chunks[at]!.samples, chunks[at]!.info).then((o) => {
        answeredBefore = answered;
        return o;
      });
      expect(await onset).toEqual(expected);
      await Promise.all(backlog);
      // Taken in the order sent, it would have come back last.
      expect(answeredBefore, `${answeredBefore} of ${backlog.length} answered before it`).toBeLessThan(
        backlog.length / 4,
      );
      for (const d of others) expect(d.stats.failed).toBe(0);
      caller.close();
      for (const d of others) d.close();
      expect(await single.hostedDetectors()).toEqual([0]);
    } finally {
      await single.close();
    }
  });

  it('count the windows judged by the gate alone because a worker fell behind, and the inferences', async () => {
    const chunks = quietLine(speech.samples);
    const here = inThread({ sampleRate: RATE });
    await onsets(here, chunks, 'awaited');
    expect(here.stats.inferences).toBeGreaterThan(0);
    expect(here.stats.skipped).toBe(0);
    const single = await startVadWorkers({ workers: 1 });
    try {
      // Pushed one at a time, nothing waits: the worker's detector runs the model as this thread's did.
      const alone = single.detector({ sampleRate: RATE });
      await onsets(alone, chunks, 'awaited');
      expect(single.stats).toMatchObject({ skippedWindows: 0, inferences: here.stats.inferences });
      // Forty calls' speech sent at once: the worker is seconds behind, and the late windows skip the
      // model (`MAX_LAG_MS`), each counted once.
      const many = Array.from({ length: 40 }, () => single.detector({ sampleRate: RATE }));
      await Promise.all(many.map((d) => onsets(d, chunks, 'at once')));
      const { skippedWindows, inferences } = single.stats;
      expect(skippedWindows).toBeGreaterThan(0);
      expect(inferences - here.stats.inferences).toBeGreaterThan(0);
      // A window either ran the model or was skipped: no more of them than 40 calls' wanted windows.
      expect(skippedWindows + (inferences - here.stats.inferences)).toBeLessThanOrEqual(
        40 * (here.stats.inferences + here.stats.skipped) * 2,
      );
    } finally {
      await single.close();
    }
  });

  it('send the pushes of turns that follow one another closely as one batch', async () => {
    const chunks = quietLine(speech.samples).slice(0, 10);
    // Nine pushes, each in a turn of its own (as chunks arriving on nine sockets), within a few ms. A
    // loaded machine may space the turns too far apart to tell: then a fresh call tries again.
    for (let attempt = 0; ; attempt++) {
      const detector = pool.detector({ sampleRate: RATE });
      try {
        await detector.push(chunks[0]!.samples, chunks[0]!.info);
        const before = pool.stats.batches;
        const pushed: Array<Promise<SpeechOnset | undefined>> = [];
        const start = performance.now();
        for (const c of chunks.slice(1)) {
          pushed.push(detector.push(c.samples, c.info));
          await new Promise<void>((resolve) => setImmediate(resolve));
        }
        const spreadMs = performance.now() - start;
        await Promise.all(pushed);
        // A batch every 4 ms at most: measured 2–4 batches. A batch per turn would be nine.
        const bound = Math.ceil(spreadMs / 4) + 1;
        if (bound >= 6 && attempt < 5) continue;
        expect(pool.stats.batches - before, `pushes spread over ${spreadMs} ms`).toBeLessThanOrEqual(
          Math.max(4, bound),
        );
        return;
      } finally {
        detector.close();
      }
    }
  });

  it('start a fresh detector on reset(), dropping what the old one brings back', async () => {
    const chunks = quietLine(speech.samples);
    const detector = pool.detector(unhurried({ sampleRate: RATE }));
    try {
      // Into the utterance, then a reset before the answers: they resolve empty.
      const cut = Math.round(speech.onsetMs / 20) + 20;
      const before = Promise.all(chunks.slice(0, cut).map((c) => detector.push(c.samples, c.info)));
      const oldStream = detector.streamId;
      detector.reset();
      expect(detector.streamId).not.toBe(oldStream);
      expect((await before).filter(Boolean)).toEqual([]);
      expect(pool.workerOf(oldStream)).toBeUndefined();
      // The new stream hears the utterance from scratch, as a new detector would.
      const again = quietLine(speech.samples, 10_000);
      expect(await onsets(detector, again, 'at once')).toEqual(
        await onsets(inThread({ sampleRate: RATE }), again, 'awaited'),
      );
      expect((await pool.hostedDetectors()).reduce((a, b) => a + b)).toBe(1);
    } finally {
      detector.close();
    }
    expect(await detector.push(new Int16Array(CHUNK), { botAudible: false })).toBeUndefined();
    expect((await pool.hostedDetectors()).reduce((a, b) => a + b)).toBe(0);
  });

  it('refuse a reference of another length', async () => {
    const detector = pool.detector({ sampleRate: RATE, echo: true });
    try {
      await expect(
        detector.push(new Int16Array(CHUNK), { botAudible: true, reference: new Int16Array(CHUNK - 1) }),
      ).rejects.toBeInstanceOf(RangeError);
    } finally {
      detector.close();
    }
  });

  it('survive a worker that dies: its pushes resolve empty, its calls start afresh on a new worker', async () => {
    const logged: Array<Record<string, unknown>> = [];
    const logger = pino(
      { level: 'warn' },
      { write: (l: string) => logged.push(JSON.parse(l) as Record<string, unknown>) },
    );
    const crashing = await startVadWorkers({ workers: 2, logger });
    try {
      const chunks = quietLine(speech.samples);
      const cut = Math.round(speech.onsetMs / 20);
      const detector = crashing.detector(unhurried({ sampleRate: RATE }));
      // A call on the other worker, which must not notice.
      const bystander = crashing.detector({ sampleRate: RATE });
      const bystanderRun = onsets(bystander, chunks, 'awaited');
      await onsets(detector, chunks.slice(0, cut), 'awaited');
      const worker = crashing.workerOf(detector.streamId)!;
      expect(crashing.workerOf(bystander.streamId)).toBe(1 - worker);
      // Pushes in flight when the thread dies resolve without an onset, counted.
      const inFlight = Promise.all(chunks.slice(cut, cut + 5).map((c) => detector.push(c.samples, c.info)));
      await crashing.workers[worker]!.terminate();
      expect(await inFlight).toEqual([undefined, undefined, undefined, undefined, undefined]);
      expect(detector.stats.failed).toBe(5);
      expect(crashing.stats.restarts).toBe(1);
      expect(logged.map((l) => l['msg'])).toContainEqual(expect.stringMatching(/VAD worker exited/));
      // The call's next push starts a fresh detector on a ready worker, which hears the caller again.
      const again = quietLine(speech.samples, 20_000);
      expect(await onsets(detector, again, 'at once')).toEqual(
        await onsets(inThread({ sampleRate: RATE }), again, 'awaited'),
      );
      expect(crashing.workerOf(detector.streamId)).toBeDefined();
      expect(await bystanderRun).toEqual(await onsets(inThread({ sampleRate: RATE }), chunks, 'awaited'));
      await crashing.ready();
      expect((await crashing.hostedDetectors()).reduce((a, b) => a + b)).toBe(2);
      detector.close();
      bystander.close();
      expect(await crashing.hostedDetectors()).toEqual([0, 0]);
    } finally {
      await crashing.close();
    }
  });

  it('answer every push of a batch that cannot run, and go on with the next', async () => {
    const single = await startVadWorkers({ workers: 1 });
    try {
      // A rate the model has no window for: the worker cannot make the detector.
      const broken = single.detector({ sampleRate: 12_000 as VadSampleRate });
      const pushes = [
        broken.push(new Int16Array(CHUNK), { botAudible: false }),
        broken.push(new Int16Array(CHUNK), { botAudible: false }),
      ];
      expect(await Promise.all(pushes)).toEqual([undefined, undefined]);
      expect(broken.stats.failed).toBe(2);
      // The same worker still hears a caller.
      const detector = single.detector(unhurried({ sampleRate: RATE }));
      const chunks = quietLine(speech.samples);
      expect(await onsets(detector, chunks, 'at once')).toEqual(
        await onsets(inThread({ sampleRate: RATE }), chunks, 'awaited'),
      );
      expect(detector.stats.failed).toBe(0);
    } finally {
      await single.close();
    }
  });

  it('resolve pushes empty once the pool is closed, and count them', async () => {
    const closing = await startVadWorkers({ workers: 1 });
    await closing.close();
    const detector = closing.detector({ sampleRate: RATE });
    expect(await detector.push(new Int16Array(CHUNK), { botAudible: false })).toBeUndefined();
    expect(detector.stats.failed).toBe(1);
    expect(closing.stats.failed).toBe(1);
  });
});

describe('echo estimation in this thread', () => {
  it("a session's echo streams give the verdicts of an estimator fed the same windows", async () => {
    const chunks = echoLine({ seconds: 6, delayMs: 200, erlDb: 15, callerAtS: 4, seed: 21 });
    const windows: Array<{ inbound: Int16Array; reference: Int16Array }> = [];
    for (let k = 0; k + 1 < chunks.length; k += 8) {
      // 256-sample windows out of the 160-sample chunks.
      const inbound = new Int16Array(CHUNK * 8);
      const reference = new Int16Array(CHUNK * 8);
      for (let j = 0; j < 8 && k + j < chunks.length; j++) {
        inbound.set(chunks[k + j]!.samples, j * CHUNK);
        reference.set(chunks[k + j]!.info.reference!, j * CHUNK);
      }
      for (let o = 0; o + 256 <= inbound.length; o += 256)
        windows.push({ inbound: inbound.slice(o, o + 256), reference: reference.slice(o, o + 256) });
    }
    const estimator = new EchoEstimator(RATE);
    const here = windows.map((w) => ({ ...estimator.process(w.inbound, w.reference) }));
    const session = await SileroSession.create(0);
    const stream = new SileroModel(session).echoStream(RATE);
    try {
      const there = [];
      for (const w of windows) there.push({ ...(await stream.process(w.inbound, w.reference)) });
      expect(there).toStrictEqual(here);
      expect(here.some((v) => v.converged)).toBe(true);
      expect(session.echoStreams).toBe(1);
    } finally {
      stream.close();
    }
    expect(session.echoStreams).toBe(0);
  });
});
