/**
 * The recogniser (src/recognition/recognizer.ts) on a worker thread, on deterministic audio: eSpeak
 * answers to an eight-choice menu with carrier words, through μ-law at 8 kHz, on a clean line and in
 * white line noise at 20 and 10 dB SNR; sentences outside the menu, silence and noise, which must be
 * no-matches; spoken digits and yes/no; and its bounds (audio, queue, abort).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resampleWhole } from '../../../src/audio/resampler.js';
import { menuGrammar } from '../../../src/recognition/grammar.js';
import {
  RECOGNITION_LIMITS,
  RecognitionError,
  Recognizer,
  type Recognition,
} from '../../../src/recognition/recognizer.js';
import { ESPEAK_RATE, espeakAnswer, MENU, OUT_OF_GRAMMAR } from '../../../testkit/menu-audio.js';
import { LINE_RATE, onPhoneLine } from '../../../testkit/phone-line.js';
import { seeded } from '../../../testkit/random.js';
import type { TestVoice } from '../../../testkit/vad-audio.js';

const VOICE: TestVoice = ['en-us', 50];
const menu = menuGrammar(MENU);

/** One answer per branch, each with carrier words. */
const BRANCHES: ReadonlyArray<readonly [key: string, text: string]> = [
  ['billing', "I'd like to pay my bill, please."],
  ['support', 'I need tech support.'],
  ['sales', 'I want to buy something.'],
  ['agent', 'I want to speak to a representative.'],
  ['balance', 'Can I check my account balance?'],
  ['cancel', 'Cancel my order, please.'],
  ['hours', 'Um, opening hours.'],
  ['repeat', 'Say that again, please.'],
];

let recognizer: Recognizer;
beforeAll(async () => {
  recognizer = await Recognizer.start({ workers: 1 });
});
afterAll(async () => {
  await recognizer.close();
});

async function hear(text: string, snrDb?: number, voice: TestVoice = VOICE): Promise<Recognition> {
  const line = onPhoneLine(await espeakAnswer(text, voice), ESPEAK_RATE, { snrDb, seed: text.length });
  return recognizer.recognize(line, LINE_RATE, menu);
}

describe('a spoken menu', () => {
  for (const snr of [undefined, 20, 10])
    it(`takes every branch said with carriers, μ-law 8 kHz, ${snr === undefined ? 'no noise' : `${snr} dB SNR`}`, async () => {
      // One after another, as callers' turns come (all at once, the last would wait behind the others).
      const heard: Recognition[] = [];
      for (const [, text] of BRANCHES) heard.push(await hear(text, snr));
      expect(heard.map((r) => r.key)).toEqual(BRANCHES.map(([key]) => key));
      for (const r of heard) {
        expect(r.confidence).toBeGreaterThanOrEqual(0.5);
        expect(r.confidence).toBeLessThanOrEqual(1);
        expect(r.text).not.toBe('');
        expect(menu.interpret(r.text).key).toBe(r.key);
        expect(r.words.map((w) => w.word).join(' ')).toBe(r.text);
        for (const w of r.words) expect(w.endMs).toBeGreaterThan(w.startMs);
        expect(r.cpuMs).toBeGreaterThan(0);
      }
      // The words fall where the speech is: after the line's 300 ms of lead.
      expect(heard[0]!.words[0]!.startMs).toBeGreaterThanOrEqual(250);
    });

  it('says no branch for speech outside the menu, but for a near miss or three', async () => {
    const heard: Recognition[] = [];
    for (const text of OUT_OF_GRAMMAR) heard.push(await hear(text, 20));
    const taken = heard.filter((r) => r.key !== undefined);
    // Known near misses: "I need a doctor" fits "I need an operator" well, and this voice's "The weather
    // is nice today" and "The kids are at school" fit "(uh) (get) when are you open (thanks)"
    // (bench/menus.ts: 17 % of such sentences at 20 dB take a branch, as before the confidence was
    // refitted; this voice's three here were two then).
    expect(taken.length).toBeLessThanOrEqual(3);
    for (const r of heard.filter((h) => h.key === undefined)) {
      expect(r).toMatchObject({ text: '', digits: undefined, words: [] });
      expect(r.confidence).toBeLessThan(0.5);
    }
    expect(heard[OUT_OF_GRAMMAR.indexOf('My dog ate my homework.')]!.key).toBeUndefined();
  });

  it('hears nothing in silence or in line noise alone', async () => {
    const random = seeded(5);
    for (const rms of [0, 100, 1500]) {
      const noise = new Int16Array(2 * LINE_RATE);
      for (let i = 0; i < noise.length; i++) noise[i] = Math.round((random() * 2 - 1) * rms * Math.sqrt(3));
      const r = await recognizer.recognize(
        onPhoneLine(noise, LINE_RATE, { leadMs: 0, tailMs: 0 }),
        LINE_RATE,
        menu,
      );
      expect(r).toMatchObject({ text: '', key: undefined, digits: undefined, words: [] });
    }
    const empty = await recognizer.recognize(new Int16Array(0), LINE_RATE, menu);
    expect(empty).toMatchObject({ text: '', key: undefined, confidence: 0 });
  });

  it('hears spoken digits, and yes and no', async () => {
    const keys = menuGrammar([{ key: 'agent', phrases: ['an agent'] }], { maxDigits: 6 });
    const line = onPhoneLine(await espeakAnswer('four one five', VOICE), ESPEAK_RATE, { snrDb: 20 });
    expect(await recognizer.recognize(line, LINE_RATE, keys)).toMatchObject({
      digits: '415',
      key: undefined,
    });
    const yesNo = menuGrammar([
      { key: 'yes', phrases: ['$yes'] },
      { key: 'no', phrases: ['$no'] },
    ]);
    const said: Array<[string, string]> = [
      ['Yes, please.', 'yes'],
      ["Yeah, that's right.", 'yes'],
      ['No thanks.', 'no'],
      ['Nope.', 'no'],
    ];
    for (const [text, key] of said) {
      const r = await recognizer.recognize(
        onPhoneLine(await espeakAnswer(text, VOICE), ESPEAK_RATE, { snrDb: 20 }),
        LINE_RATE,
        yesNo,
      );
      expect(r.key).toBe(key);
    }
  });

  it('takes 16 kHz audio as well as 8 kHz', async () => {
    const speech = await espeakAnswer('Opening hours, please.', VOICE);
    const wide = resampleWhole(speech, ESPEAK_RATE, 16_000);
    const padded = new Int16Array(wide.length + 8000);
    padded.set(wide, 4800);
    expect((await recognizer.recognize(padded, 16_000, menu)).key).toBe('hours');
  });
});

describe('its grammars and results', () => {
  it('gives the same result for the same audio, whatever it decoded before', async () => {
    const line = onPhoneLine(await espeakAnswer('Talk to sales.', VOICE), ESPEAK_RATE, {
      snrDb: 20,
      seed: 9,
    });
    const first = await recognizer.recognize(line, LINE_RATE, menu);
    await hear('Um, opening hours.', 10);
    const again = await recognizer.recognize(line, LINE_RATE, menu);
    expect({ ...again, cpuMs: 0 }).toEqual({ ...first, cpuMs: 0 });
    expect(first.key).toBe('sales');
  });

  it('keeps compiled grammars within its cache, and a grammar it dropped still works', async () => {
    const line = onPhoneLine(await espeakAnswer('Sales.', VOICE), ESPEAK_RATE, { snrDb: 20 });
    const others = ['red', 'green', 'blue', 'black', 'white', 'brown', 'pink', 'gray'];
    const grammars = Array.from({ length: 40 }, (_, i) =>
      menuGrammar(
        [
          { key: 'sales', phrases: ['sales'] },
          { key: 'other', phrases: [`${others[i % 8]} ${others[(i >> 3) % 8]}`] },
        ],
        { carriers: false },
      ),
    );
    expect(new Set(grammars.map((g) => g.id)).size).toBe(40);
    for (const g of grammars) expect((await recognizer.recognize(line, LINE_RATE, g)).key).toBe('sales');
    // The first ones were evicted (32 kept) and are compiled again; the last ones come from the cache.
    expect((await recognizer.recognize(line, LINE_RATE, grammars[0]!)).key).toBe('sales');
    expect((await recognizer.recognize(line, LINE_RATE, grammars[39]!)).key).toBe('sales');
  });
});

describe('its bounds', () => {
  it('refuses audio it cannot take', async () => {
    const tooLong = new Int16Array(RECOGNITION_LIMITS.recognizeSeconds * LINE_RATE + 1);
    await expect(recognizer.recognize(tooLong, LINE_RATE, menu)).rejects.toMatchObject({ code: 'too_long' });
    await expect(recognizer.recognize(new Int16Array(10), 4000, menu)).rejects.toMatchObject({
      code: 'bad_input',
    });
    await expect(recognizer.recognize(new Int16Array(10), 8000.5, menu)).rejects.toBeInstanceOf(
      RecognitionError,
    );
  });

  it('refuses a job past its queue at once, and an abort takes a queued job out', async () => {
    const controller = new AbortController();
    const second = LINE_RATE;
    const jobs = Array.from({ length: RECOGNITION_LIMITS.queuedJobs + 3 }, () =>
      recognizer.recognize(new Int16Array(second), LINE_RATE, menu, { signal: controller.signal }).then(
        () => 'done',
        (error: unknown) => (error instanceof RecognitionError ? error.code : (error as Error).name),
      ),
    );
    controller.abort();
    const outcomes = await Promise.all(jobs);
    // One ran (or was running) when the rest were queued: 64 waited, the last two were refused.
    expect(outcomes.filter((o) => o === 'queue_full')).toHaveLength(2);
    expect(outcomes.filter((o) => o === 'AbortError').length).toBeGreaterThanOrEqual(
      RECOGNITION_LIMITS.queuedJobs,
    );
    // The thread is free again at once: nothing of the aborted jobs is left to run.
    const started = performance.now();
    expect((await hear('Cancel my order.')).key).toBe('cancel');
    expect(performance.now() - started).toBeLessThan(1000);
  });

  it('rejects with the signal’s reason when aborted before it starts', async () => {
    const reason = new Error('caller hung up');
    await expect(
      recognizer.recognize(new Int16Array(100), LINE_RATE, menu, { signal: AbortSignal.abort(reason) }),
    ).rejects.toBe(reason);
  });

  it('fails its jobs once closed', async () => {
    const other = await Recognizer.start();
    await other.close();
    await expect(other.recognize(new Int16Array(100), LINE_RATE, menu)).rejects.toMatchObject({
      code: 'closed',
    });
  });
});
