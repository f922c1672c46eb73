import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { once } from 'node:events';
import { performance } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import { SpeechClient } from '../../../src/speech/client.js';
import { SpeechServiceError } from '../../../src/speech/errors.js';
import {
  backoffDelayMs,
  parseRetryAfterMs,
  retryDelayMs,
  type RetryPolicy,
} from '../../../src/speech/retry.js';
import { delay, jsonError, KEY, loopbackClients, patternBytes, type Handler } from './loopback.js';

const PCM_HEADERS = { 'content-type': 'audio/L16;rate=24000;channels=1' };
const pcm = { voiceId: 'v1', text: 'Hello.', outputFormat: 'pcm_24000' } as const;

const loopback = loopbackClients({ retryBaseDelayMs: 5, retryMaxDelayMs: 20 });

function audio(res: Parameters<Handler>[1], bytes = 100): void {
  res.writeHead(200, PCM_HEADERS);
  res.end(patternBytes(bytes));
}

/** Fails the first `n` requests with `fail`, then answers audio. */
function failFirst(n: number, fail: Handler): Handler {
  return (req, res, info) => (info.index < n ? fail(req, res, info) : audio(res));
}

async function drain(iterable: AsyncIterable<Uint8Array>): Promise<number> {
  let n = 0;
  for await (const chunk of iterable) n += chunk.byteLength;
  return n;
}

describe('retries before the first audio byte', () => {
  it('retries 503 and succeeds, reporting the attempts', async () => {
    const c = await loopback.setup(
      failFirst(2, (_q, res) => jsonError(res, 503, { code: 'service_unavailable' })),
    );
    const stream = await c.stream(pcm);
    expect(stream.attempts).toBe(3);
    expect(await drain(stream)).toBe(100);
    expect(loopback.server.requests).toHaveLength(3);
  });

  it('honours Retry-After on 429, beyond our own backoff cap', async () => {
    const c = await loopback.setup(
      failFirst(1, (_q, res) =>
        jsonError(res, 429, { code: 'concurrent_limit_exceeded' }, { 'retry-after': '1' }),
      ),
    );
    const t0 = performance.now();
    const stream = await c.stream(pcm);
    const elapsed = performance.now() - t0;
    expect(stream.attempts).toBe(2);
    expect(elapsed).toBeGreaterThanOrEqual(990);
    expect(elapsed).toBeLessThan(1500);
    expect(stream.firstByteMs).toBeGreaterThanOrEqual(990); // the call's own time to first byte
    await drain(stream);
  });

  it('fails at once when Retry-After asks for more than maxRetryAfterMs', async () => {
    const c = await loopback.setup((_q, res) =>
      jsonError(res, 429, { code: 'rate_limit_exceeded' }, { 'retry-after': '120' }),
    );
    const error = await c.stream(pcm).catch((e: unknown) => e);
    expect(error).toMatchObject({ status: 429, retryable: true, retryAfterMs: 120_000 });
    expect(loopback.server.requests).toHaveLength(1);
  });

  it('retries a connection reset and a socket closed before the headers', async () => {
    const c = await loopback.setup((req, res, { index }) => {
      if (index === 0) req.socket.resetAndDestroy();
      else if (index === 1) req.socket.destroy();
      else audio(res);
    });
    const stream = await c.stream(pcm);
    expect(stream.attempts).toBe(3);
    expect(await drain(stream)).toBe(100);
  });

  it('retries when the socket closes after the headers but before any audio byte', async () => {
    const c = await loopback.setup(
      failFirst(1, (_q, res) => {
        res.writeHead(200, PCM_HEADERS);
        res.flushHeaders();
        setTimeout(() => res.socket?.destroy(), 10);
      }),
    );
    const stream = await c.stream(pcm);
    expect(stream.attempts).toBe(2);
  });

  it('retries a refused connection until the server is up', async () => {
    const probe = createServer();
    probe.listen(0, '127.0.0.1');
    await once(probe, 'listening');
    const { port } = probe.address() as AddressInfo;
    await new Promise<void>((r) => probe.close(() => r()));
    const client = loopback.track(
      new SpeechClient({
        baseUrl: `http://127.0.0.1:${port}`,
        apiKey: KEY,
        maxRetries: 5,
        retryBaseDelayMs: 40,
        retryMaxDelayMs: 40,
      }),
    );
    const late = createServer((_req, res) => audio(res));
    setTimeout(() => late.listen(port, '127.0.0.1'), 50);
    try {
      const result = await client.synthesize(pcm);
      expect(result.attempts).toBeGreaterThan(1);
      expect(result.audio.byteLength).toBe(100);
    } finally {
      late.closeAllConnections();
      await new Promise<void>((r) => late.close(() => r()));
    }
  });

  it('gives up after maxRetries with a connection_failed error', async () => {
    const c = await loopback.setup(
      (req) => {
        req.socket.destroy();
      },
      { maxRetries: 1 },
    );
    const error = await c.synthesize(pcm).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SpeechServiceError);
    expect(error).toMatchObject({ code: 'connection_failed', retryable: true });
    expect(loopback.server.requests).toHaveLength(2);
  });

  it('treats a first-byte timeout as retryable (headers sent, audio late)', async () => {
    const c = await loopback.setup(
      failFirst(1, (_q, res) => {
        res.writeHead(200, PCM_HEADERS);
        res.flushHeaders(); // and then nothing
      }),
      { firstByteTimeoutMs: 100 },
    );
    const t0 = performance.now();
    const stream = await c.stream(pcm);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(95);
    expect(stream.attempts).toBe(2);
    await loopback.server.connectionClosed(1); // the timed-out attempt's socket was dropped
  });

  it('surfaces first_byte_timeout when no attempt produces audio in time', async () => {
    const c = await loopback.setup(() => undefined, { firstByteTimeoutMs: 50, maxRetries: 1 });
    const error = await c.synthesize(pcm).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'first_byte_timeout', retryable: true });
    expect(loopback.server.requests).toHaveLength(2);
  });

  it('gives up after maxRetries of 500, with the last error', async () => {
    const c = await loopback.setup((_q, res) =>
      jsonError(res, 500, { code: 'internal_server_error', message: 'boom' }),
    );
    await expect(c.synthesize(pcm)).rejects.toMatchObject({ status: 500, code: 'internal_server_error' });
    expect(loopback.server.requests).toHaveLength(3);
  });

  it.each([400, 401, 403, 404])('does not retry %i', async (status) => {
    const c = await loopback.setup((_q, res) => jsonError(res, status, { code: `code_${status}` }));
    await expect(c.stream(pcm)).rejects.toMatchObject({ status, retryable: false });
    expect(loopback.server.requests).toHaveLength(1);
  });

  it('an abort during the backoff rejects with signal.reason and sends nothing more', async () => {
    const c = await loopback.setup((_q, res) => jsonError(res, 503, { code: 'service_unavailable' }), {
      retryBaseDelayMs: 5_000,
      retryMaxDelayMs: 5_000,
    });
    const controller = new AbortController();
    const reason = new Error('user hung up');
    setTimeout(() => controller.abort(reason), 50);
    const t0 = performance.now();
    await expect(c.stream(pcm, { signal: controller.signal })).rejects.toBe(reason);
    expect(performance.now() - t0).toBeLessThan(1_000);
    expect(loopback.server.requests).toHaveLength(1);
  });

  it('an abort before the first byte rejects with signal.reason, not a SpeechServiceError', async () => {
    const c = await loopback.setup(() => undefined);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 30);
    const error = await c.stream(pcm, { signal: controller.signal }).catch((e: unknown) => e);
    expect(error).toBe(controller.signal.reason);
    expect(error).not.toBeInstanceOf(SpeechServiceError);
    await loopback.server.connectionClosed(1);
  });
});

describe('never after the first audio byte', () => {
  it('a stream cut after some audio throws stream_interrupted and is not retried', async () => {
    const c = await loopback.setup(async (_q, res) => {
      res.writeHead(200, PCM_HEADERS);
      res.write(patternBytes(480));
      await delay(20);
      res.socket?.destroy();
    });
    const stream = await c.stream(pcm);
    let received = 0;
    const error = await (async () => {
      for await (const chunk of stream) received += chunk.byteLength;
    })().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SpeechServiceError);
    expect(error).toMatchObject({ code: 'stream_interrupted', retryable: false });
    expect(received).toBe(480);
    expect(loopback.server.requests).toHaveLength(1);
  });

  it('a Content-Length body cut short is an error in synthesize() too, not a short success', async () => {
    const c = await loopback.setup(async (_q, res) => {
      res.writeHead(200, { ...PCM_HEADERS, 'content-length': 1000 });
      res.write(patternBytes(400));
      await delay(20);
      res.socket?.destroy();
    });
    await expect(c.synthesize(pcm)).rejects.toMatchObject({ code: 'stream_interrupted' });
    expect(loopback.server.requests).toHaveLength(1);
  });
});

describe('addVoice is not idempotent', () => {
  const input = { name: 'Ann', files: [{ data: new Uint8Array([1, 2, 3, 4]), filename: 'a.wav' }] };
  const created: Handler = (_q, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ voice_id: 'new', requires_verification: false }));
  };

  it('does not retry a 503 (the voice may have been created)', async () => {
    const c = await loopback.setup(
      failFirst(1, (_q, res) => jsonError(res, 503, { code: 'service_unavailable' })),
    );
    await expect(c.addVoice(input)).rejects.toMatchObject({ status: 503 });
    expect(loopback.server.requests).toHaveLength(1);
  });

  it('retries a 429 (nothing was done)', async () => {
    const c = await loopback.setup((q, res, info) =>
      info.index === 0 ? jsonError(res, 429, { code: 'rate_limit_exceeded' }) : created(q, res, info),
    );
    await expect(c.addVoice(input)).resolves.toEqual({ voiceId: 'new', requiresVerification: false });
    expect(loopback.server.requests).toHaveLength(2);
  });
});

describe('retry arithmetic', () => {
  const policy: RetryPolicy = { maxRetries: 3, baseDelayMs: 100, maxDelayMs: 1_000, maxRetryAfterMs: 30_000 };

  it('backs off exponentially with jitter, capped', () => {
    expect(backoffDelayMs(policy, 1, () => 0)).toBe(50);
    expect(backoffDelayMs(policy, 1, () => 1)).toBe(100);
    expect(backoffDelayMs(policy, 3, () => 0.5)).toBe(300);
    expect(backoffDelayMs(policy, 10, () => 1)).toBe(1_000);
  });

  it('follows the server’s Retry-After over its own cap, up to maxRetryAfterMs', () => {
    const error = (retryAfterMs?: number): SpeechServiceError =>
      new SpeechServiceError({ code: 'rate_limited', message: 'x', status: 429, retryAfterMs });
    expect(retryDelayMs(policy, error(5_000), 1)).toBe(5_000);
    expect(retryDelayMs(policy, error(60_000), 1)).toBeUndefined();
    expect(retryDelayMs(policy, error(), 4)).toBeUndefined();
    expect(
      retryDelayMs(policy, new SpeechServiceError({ code: 'x', message: 'x', status: 400 }), 1),
    ).toBeUndefined();
  });

  it('parses Retry-After as seconds or an HTTP date', () => {
    const now = Date.parse('Wed, 21 Oct 2026 07:28:00 GMT');
    expect(parseRetryAfterMs('3', now)).toBe(3_000);
    expect(parseRetryAfterMs(' 0 ', now)).toBe(0);
    expect(parseRetryAfterMs('Wed, 21 Oct 2026 07:28:05 GMT', now)).toBe(5_000);
    expect(parseRetryAfterMs('Wed, 21 Oct 2026 07:27:00 GMT', now)).toBe(0);
    expect(parseRetryAfterMs('soon', now)).toBeUndefined();
    expect(parseRetryAfterMs(undefined, now)).toBeUndefined();
  });
});
