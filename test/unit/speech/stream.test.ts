import { performance } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import { SpeechServiceError } from '../../../src/speech/errors.js';
import { delay, loopbackClients, patternBytes, writeSpaced, type Handler } from './loopback.js';

const PCM_HEADERS = { 'content-type': 'audio/L16;rate=24000;channels=1', 'request-id': 'req-stream' };

const loopback = loopbackClients({ retryBaseDelayMs: 1 });

const pcm = { voiceId: 'v1', text: 'Hello there.', outputFormat: 'pcm_24000' } as const;

async function collect(iterable: AsyncIterable<Uint8Array>): Promise<Uint8Array[]> {
  const out: Uint8Array[] = [];
  for await (const chunk of iterable) out.push(chunk);
  return out;
}

/** A server that sends one chunk of audio and then keeps the stream open until the client leaves. */
const hangAfterFirstChunk: Handler = (_req, res) => {
  res.writeHead(200, PCM_HEADERS);
  res.write(patternBytes(480));
};

describe('SpeechClient.stream', () => {
  it('yields whole 16-bit samples when the server sends odd-length chunks', async () => {
    const parts = [3, 5, 1, 1, 7, 2, 9, 4].map((n, i) => patternBytes(n, i * 16));
    const expected = Buffer.concat(parts);
    const c = await loopback.setup(async (_req, res) => {
      res.writeHead(200, PCM_HEADERS);
      await writeSpaced(res, parts, 5);
      res.end();
    });
    const stream = await c.stream(pcm);
    const chunks = await collect(stream);
    for (const chunk of chunks) expect(chunk.byteLength % 2).toBe(0);
    expect(Buffer.concat(chunks)).toEqual(expected);
    expect(stream.format).toBe('pcm_24000');
    expect(stream.contentType).toBe(PCM_HEADERS['content-type']);
    expect(stream.requestId).toBe('req-stream');
    expect(stream.attempts).toBe(1);
  });

  it('passes aligned chunks through without copying them', async () => {
    // The second chunk is written once the client has the first: 5 ms apart, a busy machine read both
    // at once.
    let firstSeen!: () => void;
    const seen = new Promise<void>((resolve) => (firstSeen = resolve));
    const c = await loopback.setup(async (_req, res) => {
      res.writeHead(200, PCM_HEADERS);
      res.write(patternBytes(64));
      await seen;
      res.end(patternBytes(128));
    });
    const chunks: Uint8Array[] = [];
    for await (const chunk of await c.stream(pcm)) {
      chunks.push(chunk);
      firstSeen();
    }
    expect(chunks.map((b) => b.byteLength)).toEqual([64, 128]);
  });

  it('throws misaligned_audio when a PCM stream ends on half a sample', async () => {
    const c = await loopback.setup(async (_req, res) => {
      res.writeHead(200, PCM_HEADERS);
      await writeSpaced(res, [patternBytes(4), patternBytes(3)], 5);
      res.end();
    });
    const seen: Uint8Array[] = [];
    const error = await (async () => {
      for await (const chunk of await c.stream(pcm)) seen.push(chunk);
    })().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SpeechServiceError);
    expect((error as SpeechServiceError).code).toBe('misaligned_audio');
    expect(Buffer.concat(seen).byteLength).toBe(6);
  });

  it('leaves WAV and MP3 chunks as they come (odd lengths included)', async () => {
    const c = await loopback.setup(async (_req, res) => {
      res.writeHead(200, { 'content-type': 'audio/mpeg' });
      await writeSpaced(res, [patternBytes(3), patternBytes(5)], 5);
      res.end();
    });
    const stream = await c.stream({ ...pcm, outputFormat: 'mp3_44100_192' });
    const chunks = await collect(stream);
    expect(chunks.map((b) => b.byteLength)).toEqual([3, 5]);
    expect(stream.contentType).toBe('audio/mpeg');
  });

  it('resolves at the first audio byte, measures time to first byte there and reports metrics', async () => {
    const metrics: unknown[] = [];
    const c = await loopback.setup(
      async (_req, res) => {
        res.writeHead(200, PCM_HEADERS); // headers early, audio 150 ms later
        await delay(150);
        res.end(patternBytes(20));
      },
      { onStreamMetrics: (m) => metrics.push(m) },
    );
    const stream = await c.stream(pcm);
    expect(stream.firstByteMs).toBeGreaterThanOrEqual(140);
    expect(metrics).toEqual([
      { requestId: 'req-stream', firstByteMs: stream.firstByteMs, attempts: 1, voiceId: 'v1' },
    ]);
    expect(Buffer.concat(await collect(stream)).byteLength).toBe(20);
  });

  it('a throwing metrics callback does not break the stream', async () => {
    const c = await loopback.setup(
      (_req, res) => {
        res.writeHead(200, PCM_HEADERS);
        res.end(patternBytes(10));
      },
      {
        onStreamMetrics: () => {
          throw new Error('metrics sink down');
        },
      },
    );
    expect(Buffer.concat(await collect(await c.stream(pcm))).byteLength).toBe(10);
  });

  it('an abort mid-stream closes the server-side socket within 20 ms and surfaces signal.reason', async () => {
    const c = await loopback.setup(hangAfterFirstChunk);
    const controller = new AbortController();
    const stream = await c.stream(pcm, { signal: controller.signal });
    const iterator = stream[Symbol.asyncIterator]();
    expect((await iterator.next()).value).toHaveLength(480);
    const pending = iterator.next().catch((e: unknown) => e);
    const closed = loopback.server.connectionClosed(1);
    const t0 = performance.now();
    controller.abort();
    const closedAtMs = await closed;
    const measured = closedAtMs - t0;
    console.log(`abort → server socket close: ${measured.toFixed(2)} ms`);
    expect(measured).toBeLessThan(250); // "at once": a hang would be seconds; CI machines stall
    const error = await pending;
    expect(error).toBe(controller.signal.reason);
    expect((error as Error).name).toBe('AbortError');
    expect(error).not.toBeInstanceOf(SpeechServiceError);
  });

  it('an abort while nobody is pulling also closes the socket at once', async () => {
    const c = await loopback.setup(hangAfterFirstChunk);
    const controller = new AbortController();
    const stream = await c.stream(pcm, { signal: controller.signal });
    const closed = loopback.server.connectionClosed(1);
    const reason = new Error('barge-in');
    const t0 = performance.now();
    controller.abort(reason);
    const measured = (await closed) - t0;
    console.log(`abort (idle consumer) → server socket close: ${measured.toFixed(2)} ms`);
    expect(measured).toBeLessThan(250); // "at once": a hang would be seconds; CI machines stall
    await expect(collect(stream)).rejects.toBe(reason);
  });

  it('breaking out of for-await closes the server-side socket', async () => {
    const c = await loopback.setup(hangAfterFirstChunk);
    const stream = await c.stream(pcm);
    const closed = loopback.server.connectionClosed(1);
    let t0 = 0;
    for await (const chunk of stream) {
      expect(chunk).toHaveLength(480);
      t0 = performance.now();
      break;
    }
    const measured = (await closed) - t0;
    console.log(`break → server socket close: ${measured.toFixed(2)} ms`);
    expect(measured).toBeLessThan(250); // "at once": a hang would be seconds; CI machines stall
  });

  it('return() on an iterator that was never pulled still frees the connection', async () => {
    const c = await loopback.setup(hangAfterFirstChunk);
    const stream = await c.stream(pcm);
    const closed = loopback.server.connectionClosed(1);
    await stream[Symbol.asyncIterator]().return?.();
    await closed;
  });

  it('cancel() closes the connection and ends iteration with the reason', async () => {
    const c = await loopback.setup(hangAfterFirstChunk);
    const stream = await c.stream(pcm);
    const closed = loopback.server.connectionClosed(1);
    const reason = new Error('stop');
    stream.cancel(reason);
    await closed;
    await expect(collect(stream)).rejects.toBe(reason);
  });

  it('a stream can be iterated once', async () => {
    const c = await loopback.setup(async (_req, res) => {
      res.writeHead(200, PCM_HEADERS);
      res.end(patternBytes(4));
    });
    const stream = await c.stream(pcm);
    await collect(stream);
    expect(() => stream[Symbol.asyncIterator]()).toThrow(TypeError);
  });

  it('an idle gap after audio started throws idle_timeout from the iterator (not retried)', async () => {
    const c = await loopback.setup(hangAfterFirstChunk, { idleTimeoutMs: 100 });
    const stream = await c.stream(pcm);
    const seen: Uint8Array[] = [];
    const t0 = performance.now();
    const error = await (async () => {
      for await (const chunk of stream) seen.push(chunk);
    })().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SpeechServiceError);
    expect(error).toMatchObject({ code: 'idle_timeout', retryable: false, requestId: 'req-stream' });
    expect(performance.now() - t0).toBeGreaterThanOrEqual(95);
    expect(seen).toHaveLength(1);
    expect(loopback.server.requests).toHaveLength(1);
    await loopback.server.connectionClosed(1);
  });

  it('a slow consumer does not trip the idle timeout (it only runs while waiting on the server)', async () => {
    const c = await loopback.setup(
      async (_req, res) => {
        res.writeHead(200, PCM_HEADERS);
        await writeSpaced(res, [patternBytes(8), patternBytes(8), patternBytes(8)], 5);
        res.end();
      },
      { idleTimeoutMs: 60 },
    );
    let total = 0;
    for await (const chunk of await c.stream(pcm)) {
      total += chunk.byteLength;
      await delay(120);
    }
    expect(total).toBe(24);
  });

  it('pulls from the socket only as fast as the consumer reads (bounded buffering)', async () => {
    const chunk = patternBytes(64 * 1024);
    const totalBytes = 256 * 1024 * 1024;
    let written = 0;
    const c = await loopback.setup(async (_req, res) => {
      res.writeHead(200, PCM_HEADERS);
      while (written < totalBytes && !res.destroyed) {
        written += chunk.byteLength;
        if (!res.write(chunk)) await new Promise((r) => res.once('drain', r).once('close', r));
      }
      res.end();
    });
    const stream = await c.stream(pcm);
    const iterator = stream[Symbol.asyncIterator]();
    await iterator.next();
    await delay(300); // the consumer stalls
    const writtenWhileStalled = written;
    console.log(`bytes the server could write while the consumer stalled: ${writtenWhileStalled}`);
    expect(writtenWhileStalled).toBeLessThan(totalBytes / 4);
    await iterator.return?.();
  });

  it('delivers every byte in order across many odd-length chunks', async () => {
    const parts = Array.from({ length: 50 }, (_, i) => patternBytes(1000 + (i % 3), i * 7));
    parts.push(patternBytes(1)); // 50 049 + 1: an even total
    const c = await loopback.setup(async (_req, res) => {
      res.writeHead(200, PCM_HEADERS);
      for (const p of parts) res.write(p);
      res.end();
    });
    const chunks = await collect(await c.stream(pcm));
    const joined = Buffer.concat(chunks);
    const expected = Buffer.concat(parts);
    expect(joined).toEqual(expected);
  });
});

describe('SpeechClient.synthesize', () => {
  it('returns the whole body with format, content type, request id and time to first byte', async () => {
    const body = patternBytes(4000);
    const c = await loopback.setup((req, res) => {
      expect(req.url).toBe('/api/speech/v1/text-to-speech/v1?output_format=wav_24000');
      res.writeHead(200, {
        'content-type': 'audio/wav',
        'content-length': body.byteLength,
        'request-id': 'r-1',
      });
      res.end(body);
    });
    const result = await c.synthesize({ voiceId: 'v1', text: 'Hi.' });
    expect(result.audio).toEqual(body);
    expect(result).toMatchObject({
      format: 'wav_24000',
      contentType: 'audio/wav',
      requestId: 'r-1',
      attempts: 1,
    });
    expect(result.firstByteMs).toBeGreaterThan(0);
  });

  it('rejects an odd-length PCM body with misaligned_audio', async () => {
    const c = await loopback.setup((_req, res) => {
      res.writeHead(200, PCM_HEADERS);
      res.end(patternBytes(5));
    });
    await expect(c.synthesize(pcm)).rejects.toMatchObject({ code: 'misaligned_audio' });
  });

  it('a 200 with an empty body is empty_audio', async () => {
    const c = await loopback.setup((_req, res) => {
      res.writeHead(200, { 'content-type': 'audio/wav', 'content-length': 0 });
      res.end();
    });
    await expect(c.synthesize({ voiceId: 'v1', text: 'Hi.' })).rejects.toMatchObject({
      code: 'empty_audio',
      status: 200,
      retryable: false,
    });
    expect(loopback.server.requests).toHaveLength(1);
  });
});

describe('connection reuse', () => {
  it('two sequential requests share one keep-alive socket', async () => {
    const c = await loopback.setup((_req, res) => {
      res.writeHead(200, PCM_HEADERS);
      res.end(patternBytes(10));
    });
    await collect(await c.stream(pcm));
    await c.synthesize(pcm);
    await collect(await c.stream(pcm));
    expect(loopback.server.requests.map((r) => r.connection)).toEqual([1, 1, 1]);
    expect(loopback.server.connectionCount()).toBe(1);
  });

  it('an error answer (fully read) leaves the socket reusable', async () => {
    const c = await loopback.setup((_req, res, { index }) => {
      if (index === 0) {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ detail: { code: 'voice_not_found', message: 'no such voice' } }));
        return;
      }
      res.writeHead(200, PCM_HEADERS);
      res.end(patternBytes(10));
    });
    await expect(c.synthesize(pcm)).rejects.toMatchObject({ status: 404 });
    await c.synthesize(pcm);
    expect(loopback.server.connectionCount()).toBe(1);
  });

  it('close() closes the pool and later calls fail with client_closed', async () => {
    const c = await loopback.setup((_req, res) => {
      res.writeHead(200, PCM_HEADERS);
      res.end(patternBytes(10));
    });
    await c.synthesize(pcm);
    await c.close();
    await loopback.server.connectionClosed(1);
    await expect(c.synthesize(pcm)).rejects.toMatchObject({ code: 'client_closed' });
  });
});
