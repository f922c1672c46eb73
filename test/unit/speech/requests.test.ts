import { describe, expect, it } from 'vitest';
import { SpeechClient, type SpeechClientOptions } from '../../../src/speech/client.js';
import { FORMAT_INFO, isOutputFormat } from '../../../src/speech/formats.js';
import { loopbackClients, patternBytes, type Loopback } from './loopback.js';

const KEY = 'sk_live_0123456789abcdef';

const loopback = loopbackClients({ apiKey: KEY });

async function setup(options: Partial<SpeechClientOptions> = {}): Promise<{ c: SpeechClient; s: Loopback }> {
  const c = await loopback.setup((req, res) => {
    // The audio type that was asked for: the client refuses any other.
    const format = new URL(req.url ?? '/', 'http://localhost').searchParams.get('output_format');
    res.writeHead(200, {
      'content-type': isOutputFormat(format) ? FORMAT_INFO[format].contentType : 'audio/wav',
    });
    res.end(patternBytes(44));
  }, options);
  return { c, s: loopback.server };
}

describe('what goes on the wire', () => {
  it('sends the key in ServicePlatform-APIKey by default, and only there', async () => {
    const { c, s } = await setup();
    await c.synthesize({ voiceId: 'v1', text: 'Hi.' });
    const headers = s.requests[0]!.headers;
    expect(headers['serviceplatform-apikey']).toBe(KEY);
    expect(headers['xi-api-key']).toBeUndefined();
    expect(headers['content-type']).toBe('application/json');
    expect(headers['accept']).toBe('*/*');
  });

  it('sends the key in xi-api-key when asked (ElevenLabs compatibility)', async () => {
    const { c, s } = await setup({ authHeader: 'xi-api-key' });
    await c.synthesize({ voiceId: 'v1', text: 'Hi.' });
    expect(s.requests[0]!.headers['xi-api-key']).toBe(KEY);
    expect(s.requests[0]!.headers['serviceplatform-apikey']).toBeUndefined();
  });

  it('sends no auth header at all when the key is empty', async () => {
    const { c, s } = await setup({ apiKey: '' });
    await c.synthesize({ voiceId: 'v1', text: 'Hi.' });
    expect(s.requests[0]!.headers['serviceplatform-apikey']).toBeUndefined();
  });

  it('posts the synthesize and stream paths with output_format and a minimal snake_case body', async () => {
    const { c, s } = await setup();
    await c.synthesize({ voiceId: 'v1', text: 'Hi.' });
    const stream = await c.stream({
      voiceId: 'voice/with space',
      text: 'Streamed.',
      modelId: 'service_multilingual_v1',
      outputFormat: 'pcm_24000',
      voiceSettings: { stability: 0.4, similarityBoost: 0.8, style: 0.1, useSpeakerBoost: false, speed: 1.1 },
    });
    for await (const _ of stream);
    const [first, second] = s.requests;
    expect(first!.method).toBe('POST');
    expect(first!.url).toBe('/api/speech/v1/text-to-speech/v1?output_format=wav_24000');
    expect(JSON.parse(first!.body.toString())).toEqual({ text: 'Hi.' });
    expect(second!.url).toBe(
      '/api/speech/v1/text-to-speech/voice%2Fwith%20space/stream?output_format=pcm_24000',
    );
    expect(JSON.parse(second!.body.toString())).toEqual({
      text: 'Streamed.',
      model_id: 'service_multilingual_v1',
      voice_settings: {
        stability: 0.4,
        similarity_boost: 0.8,
        style: 0.1,
        use_speaker_boost: false,
        speed: 1.1,
      },
    });
  });

  it('omits unset voice settings, and the whole object when none is set', async () => {
    const { c, s } = await setup();
    await c.synthesize({ voiceId: 'v1', text: 'A', voiceSettings: { speed: 0.9 } });
    await c.synthesize({ voiceId: 'v1', text: 'B', voiceSettings: {} });
    expect(JSON.parse(s.requests[0]!.body.toString())).toEqual({ text: 'A', voice_settings: { speed: 0.9 } });
    expect(JSON.parse(s.requests[1]!.body.toString())).toEqual({ text: 'B' });
  });

  it('sends the text before and after a request as previous_text and next_text, when set', async () => {
    const { c, s } = await setup();
    await c.synthesize({ voiceId: 'v1', text: 'the middle,', previousText: 'Before', nextText: 'after.' });
    await c.synthesize({ voiceId: 'v1', text: 'Alone.', previousText: 'Before' });
    expect(JSON.parse(s.requests[0]!.body.toString())).toEqual({
      text: 'the middle,',
      previous_text: 'Before',
      next_text: 'after.',
    });
    expect(JSON.parse(s.requests[1]!.body.toString())).toEqual({ text: 'Alone.', previous_text: 'Before' });
  });

  it("uses no prefix for ElevenLabs itself (pathPrefix '') and keeps a base URL's own path", async () => {
    const { c, s } = await setup({ pathPrefix: '' });
    await c.synthesize({ voiceId: 'v1', text: 'Hi.' });
    expect(s.requests[0]!.path).toBe('/v1/text-to-speech/v1');
    const other = new SpeechClient({ baseUrl: `${s.url}/proxy/`, pathPrefix: '/tts/', apiKey: KEY });
    try {
      await other.synthesize({ voiceId: 'v1', text: 'Hi.' });
    } finally {
      await other.close();
    }
    expect(s.requests[1]!.path).toBe('/proxy/tts/v1/text-to-speech/v1');
  });
});
