/**
 * Flite as an engine, in this thread, through the real WebAssembly build: how it is loaded (the one
 * patched function), how its audio streams, how it stops, and how its words are timed.
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { beforeAll, describe, expect, it } from 'vitest';
import { OUTPUT_SAMPLE_RATE, type WordTiming } from '../../../src/service/engine/engine.js';
import { FliteEngine } from '../../../src/service/engine/flite/engine.js';
import { FLITE_VOICES } from '../../../src/service/engine/flite/voices.js';
import { FLITE_PACKAGE, patchAudioDevice } from '../../../src/service/engine/flite/wasm.js';
import type { FliteVoiceParams } from '../../../src/service/engine/voice-params.js';

const VOICE: FliteVoiceParams = { engine: 'flite', voice: 'rms', f0Hz: 98, f0RangeHz: 24, rate: 1 };
const SENTENCE = 'The quick brown fox jumps over the lazy dog near the riverbank.';

let engine: FliteEngine;
beforeAll(async () => {
  engine = await FliteEngine.load();
});

interface Spoken {
  chunks: Int16Array[];
  samples: Int16Array;
  words: WordTiming[];
  finished: boolean;
}

function speak(text: string, voice = VOICE, timings = false, stopAfter = Infinity): Spoken {
  const chunks: Int16Array[] = [];
  const words: WordTiming[] = [];
  const finished = engine.synthesize(text, voice, timings, {
    audio: (samples) => chunks.push(samples) < stopAfter,
    words: (w) => void words.push(...w),
  });
  engine.prepare();
  const samples = new Int16Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    samples.set(c, at);
    at += c.length;
  }
  return { chunks, samples, words, finished };
}

const ms = (samples: number): number => (samples * 1000) / OUTPUT_SAMPLE_RATE;
const firstLoud = (samples: Int16Array): number => samples.findIndex((v) => Math.abs(v) > 1000);

describe('the Flite engine', () => {
  it("describes itself: Flite's compiled-in voices, English, a non-copyleft licence", () => {
    const { descriptor } = engine;
    expect(descriptor.id).toBe('flite');
    expect(descriptor.licence).toMatchObject({ copyleft: false, package: `${FLITE_PACKAGE} 0.1.1` });
    expect(descriptor.voices.map((v) => v.id).sort()).toEqual(['awb', 'kal', 'kal16', 'rms', 'slt']);
    expect(descriptor.languages).toContain('en');
  });

  it('refuses a build whose audio device is not the one it patches (here: one already patched)', async () => {
    const path = createRequire(import.meta.url).resolve(FLITE_PACKAGE);
    const patched = patchAudioDevice(await readFile(path));
    expect(() => patchAudioDevice(patched)).toThrow(/not the null audio device/);
  });

  it('streams: the first audio comes while the rest is still being made, in chunks of about 100 ms', () => {
    const { chunks, samples, finished } = speak(SENTENCE);
    expect(finished).toBe(true);
    expect(ms(samples.length)).toBeGreaterThan(2500);
    expect(chunks.length).toBeGreaterThan(20);
    // After the first (sent as soon as it exists), every chunk but the last is ~100 ms.
    for (const c of chunks.slice(1, -1)) expect(ms(c.length)).toBeGreaterThanOrEqual(99);
    for (const c of chunks.slice(1, -1)) expect(ms(c.length)).toBeLessThan(130);
  });

  it('with timings, sends only its first ~300 ms before the words: a client reading in order gets them in time', () => {
    const order: Array<{ kind: 'audio'; ms: number } | { kind: 'words'; count: number }> = [];
    engine.synthesize(SENTENCE, VOICE, true, {
      audio: (samples) => order.push({ kind: 'audio', ms: ms(samples.length) }) > 0,
      words: (w) => void order.push({ kind: 'words', count: w.length }),
    });
    engine.prepare();
    const wordsAt = order.findIndex((e) => e.kind === 'words');
    expect(wordsAt).toBeGreaterThan(0);
    const before = order.slice(0, wordsAt).reduce((n, e) => n + (e.kind === 'audio' ? e.ms : 0), 0);
    const after = order.slice(wordsAt).reduce((n, e) => n + (e.kind === 'audio' ? e.ms : 0), 0);
    expect(before).toBeGreaterThan(0);
    expect(before).toBeLessThan(450);
    expect(after).toBeGreaterThan(2000);
    // The rest goes out in the usual chunks, not as one.
    for (const e of order.slice(wordsAt + 1, -1)) if (e.kind === 'audio') expect(e.ms).toBeLessThan(130);
  });

  it("cuts Flite's leading pause: the first word is heard within a few tens of ms of the first sample", () => {
    for (const voice of FLITE_VOICES.filter((v) => v.id !== 'kal')) {
      const { samples } = speak(SENTENCE, { ...VOICE, voice: voice.id, f0Hz: voice.f0Hz });
      expect(ms(firstLoud(samples)), voice.id).toBeLessThan(80);
      // Yet the onset is whole: the first samples are quiet, not cut into the middle of a sound.
      expect(Math.abs(samples[0]!)).toBeLessThan(200);
    }
  });

  it('stops at once when the output says the job was cancelled, and speaks on afterwards', () => {
    const before = speak(SENTENCE).samples;
    const { chunks, finished } = speak(`${SENTENCE} ${SENTENCE}`, VOICE, true, 2);
    expect(finished).toBe(false);
    expect(chunks).toHaveLength(2);
    // The instance stopped mid-run is replaced: the next piece is as it was.
    expect(speak(SENTENCE).samples).toEqual(before);
  });

  it('says the same text the same way every time: each run starts from the instance as it was made', () => {
    const first = speak(SENTENCE, VOICE, true);
    speak('Something else entirely, in another voice.', { ...VOICE, voice: 'slt', f0Hz: 172 }, true);
    const again = speak(SENTENCE, VOICE, true);
    expect(again.samples).toEqual(first.samples);
    expect(again.words).toEqual(first.words);
  });

  it('speaks at its F0 target and pace: higher target, higher voice; higher rate, shorter audio', () => {
    const slt = (f0Hz: number, rate: number): Int16Array =>
      speak(SENTENCE, { engine: 'flite', voice: 'slt', f0Hz, f0RangeHz: 27, rate }).samples;
    expect(slt(172, 1.5).length).toBeLessThan(slt(172, 1).length * 0.75);
  });

  it('reads typographic punctuation as its ASCII look-alike, and says nothing for a piece with nothing to say', () => {
    const curly = speak('Don’t say “maybe”… say yes.').samples;
    const plain = speak('Don\'t say "maybe"... say yes.').samples;
    expect(curly).toEqual(plain);
    const silent = speak('😀 🎉');
    expect(silent).toMatchObject({ finished: true, chunks: [] });
  });
});

describe("the Flite engine's word timings", () => {
  const TEXT = 'Hello there; we wait here, and 23 cats & dogs follow “quietly”.';

  it('times every token with a letter or digit, in order, within the audio, on its own characters', () => {
    const { samples, words } = speak(TEXT, VOICE, true);
    const chars = Array.from(TEXT);
    expect(words.map((w) => chars.slice(w.start, w.end).join(''))).toEqual([
      'Hello',
      'there',
      'we',
      'wait',
      'here',
      'and',
      '23',
      'cats',
      'dogs',
      'follow',
      'quietly',
    ]);
    let previousEnd = 0;
    for (const w of words) {
      expect(w.startMs).toBeGreaterThanOrEqual(previousEnd);
      expect(w.endMs).toBeGreaterThan(w.startMs);
      previousEnd = w.endMs;
    }
    expect(previousEnd).toBeLessThanOrEqual(ms(samples.length));
    // "23" is read as two words ("twenty three"): the longest of the short tokens.
    const duration = (token: string): number => {
      const w = words.find((x) => chars.slice(x.start, x.end).join('') === token)!;
      return w.endMs - w.startMs;
    };
    expect(duration('23')).toBeGreaterThan(duration('cats'));
    // "&" has no word of its own: Flite's "ampersand" falls in the gap between "cats" and "dogs".
    const cats = words[7]!;
    const dogs = words[8]!;
    expect(dogs.startMs - cats.endMs).toBeGreaterThan(300);
  });

  it('puts a word where its sound is: the pause after "there;" is between the words, not in them', () => {
    const { samples, words } = speak(TEXT, VOICE, true);
    // The quietest 50 ms stretch between "there" and "we" is inside the gap the timings leave.
    const there = words[1]!;
    const we = words[2]!;
    expect(we.startMs - there.endMs).toBeGreaterThan(50);
    const level = (fromMs: number, toMs: number): number => {
      let peak = 0;
      for (
        let i = Math.round((fromMs * OUTPUT_SAMPLE_RATE) / 1000);
        i < (toMs * OUTPUT_SAMPLE_RATE) / 1000;
        i++
      )
        peak = Math.max(peak, Math.abs(samples[i]!));
      return peak;
    };
    const middle = (there.endMs + we.startMs) / 2;
    expect(level(middle - 25, middle + 25)).toBeLessThan(level(there.startMs, there.endMs) / 10);
  });
});
