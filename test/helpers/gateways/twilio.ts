/**
 * A fake Twilio `<Connect><Stream>`, written from Twilio's media-stream docs: JSON text messages only,
 * mu-law 8 kHz, `connected` then `start` (with `customParameters`), inbound `media` with string
 * numbers and a millisecond `timestamp`, `dtmf`, `stop`; it accepts only `media`, `mark` and `clear`
 * carrying its `streamSid`, plays media at real time, and returns marks by Twilio's rules.
 */
import { once } from 'node:events';
import WebSocket from 'ws';
import { GatewayPlayout } from './playout.js';

export interface TwilioOptions {
  callSid?: string;
  streamSid?: string;
  customParameters?: Record<string, string>;
  headers?: Record<string, string>;
}

export interface Received {
  at: number;
  event: 'media' | 'mark' | 'clear';
  /** Decoded payload of a media message. */
  bytes?: Uint8Array;
  name?: string;
}

const MULAW_BYTES_PER_MS = 8;
const FRAME_BYTES = 160;

export class FakeTwilio {
  readonly ws: WebSocket;
  readonly callSid: string;
  readonly streamSid: string;
  readonly received: Received[] = [];
  /** What broke Twilio's rules (wrong streamSid, binary, unknown events, partial frames). */
  readonly violations: string[] = [];
  readonly playout: GatewayPlayout;
  /** Marks returned to the server, with whether a clear dropped their audio. */
  readonly marksReturned: Array<{ name: string; cleared: boolean }> = [];
  private seq = 0;
  private chunk = 0;
  private startedAt = 0;
  /** ms of inbound audio sent, the timestamp of the next media message. */
  private inboundMs = 0;

  constructor(url: string, options: TwilioOptions = {}) {
    this.callSid = options.callSid ?? `CA${Math.random().toString(16).slice(2).padEnd(32, '0')}`;
    this.streamSid = options.streamSid ?? `MZ${Math.random().toString(16).slice(2).padEnd(32, '0')}`;
    this.ws = new WebSocket(url, { headers: options.headers ?? {} });
    this.playout = new GatewayPlayout(MULAW_BYTES_PER_MS, (name, cleared) => {
      this.marksReturned.push({ name, cleared });
      this.send({
        event: 'mark',
        sequenceNumber: String(++this.seq),
        streamSid: this.streamSid,
        mark: { name },
      });
    });
    this.ws.on('message', (data, isBinary) => this.onMessage(data as Buffer, isBinary));
    this.customParameters = options.customParameters ?? {};
  }

  private readonly customParameters: Record<string, string>;

  async open(): Promise<void> {
    await once(this.ws, 'open');
  }

  /** `connected` and `start`, as Twilio sends them when the call connects the stream. */
  async start(): Promise<void> {
    if (this.ws.readyState !== WebSocket.OPEN) await this.open();
    this.send({ event: 'connected', protocol: 'Call', version: '1.0.0' });
    this.startedAt = performance.now();
    this.send({
      event: 'start',
      sequenceNumber: String(++this.seq),
      start: {
        accountSid: 'AC00000000000000000000000000000000',
        streamSid: this.streamSid,
        callSid: this.callSid,
        tracks: ['inbound'],
        mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 },
        customParameters: this.customParameters,
      },
      streamSid: this.streamSid,
    });
  }

  /** Caller audio (mu-law bytes), sent as Twilio does: one message per 20 ms. */
  sendAudio(mulaw: Uint8Array): void {
    for (let o = 0; o < mulaw.length; o += FRAME_BYTES) {
      const part = mulaw.subarray(o, o + FRAME_BYTES);
      this.send({
        event: 'media',
        sequenceNumber: String(++this.seq),
        media: {
          track: 'inbound',
          chunk: String(++this.chunk),
          timestamp: String(Math.round(this.inboundMs)),
          payload: Buffer.from(part).toString('base64'),
        },
        streamSid: this.streamSid,
      });
      this.inboundMs += part.length / MULAW_BYTES_PER_MS;
    }
  }

  /** The timestamp the next inbound media message will carry. */
  get inboundTimestampMs(): number {
    return this.inboundMs;
  }

  dtmf(digit: string): void {
    this.send({
      event: 'dtmf',
      streamSid: this.streamSid,
      sequenceNumber: String(++this.seq),
      dtmf: { track: 'inbound_track', digit },
    });
  }

  stop(): void {
    this.send({
      event: 'stop',
      sequenceNumber: String(++this.seq),
      streamSid: this.streamSid,
      stop: { accountSid: 'AC00000000000000000000000000000000', callSid: this.callSid },
    });
  }

  send(message: unknown): void {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(message));
  }

  /** Media received (bytes) since index `from` of `received`. */
  mediaBytes(from = 0): number {
    return this.received.slice(from).reduce((n, r) => n + (r.bytes?.length ?? 0), 0);
  }

  /** Resolves once `predicate` holds (checked every 10 ms), or rejects after `timeoutMs`. */
  async until(predicate: () => boolean, timeoutMs = 10_000, what = 'condition'): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    while (!predicate()) {
      if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  async close(): Promise<void> {
    this.playout.stop();
    if (this.ws.readyState === WebSocket.CLOSED) return;
    const closed = once(this.ws, 'close');
    this.ws.close();
    await closed;
  }

  get elapsedMs(): number {
    return performance.now() - this.startedAt;
  }

  private onMessage(data: Buffer, isBinary: boolean): void {
    const at = performance.now();
    if (isBinary) {
      this.violations.push('binary message');
      return;
    }
    let msg: { event?: string; streamSid?: string; media?: { payload?: string }; mark?: { name?: string } };
    try {
      msg = JSON.parse(data.toString('utf8')) as typeof msg;
    } catch {
      this.violations.push('invalid JSON');
      return;
    }
    if (msg.streamSid !== this.streamSid) this.violations.push(`wrong streamSid ${String(msg.streamSid)}`);
    switch (msg.event) {
      case 'media': {
        const bytes = new Uint8Array(Buffer.from(msg.media?.payload ?? '', 'base64'));
        if (bytes.length === 0 || bytes.length % FRAME_BYTES !== 0)
          this.violations.push(`media of ${bytes.length} bytes (not whole 160-byte frames)`);
        this.received.push({ at, event: 'media', bytes });
        this.playout.audio(bytes);
        return;
      }
      case 'mark': {
        const name = msg.mark?.name;
        if (typeof name !== 'string') this.violations.push('mark without name');
        this.received.push({ at, event: 'mark', name: name ?? '' });
        this.playout.mark(name ?? '');
        return;
      }
      case 'clear':
        this.received.push({ at, event: 'clear' });
        this.playout.clear();
        return;
      default:
        this.violations.push(`unknown event ${String(msg.event)}`);
    }
  }
}
