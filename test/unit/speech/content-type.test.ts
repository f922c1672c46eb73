/**
 * A 2xx whose Content-Type is not the requested audio (issue 14, finding 7: a service answering
 * 200 text/html had its page played as PCM noise) is a coded error, and none of its body is handed on.
 */
import { randomBytes } from 'node:crypto';
import type { OutgoingHttpHeaders } from 'node:http';
import { describe, expect, it } from 'vitest';
import { SpeechClient } from '../../../src/speech/client.js';
import { acceptsContentType, FORMAT_INFO, type OutputFormat } from '../../../src/speech/formats.js';
import { failureOf, loopbackClients, patternBytes } from './loopback.js';

const KEY = randomBytes(12).toString('hex');
const HTML = '<!doctype html><html><head><title>Sign in</title></head><body>Proxy login</body></html>';

const loopback = loopbackClients({ apiKey: KEY, retryBaseDelayMs: 1 });

/** A server answering every request 200 with `headers` and `body`. */
function answering(headers: OutgoingHttpHeaders, body: Buffer | string): Promise<SpeechClient> {
  return loopback.setup((_req, res) => {
    res.writeHead(200, headers);
    res.end(body);
  });
}

const pcm = { voiceId: 'v1', text: 'Hello there.', outputFormat: 'pcm_24000' } as const;

describe('a 200 that is not the requested audio', () => {
  it('stream(): a text/html page fails with unexpected_content_type, once, not retried', async () => {
    const c = await answering({ 'content-type': 'text/html; charset=utf-8', 'request-id': 'r-html' }, HTML);
    const error = await failureOf(c.stream(pcm));
    expect(error).toMatchObject({
      code: 'unexpected_content_type',
      status: 200,
      retryable: false,
      requestId: 'r-html',
    });
    expect(error.message).toContain('text/html');
    expect(error.message).toContain('pcm_24000');
    // Deterministic misconfiguration: asking again would get the same page.
    expect(loopback.server.requests).toHaveLength(1);
  });

  it('synthesize(): a text/html page fails the same way instead of coming back as audio', async () => {
    const c = await answering({ 'content-type': 'text/html' }, HTML);
    const error = await failureOf(c.synthesize({ voiceId: 'v1', text: 'Hi.' }));
    expect(error).toMatchObject({ code: 'unexpected_content_type', status: 200, retryable: false });
    expect(loopback.server.requests).toHaveLength(1);
  });

  it.each([
    ['pcm_24000', 'application/json'],
    ['pcm_24000', 'text/plain'],
    ['pcm_24000', 'audio/mpeg'],
    ['pcm_24000', 'audio/wav'],
    ['pcm_24000', 'audio/L16;rate=16000'],
    ['pcm_24000', 'audio/L16;rate=24000;channels=2'],
    ['wav_24000', 'audio/L16;rate=24000'],
    ['wav_24000', 'text/html'],
    ['mp3_44100_192', 'audio/wav'],
    ['mp3_44100_192', 'audio/ogg'],
  ] as const)('%s answered as %s is refused', async (outputFormat, contentType) => {
    const c = await answering({ 'content-type': contentType }, patternBytes(480));
    const error = await failureOf(c.synthesize({ voiceId: 'v1', text: 'Hi.', outputFormat }));
    expect(error.code).toBe('unexpected_content_type');
  });

  it('scrubs the key from the message even when the server echoes it in its Content-Type', async () => {
    const c = await answering({ 'content-type': `text/html; key=${KEY}` }, HTML);
    const error = await failureOf(c.stream(pcm));
    expect(error.message).not.toContain(KEY);
  });
});

describe('the audio types a speech service sends', () => {
  it.each([
    ['pcm_24000', 'audio/L16;rate=24000;channels=1'],
    ['pcm_24000', 'audio/L16'],
    ['pcm_24000', 'audio/pcm'],
    ['pcm_24000', 'AUDIO/PCM; rate="24000"'],
    ['pcm_24000', 'application/octet-stream'],
    ['pcm_24000', undefined],
    ['wav_24000', 'audio/wav'],
    ['wav_24000', 'audio/x-wav'],
    ['wav_24000', 'audio/wave'],
    ['wav_24000', 'application/octet-stream'],
    ['wav_24000', undefined],
    ['mp3_44100_192', 'audio/mpeg'],
    ['mp3_44100_192', 'audio/mp3'],
    ['mp3_44100_192', undefined],
  ] as const)('%s answered as %s plays', async (outputFormat, contentType) => {
    const body = patternBytes(480);
    const c = await answering(contentType === undefined ? {} : { 'content-type': contentType }, body);
    const stream = await c.stream({ voiceId: 'v1', text: 'Hi.', outputFormat });
    const chunks: Uint8Array[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(Buffer.concat(chunks)).toEqual(body);
    // Without a header, the stream says what was asked for.
    expect(stream.contentType).toBe(contentType ?? FORMAT_INFO[outputFormat].contentType);
  });
});

describe('acceptsContentType', () => {
  const cases: ReadonlyArray<readonly [OutputFormat, string | undefined, boolean]> = [
    ['pcm_24000', 'audio/l16; rate=24000; channels=1', true],
    ['pcm_24000', 'audio/pcm;rate=24000', true],
    ['pcm_24000', '', true],
    ['pcm_24000', 'audio/pcm;rate=44100', false],
    ['pcm_24000', 'text/html;charset=utf-8', false],
    ['wav_24000', 'audio/vnd.wave', true],
    ['wav_24000', 'audio/wav;rate=8000', true],
    ['mp3_44100_192', 'application/json', false],
  ];
  it.each(cases)('%s with %s → %s', (format, contentType, accepted) => {
    expect(acceptsContentType(format, contentType)).toBe(accepted);
  });
});
