/**
 * Silero in worker threads (src/audio/vad/pool.ts): the same probabilities as in this thread, many
 * calls' windows at once answered each to its own call, and a worker that dies costs only the windows
 * it held (judged by the energy gate alone) before a new worker takes over.
 */
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  SileroModel,
  SpeechOnsetDetector,
  startVadWorkers,
  VadWorkerError,
  type SpeechOnset,
  type VadWorkerPool,
} from '../../../src/audio/vad/index.js';
import { noisyUtterance, VOICES, type TestUtterance } from '../../../testkit/vad-audio.js';

let local: SileroModel;
let pool: VadWorkerPool;
let speech: TestUtterance;
beforeAll(async () => {
  [local, pool, speech] = await Promise.all([
    SileroModel.load(),
    startVadWorkers({ workers: 2 }),
    noisyUtterance('I would like to book a table for two.', VOICES[1]!, 8000, 20, 7),
  ]);
}, 60_000);
afterAll(async () => {
  await pool?.close();
});

/** Probabilities of every window of `samples`, one after another, on one stream of `model`. */
async function probabilities(model: SileroModel, samples: Int16Array): Promise<number[]> {
  const stream = model.stream(8000);
  const out: number[] = [];
  for (let o = 0; o + stream.windowSamples <= samples.length; o += stream.windowSamples)
    out.push(await stream.probability(samples.subarray(o, o + stream.windowSamples)));
  return out;
}

async function detectAll(detector: SpeechOnsetDetector, samples: Int16Array): Promise<SpeechOnset[]> {
  const found: SpeechOnset[] = [];
  for (let o = 0; o < samples.length; o += 160) {
    const onset = await detector.push(samples.subarray(o, o + 160), {
      timestampMs: o / 8,
      botAudible: false,
    });
    if (onset) found.push(onset);
  }
  return found;
}

describe('Silero in worker threads', () => {
  it('gives the probabilities the model gives in this thread', async () => {
    const [here, there] = await Promise.all([
      probabilities(local, speech.samples),
      probabilities(pool.model, speech.samples),
    ]);
    expect(there).toHaveLength(here.length);
    for (let i = 0; i < here.length; i++) expect(there[i]).toBeCloseTo(here[i]!, 5);
    // The utterance is there to be heard: speech windows and silence windows both.
    expect(Math.max(...there)).toBeGreaterThan(0.9);
    expect(Math.min(...there)).toBeLessThan(0.1);
  });

  it("answers many calls' windows at once, each with its own call's state", async () => {
    // Twenty streams, each with the speech shifted by a different number of windows: each stream's
    // probabilities must match its own sequence run alone, whatever batch its windows rode in.
    const w = 256;
    const shifted = (k: number): Int16Array => speech.samples.subarray(k * w);
    const alone = await Promise.all(Array.from({ length: 20 }, (_, k) => probabilities(local, shifted(k))));
    const together = await Promise.all(
      Array.from({ length: 20 }, (_, k) => probabilities(pool.model, shifted(k))),
    );
    for (let k = 0; k < 20; k++) {
      expect(together[k]).toHaveLength(alone[k]!.length);
      for (let i = 0; i < alone[k]!.length; i++) expect(together[k]![i]).toBeCloseTo(alone[k]![i]!, 5);
    }
  });

  it('finds the onset the in-thread detector finds', async () => {
    const onsets = await Promise.all(
      [local, pool.model].map((model) =>
        detectAll(new SpeechOnsetDetector(model, { sampleRate: 8000, now: () => 0 }), speech.samples),
      ),
    );
    expect(onsets[0]).toHaveLength(1);
    expect(onsets[1]).toEqual(onsets[0]);
  });

  it('survives a worker that dies: its windows fall back to the gate, a new worker takes over', async () => {
    const logged: Array<Record<string, unknown>> = [];
    const logger = pino(
      { level: 'warn' },
      { write: (l: string) => logged.push(JSON.parse(l) as Record<string, unknown>) },
    );
    const crashing = await startVadWorkers({ workers: 1, logger });
    try {
      const stream = crashing.model.stream(8000);
      const window = speech.samples.subarray(8000, 8256);
      expect(await stream.probability(window)).toBeGreaterThanOrEqual(0);
      // Windows in flight when the thread dies fail with a clear error, and so do new ones until a
      // new worker is ready.
      const inFlight = Array.from({ length: 5 }, () => stream.probability(window));
      await crashing.workers[0]!.terminate();
      for (const p of inFlight) await expect(p).rejects.toBeInstanceOf(VadWorkerError);
      // A detector on the pool while no worker is ready: no onset from the gate alone, no error.
      const detector = new SpeechOnsetDetector(crashing.model, { sampleRate: 8000, now: () => 0 });
      expect(await detector.push(speech.samples.subarray(0, 4000), { botAudible: false })).toBeUndefined();
      expect(crashing.stats.restarts).toBe(1);
      expect(logged.map((l) => l['msg'])).toContainEqual(expect.stringMatching(/VAD worker exited/));
      await crashing.ready();
      // The new worker runs windows, and a fresh detector hears the utterance again.
      expect(await stream.probability(window)).toBeGreaterThanOrEqual(0);
      const after = new SpeechOnsetDetector(crashing.model, { sampleRate: 8000, now: () => 0 });
      expect(await detectAll(after, speech.samples)).toHaveLength(1);
      expect(after.stats.failed).toBe(0);
    } finally {
      await crashing.close();
    }
  });

  it('a detector whose worker dies mid-utterance goes on, counting the failed windows', async () => {
    const crashing = await startVadWorkers({ workers: 1 });
    try {
      const detector = new SpeechOnsetDetector(crashing.model, { sampleRate: 8000, now: () => 0 });
      // Into the speech, then the thread dies, then the rest of the line: every push resolves.
      const cut = speech.onsetMs * 8;
      await detectAll(detector, speech.samples.subarray(0, cut));
      const killed = crashing.workers[0]!.terminate();
      const rest = detectAll(detector, speech.samples.subarray(cut));
      await killed;
      await expect(rest).resolves.toBeDefined();
      expect(detector.stats.failed).toBeGreaterThan(0);
    } finally {
      await crashing.close();
    }
  });

  it('refuses windows once closed', async () => {
    const closing = await startVadWorkers({ workers: 1 });
    await closing.close();
    await expect(closing.model.stream(8000).probability(new Int16Array(256))).rejects.toBeInstanceOf(
      VadWorkerError,
    );
  });
});
