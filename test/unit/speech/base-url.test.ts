/**
 * Issue 14, finding 8: credentials in the base URL (`http://bob:hunter2-PASS@host`) were neither sent
 * nor hidden. They go out as `Authorization: Basic`, beside the key header, and are redacted from the
 * URL as logged and from every error message.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { redactUrl } from '../../../src/speech/base-url.js';
import { SpeechClient, type SpeechClientOptions } from '../../../src/speech/client.js';
import { SpeechServiceError } from '../../../src/speech/errors.js';
import { jsonError, loopbackClients, patternBytes, type Handler } from './loopback.js';

const KEY = randomBytes(12).toString('hex');
const PASSWORD = randomBytes(12).toString('hex');

const loopback = loopbackClients({ apiKey: KEY });

const wav: Handler = (_req, res) => {
  res.writeHead(200, { 'content-type': 'audio/wav' });
  res.end(patternBytes(44));
};

function basic(user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
}

/** `http://127.0.0.1:port` with `userinfo@` put in front of the host. */
function withUserinfo(url: string, userinfo: string): string {
  return url.replace('://', `://${userinfo}@`);
}

/** A loopback server answering with `handler`, and a client whose base URL carries `userinfo`. */
function withCredentials(
  userinfo: string,
  handler: Handler,
  options: Partial<SpeechClientOptions> = {},
): Promise<SpeechClient> {
  return loopback.open(
    handler,
    (s) => new SpeechClient({ baseUrl: withUserinfo(s.url, userinfo), apiKey: KEY, ...options }),
  );
}

describe('credentials in the base URL', () => {
  it('are sent as Authorization: Basic, and the key still in its own header', async () => {
    const client = await withCredentials(`bob:${PASSWORD}`, wav);
    const server = loopback.server;
    await client.synthesize({ voiceId: 'v1', text: 'Hi.' });
    await client.listVoices().catch(() => undefined);
    for (const req of server.requests) {
      expect(req.headers['authorization']).toBe(basic('bob', PASSWORD));
      expect(req.headers['serviceplatform-apikey']).toBe(KEY);
    }
    expect(server.requests).toHaveLength(2);
  });

  it('are percent-decoded before encoding (RFC 7617 carries the characters themselves)', async () => {
    const client = await withCredentials('b%C3%B6b:p%40ss%3Aw%25rd', wav, {
      apiKey: '',
      authHeader: 'xi-api-key',
    });
    const server = loopback.server;
    await client.synthesize({ voiceId: 'v1', text: 'Hi.' });
    expect(server.requests[0]!.headers['authorization']).toBe(basic('böb', 'p@ss:w%rd'));
    expect(server.requests[0]!.headers['xi-api-key']).toBeUndefined();
  });

  it('a URL without them sends no Authorization header', async () => {
    const client = await loopback.setup(wav);
    const server = loopback.server;
    await client.synthesize({ voiceId: 'v1', text: 'Hi.' });
    expect(server.requests[0]!.headers['authorization']).toBeUndefined();
    expect(client.redactedBaseUrl).toBe(server.url);
  });

  it('never appear in an error message, even when the server echoes them', async () => {
    const client = await withCredentials(
      `bob:${PASSWORD}`,
      (req, res) =>
        jsonError(res, 401, {
          code: 'invalid_api_key',
          message: `bad credentials ${req.headers['authorization'] ?? ''} (${PASSWORD})`,
        }),
      { maxRetries: 0 },
    );
    const error = await client.synthesize({ voiceId: 'v1', text: 'Hi.' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SpeechServiceError);
    const message = (error as SpeechServiceError).message;
    expect(message).toContain('invalid_api_key');
    expect(message).not.toContain(PASSWORD);
    expect(message).not.toContain(basic('bob', PASSWORD).slice('Basic '.length));
  });

  it('are redacted from the URL the client shows for logs', async () => {
    const client = await withCredentials(`bob:${PASSWORD}`, wav);
    const server = loopback.server;
    expect(client.redactedBaseUrl).toBe(withUserinfo(server.url, '[redacted]'));
  });
});

describe('redactUrl', () => {
  it.each([
    ['http://bob:hunter2-PASS@example.com:8080', 'http://[redacted]@example.com:8080'],
    ['https://token-only@example.com/base/?q=1', 'https://[redacted]@example.com/base/?q=1'],
    ['http://bob:p%40ss@example.com/', 'http://[redacted]@example.com/'],
    ['http://bob:p@ss@example.com', 'http://[redacted]@example.com'],
    ['http://example.com/path@not-userinfo', 'http://example.com/path@not-userinfo'],
    ['http://127.0.0.1:8080', 'http://127.0.0.1:8080'],
    // Not a URL at all: everything up to the last @ goes.
    ['http://bob:pa#ss@exa mple', 'http://[redacted]@exa mple'],
  ])('%s → %s', (url, redacted) => {
    expect(redactUrl(url)).toBe(redacted);
  });

  it('the client refuses an invalid base URL without repeating it', () => {
    expect(() => new SpeechClient({ baseUrl: `http://bob:${PASSWORD}@exa mple`, apiKey: '' })).toThrow(
      /^SpeechClient: baseUrl is not a valid URL$/,
    );
  });
});
