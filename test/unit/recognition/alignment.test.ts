/**
 * Forced alignment (Recognizer.align): the words of a text the local speech service spoke are timed
 * from its audio alone, and the text heard up to any cut is within one word of what the service's own
 * character timings (`/with-timestamps`) say; a word the dictionary lacks keeps its place in the text.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resampleWhole } from '../../../src/audio/resampler.js';
import { Recognizer, type AlignedWord } from '../../../src/recognition/recognizer.js';
import { BOT_SENTENCES, serviceSpeech, type TimedSpeech } from '../../../testkit/menu-audio.js';
import { seeded } from '../../../testkit/random.js';
import { KEYS, startTestApp, type TestApp } from '../../helpers/app.js';

let t: TestApp;
let recognizer: Recognizer;
beforeAll(async () => {
  [t, recognizer] = await Promise.all([startTestApp(), Recognizer.start()]);
});
afterAll(async () => {
  await Promise.all([t.close(), recognizer.close()]);
});

/** How many of `words` the service's timings say were whole by `cutMs` (all their characters' sound over). */
function heardByService(speech: TimedSpeech, words: readonly AlignedWord[], cutMs: number): number {
  let chars = 0;
  while (chars < speech.charEndMs.length && speech.charEndMs[chars]! <= cutMs) chars++;
  return words.filter((w) => w.charEnd <= chars).length;
}

describe('forced alignment against the local service’s character timings', () => {
  for (const voice of ['voxbridge-default', 'voxbridge-high', 'voxbridge-deep'])
    it(`cuts within one word of them at every cut, ${voice}`, async () => {
      const text = BOT_SENTENCES[0]!;
      const speech = await serviceSpeech(t.api, KEYS.main, voice, text);
      const words = await recognizer.align(text, speech.samples, speech.sampleRate);
      expect(words.map((w) => w.word)).toEqual(text.match(/[\p{L}\p{N}']+/gu));
      for (const w of words) {
        expect(text.slice(w.charStart, w.charEnd)).toBe(w.word);
        expect(w.endMs).toBeGreaterThan(w.startMs);
      }
      for (let i = 1; i < words.length; i++)
        expect(words[i]!.startMs).toBeGreaterThanOrEqual(words[i - 1]!.endMs);
      const durationMs = (speech.samples.length / speech.sampleRate) * 1000;
      expect(words.at(-1)!.endMs).toBeLessThanOrEqual(durationMs + 10);
      const random = seeded(3);
      for (let cut = 0; cut < 40; cut++) {
        const cutMs = random() * durationMs;
        const aligned = words.filter((w) => w.endMs <= cutMs).length;
        expect(Math.abs(aligned - heardByService(speech, words, cutMs))).toBeLessThanOrEqual(1);
      }
    });

  it('keeps a word the dictionary lacks in its place, at 8 kHz too', async () => {
    const text = 'Your table at Quaglino’s is booked for 8 tonight.';
    const speech = await serviceSpeech(t.api, KEYS.main, 'voxbridge-default', text);
    const narrow = resampleWhole(speech.samples, speech.sampleRate, 8000);
    const words = await recognizer.align(text, narrow, 8000);
    expect(words.map((w) => w.word)).toEqual([
      'Your',
      'table',
      'at',
      'Quaglino’s',
      'is',
      'booked',
      'for',
      '8',
      'tonight',
    ]);
    const booked = words[5]!;
    // "booked" ends where the service says its last character does, within 100 ms.
    const end = speech.charEndMs[text.indexOf('booked') + 'booked'.length - 1]!;
    expect(Math.abs(booked.endMs - end)).toBeLessThan(100);
  });

  it('aligns no words of a text without any, and fails a text its audio cannot hold', async () => {
    expect(await recognizer.align(' — … ', new Int16Array(8000), 8000)).toEqual([]);
    const tooShort = new Int16Array(800);
    await expect(recognizer.align(BOT_SENTENCES[1]!, tooShort, 8000)).rejects.toMatchObject({
      code: 'failed',
    });
  });
});
