/**
 * A fake Vonage Voice `websocket` endpoint, written from Vonage's WebSocket docs: the first message is
 * text, `{"event":"websocket:connected","content-type":"audio/l16;rate=16000", …}` with the NCCO's
 * `headers` folded in as top-level keys; then the caller's audio as binary L16 (little-endian, 20 ms
 * per message) and JSON text events (`websocket:dtmf` with `digit` and `duration`). There is no stop
 * message: the socket closes. Audio sent back must be binary, **exactly 20 ms per message** (320 B at
 * 8 kHz, 640 B at 16 kHz); faster than real time is buffered up to 1024 messages. Text commands:
 * `{"action":"clear"}` empties the buffer and is answered `websocket:cleared`; `{"action":"notify",
 * "payload":{…}}` comes back as `websocket:notify` with the same payload once the audio before it has
 * played (a clear drops pending notifies: the docs do not say it returns them).
 */
import { randomUUID } from 'node:crypto';
import { FakeGateway, asObject, type FakeGatewayOptions, type Json } from './fake-gateway.js';
import { FRAME_MS } from '../../../src/audio/framer.js';

export interface VonageOptions extends FakeGatewayOptions {
  /** `content-type: audio/l16;rate=…` of the NCCO's websocket endpoint. */
  rate?: 8000 | 16000;
  /** The NCCO endpoint's `headers`; `uuid` is the call's id (the answer webhook has it). */
  ncco?: Record<string, string>;
}

const MAX_BUFFERED_MESSAGES = 1024;

export class FakeVonage extends FakeGateway {
  readonly callId: string;
  readonly streamId: string;
  private readonly rate: number;
  private readonly frameBytes: number;
  private readonly ncco: Record<string, string>;
  /** Notify payloads by the name their marker has in playout. */
  private readonly notifies = new Map<string, Json>();
  private notifySeq = 0;

  constructor(url: string, options: VonageOptions = {}) {
    const rate = options.rate ?? 16000;
    const bytesPerMs = (rate * 2) / 1000;
    const l16 = {
      inboundBytesPerMs: bytesPerMs,
      inboundChunkBytes: bytesPerMs * FRAME_MS,
      inboundSilence: 0,
    };
    super(url, { ...l16, outboundBytesPerMs: bytesPerMs }, options);
    this.rate = rate;
    this.frameBytes = bytesPerMs * FRAME_MS;
    this.ncco = { uuid: randomUUID(), ...options.ncco };
    this.callId = this.ncco['uuid']!;
    this.streamId = this.callId;
  }

  dtmf(digit: string): void {
    this.send({ event: 'websocket:dtmf', digit, duration: 260 });
  }

  protected sendStart(): void {
    this.send({ event: 'websocket:connected', 'content-type': `audio/l16;rate=${this.rate}`, ...this.ncco });
  }

  protected sendMedia(payload: Uint8Array): void {
    this.sendRaw(payload);
  }

  protected returnMark(name: string, cleared: boolean): boolean {
    const payload = this.notifies.get(name);
    this.notifies.delete(name);
    if (cleared) return false;
    this.send({ event: 'websocket:notify', payload });
    return true;
  }

  protected override onBinary(data: Uint8Array, at: number): void {
    if (data.length !== this.frameBytes)
      this.violation(`binary of ${data.length} bytes (Vonage takes exactly ${this.frameBytes}: 20 ms)`);
    if (this.playout.bufferedMs / FRAME_MS >= MAX_BUFFERED_MESSAGES)
      this.violation('more than 1024 messages buffered');
    this.gotMedia(data, at);
  }

  protected onText(text: string, at: number): void {
    const msg = this.json(text);
    if (!msg) return;
    switch (msg['action']) {
      case 'clear':
        this.gotClear(at);
        this.send({ event: 'websocket:cleared' });
        return;
      case 'notify': {
        const payload = asObject(msg['payload']);
        if (!payload) this.violation('notify without a payload object');
        const name = `notify-${++this.notifySeq}`;
        this.notifies.set(name, payload ?? {});
        this.gotMark(name, at);
        return;
      }
      default:
        this.violation(`unknown action ${String(msg['action'])}`);
    }
  }
}
