/**
 * A fake Telnyx media stream (`stream_bidirectional_mode: rtp`), written from Telnyx's media-streaming
 * docs: JSON text only; `connected`, then `start` (top-level `stream_id`, `start.call_control_id`,
 * `start.media_format` with codec names like 'PCMU', `start.custom_parameters`: an object as the
 * AsyncAPI example shows it, or with `parametersAsList` the `[{name, value}]` list `streaming_start`
 * takes), inbound `media` (20 ms RTP payloads, base64, a millisecond `timestamp`), `dtmf`, `stop`. It
 * plays what `stream_bidirectional_codec` says (PCMU 8 kHz by default) and accepts `media` with 20 ms
 * to 30 s of audio, `mark` and `clear`; none needs the stream id, but one that carries it must carry
 * ours. Marks come back by Twilio's rules: when the audio before them has played, all pending ones on a
 * clear.
 */
import { randomUUID } from 'node:crypto';
import { FakeGateway, randomId, type FakeGatewayOptions } from './fake-gateway.js';

export interface TelnyxOptions extends FakeGatewayOptions {
  callControlId?: string;
  streamId?: string;
  customParameters?: Record<string, string>;
  /** Send `custom_parameters` as `streaming_start`'s `[{name, value}]` list instead of an object. */
  parametersAsList?: boolean;
  /** `stream_bidirectional_codec` (and the call's codec): PCMU or PCMA at 8 kHz. */
  codec?: 'PCMU' | 'PCMA';
}

const G711_BYTES_PER_MS = 8;
const MIN_MS = 20;
const MAX_MS = 30_000;

export class FakeTelnyx extends FakeGateway {
  readonly callId: string;
  readonly streamId: string;
  private readonly options: TelnyxOptions;

  constructor(url: string, options: TelnyxOptions = {}) {
    const silence = options.codec === 'PCMA' ? 0xd5 : 0xff;
    const g711 = { inboundBytesPerMs: G711_BYTES_PER_MS, inboundChunkBytes: 160, inboundSilence: silence };
    super(url, { ...g711, outboundBytesPerMs: G711_BYTES_PER_MS }, options);
    this.options = options;
    this.callId = options.callControlId ?? `v3:${randomId('', 40)}`;
    this.streamId = options.streamId ?? randomUUID();
  }

  dtmf(digit: string): void {
    this.send({
      event: 'dtmf',
      stream_id: this.streamId,
      occurred_at: new Date().toISOString(),
      sequence_number: String(++this.seq),
      dtmf: { digit },
    });
  }

  override stop(): void {
    this.send({
      event: 'stop',
      sequence_number: String(++this.seq),
      stop: { user_id: USER_ID, call_control_id: this.callId },
      stream_id: this.streamId,
    });
  }

  protected sendStart(): void {
    this.send({ event: 'connected', version: '1.0.0' });
    this.send({
      event: 'start',
      sequence_number: String(++this.seq),
      start: {
        user_id: USER_ID,
        call_control_id: this.callId,
        call_session_id: randomUUID(),
        from: '+13122010094',
        to: '+13122123456',
        tags: [],
        client_state: null,
        media_format: { encoding: this.options.codec ?? 'PCMU', sample_rate: 8000, channels: 1 },
        custom_parameters: this.customParameters(),
      },
      stream_id: this.streamId,
    });
  }

  private customParameters(): Record<string, string> | Array<{ name: string; value: string }> {
    const parameters = this.options.customParameters ?? {};
    if (!this.options.parametersAsList) return parameters;
    return Object.entries(parameters).map(([name, value]) => ({ name, value }));
  }

  protected sendMedia(payload: Uint8Array): void {
    this.send({
      event: 'media',
      sequence_number: String(++this.seq),
      media: this.twilioMedia(payload, true),
      stream_id: this.streamId,
    });
  }

  protected returnMark(name: string): boolean {
    this.send({
      event: 'mark',
      stream_id: this.streamId,
      sequence_number: String(++this.seq),
      mark: { name },
    });
    return true;
  }

  protected onText(text: string, at: number): void {
    this.twilioStyle(text, at, { key: 'stream_id', optional: true }, (bytes) => {
      const ms = bytes.length / G711_BYTES_PER_MS;
      if (ms < MIN_MS || ms > MAX_MS) this.violation(`media of ${ms} ms (Telnyx takes 20 ms to 30 s)`);
    });
  }
}

const USER_ID = '3e6f995f-85f7-4705-9741-53b116d28237';
