/**
 * The gateway side of the calls load benchmark, in its own process so that it does not share the
 * server's event loop: N Twilio-protocol connections that send the caller's audio every 20 ms (as
 * Twilio does), play what they receive on an arithmetic playout clock (no timer per call), return
 * marks when the audio before them has played, and record how late each frame arrived.
 *
 * IPC: parent sends {cmd: 'open', url, calls, idPrefix?}, gets {type: 'ready', callSids}; sends {cmd: 'report'},
 * gets {type: 'report', ...}; sends {cmd: 'close'}.
 */
import WebSocket from 'ws';
import { FRAME_MS } from '../src/audio/framer.js';

interface CallState {
  ws: WebSocket;
  callSid: string;
  streamSid: string;
  /** When the audio buffered at this fake gateway runs out (performance.now() ms). */
  playheadEnd: number;
  seq: number;
  chunk: number;
  inboundMs: number;
  violations: number;
}

const MULAW_BYTES_PER_MS = 8;
/** A frame arriving after the buffer has been dry this long starts a new run of speech, not an underrun. */
const NEW_RUN_DRY_MS = 150;

const lateness: number[] = [];
let gaps = 0;
let frames = 0;
const calls: CallState[] = [];
let inbound: NodeJS.Timeout | undefined;
const silencePayload = Buffer.alloc(160, 0xff).toString('base64');

function send(c: CallState, message: unknown): void {
  if (c.ws.readyState === WebSocket.OPEN) c.ws.send(JSON.stringify(message));
}

function onMessage(c: CallState, data: Buffer): void {
  const now = performance.now();
  const msg = JSON.parse(data.toString('utf8')) as {
    event: string;
    streamSid?: string;
    media?: { payload: string };
    mark?: { name: string };
  };
  if (msg.streamSid !== c.streamSid) c.violations++;
  if (msg.event === 'media') {
    const bytes = Buffer.byteLength(msg.media!.payload, 'base64');
    if (bytes % 160 !== 0) c.violations++;
    const durationMs = bytes / MULAW_BYTES_PER_MS;
    frames += bytes / 160;
    const dryForMs = now - c.playheadEnd;
    if (dryForMs < NEW_RUN_DRY_MS) {
      // Inside a run: due when the audio before it runs out; positive = late (the listener heard a gap).
      lateness.push(dryForMs);
      if (dryForMs > FRAME_MS) gaps++;
    }
    c.playheadEnd = Math.max(now, c.playheadEnd) + durationMs;
  } else if (msg.event === 'mark') {
    const name = msg.mark!.name;
    const echo = (): void =>
      send(c, { event: 'mark', sequenceNumber: String(++c.seq), streamSid: c.streamSid, mark: { name } });
    const wait = c.playheadEnd - now;
    if (wait <= 0) echo();
    else setTimeout(echo, wait);
  } else if (msg.event === 'clear') {
    c.playheadEnd = now;
  } else c.violations++;
}

/** `idPrefix` (hex digits) tells apart the calls of several load clients. */
async function open(url: string, count: number, idPrefix = ''): Promise<string[]> {
  const pending: Array<Promise<void>> = [];
  for (let i = 0; i < count; i++) {
    const c: CallState = {
      ws: new WebSocket(url),
      callSid: `CA${idPrefix}${String(i).padStart(32 - idPrefix.length, '0')}`,
      streamSid: `MZ${idPrefix}${String(i).padStart(32 - idPrefix.length, '0')}`,
      playheadEnd: Number.NEGATIVE_INFINITY,
      seq: 0,
      chunk: 0,
      inboundMs: 0,
      violations: 0,
    };
    calls.push(c);
    c.ws.on('message', (data: Buffer) => onMessage(c, data));
    c.ws.on('error', () => c.violations++);
    pending.push(
      new Promise<void>((resolve, reject) => {
        c.ws.once('open', () => {
          send(c, { event: 'connected', protocol: 'Call', version: '1.0.0' });
          send(c, {
            event: 'start',
            sequenceNumber: String(++c.seq),
            start: {
              accountSid: 'AC0',
              streamSid: c.streamSid,
              callSid: c.callSid,
              tracks: ['inbound'],
              mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 },
              customParameters: {},
            },
            streamSid: c.streamSid,
          });
          resolve();
        });
        c.ws.once('unexpected-response', () => reject(new Error('upgrade refused')));
      }),
    );
    // Connect in small batches, as calls arrive, not all in one instant.
    if (i % 50 === 49) await new Promise((r) => setTimeout(r, 20));
  }
  await Promise.all(pending);
  // The caller's side: 20 ms of (silent) audio per call every 20 ms, as Twilio streams it.
  inbound = setInterval(() => {
    for (const c of calls) {
      send(c, {
        event: 'media',
        sequenceNumber: String(++c.seq),
        media: {
          track: 'inbound',
          chunk: String(++c.chunk),
          timestamp: String(c.inboundMs),
          payload: silencePayload,
        },
        streamSid: c.streamSid,
      });
      c.inboundMs += FRAME_MS;
    }
  }, FRAME_MS);
  return calls.map((c) => c.callSid);
}

process.on('message', (m: { cmd: string; url?: string; calls?: number; idPrefix?: string }) => {
  if (m.cmd === 'open') {
    open(m.url!, m.calls!, m.idPrefix).then(
      (callSids) => process.send!({ type: 'ready', callSids }),
      (error: unknown) => process.send!({ type: 'error', message: (error as Error).message }),
    );
  } else if (m.cmd === 'report') {
    process.send!({
      type: 'report',
      lateness: lateness.splice(0),
      gaps,
      frames,
      violations: calls.reduce((n, c) => n + c.violations, 0),
      cpu: process.cpuUsage(),
    });
    gaps = 0;
    frames = 0;
    // A new phase begins: the next frame of every call starts a new run of speech.
    for (const c of calls) c.playheadEnd = Number.NEGATIVE_INFINITY;
  } else if (m.cmd === 'close') {
    if (inbound) clearInterval(inbound);
    for (const c of calls) c.ws.close();
    setTimeout(() => process.exit(0), 200);
  }
});
