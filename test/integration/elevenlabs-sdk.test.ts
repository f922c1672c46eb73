/**
 * Compatibility with a client we did not write: the official ElevenLabs SDK, pointed at the local
 * service with `xi-api-key`, as docs/speech-service.md describes.
 */
import { ElevenLabsClient, ElevenLabsError } from '@elevenlabs/elevenlabs-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUILT_IN_VOICE_ID } from '../../src/service/voices/builtin.js';
import { KEYS, NO_PHONE_BARGE_IN, startTestApp, type TestApp } from '../helpers/app.js';
import { espeakSpeech, wavFile } from '../../testkit/audio.js';

let t: TestApp;
let sdk: ElevenLabsClient;
beforeAll(async () => {
  t = await startTestApp(NO_PHONE_BARGE_IN);
  sdk = new ElevenLabsClient({ apiKey: KEYS.main, baseUrl: t.api, maxRetries: 0 });
});
afterAll(async () => {
  await t.close();
});

async function collect(stream: ReadableStream<Uint8Array>): Promise<Buffer> {
  const parts: Uint8Array[] = [];
  for await (const p of stream) parts.push(p);
  return Buffer.concat(parts);
}

describe('the official ElevenLabs SDK against the local service', () => {
  it('textToSpeech.convert returns PCM and MP3', async () => {
    const pcm = await collect(
      await sdk.textToSpeech.convert(BUILT_IN_VOICE_ID, {
        text: 'Hello from the SDK.',
        outputFormat: 'pcm_24000',
        modelId: 'eleven_multilingual_v2',
      }),
    );
    expect(pcm.length % 2).toBe(0);
    expect(pcm.length / 48_000).toBeGreaterThan(0.5);
    const mp3 = await collect(
      await sdk.textToSpeech.convert(BUILT_IN_VOICE_ID, {
        text: 'Hello again.',
        outputFormat: 'mp3_44100_192',
      }),
    );
    expect(mp3.length).toBeGreaterThan(5_000);
  });

  it('textToSpeech.stream streams, WAV through queryParams', async () => {
    const stream = await sdk.textToSpeech.stream(
      BUILT_IN_VOICE_ID,
      { text: 'Streaming through the SDK works. It really does.' },
      { queryParams: { output_format: 'wav_24000' } },
    );
    const wav = await collect(stream);
    expect(wav.toString('latin1', 0, 4)).toBe('RIFF');
    expect(wav.readUInt32LE(4)).toBe(0xffffffff);
    expect(wav.length).toBeGreaterThan(44 + 48_000);
  });

  it('voices.ivc.create then voices.search finds it', async () => {
    const sample = wavFile(
      await espeakSpeech('A sample for the official client to upload.', 'en-us+m3', 35),
      22_050,
    );
    const created = await sdk.voices.ivc.create({
      name: 'SDK Voice',
      files: [new Blob([sample], { type: 'audio/wav' })],
      description: 'made by the SDK',
    });
    expect(created.voiceId).toMatch(/^[A-Za-z0-9]{20}$/);
    expect(created.requiresVerification).toBe(false);
    const found = await sdk.voices.search({ search: 'SDK Voice', pageSize: 5, includeTotalCount: true });
    expect(found.voices.map((v) => v.voiceId)).toEqual([created.voiceId]);
    expect(found.hasMore).toBe(false);
    expect(found.totalCount).toBe(1);
    const speech = await collect(
      await sdk.textToSpeech.convert(created.voiceId, { text: 'My own voice.', outputFormat: 'pcm_24000' }),
    );
    expect(speech.length).toBeGreaterThan(10_000);
  });

  it('errors reach the SDK with their status and body', async () => {
    const bad = new ElevenLabsClient({ apiKey: 'wrong-key', baseUrl: t.api, maxRetries: 0 });
    const err = await bad.voices.search({}).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ElevenLabsError);
    expect((err as ElevenLabsError).statusCode).toBe(401);
    const missing = await sdk.textToSpeech.convert('nope', { text: 'x' }).catch((e: unknown) => e);
    expect((missing as ElevenLabsError).statusCode).toBe(404);
  });
});
