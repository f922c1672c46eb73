import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SpeechClient, type SpeechRequest } from '../../../src/speech/client.js';
import { SpeechInputError } from '../../../src/speech/errors.js';
import type { AddVoiceInput, ListVoicesQuery } from '../../../src/speech/voices.js';
import { KEY, startLoopback, type Loopback } from './loopback.js';

let server: Loopback;
let client: SpeechClient;

beforeAll(async () => {
  server = await startLoopback((_req, res) => {
    res.writeHead(500);
    res.end();
  });
  client = new SpeechClient({ baseUrl: server.url, apiKey: KEY, maxRetries: 0 });
});

afterAll(async () => {
  await client.close();
  await server.close();
});

const good: SpeechRequest = { voiceId: 'v1', text: 'Hello.' };

/** Casts a deliberately wrong input past the compiler, as a JavaScript caller could send it. */
const loose = <T>(value: unknown): T => value as T;

const badSpeech: Array<[string, SpeechRequest, string]> = [
  ['empty text', { ...good, text: '' }, 'text'],
  ['whitespace text', { ...good, text: '   ' }, 'text'],
  ['text over 5000 characters', { ...good, text: 'a'.repeat(5001) }, 'text'],
  ['non-string text', loose({ ...good, text: 42 }), 'text'],
  ['empty voice id', { ...good, voiceId: '' }, 'voice_id'],
  ['missing voice id', loose({ text: 'Hi' }), 'voice_id'],
  ['empty model id', { ...good, modelId: '' }, 'model_id'],
  ['unknown output format', loose({ ...good, outputFormat: 'pcm_16000' }), 'output_format'],
  ['speed too high', { ...good, voiceSettings: { speed: 1.5 } }, 'voice_settings.speed'],
  ['speed too low', { ...good, voiceSettings: { speed: 0.5 } }, 'voice_settings.speed'],
  ['stability above 1', { ...good, voiceSettings: { stability: 1.01 } }, 'voice_settings.stability'],
  [
    'negative similarity boost',
    { ...good, voiceSettings: { similarityBoost: -0.1 } },
    'voice_settings.similarity_boost',
  ],
  ['style not a number', loose({ ...good, voiceSettings: { style: 'high' } }), 'voice_settings.style'],
  ['NaN style', { ...good, voiceSettings: { style: Number.NaN } }, 'voice_settings.style'],
  [
    'speaker boost not a boolean',
    loose({ ...good, voiceSettings: { useSpeakerBoost: 1 } }),
    'voice_settings.use_speaker_boost',
  ],
  ['voice settings not an object', loose({ ...good, voiceSettings: 'fast' }), 'voice_settings'],
  ['previous text not a string', loose({ ...good, previousText: 7 }), 'previous_text'],
  ['next text over 1000 characters', { ...good, nextText: 'a'.repeat(1001) }, 'next_text'],
];

describe('input validation (nothing is sent)', () => {
  it.each(badSpeech)('stream() rejects %s naming the field', async (_name, req, field) => {
    const before = server.requests.length;
    const error = await client.stream(req).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SpeechInputError);
    expect(error).toMatchObject({ field, code: 'invalid_input', retryable: false });
    expect(server.requests.length).toBe(before);
  });

  it.each(badSpeech)('synthesize() rejects %s naming the field', async (_name, req, field) => {
    const error = await client.synthesize(req).catch((e: unknown) => e);
    expect(error).toMatchObject({ field });
    expect(server.requests).toHaveLength(0);
  });

  it('accepts the limits themselves (5000 characters, speed 0.7 and 1.2)', async () => {
    for (const req of [
      { ...good, text: 'a'.repeat(5000) },
      {
        ...good,
        voiceSettings: { speed: 0.7, stability: 0, similarityBoost: 1, style: 1, useSpeakerBoost: false },
      },
      { ...good, voiceSettings: { speed: 1.2 } },
    ]) {
      // The server answers 500: the point is that the request went out.
      await expect(client.synthesize(req)).rejects.not.toBeInstanceOf(SpeechInputError);
    }
    expect(server.requests.length).toBe(3);
    server.requests.length = 0;
  });

  it('counts characters as code points, like the service', async () => {
    await expect(client.synthesize({ ...good, text: '😀'.repeat(5000) })).rejects.not.toBeInstanceOf(
      SpeechInputError,
    );
    server.requests.length = 0;
  });

  const voiceBase: AddVoiceInput = {
    name: 'Ann',
    files: [{ data: new Uint8Array([1, 2]), filename: 'a.wav' }],
  };
  const badVoices: Array<[string, AddVoiceInput, string]> = [
    ['empty name', { ...voiceBase, name: ' ' }, 'name'],
    ['no files', { ...voiceBase, files: [] }, 'files'],
    [
      'a file without a filename',
      { ...voiceBase, files: [{ data: new Uint8Array([1]), filename: '' }] },
      'files',
    ],
    ['an empty file', { ...voiceBase, files: [{ data: new Uint8Array(0), filename: 'a.wav' }] }, 'files'],
    [
      'file data of the wrong type',
      loose({ ...voiceBase, files: [{ data: 'abc', filename: 'a.wav' }] }),
      'files',
    ],
    ['labels with a non-string value', loose({ ...voiceBase, labels: { accent: 3 } }), 'labels'],
    ['description not a string', loose({ ...voiceBase, description: 5 }), 'description'],
    [
      'remove_background_noise not a boolean',
      loose({ ...voiceBase, removeBackgroundNoise: 'yes' }),
      'remove_background_noise',
    ],
  ];

  it.each(badVoices)('addVoice() rejects %s', async (_name, input, field) => {
    const error = await client.addVoice(input).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SpeechInputError);
    expect(error).toMatchObject({ field });
    expect(server.requests).toHaveLength(0);
  });

  it.each<[ListVoicesQuery, string]>([
    [{ pageSize: 0 }, 'page_size'],
    [{ pageSize: 101 }, 'page_size'],
    [{ pageSize: 2.5 }, 'page_size'],
    [loose({ sort: 'age' }), 'sort'],
    [loose({ sortDirection: 'up' }), 'sort_direction'],
    [loose({ includeTotalCount: 'yes' }), 'include_total_count'],
  ])('listVoices() rejects %o', async (query, field) => {
    const error = await client.listVoices(query).catch((e: unknown) => e);
    expect(error).toMatchObject({ field });
    expect(server.requests).toHaveLength(0);
  });
});

describe('client options', () => {
  it('rejects a base URL that is not http(s)', () => {
    expect(() => new SpeechClient({ baseUrl: 'ftp://example.com', apiKey: 'k' })).toThrow(TypeError);
    expect(() => new SpeechClient({ baseUrl: 'not a url', apiKey: 'k' })).toThrow(TypeError);
  });

  it('rejects nonsensical timeouts and counts', () => {
    expect(() => new SpeechClient({ baseUrl: server.url, apiKey: 'k', firstByteTimeoutMs: 0 })).toThrow(
      TypeError,
    );
    expect(() => new SpeechClient({ baseUrl: server.url, apiKey: 'k', maxRetries: -1 })).toThrow(TypeError);
    expect(() => new SpeechClient({ baseUrl: server.url, apiKey: 'k', connections: Number.NaN })).toThrow(
      TypeError,
    );
  });

  it('keeps the key out of the client object', () => {
    const c = new SpeechClient({ baseUrl: server.url, apiKey: 'super-secret-key' });
    expect(JSON.stringify(c)).not.toContain('super-secret-key');
    expect(Object.values(c).join(' ')).not.toContain('super-secret-key');
    return c.close();
  });
});
