// Over 450 lines: one local service set up once for every endpoint and format.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUILT_IN_VOICE_ID, BUILT_IN_VOICE_IDS } from '../../src/service/voices/builtin.js';
import { KEYS, NO_PHONE_BARGE_IN, startTestApp, type TestApp } from '../helpers/app.js';
import { espeakSpeech, probeWithFfmpeg, wavFile } from '../../testkit/audio.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({
    ...NO_PHONE_BARGE_IN,
    service: {
      maxConcurrentPerKey: 3,
      voices: { maxFiles: 3, maxFileBytes: 2_000_000, maxTotalBytes: 4_000_000 },
    },
    // One call at most: voxbridge's own key may then hold max(3, 2 × maxCalls) requests.
    calls: { maxCalls: 1 },
  });
});
afterAll(async () => {
  await t.close();
});

const TEXT = 'The quick brown fox jumps over the lazy dog.';

function tts(
  body: unknown,
  opts: {
    voice?: string;
    stream?: boolean;
    format?: string;
    key?: string | null;
    header?: string;
    headers?: Record<string, string>;
  } = {},
): Promise<Response> {
  const path = `/v1/text-to-speech/${opts.voice ?? BUILT_IN_VOICE_ID}${opts.stream ? '/stream' : ''}`;
  const query = opts.format === undefined ? '' : `?output_format=${opts.format}`;
  const headers: Record<string, string> = { 'content-type': 'application/json', ...opts.headers };
  if (opts.key !== null) headers[opts.header ?? 'ServicePlatform-APIKey'] = opts.key ?? KEYS.main;
  return fetch(`${t.api}${path}${query}`, {
    method: 'POST',
    headers,
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

async function errorOf(
  res: Response,
): Promise<{ code: string; param?: string; message: string; request_id: string; status: string }> {
  expect(res.headers.get('content-type')).toBe('application/json');
  const body = (await res.json()) as {
    detail: { code: string; param?: string; message: string; request_id: string; status: string };
  };
  expect(body.detail.request_id).toBe(res.headers.get('request-id'));
  expect(body.detail.status).toBe(body.detail.code);
  return body.detail;
}

describe('health', () => {
  it('answers 200 when ready', async () => {
    const res = await fetch(`${t.url}/healthz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ok' });
  });
});

describe('authentication and permissions', () => {
  it('401 without a key, with a wrong key', async () => {
    const missing = await tts({ text: TEXT }, { key: null });
    expect(missing.status).toBe(401);
    expect((await errorOf(missing)).code).toBe('invalid_api_key');
    const wrong = await tts({ text: TEXT }, { key: 'nope' });
    expect(wrong.status).toBe(401);
    expect((await errorOf(wrong)).code).toBe('invalid_api_key');
  });

  it("accepts xi-api-key for the vendor's clients", async () => {
    const res = await tts({ text: 'Hi.' }, { header: 'xi-api-key', format: 'pcm_24000' });
    expect(res.status).toBe(200);
    await res.arrayBuffer();
  });

  it('ServicePlatform-APIKey wins when both headers are sent', async () => {
    const primaryGood = await tts(
      { text: 'Hi.' },
      { headers: { 'xi-api-key': 'wrong' }, format: 'pcm_24000' },
    );
    expect(primaryGood.status).toBe(200);
    await primaryGood.arrayBuffer();
    const primaryBad = await tts({ text: 'Hi.' }, { key: 'wrong', headers: { 'xi-api-key': KEYS.main } });
    expect(primaryBad.status).toBe(401);
    await primaryBad.arrayBuffer();
  });

  it('403 when the key lacks the scope', async () => {
    const speech = await tts({ text: TEXT }, { key: KEYS.readonly });
    expect(speech.status).toBe(403);
    expect((await errorOf(speech)).code).toBe('missing_permissions');
    const list = await fetch(`${t.api}/v2/voices`, { headers: { 'xi-api-key': KEYS.speechOnly } });
    expect(list.status).toBe(403);
    await list.arrayBuffer();
    const form = new FormData();
    form.append('name', 'x');
    const add = await fetch(`${t.api}/v1/voices/add`, {
      method: 'POST',
      headers: { 'xi-api-key': KEYS.readonly },
      body: form,
    });
    expect(add.status).toBe(403);
    await add.arrayBuffer();
    const readOk = await fetch(`${t.api}/v2/voices`, { headers: { 'xi-api-key': KEYS.readonly } });
    expect(readOk.status).toBe(200);
    await readOk.arrayBuffer();
  });
});

describe('bad input is 400 naming the field', () => {
  const cases: Array<[string, unknown, string | undefined, string]> = [
    ['invalid JSON', '{"text":', undefined, 'body'],
    ['a JSON array', '[1]', undefined, 'body'],
    ['text of the wrong type', { text: 5 }, undefined, 'text'],
    ['missing text', {}, undefined, 'text'],
    ['empty text', { text: '' }, undefined, 'text'],
    ['text over 5000 characters', { text: 'a'.repeat(5001) }, undefined, 'text'],
    ['unknown output_format', { text: TEXT }, 'ogg_48000', 'output_format'],
    ['speed out of range', { text: TEXT, voice_settings: { speed: 2 } }, undefined, 'voice_settings.speed'],
    [
      'stability of the wrong type',
      { text: TEXT, voice_settings: { stability: 'high' } },
      undefined,
      'voice_settings.stability',
    ],
    [
      'use_speaker_boost not a boolean',
      { text: TEXT, voice_settings: { use_speaker_boost: 1 } },
      undefined,
      'voice_settings.use_speaker_boost',
    ],
    ['empty model_id', { text: TEXT, model_id: '' }, undefined, 'model_id'],
    ['unknown model', { text: TEXT, model_id: 'no_such_model' }, undefined, 'model_id'],
    ['previous_text not a string', { text: TEXT, previous_text: ['a'] }, undefined, 'previous_text'],
    ['next_text over 1000 characters', { text: TEXT, next_text: 'a'.repeat(1001) }, undefined, 'next_text'],
  ];
  for (const [name, body, format, param] of cases) {
    it(name, async () => {
      const res = await tts(body, format === undefined ? {} : { format });
      expect(res.status).toBe(400);
      expect((await errorOf(res)).param).toBe(param);
    });
  }

  it('takes previous_text and next_text (null too) and speaks only the text', async () => {
    const plain = await tts({ text: TEXT }, { stream: true, format: 'pcm_24000' });
    const framed = await tts(
      { text: TEXT, previous_text: 'Before that,', next_text: null },
      { stream: true, format: 'pcm_24000' },
    );
    expect(plain.status).toBe(200);
    expect(framed.status).toBe(200);
    const [a, b] = await Promise.all([plain.arrayBuffer(), framed.arrayBuffer()]);
    // The embedded engine reads each text alone: the context changes nothing it says.
    expect(Math.abs(a.byteLength - b.byteLength)).toBeLessThan(a.byteLength * 0.05);
  });

  it('5001 characters is max_character_limit_exceeded, 5000 is fine', async () => {
    const over = await tts({ text: 'a'.repeat(5001) });
    expect((await errorOf(over)).code).toBe('max_character_limit_exceeded');
    const at = await tts({ text: `${'word '.repeat(999)}word` }, { stream: true, format: 'pcm_24000' });
    expect(at.status).toBe(200);
    const reader = at.body!.getReader() as ReadableStreamDefaultReader<Uint8Array>;
    await reader.read();
    await reader.cancel();
  });
});

describe('not found', () => {
  it('404 for an unknown voice', async () => {
    const res = await tts({ text: TEXT }, { voice: 'doesnotexist' });
    expect(res.status).toBe(404);
    expect((await errorOf(res)).code).toBe('voice_not_found');
  });

  it('404 for a voice id that is not valid percent-encoding', async () => {
    const res = await tts({ text: TEXT }, { voice: '%E0%A4%A' });
    expect(res.status).toBe(404);
    expect((await errorOf(res)).code).toBe('voice_not_found');
  });

  it('405 for the wrong method', async () => {
    const res = await fetch(`${t.api}/v1/text-to-speech/${BUILT_IN_VOICE_ID}`, {
      headers: { 'xi-api-key': KEYS.main },
    });
    expect(res.status).toBe(405);
    await res.arrayBuffer();
  });

  it('404 for an unknown path', async () => {
    const res = await fetch(`${t.api}/v1/nothing`, { headers: { 'xi-api-key': KEYS.main } });
    expect(res.status).toBe(404);
    await res.arrayBuffer();
  });
});

describe('output formats', () => {
  it('pcm_24000: audio/L16, even length, request-id and character-cost', async () => {
    const res = await tts({ text: TEXT }, { format: 'pcm_24000' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^audio\/L16/);
    expect(res.headers.get('request-id')).toMatch(/^[0-9a-f]{32}$/);
    expect(res.headers.get('character-cost')).toBe(String(TEXT.length));
    const body = new Uint8Array(await res.arrayBuffer());
    expect(Number(res.headers.get('content-length'))).toBe(body.length);
    expect(body.length % 2).toBe(0);
    const seconds = body.length / 2 / 24_000;
    expect(seconds).toBeGreaterThan(1.5);
    expect(seconds).toBeLessThan(6);
  });

  it('wav_24000 whole body: a RIFF header with real sizes that ffmpeg agrees with', async () => {
    const res = await tts({ text: TEXT });
    expect(res.headers.get('content-type')).toBe('audio/wav');
    const body = Buffer.from(await res.arrayBuffer());
    expect(body.toString('latin1', 0, 4)).toBe('RIFF');
    expect(body.readUInt32LE(4)).toBe(body.length - 8);
    expect(body.readUInt32LE(24)).toBe(24_000);
    expect(body.readUInt32LE(40)).toBe(body.length - 44);
    const file = join(t.dataDir, 'whole.wav');
    await writeFile(file, body);
    const probe = await probeWithFfmpeg(file);
    expect(probe).toMatchObject({ codec: 'pcm_s16le', sampleRate: 24_000, channels: 1 });
    expect(probe.decodedSeconds).toBeCloseTo((body.length - 44) / 48_000, 3);
  });

  it('wav_24000 streamed: the whole header in the first chunk, with placeholder sizes', async () => {
    const res = await tts({ text: TEXT }, { stream: true });
    expect(res.headers.get('content-type')).toBe('audio/wav');
    expect(res.headers.get('content-length')).toBeNull();
    const reader = res.body!.getReader() as ReadableStreamDefaultReader<Uint8Array>;
    const first = (await reader.read()).value!;
    expect(first.length).toBeGreaterThanOrEqual(44);
    const head = Buffer.from(first.buffer, first.byteOffset, first.byteLength);
    expect(head.toString('latin1', 0, 4)).toBe('RIFF');
    expect(head.readUInt32LE(4)).toBe(0xffffffff);
    expect(head.readUInt32LE(40)).toBe(0xffffffff);
    const rest: Uint8Array[] = [first];
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      rest.push(value);
    }
    const file = join(t.dataDir, 'streamed.wav');
    const all = Buffer.concat(rest);
    await writeFile(file, all);
    const probe = await probeWithFfmpeg(file);
    expect(probe.sampleRate).toBe(24_000);
    expect(probe.decodedSeconds).toBeCloseTo((all.length - 44) / 48_000, 2);
  });

  for (const stream of [false, true]) {
    it(`mp3_44100_192 (${stream ? 'stream' : 'whole'}): 44.1 kHz 192 kbps MP3 of the right duration`, async () => {
      const pcm = await tts({ text: TEXT }, { format: 'pcm_24000' });
      const pcmSeconds = (await pcm.arrayBuffer()).byteLength / 48_000;
      const res = await tts({ text: TEXT }, { format: 'mp3_44100_192', stream });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('audio/mpeg');
      const body = Buffer.from(await res.arrayBuffer());
      const file = join(t.dataDir, `speech-${stream}.mp3`);
      await writeFile(file, body);
      const probe = await probeWithFfmpeg(file);
      expect(probe).toMatchObject({ codec: 'mp3', sampleRate: 44_100, channels: 1 });
      // Bytes per second of a 192 kbps CBR stream.
      expect(body.length / pcmSeconds).toBeGreaterThan(0.9 * 24_000);
      expect(body.length / pcmSeconds).toBeLessThan(1.1 * 24_000);
      // The encoder adds its own delay and pads the last frame: tens of milliseconds.
      expect(Math.abs(probe.decodedSeconds - pcmSeconds)).toBeLessThan(0.08);
    });
  }
});

describe('streaming', () => {
  it('the first audio of a long text arrives long before the whole body is ready', async () => {
    const text = 'This sentence is spoken again and again to make a long text. '.repeat(75).slice(0, 4900);
    const t0 = performance.now();
    const res = await tts({ text }, { stream: true, format: 'pcm_24000' });
    const reader = res.body!.getReader() as ReadableStreamDefaultReader<Uint8Array>;
    const first = await reader.read();
    const firstByteMs = performance.now() - t0;
    expect(first.value!.length).toBeGreaterThan(0);
    await reader.cancel();
    const t1 = performance.now();
    await (await tts({ text }, { format: 'pcm_24000' })).arrayBuffer();
    const wholeMs = performance.now() - t1;
    expect(firstByteMs).toBeLessThan(wholeMs / 3);
  });

  it('a client that goes away stops synthesis', async () => {
    // About 80 sentences: the engine works piece by piece, so synthesis that went on would finish dozens.
    const text = 'Nobody will hear the end of this long sentence that goes on. '.repeat(80).slice(0, 4900);
    const service = t.app.service!;
    const disconnectedBefore = service.requestStats.disconnected;
    const jobs = (): number => service.engineStats.completed + service.engineStats.cancelled;
    const res = await tts({ text }, { stream: true, format: 'pcm_24000', headers: {} });
    const reader = res.body!.getReader() as ReadableStreamDefaultReader<Uint8Array>;
    await reader.read();
    const jobsAtCancel = jobs();
    await reader.cancel();
    const deadline = performance.now() + 2000;
    while (service.requestStats.disconnected === disconnectedBefore && performance.now() < deadline)
      await new Promise((r) => setTimeout(r, 5));
    expect(service.requestStats.disconnected).toBe(disconnectedBefore + 1);
    await new Promise((r) => setTimeout(r, 300));
    // At most the piece in progress (and one queued) ended after the cancel: nothing more was synthesised.
    expect(jobs() - jobsAtCancel).toBeLessThanOrEqual(2);
    expect(t.app.service!.engineQueueDepth).toBe(0);
  });

  it('429 concurrent_limit_exceeded with Retry-After past the per-key limit', async () => {
    const text = 'A long text keeps this stream open for a while. '.repeat(90).slice(0, 4000);
    const open = await Promise.all([1, 2, 3].map(() => tts({ text }, { stream: true, format: 'pcm_24000' })));
    for (const r of open) expect(r.status).toBe(200);
    const refused = await tts({ text: TEXT }, { format: 'pcm_24000' });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect((await errorOf(refused)).code).toBe('concurrent_limit_exceeded');
    // Another key has its own budget.
    const other = await tts({ text: 'Hi.' }, { key: KEYS.other, format: 'pcm_24000' });
    expect(other.status).toBe(200);
    await other.arrayBuffer();
    await Promise.all(open.map((r) => r.body!.cancel()));
  });
});

describe('voices', () => {
  async function addVoice(
    name: string,
    files: Array<{ data: Buffer; name: string; type?: string }>,
    key: string = KEYS.main,
  ): Promise<Response> {
    const form = new FormData();
    form.append('name', name);
    form.append('description', `${name} test voice`);
    form.append('labels', JSON.stringify({ accent: 'test' }));
    for (const f of files) form.append('files', new Blob([f.data], { type: f.type ?? 'audio/wav' }), f.name);
    return fetch(`${t.api}/v1/voices/add`, { method: 'POST', headers: { 'xi-api-key': key }, body: form });
  }

  let low: Buffer;
  let high: Buffer;
  beforeAll(async () => {
    const text = 'Every sample needs a few seconds of clear speech, spoken at an even pace.';
    low = wavFile(await espeakSpeech(text, 'en-us+m3', 5), 22_050);
    high = wavFile(await espeakSpeech(text, 'en-us+f3', 85), 22_050);
  });

  it('adds a voice from samples, lists it, and speaks with it; deeper sample, deeper voice', async () => {
    const resLow = await addVoice('Deep', [{ data: low, name: 'deep.wav' }]);
    expect(resLow.status).toBe(200);
    const added = (await resLow.json()) as { voice_id: string; requires_verification: boolean };
    expect(added.requires_verification).toBe(false);
    expect(added.voice_id).toMatch(/^[A-Za-z0-9]{20}$/);
    const resHigh = await addVoice('High', [{ data: high, name: 'high.wav' }]);
    const highId = ((await resHigh.json()) as { voice_id: string }).voice_id;

    const list = (await (
      await fetch(`${t.api}/v2/voices?search=deep`, { headers: { 'xi-api-key': KEYS.main } })
    ).json()) as {
      voices: Array<{ voice_id: string; name: string; category: string; labels: Record<string, string> }>;
    };
    // The key's own voice named Deep, and the built-in deep voice (its description says so).
    expect(list.voices.map((v) => v.voice_id).sort()).toEqual([added.voice_id, 'voxbridge-deep'].sort());
    expect(list.voices.find((v) => v.voice_id === added.voice_id)).toMatchObject({
      name: 'Deep',
      category: 'cloned',
      labels: { accent: 'test' },
    });

    const { analyzeSpeech } = await import('../../src/service/voices/analyze.js');
    const f0 = async (voice: string): Promise<number> => {
      const res = await tts(
        { text: 'Is this voice deep or high? Listen closely.' },
        { voice, format: 'pcm_24000' },
      );
      const b = Buffer.from(await res.arrayBuffer());
      const samples = new Float32Array(b.length / 2);
      for (let i = 0; i < samples.length; i++) samples[i] = b.readInt16LE(i * 2) / 32768;
      return analyzeSpeech(samples, 24_000).f0Hz;
    };
    const [deepF0, highF0] = [await f0(added.voice_id), await f0(highId)];
    expect(deepF0).toBeLessThan(highF0 * 0.8);

    // Another key neither sees nor uses it.
    const foreign = await tts({ text: TEXT }, { voice: added.voice_id, key: KEYS.other });
    expect(foreign.status).toBe(404);
    await foreign.arrayBuffer();
    const otherList = (await (
      await fetch(`${t.api}/v2/voices?page_size=100`, { headers: { 'xi-api-key': KEYS.other } })
    ).json()) as {
      voices: Array<{ voice_id: string }>;
    };
    expect(otherList.voices.map((v) => v.voice_id).sort()).toEqual([...BUILT_IN_VOICE_IDS].sort());
  });

  it('pages through the list with next_page_token', async () => {
    for (const name of ['Page A', 'Page B', 'Page C'])
      expect((await addVoice(name, [{ data: low, name: 'a.wav' }], KEYS.other)).status).toBe(200);
    const get = async (
      q: string,
    ): Promise<{
      voices: Array<{ name: string }>;
      has_more: boolean;
      total_count: number;
      next_page_token: string | null;
    }> =>
      (await (
        await fetch(`${t.api}/v2/voices?${q}`, { headers: { 'xi-api-key': KEYS.other } })
      ).json()) as never;
    const p1 = await get('page_size=2&sort=name&sort_direction=asc&search=page');
    expect(p1.voices.map((v) => v.name)).toEqual(['Page A', 'Page B']);
    expect(p1).toMatchObject({ has_more: true, total_count: 3 });
    const p2 = await get(
      `page_size=2&sort=name&sort_direction=asc&search=page&next_page_token=${p1.next_page_token}`,
    );
    expect(p2.voices.map((v) => v.name)).toEqual(['Page C']);
    expect(p2).toMatchObject({ has_more: false, next_page_token: null });
    const bad = await fetch(`${t.api}/v2/voices?page_size=500`, { headers: { 'xi-api-key': KEYS.other } });
    expect(bad.status).toBe(400);
    expect((await errorOf(bad)).param).toBe('page_size');
  });

  it('400 for every bad upload', async () => {
    const noName = await addVoice('', [{ data: low, name: 'a.wav' }]);
    expect((await errorOf(noName)).param).toBe('name');
    const noFiles = await addVoice('x', []);
    expect((await errorOf(noFiles)).param).toBe('files');
    const text = await addVoice('x', [
      { data: Buffer.from('this is not audio at all, just text'), name: 'a.txt', type: 'text/plain' },
    ]);
    expect(text.status).toBe(400);
    expect((await errorOf(text)).code).toBe('invalid_audio');
    const tooMany = await addVoice(
      'x',
      [1, 2, 3, 4].map(() => ({ data: low.subarray(0, 50_000), name: 'a.wav' })),
    );
    expect(tooMany.status).toBe(400);
    expect((await errorOf(tooMany)).param).toBe('files');
    const tooBig = await addVoice('x', [{ data: Buffer.alloc(2_100_000), name: 'big.wav' }]);
    expect(tooBig.status).toBe(400);
    expect((await errorOf(tooBig)).code).toBe('file_too_large');
    const form = new FormData();
    form.append('name', 'x');
    form.append('labels', '{not json');
    form.append('files', new Blob([low]), 'a.wav');
    const badLabels = await fetch(`${t.api}/v1/voices/add`, {
      method: 'POST',
      headers: { 'xi-api-key': KEYS.main },
      body: form,
    });
    expect((await errorOf(badLabels)).param).toBe('labels');
    const notMultipart = await fetch(`${t.api}/v1/voices/add`, {
      method: 'POST',
      headers: { 'xi-api-key': KEYS.main, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(notMultipart.status).toBe(400);
    await notMultipart.arrayBuffer();
  });
});
