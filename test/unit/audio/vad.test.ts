/**
 * The barge-in detector on real speech (eSpeak, five voices) in line noise, and on ten minutes of a
 * line where nobody talks (noise, hum, DTMF, clicks, silence): the issue's targets, plus the stricter
 * rule while the bot is audible, chunking and reset.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { SileroModel, SpeechOnsetDetector, type VadSampleRate } from '../../../src/audio/vad/index.js';
import { seeded } from '../../helpers/random.js';
import {
  nonSpeechSecond,
  noisyUtterance,
  UTTERANCES,
  VOICES,
  type TestUtterance,
} from '../../helpers/vad-audio.js';

let model: SileroModel;
beforeAll(async () => {
  model = await SileroModel.load();
});

/** Runs `samples` through a fresh detector in chunks of `chunk` samples; every onset found. */
async function detect(
  samples: Int16Array,
  sampleRate: VadSampleRate,
  chunk: number,
  botAudible = false,
  detector = new SpeechOnsetDetector(model, { sampleRate }),
): Promise<Array<{ onsetMs: number; detectedMs: number }>> {
  const found = [];
  for (let o = 0; o < samples.length; o += chunk) {
    const onset = await detector.push(samples.subarray(o, o + chunk), {
      timestampMs: (o / sampleRate) * 1000,
      botAudible,
    });
    if (onset) found.push(onset);
  }
  return found;
}

for (const sampleRate of [8000, 16_000] as const) {
  describe(`SpeechOnsetDetector at ${sampleRate} Hz`, () => {
    const utterances: TestUtterance[] = [];
    beforeAll(async () => {
      let seed = 1;
      for (const snr of [20, 10])
        for (const [i, text] of UTTERANCES.entries())
          utterances.push(
            await noisyUtterance(text, VOICES[(i + snr) % VOICES.length]!, sampleRate, snr, seed++),
          );
    });

    it('finds ≥ 90 % of speech onsets within 300 ms, at 20 and 10 dB SNR', async () => {
      let inTime = 0;
      for (const u of utterances) {
        const found = await detect(u.samples, sampleRate, sampleRate / 50);
        expect(found.length).toBeLessThanOrEqual(1 + (u.text.includes(',') ? 1 : 0));
        const first = found[0];
        if (first && first.detectedMs - u.onsetMs <= 300) inTime++;
        // The onset it reports is near the true one (not the moment it was sure).
        if (first) expect(Math.abs(first.onsetMs - u.onsetMs)).toBeLessThan(150);
      }
      expect(inTime / utterances.length).toBeGreaterThanOrEqual(0.9);
    });

    it('gives the same answers whatever the chunk size', async () => {
      for (const u of utterances.slice(0, 4)) {
        const by20ms = await detect(u.samples, sampleRate, sampleRate / 50);
        expect(await detect(u.samples, sampleRate, sampleRate / 10)).toEqual(by20ms);
        expect(await detect(u.samples, sampleRate, 173)).toEqual(by20ms);
      }
    });
  });
}

describe('SpeechOnsetDetector on a line where nobody talks', () => {
  it('fires at most once in ten minutes of line noise, DTMF, hum, clicks, loud noise and silence (8 kHz)', async () => {
    const detector = new SpeechOnsetDetector(model, { sampleRate: 8000 });
    const random = seeded(42);
    let falseTriggers = 0;
    for (let second = 0; second < 600; second++) {
      const x = nonSpeechSecond(second, 8000, random);
      for (let o = 0; o < x.length; o += 160) {
        const onset = await detector.push(x.subarray(o, o + 160), {
          timestampMs: second * 1000 + o / 8,
          botAudible: false,
        });
        if (onset) falseTriggers++;
      }
    }
    expect(falseTriggers).toBeLessThanOrEqual(1);
  }, 120_000);

  it('fires at most once in five minutes at 16 kHz', async () => {
    const detector = new SpeechOnsetDetector(model, { sampleRate: 16_000 });
    const random = seeded(7);
    let falseTriggers = 0;
    for (let second = 0; second < 300; second++) {
      const x = nonSpeechSecond(second, 16_000, random);
      for (let o = 0; o < x.length; o += 320) {
        if (
          await detector.push(x.subarray(o, o + 320), {
            timestampMs: second * 1000 + o / 16,
            botAudible: false,
          })
        )
          falseTriggers++;
      }
    }
    expect(falseTriggers).toBeLessThanOrEqual(1);
  }, 120_000);
});

describe('SpeechOnsetDetector rules', () => {
  it('needs longer speech while the bot is audible: a short burst barges in only when it is not', async () => {
    const u = await noisyUtterance('Hello there, this goes on.', VOICES[0]!, 8000, 30, 3);
    // Keep 280 ms of speech from the onset: above the 160 ms rule, under the 400 ms one while audible.
    const end = Math.round(((u.onsetMs + 280) / 1000) * 8000);
    const burst = new Int16Array(u.samples.length);
    burst.set(u.samples.subarray(0, end));
    expect(await detect(burst, 8000, 160, false)).toHaveLength(1);
    expect(await detect(burst, 8000, 160, true)).toHaveLength(0);
    // The whole sentence is long enough either way.
    expect(await detect(u.samples, 8000, 160, true)).not.toHaveLength(0);
  });

  it('reports a run of speech once, re-arms after a silence, and reset() starts over', async () => {
    const a = await noisyUtterance('Can I ask you something?', VOICES[1]!, 8000, 20, 5);
    const twice = new Int16Array(a.samples.length * 2);
    twice.set(a.samples);
    twice.set(a.samples, a.samples.length);
    const detector = new SpeechOnsetDetector(model, { sampleRate: 8000 });
    const found = await detect(twice, 8000, 160, false, detector);
    expect(found).toHaveLength(2);
    expect(found[1]!.onsetMs - found[0]!.onsetMs).toBeCloseTo((a.samples.length / 8000) * 1000, -2);
    detector.reset();
    expect(await detect(a.samples, 8000, 160, false, detector)).toHaveLength(1);
  });
});
