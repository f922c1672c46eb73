// Over 450 lines: one corpus of voices and lines generated once for every detector check.
/**
 * The barge-in detector on real speech (eSpeak: seven voices, pitches and speaking rates) in white and
 * pink line noise, and on ten minutes of a line where nobody talks (noise, hum, DTMF, clicks, pops,
 * silence), at 8 kHz (through mu-law) and 16 kHz: the targets, plus the stricter rule while
 * the bot is audible, chunking, timestamps, reset and the bound on work when inference lags.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import {
  MAX_LAG_MS,
  MAX_QUEUED_WINDOWS,
  SileroModel,
  SpeechOnsetDetector,
  type SileroRunner,
  type DetectorOptions,
  type SpeechOnset,
  type SpeechTurn,
  type VadSampleRate,
} from '../../../src/barge-in/index.js';
import { seeded } from '../../../testkit/random.js';
import {
  NON_SPEECH_KINDS,
  nonSpeechSecond,
  noisyUtterance,
  UTTERANCES,
  VOICES,
  type NoiseOptions,
  type TestUtterance,
} from '../../../testkit/vad-audio.js';

let model: SileroModel;
beforeAll(async () => {
  model = await SileroModel.load();
}, 60_000);

/**
 * A detector on a clock that never moves: it never thinks itself behind, so a busy test machine cannot
 * change its answers (the tests of falling behind drive a clock of their own).
 */
function fresh(options: DetectorOptions): SpeechOnsetDetector {
  return new SpeechOnsetDetector(model, { now: () => 0, ...options });
}

/** Chunk sizes: a fixed number of samples, or a function giving each next size. */
type Chunking = number | (() => number);

/** Runs `samples` through a detector (a fresh one by default), pushing chunk by chunk and awaiting each. */
async function detect(
  samples: Int16Array,
  sampleRate: VadSampleRate,
  chunking: Chunking,
  options: { botAudible?: boolean; detector?: SpeechOnsetDetector; startMs?: number } = {},
): Promise<SpeechOnset[]> {
  const detector = options.detector ?? fresh({ sampleRate });
  const found: SpeechOnset[] = [];
  for (let o = 0; o < samples.length;) {
    const n = typeof chunking === 'number' ? chunking : chunking();
    const onset = await detector.push(samples.subarray(o, o + n), {
      timestampMs: (options.startMs ?? 0) + (o / sampleRate) * 1000,
      botAudible: options.botAudible ?? false,
    });
    if (onset) found.push(onset);
    o += n;
  }
  return found;
}

/**
 * A detector on a scripted model that hears a 256-sample window's level: quiet (the line, `_`) 0.02, a
 * consonant's hiss (`h`) 0.2 or, softer (`f`), 0.05, too little to lead into a run; a vowel (`V`)
 * 0.95. At 8 kHz, no noise suppression, a clock that never moves.
 */
function levelDetector(): SpeechOnsetDetector {
  const runner: SileroRunner = {
    runtime: 'scripted',
    run: (input, state) => {
      let sum = 0;
      for (let i = input.length - 256; i < input.length; i++) sum += input[i]! ** 2;
      const rms = Math.sqrt(sum / 256) * 32768;
      const p = rms > 10_000 ? 0.95 : rms > 3000 ? 0.2 : rms > 800 ? 0.05 : 0.02;
      return Promise.resolve({ p, state });
    },
    echo: () => Promise.reject(new Error('no echo here')),
    closeEcho: () => {},
  };
  return new SpeechOnsetDetector(new SileroModel(runner), { now: () => 0, sampleRate: 8000, denoise: false });
}

/** A window of white noise at the level of `kind` (see `levelDetector`). */
function levelWindow(kind: string, random: () => number): Int16Array {
  const LEVEL: Record<string, number> = { _: 300, f: 1500, h: 6000, V: 16_000 };
  // Uniform noise: RMS = range / √12.
  const rms = LEVEL[kind]!;
  return Int16Array.from({ length: 256 }, () => Math.round((random() - 0.5) * rms * Math.sqrt(12)));
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

for (const sampleRate of [8000, 16_000] as const) {
  describe(`SpeechOnsetDetector at ${sampleRate} Hz`, () => {
    const utterances: TestUtterance[] = [];
    beforeAll(async () => {
      let seed = 1;
      const mulaw = sampleRate === 8000;
      const conditions: Array<[number, NoiseOptions]> = [
        [20, { mulaw }],
        [10, { mulaw }],
        [10, { color: 'pink', mulaw }],
      ];
      for (const [c, [snr, noise]] of conditions.entries())
        for (const [i, text] of UTTERANCES.entries())
          utterances.push(
            await noisyUtterance(text, VOICES[(i + 3 * c) % VOICES.length]!, sampleRate, snr, seed++, noise),
          );
    }, 30_000);

    it('finds ≥ 90 % of speech onsets within 300 ms (median ≤ 250 ms), in white and pink noise at 20 and 10 dB SNR', async () => {
      const latencies: number[] = [];
      const onsetErrors: number[] = [];
      for (const u of utterances) {
        const found = await detect(u.samples, sampleRate, sampleRate / 50);
        // One onset per utterance, or two when it pauses at a comma.
        expect(found.length, u.text).toBeLessThanOrEqual(1 + (u.text.includes(',') ? 1 : 0));
        const first = found[0];
        latencies.push(first ? first.detectedMs - u.onsetMs : Number.POSITIVE_INFINITY);
        if (!first) continue;
        // The onset it reports is near the true one, not the moment it was sure (Silero hears a
        // word's first "s" or "m" late).
        onsetErrors.push(Math.abs(first.onsetMs - u.onsetMs));
        expect(first.probability).toBeGreaterThanOrEqual(0.5);
        expect(first.detectedMs).toBeGreaterThan(first.onsetMs);
      }
      const inTime = latencies.filter((l) => l <= 300).length;
      expect(inTime / utterances.length, latencies.join(' ')).toBeGreaterThanOrEqual(0.9);
      expect(Math.max(...onsetErrors), onsetErrors.join(' ')).toBeLessThan(200);
      expect(median(onsetErrors)).toBeLessThanOrEqual(60);
      expect(median(latencies)).toBeLessThanOrEqual(250);
    });

    it('gives the same answers whatever the chunk size: 20 ms, 100 ms, 173 samples, random sizes', async () => {
      const random = seeded(sampleRate);
      for (const u of utterances.filter((_, i) => i % 6 === 0)) {
        const by20ms = await detect(u.samples, sampleRate, sampleRate / 50);
        expect(by20ms).not.toHaveLength(0);
        expect(await detect(u.samples, sampleRate, sampleRate / 10)).toEqual(by20ms);
        expect(await detect(u.samples, sampleRate, 173)).toEqual(by20ms);
        expect(await detect(u.samples, sampleRate, () => 1 + Math.floor(random() * 900))).toEqual(by20ms);
      }
    });

    it('fires at most once in ten minutes of a line where nobody talks', async () => {
      const detector = new SpeechOnsetDetector(model, { sampleRate, now: () => 0 });
      const random = seeded(42 + sampleRate);
      const chunk = sampleRate / 50;
      const triggers: string[] = [];
      for (let second = 0; second < 600; second++) {
        const x = nonSpeechSecond(second, sampleRate, random);
        for (let o = 0; o < x.length; o += chunk) {
          const onset = await detector.push(x.subarray(o, o + chunk), {
            timestampMs: second * 1000 + (o / sampleRate) * 1000,
            botAudible: false,
          });
          if (onset) triggers.push(`${second} s (${NON_SPEECH_KINDS[second % NON_SPEECH_KINDS.length]})`);
        }
      }
      expect(triggers.length, triggers.slice(0, 20).join(', ')).toBeLessThanOrEqual(1);
      // Silero woke for the tones, clicks and noise bursts, but slept through the quiet seconds.
      const { windows, inferences } = detector.stats;
      expect(inferences).toBeGreaterThan(0);
      expect(inferences).toBeLessThan(windows * 0.8);
    }, 60_000);
  });
}

describe('SpeechOnsetDetector in heavy line noise', () => {
  it("hears speech at 5 dB SNR sooner than at the model's customary 0.5 threshold", async () => {
    // In noise Silero's probabilities for speech sink to 0.2–0.45 for hundreds of ms; the gate keeps it
    // asleep on the noise itself, so the default threshold can sit lower (SPEECH_THRESHOLD).
    const utterances: TestUtterance[] = [];
    let seed = 500;
    for (const color of ['white', 'pink'] as const)
      for (const text of UTTERANCES)
        for (const voice of VOICES)
          utterances.push(await noisyUtterance(text, voice, 8000, 5, seed++, { color, mulaw: true }));
    const latencies = async (options: Partial<DetectorOptions>): Promise<number[]> => {
      const out: number[] = [];
      for (const u of utterances) {
        const found = await detect(u.samples, 8000, 160, {
          detector: fresh({ sampleRate: 8000, ...options }),
        });
        out.push(found[0] ? found[0].detectedMs - u.onsetMs : Number.POSITIVE_INFINITY);
      }
      return out;
    };
    const byDefault = await latencies({});
    const customary = await latencies({ threshold: 0.5 });
    // Measured (112 utterances): every one heard at both thresholds, 34 of them sooner at the default
    // and none later; 3 after more than 300 ms, against 7 at 0.5.
    const late = (xs: number[]): number => xs.filter((l) => l > 300).length;
    expect(byDefault.every((l) => Number.isFinite(l))).toBe(true);
    expect(late(byDefault), byDefault.join(' ')).toBeLessThanOrEqual(4);
    expect(late(byDefault)).toBeLessThan(late(customary));
    // Never later than the customary threshold, onset by onset.
    for (const [i, l] of byDefault.entries()) expect(l).toBeLessThanOrEqual(customary[i]!);
  }, 60_000);
});

describe('SpeechOnsetDetector rules', () => {
  it('hum right after keys, as a line starts, makes no run: Silero stays at 0.3–0.45 on it, never 0.5', async () => {
    // The first seconds of a 16 kHz line (noise, keys, 50 Hz hum, 60 Hz hum), before the noise
    // suppressor has learnt the hum: without the rule that a run must reach 0.5 once, two runs of
    // 128 ms on it (at 2 s and 3 s; with a 160 ms run, one).
    const detector = fresh({ sampleRate: 16_000 });
    const random = seeded(8042);
    const found: number[] = [];
    for (let second = 0; second < 4; second++) {
      const x = nonSpeechSecond(second, 16_000, random);
      for (let o = 0; o < x.length; o += 320) {
        const onset = await detector.push(x.subarray(o, o + 320), {
          timestampMs: second * 1000 + o / 16,
          botAudible: false,
        });
        if (onset) found.push(onset.onsetMs);
      }
    }
    expect(found).toEqual([]);
    // Silero did hear it: the gate opened on the keys and the hum.
    expect(detector.stats.inferences).toBeGreaterThan(20);
  });

  it('needs longer speech while the bot is audible: a 250 ms burst barges in only when it is not', async () => {
    for (const [i, text] of ['Hello there, this goes on.', 'Okay, I see.', 'Hey, listen.'].entries()) {
      const u = await noisyUtterance(text, VOICES[i]!, 8000, 30, 3 + i);
      const end = Math.round(((u.onsetMs + 250) / 1000) * 8000);
      const burst = new Int16Array(u.samples.length);
      burst.set(u.samples.subarray(0, end));
      const options = { minSpeechMs: 160, minSpeechWhileAudibleMs: 400 };
      const detector = (): SpeechOnsetDetector => fresh({ sampleRate: 8000, ...options });
      expect(await detect(burst, 8000, 160, { detector: detector() }), text).toHaveLength(1);
      expect(await detect(burst, 8000, 160, { detector: detector(), botAudible: true }), text).toHaveLength(
        0,
      );
      // Longer speech gets through while the bot is audible, later than it would otherwise.
      const quiet = await detect(u.samples, 8000, 160, { detector: detector() });
      const audible = await detect(u.samples, 8000, 160, { detector: detector(), botAudible: true });
      expect(audible, text).not.toHaveLength(0);
      expect(audible[0]!.detectedMs - quiet[0]!.detectedMs).toBeGreaterThanOrEqual(400 - 160 - 64);
    }
  });

  it('ends a run at echo-only windows on a line whose echo is weak, not on one whose echo is loud', async () => {
    // A scripted model: Silero says speech (0.95) for every window it is asked about, and the echo
    // estimator's verdict per window follows the pattern (C: the caller, E: the echo alone), on a path
    // known with the given loss. The caller's windows are louder than the line, so the gate opens.
    const run = async (pattern: string, erlDb: number): Promise<SpeechOnset[]> => {
      const windows = 'E'.repeat(30) + pattern + 'E'.repeat(30);
      let verdicts = 0;
      const runner: SileroRunner = {
        runtime: 'scripted',
        run: (_input, state) => Promise.resolve({ p: 0.95, state }),
        echo: () =>
          Promise.resolve({
            echo: true,
            caller: windows[verdicts++] === 'C',
            converged: true,
            cautious: false,
            clean: false,
            delayMs: 120,
            erlDb,
          }),
        closeEcho: () => {},
      };
      const detector = new SpeechOnsetDetector(new SileroModel(runner), {
        now: () => 0,
        sampleRate: 8000,
        echo: true,
        minSpeechMs: 128,
      });
      const random = seeded(9);
      const found: SpeechOnset[] = [];
      for (const [w, kind] of [...windows].entries()) {
        const level = kind === 'C' ? 8000 : 300;
        const samples = Int16Array.from({ length: 256 }, () => Math.round((random() - 0.5) * level));
        const onset = await detector.push(samples, {
          timestampMs: w * 32,
          botAudible: true,
          reference: new Int16Array(256).fill(100),
        });
        if (onset) found.push(onset);
      }
      return found;
    };
    // Two windows of the caller, the echo alone for four, two more: four windows of speech within the
    // run's allowed gap. Where the echo is 6 dB down it may hide the caller between them (a talk-over
    // on such a line looks like this): a run. Where it is 20 dB down it cannot, and the caller would
    // show over it: the windows it explains end the run.
    expect(await run('CCEEEECC', 6)).toHaveLength(1);
    expect(await run('CCEEEECC', 20)).toHaveLength(0);
    // One window of the echo inside a run does not end it, and a caller who talks on is heard.
    expect(await run('CCECC', 20)).toHaveLength(1);
    expect(await run('CCCCCC', 20)).toHaveLength(1);
  });

  it('counts up to two windows of a first consonant Silero hears short of speech into the run', async () => {
    const run = async (pattern: string): Promise<SpeechOnset[]> => {
      const windows = '_'.repeat(30) + pattern + '_'.repeat(12);
      const detector = levelDetector();
      const random = seeded(4);
      const found: SpeechOnset[] = [];
      for (const [w, kind] of [...windows].entries()) {
        const onset = await detector.push(levelWindow(kind, random), {
          timestampMs: w * 32,
          botAudible: false,
        });
        if (onset) found.push(onset);
      }
      return found;
    };
    const at = (window: number): number => (30 + window) * 32;
    // Two windows of hiss then two of the vowel: 128 ms, confirmed at the vowel's second window, the
    // onset where the hiss began.
    expect(await run('hhVV')).toEqual([
      expect.objectContaining({ onsetMs: at(0), detectedMs: at(4) }) as SpeechOnset,
    ]);
    // Three windows of hiss: two count.
    expect(await run('hhhVV')).toEqual([
      expect.objectContaining({ onsetMs: at(1), detectedMs: at(5) }) as SpeechOnset,
    ]);
    // Without the hiss, or with one Silero all but rules out, the vowel needs four windows of its own.
    expect(await run('VV')).toHaveLength(0);
    expect(await run('ffVV')).toHaveLength(0);
    expect(await run('ffVVVV')).toEqual([
      expect.objectContaining({ onsetMs: at(2), detectedMs: at(6) }) as SpeechOnset,
    ]);
    // Hiss alone is no speech; nor is hiss, a pause, and a vowel too short without it.
    expect(await run('hhhhhhhh')).toHaveLength(0);
    expect(await run('hh_VV')).toHaveLength(0);
  });

  it('says it is listening while Silero hears the line or a run of speech is under way', async () => {
    // What a VAD worker runs first (worker.ts): not a quiet line, a consonant Silero hears, a run.
    const detector = levelDetector();
    const random = seeded(5);
    const listening: string[] = [];
    for (const [w, kind] of [...('_'.repeat(50) + 'hhVVVV' + '_'.repeat(30))].entries()) {
      await detector.push(levelWindow(kind, random), { timestampMs: w * 32, botAudible: false });
      listening.push(detector.listening ? 'L' : '.');
    }
    const marks = listening.join('');
    // The line's quiet, once the gate has its floor (a second and Silero's 250 ms after it): asleep.
    // From the hiss through the vowel: listening. Quiet again: asleep within a second.
    expect(marks.slice(42, 50)).toBe('.'.repeat(8));
    expect(marks.slice(50, 56)).toBe('L'.repeat(6));
    expect(marks.slice(-10)).toBe('.'.repeat(10));
  });

  it('takes its durations from the options', async () => {
    const u = await noisyUtterance('Hello there, this goes on.', VOICES[0]!, 8000, 30, 3);
    const found = async (options: Partial<DetectorOptions>): Promise<SpeechOnset[]> =>
      detect(u.samples, 8000, 160, {
        detector: fresh({ sampleRate: 8000, ...options }),
      });
    const fast = (await found({ minSpeechMs: 64 }))[0]!;
    const slow = (await found({ minSpeechMs: 320 }))[0]!;
    expect(slow.detectedMs - fast.detectedMs).toBeGreaterThanOrEqual(256);
    expect(slow.onsetMs).toBe(fast.onsetMs);
    expect(await found({ minSpeechMs: 10_000 })).toHaveLength(0);
  });

  it('reports a run of speech once, re-arms after a silence, and reset() starts over', async () => {
    const a = await noisyUtterance('Can I ask you something?', VOICES[1]!, 8000, 20, 5);
    const twice = new Int16Array(a.samples.length * 2);
    twice.set(a.samples);
    twice.set(a.samples, a.samples.length);
    const detector = fresh({ sampleRate: 8000 });
    const found = await detect(twice, 8000, 160, { detector });
    expect(found).toHaveLength(2);
    expect(found[1]!.onsetMs - found[0]!.onsetMs).toBeCloseTo((a.samples.length / 8000) * 1000, -2);
    // Mid-speech: reset drops what was queued and forgets the run, so the same speech is found again.
    const half = Math.round(a.onsetMs * 8 + 2400);
    const pending = detector.push(a.samples.subarray(0, half), { timestampMs: 0, botAudible: false });
    detector.reset();
    expect(await pending).toBeUndefined();
    expect(await detect(a.samples, 8000, 160, { detector })).toEqual(await detect(a.samples, 8000, 160));
  });

  it('places onsets on the gateway timeline, and counts samples when there are no timestamps', async () => {
    const u = await noisyUtterance('Wait a moment please.', VOICES[2]!, 16_000, 20, 9);
    const reference = await detect(u.samples, 16_000, 320);
    expect(reference).toHaveLength(1);
    const shifted = await detect(u.samples, 16_000, 320, { startMs: 123_456 });
    expect(shifted[0]!.onsetMs).toBeCloseTo(reference[0]!.onsetMs + 123_456, 6);
    const detector = fresh({ sampleRate: 16_000 });
    const untimed: SpeechOnset[] = [];
    for (let o = 0; o < u.samples.length; o += 320) {
      const onset = await detector.push(u.samples.subarray(o, o + 320), { botAudible: false });
      if (onset) untimed.push(onset);
    }
    expect(untimed).toEqual(reference);
  });

  it('shares one model per process between calls that do not disturb one another', async () => {
    expect(await SileroModel.load()).toBe(model);
    const calls = await Promise.all(
      ['Hello, can you hear me?', 'Stop!', 'No, that is not right.'].map((text, i) =>
        noisyUtterance(text, VOICES[i + 2]!, 8000, 15, 30 + i, { mulaw: true }),
      ),
    );
    const alone = [];
    for (const u of calls) alone.push(await detect(u.samples, 8000, 160));
    // The three calls' chunks interleaved, each call's pushes in flight together with the others'.
    const detectors = calls.map(() => fresh({ sampleRate: 8000 }));
    const together: SpeechOnset[][] = calls.map(() => []);
    const longest = Math.max(...calls.map((u) => u.samples.length));
    for (let o = 0; o < longest; o += 160) {
      const onsets = await Promise.all(
        calls.map((u, i) =>
          o < u.samples.length
            ? detectors[i]!.push(u.samples.subarray(o, o + 160), { timestampMs: o / 8, botAudible: false })
            : Promise.resolve(undefined),
        ),
      );
      onsets.forEach((onset, i) => onset && together[i]!.push(onset));
    }
    expect(together).toEqual(alone);
    expect(alone.every((found) => found.length > 0)).toBe(true);
  });

  it('processes pushes in order and bounds the work queued when the caller does not wait', async () => {
    const u = await noisyUtterance('I would like to book a table for two.', VOICES[3]!, 8000, 20, 11);
    const detector = fresh({ sampleRate: 8000 });
    const order: number[] = [];
    const pushes: Array<Promise<SpeechOnset | undefined>> = [];
    for (let o = 0, k = 0; o < u.samples.length; o += 160, k++) {
      const i = k;
      pushes.push(
        detector.push(u.samples.subarray(o, o + 160), { timestampMs: o / 8, botAudible: false }).then((r) => {
          order.push(i);
          return r;
        }),
      );
    }
    await Promise.all(pushes);
    expect(order).toEqual(pushes.map((_, i) => i));
    const { windows, inferences, skipped } = detector.stats;
    expect(windows).toBe(Math.floor(u.samples.length / 256));
    // Only the last windows, once the queue was short enough, woke Silero.
    expect(inferences).toBeLessThanOrEqual(MAX_QUEUED_WINDOWS + 3);
    expect(skipped).toBeGreaterThan(windows / 2);
  });

  it('skips Silero while inference lags the line, catches up, and still finds speech', async () => {
    // A machine too slow for the model: each inference costs 48 ms of a 32 ms window, on a clock the
    // detector reads; audio arrives every 20 ms and is pushed as soon as the previous push is done.
    let clock = 0;
    const slow = {
      stream: (rate: VadSampleRate) => {
        const s = model.stream(rate);
        const probability = s.probability.bind(s);
        s.probability = (w: Int16Array) => {
          clock += 48;
          return probability(w);
        };
        return s;
      },
    } as unknown as SileroModel;
    const run = async (
      samples: Int16Array,
    ): Promise<{ found: SpeechOnset[]; maxLagMs: number; detector: SpeechOnsetDetector }> => {
      clock = 0;
      const detector = new SpeechOnsetDetector(slow, { sampleRate: 8000, now: () => clock });
      const found: SpeechOnset[] = [];
      let maxLagMs = 0;
      for (let o = 0; o < samples.length; o += 160) {
        const arrival = o / 8 + 20;
        clock = Math.max(clock, arrival);
        maxLagMs = Math.max(maxLagMs, clock - arrival);
        const onset = await detector.push(samples.subarray(o, o + 160), {
          timestampMs: o / 8,
          botAudible: false,
        });
        if (onset) found.push(onset);
      }
      return { found, maxLagMs, detector };
    };
    const u = await noisyUtterance('I would like to book a table for two.', VOICES[4]!, 8000, 20, 13);
    const speech = await run(u.samples);
    expect(speech.detector.stats.skipped).toBeGreaterThan(0);
    // The bound, plus the window in progress and the two earlier ones checked when Silero wakes.
    expect(speech.maxLagMs).toBeLessThanOrEqual(MAX_LAG_MS + 3 * 48);
    expect(speech.found).not.toHaveLength(0);
    expect(speech.found[0]!.detectedMs - u.onsetMs).toBeLessThan(600);
    // The gate alone never starts a run: tones and clicks while behind are not speech.
    const random = seeded(5);
    const line = new Int16Array(60 * 8000);
    for (let s = 0; s < 60; s++) line.set(nonSpeechSecond(s, 8000, random), s * 8000);
    const idle = await run(line);
    expect(idle.detector.stats.skipped).toBeGreaterThan(0);
    expect(idle.found.length).toBeLessThanOrEqual(1);
  });

  it("skips Silero for audio that waited past MAX_LAG_MS to reach it (a VAD worker's queue)", async () => {
    const u = await noisyUtterance('I would like to book a table for two.', VOICES[4]!, 8000, 20, 13);
    const run = async (waitedMs: number): Promise<{ found: number; detector: SpeechOnsetDetector }> => {
      const detector = new SpeechOnsetDetector(model, { sampleRate: 8000, now: () => 0 });
      let found = 0;
      for (let o = 0; o < u.samples.length; o += 160)
        if (await detector.push(u.samples.subarray(o, o + 160), { botAudible: false, waitedMs })) found++;
      return { found, detector };
    };
    const prompt = await run(MAX_LAG_MS);
    expect(prompt.found).toBe(1);
    expect(prompt.detector.stats.skipped).toBe(0);
    // Every window late: the gate alone judges them, and it never starts a run of speech.
    const late = await run(MAX_LAG_MS + 1);
    expect(late.found).toBe(0);
    expect(late.detector.stats.skipped).toBeGreaterThan(0);
    expect(late.detector.stats.inferences).toBe(0);
  });

  it('does not mistake a pause in the line, untimed, for lag', async () => {
    let clock = 0;
    const detector = new SpeechOnsetDetector(model, { sampleRate: 8000, now: () => clock });
    const u = await noisyUtterance('Sorry, what did you say?', VOICES[5]!, 8000, 20, 17);
    const push = async (samples: Int16Array): Promise<SpeechOnset[]> => {
      const found: SpeechOnset[] = [];
      for (let o = 0; o < samples.length; o += 160) {
        clock += 20;
        const onset = await detector.push(samples.subarray(o, o + 160), { botAudible: false });
        if (onset) found.push(onset);
      }
      return found;
    };
    expect(await push(u.samples.subarray(0, 8000))).toHaveLength(0);
    clock += 5000; // no audio for 5 s, and no timestamps to say so
    const found = await push(u.samples.subarray(8000));
    expect(found).toHaveLength(1);
    expect(detector.stats.skipped).toBe(0);
  });
});

describe('turns of the caller', () => {
  it('ends a turn after endOfTurnMs of silence, from its first onset to the end of its speech', async () => {
    const u = await noisyUtterance('I would like to book a table for two.', VOICES[2]!, 8000, 20, 21);
    const turns: SpeechTurn[] = [];
    const detector = fresh({ sampleRate: 8000, endOfTurnMs: 600, onTurnEnd: (t) => turns.push(t) });
    await detect(u.samples, 8000, 160, { detector });
    expect(turns).toHaveLength(1);
    const [turn] = turns;
    expect(Math.abs(turn!.startMs - u.onsetMs)).toBeLessThan(150);
    // The end of speech within two windows: counted from where the energy fell, not from where
    // Silero's probability did (about 220 ms later).
    expect(Math.abs(turn!.endMs - (u.onsetMs + u.speechMs))).toBeLessThan(64);
    expect(turn!.decidedMs - turn!.endMs).toBeGreaterThanOrEqual(600);
    expect(turn!.decidedMs - turn!.endMs).toBeLessThan(600 + 64);
  });

  it('keeps one turn across a pause shorter than endOfTurnMs, and none without speech', async () => {
    const a = await noisyUtterance('Yes.', VOICES[0]!, 8000, 30, 22);
    const b = await noisyUtterance('I would like the second option please.', VOICES[0]!, 8000, 30, 23);
    // "Yes." then about 0.5 s of line, then the sentence: each clip has 1 s of noise at both ends.
    const joined = new Int16Array(a.samples.length - 12_000 + b.samples.length);
    joined.set(a.samples.subarray(0, a.samples.length - 6000));
    joined.set(b.samples.subarray(6000), a.samples.length - 6000);
    const turns: SpeechTurn[] = [];
    const detector = fresh({ sampleRate: 8000, endOfTurnMs: 900, onTurnEnd: (t) => turns.push(t) });
    await detect(joined, 8000, 160, { detector });
    expect(turns).toHaveLength(1);
    expect(turns[0]!.endMs - turns[0]!.startMs).toBeGreaterThan(b.speechMs);
    const quiet: SpeechTurn[] = [];
    const idle = fresh({ sampleRate: 8000, onTurnEnd: (t) => quiet.push(t) });
    const random = seeded(5);
    for (let s = 0; s < 20; s++)
      await detect(nonSpeechSecond(s, 8000, random), 8000, 160, { detector: idle, startMs: s * 1000 });
    expect(quiet).toEqual([]);
  });
});
