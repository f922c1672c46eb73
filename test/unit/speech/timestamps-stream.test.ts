/**
 * `SpeechClient` with `timestamps: true` against a real node:http server on loopback: the request it
 * makes, how it reads the JSON objects as they come, how it fails, and its fallback to `/stream` on a
 * service without the endpoint.
 */
import { describe, expect, it } from 'vitest';
import {
  failureOf,
  jsonError,
  loopbackClients,
  patternBytes,
  writeSpaced,
  type Handler,
} from './loopback.js';

const JSON_HEADERS = { 'content-type': 'application/json', 'request-id': 'req-ts' };
const PCM_HEADERS = { 'content-type': 'audio/L16;rate=24000;channels=1', 'request-id': 'req-plain' };
const TS_PATH = '/api/speech/v1/text-to-speech/v1/stream/with-timestamps';
const PLAIN_PATH = '/api/speech/v1/text-to-speech/v1/stream';

const loopback = loopbackClients({ retryBaseDelayMs: 1, timestamps: true });

const pcm = { voiceId: 'v1', text: 'Hi there', outputFormat: 'pcm_24000' } as const;

function line(audio: Uint8Array, chars: string[], firstMs: number): string {
  const alignment = {
    characters: chars,
    character_start_times_seconds: chars.map((_, i) => (firstMs + i * 10) / 1000),
    character_end_times_seconds: chars.map((_, i) => (firstMs + (i + 1) * 10) / 1000),
  };
  const object = {
    audio_base64: Buffer.from(audio).toString('base64'),
    alignment,
    normalized_alignment: alignment,
  };
  return `${JSON.stringify(object)}\n`;
}

/** Odd audio lengths, so whole samples need carrying across objects. */
const AUDIO = [patternBytes(3, 0), patternBytes(7, 3), patternBytes(6, 10)];
const LINES = [
  line(AUDIO[0]!, ['H', 'i'], 0),
  line(AUDIO[1]!, [' ', 't', 'h'], 20),
  line(AUDIO[2]!, ['e', 'r', 'e'], 50),
];

/** The lines cut at awkward places: mid-object, and two objects in one write. */
function awkwardParts(lines: readonly string[]): Buffer[] {
  const all = Buffer.from(lines.join(''));
  const cuts = [5, lines[0]!.length + 9, all.length - 4];
  return [
    all.subarray(0, cuts[0]),
    all.subarray(cuts[0], cuts[1]),
    all.subarray(cuts[1], cuts[2]),
    all.subarray(cuts[2]),
  ];
}

describe('SpeechClient.stream with timestamps', () => {
  it('asks /stream/with-timestamps, yields whole samples and grows the alignment ahead of its audio', async () => {
    const c = await loopback.setup(async (_req, res) => {
      res.writeHead(200, JSON_HEADERS);
      await writeSpaced(res, awkwardParts(LINES), 10);
      res.end();
    });
    const stream = await c.stream(pcm);
    expect(loopback.server.requests[0]!.path).toBe(TS_PATH);
    expect(loopback.server.requests[0]!.query.get('output_format')).toBe('pcm_24000');
    expect(stream.requestId).toBe('req-ts');
    expect(stream.contentType).toMatch(/^audio\/L16/);
    const alignment = stream.alignment!;
    expect(alignment.characters).toEqual(['H', 'i']);
    const seen: Array<{ bytes: number; chars: number }> = [];
    const chunks: Uint8Array[] = [];
    for await (const chunk of stream) {
      chunks.push(chunk);
      seen.push({ bytes: chunk.byteLength, chars: alignment.characters.length });
    }
    for (const chunk of chunks) expect(chunk.byteLength % 2).toBe(0);
    expect(Buffer.concat(chunks)).toEqual(Buffer.concat(AUDIO));
    // Growing: never shrinking, and complete by the end.
    for (let i = 1; i < seen.length; i++) expect(seen[i]!.chars).toBeGreaterThanOrEqual(seen[i - 1]!.chars);
    expect(alignment.characters.join('')).toBe('Hi there');
    expect(alignment.startMs).toEqual([0, 10, 20, 30, 40, 50, 60, 70]);
    expect(alignment.endMs).toEqual([10, 20, 30, 40, 50, 60, 70, 80]);
  });

  it('leaves MP3 bytes as they come and still reads the timings', async () => {
    const c = await loopback.setup((_req, res) => {
      res.writeHead(200, JSON_HEADERS);
      res.end(LINES.join(''));
    });
    const stream = await c.stream({ ...pcm, outputFormat: 'mp3_44100_192' });
    const chunks: Uint8Array[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.map((b) => b.byteLength)).toEqual([3, 7, 6]);
    expect(stream.alignment!.characters).toHaveLength(8);
  });

  it('a malformed object mid-stream fails it with invalid_response and closes the connection', async () => {
    const c = await loopback.setup(async (_req, res) => {
      res.writeHead(200, JSON_HEADERS);
      // …and the server would go on after the bad line: only the client can end this.
      await writeSpaced(res, [Buffer.from(LINES[0]!), Buffer.from('{"audio_base64": not json}\n')], 20);
    });
    const stream = await c.stream(pcm);
    const closed = loopback.server.connectionClosed(1);
    const error = await failureOf(
      (async () => {
        for await (const _ of stream) {
          /* read on */
        }
      })(),
    );
    expect(error.code).toBe('invalid_response');
    expect(error.requestId).toBe('req-ts');
    await closed;
  });

  it('an object past the size bound fails with response_too_large and closes the connection', async () => {
    let written = 0;
    const c = await loopback.setup(async (_req, res) => {
      res.writeHead(200, JSON_HEADERS);
      res.write(LINES[0]);
      res.write('{"audio_base64":"');
      // An endless object: the client must stop it, not buffer it.
      const block = Buffer.alloc(64 * 1024, 0x41);
      while (!res.destroyed && written < 64 * 1024 * 1024) {
        written += block.length;
        if (!res.write(block)) await new Promise((r) => res.once('drain', r).once('close', r));
      }
    });
    const stream = await c.stream(pcm);
    const closed = loopback.server.connectionClosed(1);
    const error = await failureOf(
      (async () => {
        for await (const _ of stream) {
          /* read on */
        }
      })(),
    );
    expect(error.code).toBe('response_too_large');
    await closed;
    expect(written).toBeLessThan(16 * 1024 * 1024);
  });

  it('a malformed first object rejects stream() itself', async () => {
    const c = await loopback.setup((_req, res) => {
      res.writeHead(200, JSON_HEADERS);
      res.end('{"alignment": {}}\n');
    });
    expect((await failureOf(c.stream(pcm))).code).toBe('invalid_response');
  });

  it('an answer without any audio is empty_audio', async () => {
    const c = await loopback.setup((_req, res) => {
      res.writeHead(200, JSON_HEADERS);
      res.end(line(new Uint8Array(0), ['H'], 0));
    });
    expect((await failureOf(c.stream(pcm))).code).toBe('empty_audio');
  });

  it('a 200 HTML page is unexpected_content_type, not parsed', async () => {
    const c = await loopback.setup((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html>login</html>');
    });
    const error = await failureOf(c.stream(pcm));
    expect(error.code).toBe('unexpected_content_type');
    expect(loopback.server.requests).toHaveLength(1);
  });

  it('retries a 503 before the first byte, as the plain stream does', async () => {
    const c = await loopback.setup((_req, res, { index }) => {
      if (index === 0) {
        jsonError(res, 503, { code: 'busy', message: 'try again' });
        return;
      }
      res.writeHead(200, JSON_HEADERS);
      res.end(LINES.join(''));
    });
    const stream = await c.stream(pcm);
    expect(stream.attempts).toBe(2);
    expect(loopback.server.requests.map((r) => r.path)).toEqual([TS_PATH, TS_PATH]);
  });

  it('cancel() closes the connection at once', async () => {
    const c = await loopback.setup((_req, res) => {
      res.writeHead(200, JSON_HEADERS);
      res.write(LINES[0]);
    });
    const stream = await c.stream(pcm);
    const closed = loopback.server.connectionClosed(1);
    stream.cancel();
    await closed;
  });

  it('timestamps off (the default) asks /stream and has no alignment', async () => {
    const c = await loopback.setup(
      (_req, res) => {
        res.writeHead(200, PCM_HEADERS);
        res.end(patternBytes(10));
      },
      { timestamps: false },
    );
    const stream = await c.stream(pcm);
    expect(loopback.server.requests[0]!.path).toBe(PLAIN_PATH);
    expect(stream.alignment).toBeUndefined();
  });
});

describe('a service without the endpoint', () => {
  /** What a speech service of an older kind answers: /stream only; anything else is its 404 (or 405). */
  function olderService(status: 404 | 405): Handler {
    return (req, res) => {
      if (req.url?.startsWith(PLAIN_PATH + '?')) {
        res.writeHead(200, PCM_HEADERS);
        res.end(patternBytes(20));
        return;
      }
      const body = status === 404 ? '{"detail":"Not Found"}' : '{"detail":"Method Not Allowed"}';
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(body);
    };
  }

  it.each([404, 405] as const)('answering %i gets the plain /stream, then only that', async (status) => {
    const c = await loopback.setup(olderService(status));
    const first = await c.stream(pcm);
    expect(first.alignment).toBeUndefined();
    expect(first.attempts).toBe(2);
    expect(first.contentType).toMatch(/^audio\/L16/);
    const bytes: Uint8Array[] = [];
    for await (const chunk of first) bytes.push(chunk);
    expect(Buffer.concat(bytes)).toEqual(patternBytes(20));
    expect(loopback.server.requests.map((r) => r.path)).toEqual([TS_PATH, PLAIN_PATH]);
    // Remembered for the client's lifetime: no more with-timestamps requests.
    const second = await c.stream(pcm);
    for await (const _ of second) {
      /* drain */
    }
    expect(loopback.server.requests.map((r) => r.path)).toEqual([TS_PATH, PLAIN_PATH, PLAIN_PATH]);
  });

  it('an unknown voice (404 voice_not_found) is that error, with no fallback and nothing remembered', async () => {
    const c = await loopback.setup((_req, res, { index }) => {
      if (index === 0) {
        jsonError(res, 404, { code: 'voice_not_found', message: 'voice v1 was not found' });
        return;
      }
      res.writeHead(200, JSON_HEADERS);
      res.end(LINES.join(''));
    });
    const error = await failureOf(c.stream(pcm));
    expect(error.status).toBe(404);
    expect(error.code).toBe('voice_not_found');
    const next = await c.stream(pcm);
    expect(next.alignment).toBeDefined();
    expect(loopback.server.requests.map((r) => r.path)).toEqual([TS_PATH, TS_PATH]);
  });

  it('a fallback whose /stream fails too leaves timestamps on for the next call', async () => {
    const c = await loopback.setup((_req, res, { index }) => {
      if (index < 2) {
        res.writeHead(404, { 'content-type': 'text/plain' });
        res.end('Not Found');
        return;
      }
      res.writeHead(200, JSON_HEADERS);
      res.end(LINES.join(''));
    });
    expect((await failureOf(c.stream(pcm))).status).toBe(404);
    const next = await c.stream(pcm);
    expect(next.alignment).toBeDefined();
    expect(loopback.server.requests.map((r) => r.path)).toEqual([TS_PATH, PLAIN_PATH, TS_PATH]);
  });
});
