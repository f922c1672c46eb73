/**
 * What every fake phone gateway shares: a real `ws` client that connects to `/media/<gateway>`, sends
 * the caller's audio in the gateway's message size (all at once with `sendAudio`, or silence at real
 * time with `startCallerAudio`, as a live call does), plays what it receives at real time through a
 * `GatewayPlayout`, returns marks when the audio before them has played, and records what it received
 * and every breach of the gateway's rules (`violations`). Each gateway's module (twilio.ts, telnyx.ts,
 * …) says what goes on the wire, written from that vendor's docs, never from our protocol modules.
 */
import { once } from 'node:events';
import WebSocket from 'ws';
import { GatewayPlayout } from './playout.js';

export interface Received {
  /** performance.now() when it arrived. */
  at: number;
  /** `control`: a well-formed command the fake does not act on (Asterisk `ANSWER`, jambonz `transfer`, …). */
  event: 'media' | 'mark' | 'clear' | 'hangup' | 'control';
  /** Audio of a media message (decoded from base64 where the gateway wraps it). */
  bytes?: Uint8Array;
  /** A mark's name, or a control command's. */
  name?: string;
}

export interface FakeGatewayOptions {
  headers?: Record<string, string>;
}

/** The audio a fake exchanges: what the caller sends, and what the gateway plays. */
export interface FakeAudio {
  /** Bytes per ms of the outbound codec (what the gateway plays). */
  outboundBytesPerMs: number;
  /** Bytes per ms of the caller's audio, and bytes per inbound media message (the gateway's cadence). */
  inboundBytesPerMs: number;
  inboundChunkBytes: number;
  /** The byte silence is made of in the inbound codec (mu-law 0xff, L16 0). */
  inboundSilence: number;
  /** WebSocket subprotocols to ask for (jambonz). */
  protocols?: string[];
}

export type Json = Record<string, unknown>;

export function asObject(value: unknown): Json | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : undefined;
}

export function asString(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/** A random id of `length` hex digits after `prefix` (CA…, MZ…), unique per fake call. */
export function randomId(prefix = '', length = 32): string {
  let hex = '';
  while (hex.length < length) hex += Math.random().toString(16).slice(2);
  return prefix + hex.slice(0, length);
}

/** How long the socket may take to open, or to close once asked (ms). */
const SOCKET_DEADLINE_MS = 10_000;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

export abstract class FakeGateway {
  readonly ws: WebSocket;
  readonly received: Received[] = [];
  /** What broke the gateway's rules: wrong stream id, binary or text where not allowed, bad sizes, … */
  readonly violations: string[] = [];
  readonly playout: GatewayPlayout;
  /** Marks returned to the server, with whether a clear dropped their audio. */
  readonly marksReturned: Array<{ name: string; cleared: boolean }> = [];
  /** Where playout was (`positionMs`) when each clear arrived: what the caller had heard. */
  readonly clearedAtMs: number[] = [];
  /** performance.now() when the start message went out; 0 before. */
  startedAt = 0;
  /** The call's id as the server should name it, and the stream id its messages must carry. */
  abstract readonly callId: string;
  abstract readonly streamId: string;
  /** ms of inbound audio sent: the timestamp of the next media message. */
  protected inboundMs = 0;
  protected seq = 0;
  /** Inbound media messages sent. */
  protected chunk = 0;
  private readonly audio: FakeAudio;
  private callerAudio: NodeJS.Timeout | undefined;

  protected constructor(url: string, audio: FakeAudio, options: FakeGatewayOptions = {}) {
    this.audio = audio;
    this.ws = new WebSocket(url, audio.protocols ?? [], { headers: options.headers ?? {} });
    this.playout = new GatewayPlayout(audio.outboundBytesPerMs, (name, cleared) => {
      if (this.returnMark(name, cleared)) this.marksReturned.push({ name, cleared });
    });
    this.ws.on('message', (data: Buffer, isBinary) => {
      const at = performance.now();
      if (isBinary) this.onBinary(new Uint8Array(data), at);
      else this.onText(data.toString('utf8'), at);
    });
    this.ws.on('error', (error) => this.violation(`socket error: ${error.message}`));
    this.ws.on('close', () => {
      this.stopCallerAudio();
      this.playout.stop();
    });
  }

  /** Waits for the socket to open: a stall fails here, by name, not at the test's own timeout. */
  async open(): Promise<void> {
    if (this.ws.readyState === WebSocket.OPEN) return;
    try {
      await once(this.ws, 'open', { signal: AbortSignal.timeout(SOCKET_DEADLINE_MS) });
    } catch (error) {
      if (error instanceof Error && error.name === 'AbortError')
        throw new Error(`the gateway's socket did not open within ${SOCKET_DEADLINE_MS} ms`, {
          cause: error,
        });
      throw error;
    }
  }

  /** Opens the socket if need be and sends what the gateway sends when the call connects the stream. */
  async start(): Promise<void> {
    await this.open();
    this.startedAt = performance.now();
    this.sendStart();
  }

  /** Caller audio in the inbound codec, cut into the gateway's media messages and sent at once. */
  sendAudio(bytes: Uint8Array): void {
    const { inboundChunkBytes, inboundBytesPerMs } = this.audio;
    for (let o = 0; o < bytes.length; o += inboundChunkBytes) {
      const part = bytes.subarray(o, o + inboundChunkBytes);
      this.sendMedia(part);
      this.inboundMs += part.length / inboundBytesPerMs;
    }
  }

  /** Caller audio in the inbound codec at real time: one media message per message interval. */
  async sendLive(bytes: Uint8Array): Promise<void> {
    const { inboundChunkBytes, inboundBytesPerMs } = this.audio;
    const intervalMs = inboundChunkBytes / inboundBytesPerMs;
    const start = performance.now();
    for (let o = 0, k = 0; o < bytes.length; o += inboundChunkBytes, k++) {
      this.sendAudio(bytes.subarray(o, o + inboundChunkBytes));
      const due = start + (k + 1) * intervalMs;
      await new Promise((r) => setTimeout(r, Math.max(0, due - performance.now())));
    }
  }

  /** Silence from the caller, one media message per message interval, as a live call streams it. */
  startCallerAudio(): void {
    const { inboundChunkBytes, inboundBytesPerMs, inboundSilence } = this.audio;
    const chunk = new Uint8Array(inboundChunkBytes).fill(inboundSilence);
    this.stopCallerAudio();
    this.callerAudio = setInterval(() => this.sendAudio(chunk), inboundChunkBytes / inboundBytesPerMs);
  }

  stopCallerAudio(): void {
    clearInterval(this.callerAudio);
    this.callerAudio = undefined;
  }

  /** A key press, as the gateway reports it. */
  abstract dtmf(digit: string): void;

  /** The caller hangs up: the gateway's stop message where it has one, else the socket closes. */
  stop(): void {
    this.ws.close();
  }

  /** The timestamp the next inbound media message will carry. */
  get inboundTimestampMs(): number {
    return this.inboundMs;
  }

  get elapsedMs(): number {
    return performance.now() - this.startedAt;
  }

  /** A JSON text message. */
  send(message: unknown): void {
    this.sendRaw(JSON.stringify(message));
  }

  /** A message as is: strings go as text, bytes as binary. */
  sendRaw(data: string | Uint8Array): void {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(data, { binary: typeof data !== 'string' });
  }

  /** Media received since index `from` of `received`. */
  media(from = 0): Received[] {
    return this.received.slice(from).filter((r) => r.event === 'media');
  }

  /** Media bytes received since index `from` of `received`. */
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
    this.stopCallerAudio();
    this.playout.stop();
    if (this.ws.readyState === WebSocket.CLOSED) return;
    const closed = once(this.ws, 'close');
    this.ws.close();
    // `ws` waits 30 s for the peer's close frame before it gives up; a test's cleanup should not.
    const timer = setTimeout(() => this.ws.terminate(), SOCKET_DEADLINE_MS);
    try {
      await closed;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Sends the gateway's connected/start message(s). */
  protected abstract sendStart(): void;
  /** Sends one inbound media message carrying `payload`. */
  protected abstract sendMedia(payload: Uint8Array): void;
  protected abstract onText(text: string, at: number): void;
  /** Binary from the server: not allowed unless the gateway carries audio in binary messages. */
  protected onBinary(_data: Uint8Array, _at: number): void {
    this.violation('binary message');
  }
  /**
   * A mark came up in playout (`cleared`: a clear dropped the audio before it). Answers it the way the
   * gateway does; returns whether anything was sent.
   */
  protected abstract returnMark(name: string, cleared: boolean): boolean;

  protected violation(what: string): void {
    this.violations.push(what);
  }

  protected gotMedia(bytes: Uint8Array, at: number): void {
    this.received.push({ at, event: 'media', bytes });
    this.playout.audio(bytes);
  }

  protected gotMark(name: string, at: number): void {
    this.received.push({ at, event: 'mark', name });
    this.playout.mark(name);
  }

  protected gotClear(at: number): void {
    this.received.push({ at, event: 'clear' });
    this.clearedAtMs.push(this.playout.positionMs);
    this.playout.clear();
  }

  /** A mark named `name`, which must be a string. */
  protected gotNamedMark(name: unknown, at: number): void {
    if (typeof name !== 'string') this.violation('mark without name');
    this.gotMark(typeof name === 'string' ? name : '', at);
  }

  /**
   * A text message of the Twilio family (Twilio, Telnyx, Exotel): JSON with the stream id at `idKey`
   * (`optionalId`: it may be left out, but not be wrong); `media` with a base64 `media.payload` (its
   * size checked by `checkMedia`), `mark` with `mark.name`, `clear`; nothing else.
   */
  protected twilioStyle(
    text: string,
    at: number,
    id: { key: string; optional?: boolean },
    checkMedia: (bytes: Uint8Array) => void,
  ): void {
    const msg = this.json(text);
    if (!msg) return;
    if (!id.optional || id.key in msg) this.checkStreamId(msg[id.key], id.key);
    switch (msg['event']) {
      case 'media': {
        const bytes = this.base64(asObject(msg['media'])?.['payload'], 'media.payload');
        if (!bytes) return;
        checkMedia(bytes);
        this.gotMedia(bytes, at);
        return;
      }
      case 'mark':
        this.gotNamedMark(asObject(msg['mark'])?.['name'], at);
        return;
      case 'clear':
        this.gotClear(at);
        return;
      default:
        this.violation(`unknown event ${String(msg['event'])}`);
    }
  }

  /** The `media` object of an inbound Twilio-family message: `chunk` and `timestamp` as strings. */
  protected twilioMedia(payload: Uint8Array, track: boolean): Json {
    return {
      ...(track ? { track: 'inbound' } : {}),
      chunk: String(++this.chunk),
      timestamp: String(Math.round(this.inboundMs)),
      payload: Buffer.from(payload).toString('base64'),
    };
  }

  /** A text message as a JSON object, or a violation. */
  protected json(text: string): Json | undefined {
    try {
      const value = asObject(JSON.parse(text));
      if (value) return value;
    } catch {
      // reported below
    }
    this.violation(`not a JSON object: ${text.slice(0, 80)}`);
    return undefined;
  }

  /** Strict base64 (padded, standard alphabet) to bytes; anything else is a violation. */
  protected base64(value: unknown, what: string): Uint8Array | undefined {
    if (typeof value !== 'string' || !BASE64.test(value)) {
      this.violation(`${what} is not base64`);
      return undefined;
    }
    return new Uint8Array(Buffer.from(value, 'base64'));
  }

  /** `actual` must be the stream's id (`key` names the field in the violation). */
  protected checkStreamId(actual: unknown, key: string): void {
    if (actual !== this.streamId) this.violation(`wrong ${key} ${String(actual)}`);
  }
}
