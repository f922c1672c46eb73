/**
 * Barge-in on a phone call, end to end: calls over the Twilio protocol hear a long reply; the caller
 * starts talking (real speech from the local service, mixed with line noise, sent at real time with
 * Twilio's timestamps); we measure the caller's speech onset → the clear arriving at the gateway, and
 * the clear → the speech service seeing the request go (its client disconnected mid-response).
 */
import WebSocket from 'ws';
import { encodeMulaw } from '../src/audio/g711.js';
import { bytesToInt16 } from '../src/audio/pcm.js';
import { resampleWhole } from '../src/audio/resampler.js';
import type { App } from '../src/app/app.js';
import { startBenchApp } from './app.js';
import { BUILT_IN_VOICE_ID } from '../src/service/voices/builtin.js';
import { fmt, percentile } from './stats.js';
import { FRAME_MS } from '../src/audio/framer.js';

const FRAME_BYTES = 160;
const CALLS = 5;
const ROUNDS = 11;
/** One long sentence: its response is still streaming when the caller cuts in (a real upstream to abort). */
const REPLY =
  'This answer goes on, and on, with every reason for the caller to cut in, '.repeat(50) + 'until the end.';
const CALLER_LINES = [
  'Sorry, can I stop you there?',
  'Wait, that is not what I asked.',
  'Hello? I need to talk to someone.',
  'No, I want to change my booking.',
  'Excuse me, one question please.',
];

/** Caller speech as 8 kHz mu-law, from the local service, with line noise about 25 dB below it. */
export async function callerSpeech(app: App, text: string, seed: number): Promise<Uint8Array> {
  const pcm = (await app.client.synthesize({ voiceId: BUILT_IN_VOICE_ID, text, outputFormat: 'pcm_24000' }))
    .audio;
  const speech = resampleWhole(bytesToInt16(pcm.slice()), 24_000, 8000);
  let x = seed;
  for (let i = 0; i < speech.length; i++) {
    x = (x * 1103515245 + 12345) & 0x7fffffff;
    speech[i] = Math.max(-32768, Math.min(32767, speech[i]! + ((x % 401) - 200)));
  }
  return encodeMulaw(speech);
}

/** Line noise alone, mu-law. */
function noise(frames: number, seed: number): Uint8Array {
  const out = new Int16Array(frames * FRAME_BYTES);
  let x = seed;
  for (let i = 0; i < out.length; i++) {
    x = (x * 1103515245 + 12345) & 0x7fffffff;
    out[i] = (x % 401) - 200;
  }
  return encodeMulaw(out);
}

interface Measured {
  onsetToClearMs: number;
  /** The server's barge-in (interrupt) → the speech service cancelling the synthesis. */
  interruptToCancelMs: number | undefined;
}

export class Caller {
  readonly ws: WebSocket;
  readonly callSid: string;
  readonly streamSid: string;
  private seq = 0;
  private inboundMs = 0;
  receivedMs = 0;
  private playheadEnd = 0;
  private readonly markTimers: NodeJS.Timeout[] = [];
  clears: number[] = [];
  /** When each media message arrived (performance.now()). */
  readonly mediaAt: number[] = [];
  private queue: Uint8Array[] = [];
  private readonly timer: NodeJS.Timeout;

  private readonly customParameters: Record<string, string>;
  private readonly accountSid: string;

  /** `options`: the call as a gateway's REST API knows it (its sid, account) and the stream's parameters. */
  constructor(
    url: string,
    i: number,
    options: { callSid?: string; accountSid?: string; customParameters?: Record<string, string> } = {},
  ) {
    this.callSid = options.callSid ?? `CA${String(i).padStart(32, '0')}`;
    this.streamSid = `MZ${String(i).padStart(32, '0')}`;
    this.customParameters = options.customParameters ?? {};
    this.accountSid = options.accountSid ?? 'AC0';
    this.ws = new WebSocket(url);
    this.ws.on('message', (data: Buffer) => {
      const m = JSON.parse(data.toString('utf8')) as {
        event: string;
        media?: { payload: string };
        mark?: { name: string };
      };
      const now = performance.now();
      if (m.event === 'media') {
        this.mediaAt.push(now);
        const ms = Buffer.byteLength(m.media!.payload, 'base64') / 8;
        this.receivedMs += ms;
        // Played at real time after what is already buffered, as Twilio plays it.
        this.playheadEnd = Math.max(now, this.playheadEnd) + ms;
      } else if (m.event === 'clear') {
        this.clears.push(now);
        this.playheadEnd = now;
        for (const t of this.markTimers.splice(0)) clearTimeout(t);
      } else if (m.event === 'mark') {
        // Returned once the audio before it has played (every pending one at once on a clear: dropped here).
        const echo = (): void => this.send({ event: 'mark', streamSid: this.streamSid, mark: m.mark });
        this.markTimers.push(setTimeout(echo, Math.max(0, this.playheadEnd - now)));
      }
    });
    // The caller's line: one 20 ms frame every 20 ms, noise unless speech is queued.
    this.timer = setInterval(() => this.tick(), FRAME_MS);
  }

  /** Sent at `performance.now()` when its frame leaves. */
  onsetSentAt: number | undefined;
  private onsetFrame = -1;

  async start(): Promise<void> {
    await new Promise((r) => this.ws.once('open', r));
    this.send({ event: 'connected', protocol: 'Call', version: '1.0.0' });
    this.send({
      event: 'start',
      sequenceNumber: String(++this.seq),
      start: {
        accountSid: this.accountSid,
        streamSid: this.streamSid,
        callSid: this.callSid,
        tracks: ['inbound'],
        mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 },
        customParameters: this.customParameters,
      },
      streamSid: this.streamSid,
    });
  }

  /** Queues the caller's speech; its first frame is the onset. */
  speak(mulaw: Uint8Array): void {
    this.onsetSentAt = undefined;
    this.onsetFrame = 0;
    this.queue = [];
    for (let o = 0; o < mulaw.length; o += FRAME_BYTES) {
      const f = new Uint8Array(FRAME_BYTES).fill(0xff);
      f.set(mulaw.subarray(o, o + FRAME_BYTES));
      this.queue.push(f);
    }
  }

  private tick(): void {
    const frame = this.queue.shift() ?? noise(1, this.seq + 7);
    if (this.onsetFrame === 0) {
      this.onsetSentAt = performance.now();
      this.onsetFrame = -1;
    }
    this.send({
      event: 'media',
      sequenceNumber: String(++this.seq),
      media: {
        track: 'inbound',
        chunk: String(this.seq),
        timestamp: String(this.inboundMs),
        payload: Buffer.from(frame).toString('base64'),
      },
      streamSid: this.streamSid,
    });
    this.inboundMs += FRAME_MS;
  }

  send(m: unknown): void {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(m));
  }

  close(): void {
    clearInterval(this.timer);
    for (const t of this.markTimers) clearTimeout(t);
    this.ws.close();
  }
}

export async function until(predicate: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  while (!predicate()) {
    if (performance.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 1));
  }
  return true;
}

export async function benchBargeIn(): Promise<void> {
  const bench = await startBenchApp('barge', { calls: { defaultFlow: null } });
  const { app } = bench;
  const lines = await Promise.all(CALLER_LINES.map((l, i) => callerSpeech(app, l, i + 1)));
  const measured: Measured[] = [];
  let missed = 0;
  const callers = Array.from(
    { length: CALLS },
    (_, i) => new Caller(`${app.url.replace('http:', 'ws:')}/media/twilio`, i),
  );
  try {
    await Promise.all(callers.map((c) => c.start()));
    await until(() => app.calls.list().filter((c) => c.state.status === 'active').length === CALLS, 5000);
    await Promise.all(
      callers.map(async (caller, ci) => {
        for (let round = 0; round < ROUNDS; round++) {
          const res = await fetch(`${app.url}/calls/${caller.callSid}/say`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ text: REPLY, wait: false }),
          });
          await res.json();
          const heardBefore = caller.receivedMs;
          // The caller lets the bot talk for 0.8–1.8 s, then speaks.
          await until(
            () => caller.receivedMs - heardBefore > 800 + ((round * 7 + ci * 3) % 10) * 100,
            10_000,
          );
          const clearsBefore = caller.clears.length;
          const disconnectedBefore = app.service!.requestStats.disconnected;
          let interruptToCancelMs: number | undefined;
          const call = app.calls.get(caller.callSid)!;
          const onEvent = (event: { type: string }): void => {
            if (event.type !== 'barge-in') return;
            const at = performance.now();
            const poll = (): void => {
              if (app.service!.requestStats.disconnected > disconnectedBefore)
                interruptToCancelMs = performance.now() - at;
              else if (performance.now() - at < 500) setImmediate(poll);
            };
            poll();
          };
          call.on('event', onEvent);
          caller.speak(lines[(round + ci) % lines.length]!);
          const cleared = await until(() => caller.clears.length > clearsBefore, 3000);
          if (!cleared || caller.onsetSentAt === undefined) {
            missed++;
            await fetch(`${app.url}/calls/${caller.callSid}/interrupt`, { method: 'POST' });
          } else {
            await until(() => interruptToCancelMs !== undefined, 600);
            measured.push({
              onsetToClearMs: caller.clears.at(-1)! - caller.onsetSentAt,
              interruptToCancelMs,
            });
          }
          call.off('event', onEvent);
          // Let the caller finish talking before the next round.
          await new Promise((r) => setTimeout(r, 2500));
        }
      }),
    );
  } finally {
    for (const c of callers) c.close();
    await bench.close();
  }
  const toClear = measured.map((m) => m.onsetToClearMs);
  const toCancel = measured.flatMap((m) =>
    m.interruptToCancelMs === undefined ? [] : [m.interruptToCancelMs],
  );
  console.log(
    `\n## Barge-in on calls (${CALLS} Twilio calls, ${measured.length + missed} caller onsets over the bot's speech)\n` +
      `speech onset → clear at the gateway: p50 ${fmt(percentile(toClear, 50), 0)} ms, p95 ${fmt(percentile(toClear, 95), 0)} ms, max ${fmt(Math.max(...toClear), 0)} ms; missed ${missed}\n` +
      `clear sent → speech service sees the request go (client disconnected mid-response): p50 ${fmt(percentile(toCancel, 50), 1)} ms, p95 ${fmt(percentile(toCancel, 95), 1)} ms over ${toCancel.length}`,
  );
}
