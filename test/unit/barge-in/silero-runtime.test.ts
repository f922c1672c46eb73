/**
 * Silero's two runtimes (src/barge-in/silero.ts): the native ONNX Runtime (the optional
 * `onnxruntime-node`, installed by this project's `npm ci`) gives the probabilities WASM gives, window
 * after window with the state carried; where it does not load, WASM runs and the reason is given, and
 * a pool of VAD workers says so once, however many workers fell back.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  SileroModel,
  SileroSession,
  startVadWorkers,
  type VadSampleRate,
} from '../../../src/barge-in/index.js';
import { noisyUtterance, VOICES } from '../../../testkit/vad-audio.js';

let native: SileroSession;
let wasm: SileroSession;
beforeAll(async () => {
  [native, wasm] = await Promise.all([
    SileroSession.create(0, { backend: 'native' }),
    SileroSession.create(0, { backend: 'wasm' }),
  ]);
});

/** Silero's probabilities for every window of `samples`, on one session. */
async function probabilities(
  session: SileroSession,
  samples: Int16Array,
  rate: VadSampleRate,
): Promise<number[]> {
  const stream = new SileroModel(session).stream(rate);
  const out: number[] = [];
  for (let o = 0; o + stream.windowSamples <= samples.length; o += stream.windowSamples)
    out.push(await stream.probability(samples.subarray(o, o + stream.windowSamples)));
  return out;
}

describe('Silero on the native runtime', () => {
  it('runs natively where onnxruntime-node is installed, and says so', () => {
    expect(native.runtime).toMatch(/^onnxruntime-node .* \(native, 1 thread\)$/);
    expect(native.fallback).toBeUndefined();
    expect(wasm.runtime).toMatch(/^onnxruntime-web .* \(WASM, 1 thread\)$/);
  });

  it.each([8000, 16_000] as const)(
    'gives the probabilities WASM gives, speech and noise, at %i Hz',
    async (rate) => {
      const { samples } = await noisyUtterance(
        'I would like to book a table for two.',
        VOICES[2]!,
        rate,
        10,
        3,
      );
      const [a, b] = await Promise.all([
        probabilities(native, samples, rate),
        probabilities(wasm, samples, rate),
      ]);
      expect(a).toHaveLength(b.length);
      expect(Math.max(...b)).toBeGreaterThan(0.9);
      expect(Math.min(...b)).toBeLessThan(0.1);
      for (let i = 0; i < a.length; i++) expect(Math.abs(a[i]! - b[i]!)).toBeLessThan(1e-4);
    },
  );
});

describe('without the native runtime', () => {
  it('runs on WASM and says why', async () => {
    const session = await SileroSession.create(0, { nativePackage: 'onnxruntime-node-not-installed' });
    expect(session.runtime).toMatch(/\(WASM, 1 thread\)$/);
    expect(session.fallback).toMatch(/^onnxruntime-node-not-installed did not load: /);
    expect(new SileroModel(session).fallback).toBe(session.fallback);
    await expect(
      SileroSession.create(0, { backend: 'native', nativePackage: 'onnxruntime-node-not-installed' }),
    ).rejects.toThrow();
  });

  describe('a pool of VAD workers', () => {
    const warnings: Array<{ reason: string; message: string }> = [];
    const logger = {
      warn: (fields: { reason: string }, message: string) =>
        warnings.push({ reason: fields.reason, message }),
      error: () => {},
      info: () => {},
      debug: () => {},
      child() {
        return this;
      },
    };
    let pool: Awaited<ReturnType<typeof startVadWorkers>>;
    beforeAll(async () => {
      pool = await startVadWorkers({
        workers: 2,
        // A logger's shape is all the pool uses of it.
        logger: logger as unknown as NonNullable<Parameters<typeof startVadWorkers>[0]>['logger'],
        silero: { nativePackage: 'onnxruntime-node-not-installed' },
      });
    });
    afterAll(() => pool.close());

    it('detects on WASM, and logs the fallback once', async () => {
      expect(pool.runtime).toMatch(/^onnxruntime-web .* × 2 worker threads$/);
      expect(warnings).toHaveLength(1);
      expect(warnings[0]!.reason).toMatch(/onnxruntime-node-not-installed did not load/);
      const { samples } = await noisyUtterance('Sorry, can you repeat that?', VOICES[0]!, 8000, 20, 5);
      const detector = pool.detector({ sampleRate: 8000 });
      const onsets = [];
      for (let o = 0; o + 160 <= samples.length; o += 160)
        onsets.push(await detector.push(samples.slice(o, o + 160), { botAudible: false }));
      detector.close();
      expect(onsets.filter((o) => o !== undefined)).toHaveLength(1);
    });
  });
});
