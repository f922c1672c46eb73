/**
 * The local speech service: time to first audio byte of /stream against the time to the whole body of
 * the non-stream endpoint, for a short and a 5000-character text; the engine's real-time factor; and
 * 20 concurrent streams, each of which must be delivered faster than real time.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startApp } from '../src/app/app.js';
import { loadConfig } from '../src/app/config.js';
import { createLogger } from '../src/app/logger.js';
import { BUILT_IN_VOICE_ID } from '../src/service/voices/builtin.js';
import { SpeechClient } from '../src/speech/client.js';
import { fmt, median, percentile, printTable } from './stats.js';

const SHORT = 'The quick brown fox jumps over the lazy dog near the riverbank.';
const LONG = Array.from(
  { length: 200 },
  (_, i) => `Sentence number ${i + 1} tells a little more of the story, and then it ends.`,
)
  .join(' ')
  .slice(0, 5000);
const BYTES_PER_SECOND = 48_000;
const KEY = 'bench-key-0123456789abcdef';

async function timeStream(
  client: SpeechClient,
  text: string,
): Promise<{ firstByteMs: number; totalMs: number; seconds: number }> {
  const t0 = performance.now();
  const stream = await client.stream({ voiceId: BUILT_IN_VOICE_ID, text, outputFormat: 'pcm_24000' });
  let bytes = 0;
  for await (const chunk of stream) bytes += chunk.byteLength;
  return {
    firstByteMs: stream.firstByteMs,
    totalMs: performance.now() - t0,
    seconds: bytes / BYTES_PER_SECOND,
  };
}

async function timeWhole(client: SpeechClient, text: string): Promise<{ totalMs: number; seconds: number }> {
  const t0 = performance.now();
  const r = await client.synthesize({ voiceId: BUILT_IN_VOICE_ID, text, outputFormat: 'pcm_24000' });
  return { totalMs: performance.now() - t0, seconds: r.audio.byteLength / BYTES_PER_SECOND };
}

export async function benchService(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'voxbridge-bench-'));
  const app = await startApp(
    loadConfig({
      PORT: '0',
      DATA_DIR: dir,
      LOG_LEVEL: 'silent',
      SPEECH_API_KEY: 'bench-key-0123456789abcdef',
    }),
    { logger: createLogger('silent') },
  );
  const client = app.client;
  try {
    // Warm: connections, JIT, engine.
    for (let i = 0; i < 3; i++) await timeStream(client, SHORT);

    const rows: string[][] = [];
    const rtf: number[] = [];
    for (const [name, text, runs] of [
      ['1 sentence (63 chars)', SHORT, 30],
      ['5000 characters', LONG, 8],
    ] as const) {
      const first: number[] = [];
      const whole: number[] = [];
      let seconds = 0;
      for (let i = 0; i < runs; i++) {
        const s = await timeStream(client, text);
        first.push(s.firstByteMs);
        const w = await timeWhole(client, text);
        whole.push(w.totalMs);
        seconds = w.seconds;
        rtf.push(w.seconds / (w.totalMs / 1000));
      }
      rows.push([
        name,
        fmt(seconds),
        fmt(percentile(first, 50)),
        fmt(percentile(first, 95)),
        fmt(percentile(whole, 50)),
        fmt(percentile(whole, 95)),
        `${fmt(median(whole) / median(first), 0)}x`,
      ]);
    }
    printTable(
      'Local service: /stream first byte vs non-stream whole body (warm, ms)',
      ['text', 'audio s', 'stream 1st byte p50', 'p95', 'whole body p50', 'p95', 'whole/first'],
      rows,
    );
    console.log(
      `\nReal-time factor of synthesis (whole body, 1 request at a time): median ${fmt(median(rtf), 0)}x real time`,
    );

    // Abort mid-stream: from abort() to the server seeing its socket close.
    const closeMs: number[] = [];
    let abortedAt = 0;
    const onConnection = (socket: Socket): void =>
      void socket.once('close', () => closeMs.push(performance.now() - abortedAt));
    for (let i = 0; i < 30; i++) {
      // A fresh client each time, so the socket that closes is this stream's alone.
      const fresh = new SpeechClient({ baseUrl: app.url, apiKey: KEY });
      app.server.on('connection', onConnection);
      const ac = new AbortController();
      const stream = await fresh.stream(
        { voiceId: BUILT_IN_VOICE_ID, text: LONG, outputFormat: 'pcm_24000' },
        { signal: ac.signal },
      );
      const iterator = stream[Symbol.asyncIterator]();
      await iterator.next();
      const before = closeMs.length;
      abortedAt = performance.now();
      ac.abort();
      await iterator.next().catch(() => undefined);
      while (closeMs.length === before) await new Promise((r) => setImmediate(r));
      app.server.off('connection', onConnection);
      await fresh.close();
    }
    console.log(
      `\nAbort mid-stream → server sees the socket close: p50 ${fmt(percentile(closeMs, 50), 2)} ms, p95 ${fmt(percentile(closeMs, 95), 2)} ms, max ${fmt(Math.max(...closeMs), 2)} ms (target ≤ 20 ms)`,
    );

    for (const n of [20, 30]) {
      const text = LONG.slice(0, 1500);
      const t0 = performance.now();
      const results = await Promise.all(Array.from({ length: n }, () => timeStream(client, text)));
      const wallS = (performance.now() - t0) / 1000;
      const speeds = results.map((r) => r.seconds / (r.totalMs / 1000));
      printTable(
        `${n} concurrent streams of ${text.length} characters (each must beat real time)`,
        [
          'streams',
          'audio s each',
          'slowest x real time',
          'median x real time',
          '1st byte p50 ms',
          '1st byte p95 ms',
          'wall s',
        ],
        [
          [
            String(n),
            fmt(results[0]!.seconds),
            fmt(Math.min(...speeds)),
            fmt(median(speeds)),
            fmt(
              percentile(
                results.map((r) => r.firstByteMs),
                50,
              ),
            ),
            fmt(
              percentile(
                results.map((r) => r.firstByteMs),
                95,
              ),
            ),
            fmt(wallS, 2),
          ],
        ],
      );
    }
  } finally {
    await app.close();
    await rm(dir, { recursive: true, force: true });
  }
}
