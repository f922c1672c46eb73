/**
 * Our client against the real local service over loopback HTTP: every endpoint, every format, every
 * error status, and an abort mid-stream that the server sees at once.
 */
import type { Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUILT_IN_VOICE_ID, BUILT_IN_VOICE_IDS } from '../../src/service/voices/builtin.js';
import { SpeechClient } from '../../src/speech/client.js';
import { SpeechInputError, SpeechServiceError } from '../../src/speech/errors.js';
import { KEYS, startTestApp, type TestApp } from '../helpers/app.js';
import { espeakSpeech, wavFile } from '../../testkit/audio.js';

let t: TestApp;
let client: SpeechClient;
const clients: SpeechClient[] = [];
function makeClient(
  apiKey: string,
  authHeader: 'ServicePlatform-APIKey' | 'xi-api-key' = 'ServicePlatform-APIKey',
): SpeechClient {
  const c = new SpeechClient({ baseUrl: t.url, apiKey, authHeader, maxRetries: 0 });
  clients.push(c);
  return c;
}

beforeAll(async () => {
  // One call at most: voxbridge's own key may then hold max(2, 2 × maxCalls) requests.
  t = await startTestApp({ service: { maxConcurrentPerKey: 2 }, calls: { maxCalls: 1 } });
  client = makeClient(KEYS.main);
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await t.close();
});

const TEXT = 'Every format should carry the same speech.';

async function errorFrom(p: Promise<unknown>): Promise<SpeechServiceError> {
  const error = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(SpeechServiceError);
  return error as SpeechServiceError;
}

describe('client ↔ local service', () => {
  it('synthesize in every format', async () => {
    const pcm = await client.synthesize({
      voiceId: BUILT_IN_VOICE_ID,
      text: TEXT,
      outputFormat: 'pcm_24000',
    });
    expect(pcm.contentType).toMatch(/^audio\/L16/);
    expect(pcm.audio.length % 2).toBe(0);
    expect(pcm.requestId).toMatch(/^[0-9a-f]{32}$/);
    const seconds = pcm.audio.length / 48_000;
    const wav = await client.synthesize({
      voiceId: BUILT_IN_VOICE_ID,
      text: TEXT,
      outputFormat: 'wav_24000',
    });
    expect(wav.audio.toString('latin1', 0, 4)).toBe('RIFF');
    expect((wav.audio.length - 44) / 48_000).toBeCloseTo(seconds, 1);
    const mp3 = await client.synthesize({
      voiceId: BUILT_IN_VOICE_ID,
      text: TEXT,
      outputFormat: 'mp3_44100_192',
    });
    expect(mp3.contentType).toBe('audio/mpeg');
    expect(mp3.audio.length / seconds).toBeGreaterThan(20_000);
    // The default format is WAV.
    const dflt = await client.synthesize({ voiceId: BUILT_IN_VOICE_ID, text: TEXT });
    expect(dflt.contentType).toBe('audio/wav');
  });

  it('stream in every format; PCM chunks are whole samples; time to first byte recorded', async () => {
    for (const outputFormat of ['pcm_24000', 'wav_24000', 'mp3_44100_192'] as const) {
      const stream = await client.stream({
        voiceId: BUILT_IN_VOICE_ID,
        text: `${TEXT} ${TEXT}`,
        outputFormat,
      });
      expect(stream.format).toBe(outputFormat);
      expect(stream.requestId).toMatch(/^[0-9a-f]{32}$/);
      expect(stream.firstByteMs).toBeGreaterThan(0);
      expect(stream.firstByteMs).toBeLessThan(2_000);
      let bytes = 0;
      let chunks = 0;
      for await (const chunk of stream) {
        if (outputFormat === 'pcm_24000') expect(chunk.byteLength % 2).toBe(0);
        bytes += chunk.byteLength;
        chunks++;
      }
      expect(chunks).toBeGreaterThan(1);
      expect(bytes).toBeGreaterThan(20_000);
    }
  });

  it('both auth headers', async () => {
    const xi = makeClient(KEYS.main, 'xi-api-key');
    const page = await xi.listVoices({ pageSize: 100 });
    expect(page.voices.map((v) => v.voiceId)).toEqual(expect.arrayContaining([...BUILT_IN_VOICE_IDS]));
  });

  it('every error status arrives coded, none retried', async () => {
    const e401 = await errorFrom(
      makeClient('wrong-key').synthesize({ voiceId: BUILT_IN_VOICE_ID, text: TEXT }),
    );
    expect(e401).toMatchObject({ status: 401, code: 'invalid_api_key', retryable: false });
    expect(e401.requestId).toMatch(/^[0-9a-f]{32}$/);
    expect(e401.message).not.toContain('wrong-key');
    const e403 = await errorFrom(
      makeClient(KEYS.readonly).stream({ voiceId: BUILT_IN_VOICE_ID, text: TEXT }),
    );
    expect(e403).toMatchObject({ status: 403, code: 'missing_permissions', retryable: false });
    const e404 = await errorFrom(client.stream({ voiceId: 'no-such-voice', text: TEXT }));
    expect(e404).toMatchObject({ status: 404, code: 'voice_not_found' });
    const e400 = await errorFrom(
      client.synthesize({ voiceId: BUILT_IN_VOICE_ID, text: TEXT, modelId: 'unknown_model' }),
    );
    expect(e400).toMatchObject({ status: 400, code: 'model_not_found', retryable: false });
  });

  it('429 is retryable and carries Retry-After; with retries it succeeds once capacity frees', async () => {
    const long = 'This stream stays open to hold a slot. '.repeat(100);
    const held = await Promise.all(
      [1, 2].map(() => client.stream({ voiceId: BUILT_IN_VOICE_ID, text: long, outputFormat: 'pcm_24000' })),
    );
    const e429 = await errorFrom(client.synthesize({ voiceId: BUILT_IN_VOICE_ID, text: TEXT }));
    expect(e429).toMatchObject({
      status: 429,
      code: 'concurrent_limit_exceeded',
      retryable: true,
      retryAfterMs: 1000,
    });
    const patient = new SpeechClient({ baseUrl: t.url, apiKey: KEYS.main, maxRetries: 3 });
    clients.push(patient);
    const later = patient.synthesize({
      voiceId: BUILT_IN_VOICE_ID,
      text: 'Finally.',
      outputFormat: 'pcm_24000',
    });
    setTimeout(() => held.forEach((s) => s.cancel()), 300);
    const ok = await later;
    expect(ok.attempts).toBeGreaterThan(1);
    expect(ok.audio.length).toBeGreaterThan(0);
  });

  it('bad input is refused before any request goes out', async () => {
    let requests = 0;
    const count = (): void => void requests++;
    t.app.server.on('request', count);
    try {
      for (const bad of [
        { voiceId: BUILT_IN_VOICE_ID, text: '' },
        { voiceId: BUILT_IN_VOICE_ID, text: 'x'.repeat(5001) },
        { voiceId: BUILT_IN_VOICE_ID, text: 'x', modelId: '' },
        { voiceId: BUILT_IN_VOICE_ID, text: 'x', voiceSettings: { speed: 1.5 } },
        { voiceId: '', text: 'x' },
      ]) {
        await expect(client.stream(bad)).rejects.toBeInstanceOf(SpeechInputError);
      }
      const e = await client
        .stream({ voiceId: BUILT_IN_VOICE_ID, text: 'x', voiceSettings: { stability: 2 } })
        .catch((x: unknown) => x);
      expect((e as SpeechInputError).field).toBe('voice_settings.stability');
    } finally {
      t.app.server.off('request', count);
    }
    expect(requests).toBe(0);
  });

  it('aborting mid-stream closes the connection at once and stops synthesis', async () => {
    const closes: number[] = [];
    const onConnection = (socket: Socket): void =>
      void socket.once('close', () => closes.push(performance.now()));
    const fresh = makeClient(KEYS.speechOnly);
    t.app.server.on('connection', onConnection);
    try {
      const disconnectedBefore = t.app.service!.requestStats.disconnected;
      const ac = new AbortController();
      const stream = await fresh.stream(
        {
          voiceId: BUILT_IN_VOICE_ID,
          text: 'A very long story that nobody will hear to the end. '.repeat(90),
          outputFormat: 'pcm_24000',
        },
        { signal: ac.signal },
      );
      let abortedAt = 0;
      const consumed = (async () => {
        for await (const _ of stream) {
          if (!abortedAt) {
            abortedAt = performance.now();
            ac.abort();
          }
        }
      })();
      await expect(consumed).rejects.toThrow();
      const deadline = performance.now() + 1000;
      while (closes.length === 0 && performance.now() < deadline) await new Promise((r) => setTimeout(r, 1));
      expect(closes).toHaveLength(1);
      const closeMs = closes[0]! - abortedAt;
      console.log(`abort → server saw the socket close after ${closeMs.toFixed(2)} ms`);
      expect(closeMs).toBeLessThan(250); // sanity bound: a hang would be seconds
      // The service saw its response cut short (and so stopped synthesising: see service.test.ts).
      while (t.app.service!.requestStats.disconnected === disconnectedBefore && performance.now() < deadline)
        await new Promise((r) => setTimeout(r, 2));
      expect(t.app.service!.requestStats.disconnected).toBe(disconnectedBefore + 1);
    } finally {
      t.app.server.off('connection', onConnection);
    }
  });

  it('addVoice and listVoices with paging and search', async () => {
    const sample = wavFile(
      await espeakSpeech('A voice uploaded through our own client.', 'en-us+f3', 60),
      22_050,
    );
    const names = ['Client Alpha', 'Client Beta', 'Client Gamma'];
    const ids: string[] = [];
    for (const name of names) {
      const added = await client.addVoice({
        name,
        files: [{ data: sample, filename: 'sample.wav', contentType: 'audio/wav' }],
        labels: { source: 'client-test' },
        description: 'made in a test',
      });
      expect(added.requiresVerification).toBe(false);
      ids.push(added.voiceId);
    }
    const p1 = await client.listVoices({ search: 'client', pageSize: 2, sort: 'name', sortDirection: 'asc' });
    expect(p1.voices.map((v) => v.name)).toEqual(['Client Alpha', 'Client Beta']);
    expect(p1).toMatchObject({ hasMore: true, totalCount: 3 });
    expect(p1.voices[0]!.labels).toEqual({ source: 'client-test' });
    const p2 = await client.listVoices({
      search: 'client',
      pageSize: 2,
      sort: 'name',
      sortDirection: 'asc',
      nextPageToken: p1.nextPageToken!,
    });
    expect(p2.voices.map((v) => v.voiceId)).toEqual([ids[2]]);
    expect(p2.hasMore).toBe(false);
    const speech = await client.synthesize({ voiceId: ids[0]!, text: 'Mine.', outputFormat: 'pcm_24000' });
    expect(speech.audio.length).toBeGreaterThan(5_000);
    const bad = await errorFrom(
      client.addVoice({ name: 'Bad', files: [{ data: Buffer.from('not audio'), filename: 'x.txt' }] }),
    );
    expect(bad).toMatchObject({ status: 400, code: 'invalid_audio' });
  });
});
