import { describe, expect, it } from 'vitest';
import { SpeechServiceError } from '../../../src/speech/errors.js';
import { errorFromResponse } from '../../../src/speech/http-errors.js';
import { jsonError, loopbackClients, type Handler } from './loopback.js';

const KEY = 'sk_secret_0123456789';

const loopback = loopbackClients({ apiKey: KEY, maxRetries: 0 });

async function failWith(handler: Handler): Promise<SpeechServiceError> {
  const client = await loopback.setup(handler);
  const error = await client.synthesize({ voiceId: 'v1', text: 'Hi.' }).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(SpeechServiceError);
  return error as SpeechServiceError;
}

describe('error answers', () => {
  it.each([
    [400, 'invalid_parameters', false],
    [401, 'invalid_api_key', false],
    [403, 'missing_permissions', false],
    [404, 'voice_not_found', false],
    [429, 'rate_limit_exceeded', true],
    [500, 'internal_server_error', true],
  ])(
    '%i maps to a SpeechServiceError with the body code (%s), retryable %s',
    async (status, code, retryable) => {
      const error = await failWith((_req, res) =>
        jsonError(
          res,
          status,
          { type: 't', code, message: `it failed: ${code}`, status: code, request_id: 'body-id' },
          { 'request-id': 'hdr-id' },
        ),
      );
      expect(error).toMatchObject({ status, code, retryable, requestId: 'hdr-id' });
      expect(error.message).toContain(`it failed: ${code}`);
      expect(error.message).toContain(String(status));
    },
  );

  it('takes the request id from the body when the header is missing', async () => {
    const error = await failWith((_req, res) =>
      jsonError(res, 404, { code: 'voice_not_found', message: 'no', request_id: 'body-id' }),
    );
    expect(error.requestId).toBe('body-id');
  });

  it("reads ElevenLabs' legacy detail.status as the code", async () => {
    const error = await failWith((_req, res) =>
      jsonError(res, 401, { status: 'quota_exceeded', message: 'This request exceeds your quota.' }),
    );
    expect(error).toMatchObject({ status: 401, code: 'quota_exceeded' });
  });

  it('takes a plain string detail as the message and the status for the code', async () => {
    const error = await failWith((_req, res) => {
      res.writeHead(403, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ detail: 'Not allowed' }));
    });
    expect(error).toMatchObject({ status: 403, code: 'forbidden', retryable: false });
    expect(error.message).toContain('Not allowed');
  });

  it('handles a non-JSON body (a proxy error page)', async () => {
    const error = await failWith((_req, res) => {
      res.writeHead(502, { 'content-type': 'text/html' });
      res.end('<html><body><h1>502 Bad Gateway</h1>\n</body></html>');
    });
    expect(error).toMatchObject({ status: 502, code: 'bad_gateway', retryable: true });
    expect(error.message).toContain('502 Bad Gateway');
  });

  it('handles an empty error body and an unknown status', async () => {
    const error = await failWith((_req, res) => {
      res.writeHead(418);
      res.end();
    });
    expect(error).toMatchObject({ status: 418, code: 'http_418', retryable: false });
  });

  it('never puts the API key in the message, even when the server echoes it', async () => {
    const error = await failWith((req, res) =>
      jsonError(res, 401, {
        code: 'invalid_api_key',
        message: `Invalid key ${String(req.headers['serviceplatform-apikey'])}`,
      }),
    );
    expect(error.message).not.toContain(KEY);
    expect(error.message).toContain('[redacted]');
    expect(JSON.stringify(error)).not.toContain(KEY);
  });

  it('reads Retry-After into retryAfterMs', async () => {
    const client = await loopback.setup((_req, res) =>
      jsonError(res, 429, { code: 'rate_limit_exceeded' }, { 'retry-after': '7' }),
    );
    await expect(client.synthesize({ voiceId: 'v1', text: 'Hi.' })).rejects.toMatchObject({
      retryAfterMs: 7000,
    });
  });
});

describe('errorFromResponse', () => {
  it('reads a FastAPI validation list', () => {
    const error = errorFromResponse(
      {
        status: 422,
        headers: {},
        bodyText: JSON.stringify({ detail: [{ loc: ['body', 'text'], msg: 'field required' }] }),
      },
      [],
    );
    expect(error).toMatchObject({ status: 422, code: 'invalid_parameters' });
    expect(error.message).toContain('field required');
  });

  it('truncates a long text body', () => {
    const error = errorFromResponse({ status: 500, headers: {}, bodyText: 'x'.repeat(10_000) }, []);
    expect(error.message.length).toBeLessThan(400);
  });
});
