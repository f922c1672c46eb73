/**
 * A fake Plivo `<Stream bidirectional="true">`, written from Plivo's audio-streaming reference: JSON
 * text only; `start` first (no `connected`; `start.callId`, `start.streamId`, `start.mediaFormat`, and
 * the `extraHeaders` attribute as a top-level `extra_headers` string "k=v;k=v"), inbound `media` (20 ms,
 * a Unix-time `timestamp`), `dtmf`; no stop message (the socket closes). It accepts `playAudio` with
 * `media: {contentType, sampleRate, payload}` in the stream's `contentType` (the deployment must send
 * what `<Stream contentType>` says), `checkpoint` and `clearAudio` with the `streamId`. A checkpoint
 * comes back as `playedStream` only if the audio before it really played (as `played` with
 * `playedEvent: 'played'`, the name Plivo's support article gives it); a clear drops pending ones and
 * is answered with `clearedAudio`.
 */
import { randomUUID } from 'node:crypto';
import { FakeGateway, asObject, asString, type FakeGatewayOptions } from './fake-gateway.js';

export interface PlivoOptions extends FakeGatewayOptions {
  callId?: string;
  streamId?: string;
  /** The `extraHeaders` attribute of `<Stream>`. */
  extraHeaders?: Record<string, string>;
  /** `<Stream contentType>`: both ways. */
  contentType?: 'audio/x-mulaw;rate=8000' | 'audio/x-l16;rate=8000' | 'audio/x-l16;rate=16000';
  /**
   * The event a reached checkpoint comes back as: `playedStream` (the reference, the default) or
   * `played` (support.plivo.com/hc/en-us/articles/32800564168345).
   */
  playedEvent?: 'playedStream' | 'played';
}

export class FakePlivo extends FakeGateway {
  readonly callId: string;
  readonly streamId: string;
  private readonly mime: string;
  private readonly sampleRate: number;
  private readonly extraHeaders: string;
  private readonly playedEvent: 'playedStream' | 'played';

  constructor(url: string, options: PlivoOptions = {}) {
    const [mime = '', rate = ''] = (options.contentType ?? 'audio/x-mulaw;rate=8000').split(';rate=');
    const sampleRate = Number(rate);
    const bytesPerMs = ((mime === 'audio/x-l16' ? 2 : 1) * sampleRate) / 1000;
    const inbound = { inboundBytesPerMs: bytesPerMs, inboundChunkBytes: bytesPerMs * 20 };
    const silence = mime === 'audio/x-l16' ? 0 : 0xff;
    super(url, { ...inbound, inboundSilence: silence, outboundBytesPerMs: bytesPerMs }, options);
    this.mime = mime;
    this.sampleRate = sampleRate;
    this.callId = options.callId ?? randomUUID();
    this.streamId = options.streamId ?? randomUUID();
    this.playedEvent = options.playedEvent ?? 'playedStream';
    this.extraHeaders = Object.entries(options.extraHeaders ?? {})
      .map(([k, v]) => `${k}=${v}`)
      .join(';');
  }

  dtmf(digit: string): void {
    this.send({ event: 'dtmf', sequenceNumber: ++this.seq, streamId: this.streamId, dtmf: { digit } });
  }

  protected sendStart(): void {
    this.send({
      event: 'start',
      sequenceNumber: ++this.seq,
      start: {
        callId: this.callId,
        streamId: this.streamId,
        accountId: 'MA00000000000000000000',
        tracks: ['inbound'],
        mediaFormat: { encoding: this.mime, sampleRate: this.sampleRate },
      },
      extra_headers: this.extraHeaders,
    });
  }

  protected sendMedia(payload: Uint8Array): void {
    this.send({
      event: 'media',
      sequenceNumber: ++this.seq,
      streamId: this.streamId,
      media: {
        track: 'inbound',
        timestamp: String(Date.now()),
        chunk: ++this.chunk,
        payload: Buffer.from(payload).toString('base64'),
      },
      extra_headers: this.extraHeaders,
    });
  }

  protected returnMark(name: string, cleared: boolean): boolean {
    if (cleared) return false;
    this.send({ event: this.playedEvent, sequenceNumber: ++this.seq, streamId: this.streamId, name });
    return true;
  }

  protected onText(text: string, at: number): void {
    const msg = this.json(text);
    if (!msg) return;
    switch (msg['event']) {
      case 'playAudio': {
        if ('streamId' in msg) this.checkStreamId(msg['streamId'], 'streamId');
        const media = asObject(msg['media']);
        const format = `${String(media?.['contentType'])};rate=${String(media?.['sampleRate'])}`;
        if (format !== `${this.mime};rate=${this.sampleRate}`)
          this.violation(`playAudio as ${format}, the stream is ${this.mime};rate=${this.sampleRate}`);
        const bytes = this.base64(media?.['payload'], 'media.payload');
        if (!bytes) return;
        if (bytes.length === 0 || (this.mime === 'audio/x-l16' && bytes.length % 2 !== 0))
          this.violation(`playAudio of ${bytes.length} bytes`);
        this.gotMedia(bytes, at);
        return;
      }
      case 'checkpoint':
        this.checkStreamId(msg['streamId'], 'streamId');
        this.gotNamedMark(asString(msg['name']), at);
        return;
      case 'clearAudio':
        this.checkStreamId(msg['streamId'], 'streamId');
        this.gotClear(at);
        this.send({ event: 'clearedAudio', sequenceNumber: ++this.seq, streamId: this.streamId });
        return;
      default:
        this.violation(`unknown event ${String(msg['event'])}`);
    }
  }
}
