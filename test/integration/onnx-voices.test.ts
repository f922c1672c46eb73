/**
 * Neural voices the operator brings, through the real sherpa-onnx runtime: a VITS model of the right
 * shape with random weights (testkit/onnx, built here; its decoder sings each speaker's own tone, so a
 * listener can tell the voices apart) loads and makes audio of exactly the length its graph gives, at
 * 24 kHz; the local service lists each speaker in GET /v2/voices and speaks it, with timings; a phone
 * call hears speech in that voice. A model with a fault is skipped with a warning and the rest works.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { concatInt16 } from '../../src/audio/pcm.js';
import { decodeMulaw } from '../../src/audio/g711.js';
import { OUTPUT_SAMPLE_RATE, type WordTiming } from '../../src/service/engine/engine.js';
import { inspectOnnxModels } from '../../src/service/engine/onnx/model-dir.js';
import { OnnxEngine } from '../../src/service/engine/onnx/engine.js';
import { writeVitsTestModel, type VitsTestModel } from '../../testkit/onnx/vits.js';
import { KEYS, startTestApp, type TestApp } from '../helpers/app.js';
import { FakeTwilio } from '../helpers/gateways/twilio.js';

let root: string;
let model: VitsTestModel;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'voxbridge-onnx-'));
  model = await writeVitsTestModel(join(root, 'vits-test-duo'), { speakers: 2 });
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

/** The dominant frequency of a tone, from its zero crossings over its sound (the test voices are sines). */
function toneHz(samples: Int16Array, sampleRate: number): number {
  const loud = (v: number): boolean => Math.abs(v) > 1000;
  const first = samples.findIndex(loud);
  const last = samples.findLastIndex(loud);
  if (first < 0) return 0;
  const sound = samples.subarray(first, last + 1);
  let crossings = 0;
  for (let i = 1; i < sound.length; i++) if (sound[i - 1]! < 0 !== sound[i]! < 0) crossings++;
  return (crossings / 2) * (sampleRate / sound.length);
}

/**
 * Samples the model makes for the sentences of each piece (the engine pool's jobs: the service sends a
 * request's first sentence as a piece of its own), at 24 kHz: each piece resampled as one stream.
 */
function expectedSamples(pieces: ReadonlyArray<readonly string[]>, rate: number): number {
  const frames = Math.ceil(model.framesPerToken / rate);
  return pieces.reduce((total, sentences) => {
    const atModelRate = sentences.reduce((n, s) => n + model.tokens(s) * frames * model.hopSamples, 0);
    return total + Math.round((atModelRate * OUTPUT_SAMPLE_RATE) / model.sampleRate);
  }, 0);
}

describe('the ONNX engine on the real runtime', () => {
  let engine: OnnxEngine;
  beforeAll(async () => {
    const { models, skipped } = await inspectOnnxModels([{ path: model.dir, name: 'duo' }]);
    expect(skipped).toEqual([]);
    engine = await OnnxEngine.load(models);
  });

  it('describes its licence and the model’s speakers', () => {
    expect(engine.descriptor).toMatchObject({
      id: 'onnx',
      licence: { spdx: 'Apache-2.0', copyleft: false, package: 'sherpa-onnx-node 1.13.8' },
      languages: ['en', 'en-us'],
      skipped: [],
    });
    expect(engine.descriptor.voices.map((v) => [v.name, v.sampleRate, v.params])).toEqual([
      ['Speaker 0 (duo)', 22_050, { engine: 'onnx', model: 'duo', speaker: 0, rate: 1 }],
      ['Speaker 1 (duo)', 22_050, { engine: 'onnx', model: 'duo', speaker: 1, rate: 1 }],
    ]);
  });

  it('makes each sentence as it comes: the graph’s length, at 24 kHz, in the speaker’s voice, slower at a lower rate', () => {
    const text = 'Hello, world. How are you today?';
    for (const [speaker, rate] of [
      [0, 1],
      [1, 1],
      [1, 0.5],
    ] as const) {
      const chunks: Int16Array[] = [];
      const done = engine.synthesize(text, { engine: 'onnx', model: 'duo', speaker, rate }, false, {
        audio: (s) => (chunks.push(s), true),
        words: () => undefined,
      });
      expect(done).toBe(true);
      const audio = concatInt16(chunks);
      expect(audio.length).toBe(expectedSamples([['Hello, world.', 'How are you today?']], rate));
      // One chunk a sentence (the resampler's tail last): the first does not wait for the second.
      expect(chunks.filter((c) => c.length > 0).length).toBeGreaterThanOrEqual(2);
      expect(chunks[0]!.length).toBeLessThan(audio.length * 0.6);
      expect(toneHz(audio, OUTPUT_SAMPLE_RATE)).toBeCloseTo(model.toneHz[speaker]!, -1);
    }
  });

  it('estimates every word’s time, in order, within the audio, ahead of the audio that ends it', () => {
    const text = 'Good morning. Thank you for calling, please wait.';
    const events: Array<{ words?: readonly WordTiming[]; samples?: number }> = [];
    engine.synthesize(text, { engine: 'onnx', model: 'duo', speaker: 0, rate: 1 }, true, {
      audio: (s) => {
        if (s.length > 0) events.push({ samples: s.length });
        return true;
      },
      words: (w) => events.push({ words: w }),
    });
    const words = events.flatMap((e) => e.words ?? []);
    expect(words.map((w) => [...text].slice(w.start, w.end).join(''))).toEqual(
      text.match(/[a-z]+/gi)!.map((w) => w),
    );
    for (let i = 1; i < words.length; i++)
      expect(words[i]!.startMs).toBeGreaterThanOrEqual(words[i - 1]!.endMs - 1e-6);
    const totalMs = (events.reduce((n, e) => n + (e.samples ?? 0), 0) * 1000) / OUTPUT_SAMPLE_RATE;
    expect(words.at(-1)!.endMs).toBeLessThanOrEqual(totalMs + 1);
    // The first sentence's words come before any audio; the second's before the audio after them.
    expect(events[0]!.words?.length).toBe(2);
  });

  it('skips text it cannot say rather than hand sherpa-onnx nothing (which would crash the process)', () => {
    const chunks: Int16Array[] = [];
    const voice = { engine: 'onnx', model: 'duo', speaker: 0, rate: 1 } as const;
    const out = { audio: (s: Int16Array) => (chunks.push(s), true), words: () => undefined };
    expect(engine.synthesize('... 42 — zyxxy!', voice, false, out)).toBe(true);
    expect(concatInt16(chunks).length).toBe(0);
    expect(engine.synthesize('Qwfp, hello zyxxy', voice, false, out)).toBe(true);
    expect(concatInt16(chunks).length).toBeGreaterThan(0);
  });

  it('stops at the next sentence once the job is cancelled', () => {
    let sent = 0;
    const done = engine.synthesize(
      'One. Two. Three. Four. Five.',
      { engine: 'onnx', model: 'duo', speaker: 0, rate: 1 },
      false,
      { audio: (s) => (s.length > 0 ? ++sent < 2 : sent < 2), words: () => undefined },
    );
    expect(done).toBe(false);
    expect(sent).toBe(2);
  });
});

describe('the local service with an ONNX model configured', () => {
  let t: TestApp;
  let broken: string;
  beforeAll(async () => {
    broken = (await writeVitsTestModel(join(root, 'broken'), { metadata: { comment: '' } })).dir;
    t = await startTestApp({
      calls: { defaultFlow: null },
      service: { engines: { onnx: { models: [{ path: model.dir, name: 'Duo' }, broken] } } },
    });
  });
  afterAll(async () => {
    await t.close();
  });

  async function speak(voice: string, path = '', body: Record<string, unknown> = {}): Promise<Response> {
    return fetch(`${t.api}/v1/text-to-speech/${voice}${path}?output_format=pcm_24000`, {
      method: 'POST',
      headers: { 'xi-api-key': KEYS.main, 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'Hello, world. How are you today?', ...body }),
    });
  }

  it('lists each speaker as a voice every key sees, with a stable id, and skips the broken model', async () => {
    const res = await fetch(`${t.api}/v2/voices?page_size=100&search=duo&sort=name`, {
      headers: { 'xi-api-key': KEYS.other },
    });
    const list = (await res.json()) as { voices: Array<Record<string, unknown>> };
    expect(list.voices.map((v) => [v['voice_id'], v['name'], v['category']])).toEqual([
      ['onnx-duo-0', 'Speaker 0 (Duo)', 'premade'],
      ['onnx-duo-1', 'Speaker 1 (Duo)', 'premade'],
    ]);
    expect(list.voices[0]!['labels']).toMatchObject({ language: 'en', engine: 'onnx' });
    expect(t.app.service!.voices.visibleTo('x').filter((v) => v.voice_id.startsWith('onnx-'))).toHaveLength(
      2,
    );
    expect(t.app.service!.engines.map((e) => e.id)).toContain('onnx');
  });

  it('speaks each voice: the audio the model makes, and speed moves its pace', async () => {
    for (const speaker of [0, 1]) {
      const res = await speak(`onnx-duo-${speaker}`);
      expect(res.status).toBe(200);
      const audio = new Int16Array(await res.arrayBuffer());
      expect(audio.length).toBe(expectedSamples([['Hello, world.'], ['How are you today?']], 1));
      expect(toneHz(audio, OUTPUT_SAMPLE_RATE)).toBeCloseTo(model.toneHz[speaker]!, -1);
    }
    const slow = await speak('onnx-duo-0', '', { voice_settings: { speed: 0.7 } });
    expect(new Int16Array(await slow.arrayBuffer()).length).toBe(
      expectedSamples([['Hello, world.'], ['How are you today?']], 0.7),
    );
  });

  it('streams with timestamps: every character timed, in order, within the audio', async () => {
    interface Line {
      alignment: { characters: string[]; character_end_times_seconds: number[] };
    }
    const res = await speak('onnx-duo-1', '/stream/with-timestamps');
    expect(res.status).toBe(200);
    const lines = (await res.text())
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Line);
    const chars = lines.flatMap((l) => l.alignment.characters).join('');
    expect(chars).toBe('Hello, world. How are you today?');
    // The first sentence's characters come with the first audio, not at the end.
    expect(lines[0]!.alignment.characters.join('')).toContain('Hello');
    const ends = lines.flatMap((l) => l.alignment.character_end_times_seconds);
    for (let i = 1; i < ends.length; i++) expect(ends[i]).toBeGreaterThanOrEqual(ends[i - 1]!);
  });

  it('a language the model lacks goes to eSpeak-NG; the model’s own stays with it', async () => {
    const english = await speak('onnx-duo-0', '', { language_code: 'en' });
    expect(toneHz(new Int16Array(await english.arrayBuffer()), OUTPUT_SAMPLE_RATE)).toBeCloseTo(300, -1);
    const german = await speak('onnx-duo-0', '', { text: 'Guten Morgen.', language_code: 'de' });
    expect(german.status).toBe(200);
    const tone = toneHz(new Int16Array(await german.arrayBuffer()), OUTPUT_SAMPLE_RATE);
    expect(Math.abs(tone - 300)).toBeGreaterThan(50);
  });

  it('a phone call hears speech in that voice', async () => {
    const g = new FakeTwilio(`${t.url.replace('http:', 'ws:')}/media/twilio`);
    await g.start();
    await g.until(() => t.app.calls.get(g.callSid)?.state.status === 'active', 5000, 'the call to start');
    const from = g.received.length;
    const res = await fetch(`${t.url}/calls/${g.callSid}/say`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'Welcome. Please press one.', voice_id: 'onnx-duo-1' }),
    });
    const said = (await res.json()) as Record<string, unknown>;
    expect(said).toMatchObject({ status: 'played', underruns: 0 });
    const bytes = g.media(from).flatMap((m) => [...(m.bytes ?? [])]);
    const heard = decodeMulaw(Uint8Array.from(bytes));
    // The whole utterance, at 8 kHz, within a frame or two of what the model made.
    const expectedMs =
      (expectedSamples([['Welcome.'], ['Please press one.']], 1) * 1000) / OUTPUT_SAMPLE_RATE;
    expect((heard.length / 8000) * 1000).toBeGreaterThan(expectedMs - 40);
    expect((heard.length / 8000) * 1000).toBeLessThan(expectedMs + 100);
    expect(toneHz(heard, 8000)).toBeCloseTo(model.toneHz[1]!, -1);
    await g.close();
  });
});
