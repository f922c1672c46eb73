/**
 * A fake Exotel Voicebot applet (AgentStream, bidirectional), written from Exotel's WebSocket-protocol
 * and Voicebot-applet pages: JSON text only; raw 16-bit little-endian mono PCM ("raw/slin"), 8 kHz by
 * default (`?sample-rate=16000` on the URL for more), base64. Custom parameters are appended to the URL
 * and come back in `start.custom_parameters`. Exotel sends `connected`, `start` (`stream_sid`,
 * `start.call_sid`, `start.media_format` with numbers as strings), `media` about every 100 ms
 * (`timestamp` in ms since the stream began), `dtmf` (`digit`, `duration`), `mark` echoes, and `stop`
 * (reason "callended"). It accepts `media`, `mark` and `clear` carrying its `stream_sid`; each media
 * payload must be at least 3.2 KB, at most 100 KB and a multiple of 320 bytes, or the caller hears
 * gaps. Marks come back when the audio before them has played, and (as Twilio, whose protocol Exotel
 * follows; its docs do not say) all pending ones on a clear.
 */
import { FakeGateway, randomId, type FakeGatewayOptions } from './fake-gateway.js';

export interface ExotelOptions extends FakeGatewayOptions {
  callSid?: string;
  streamSid?: string;
  /** Up to 3 key-value pairs, appended to the URL. */
  customParameters?: Record<string, string>;
  sampleRate?: 8000 | 16000 | 24000;
}

const MIN_BYTES = 3200;
const MAX_BYTES = 100_000;
const MULTIPLE_OF_BYTES = 320;
/** Exotel streams the caller about every 100 ms. */
const INBOUND_MS = 100;
const ACCOUNT_SID = 'AC00000000000000000000000000';

/** The Voicebot URL with Exotel's query: the sample rate if not the default, then the custom parameters. */
function voicebotUrl(url: string, options: ExotelOptions): string {
  const query = new URLSearchParams(options.customParameters);
  if (options.sampleRate && options.sampleRate !== 8000) query.set('sample-rate', String(options.sampleRate));
  const q = query.toString();
  return q ? `${url}${url.includes('?') ? '&' : '?'}${q}` : url;
}

export class FakeExotel extends FakeGateway {
  readonly callId: string;
  readonly streamId: string;
  private readonly sampleRate: number;
  private readonly customParameters: Record<string, string>;

  constructor(url: string, options: ExotelOptions = {}) {
    const sampleRate = options.sampleRate ?? 8000;
    const bytesPerMs = (sampleRate * 2) / 1000;
    const slin = {
      inboundBytesPerMs: bytesPerMs,
      inboundChunkBytes: bytesPerMs * INBOUND_MS,
      inboundSilence: 0,
    };
    super(voicebotUrl(url, options), { ...slin, outboundBytesPerMs: bytesPerMs }, options);
    this.sampleRate = sampleRate;
    this.callId = options.callSid ?? randomId('', 32);
    this.streamId = options.streamSid ?? randomId('', 32);
    this.customParameters = options.customParameters ?? {};
  }

  dtmf(digit: string): void {
    this.send({
      event: 'dtmf',
      sequence_number: String(++this.seq),
      stream_sid: this.streamId,
      dtmf: { digit, duration: '100' },
    });
  }

  override stop(): void {
    this.send({
      event: 'stop',
      sequence_number: String(++this.seq),
      stream_sid: this.streamId,
      stop: { call_sid: this.callId, account_sid: ACCOUNT_SID, reason: 'callended' },
    });
  }

  protected sendStart(): void {
    this.send({ event: 'connected' });
    this.send({
      event: 'start',
      sequence_number: String(++this.seq),
      stream_sid: this.streamId,
      start: {
        stream_sid: this.streamId,
        call_sid: this.callId,
        account_sid: ACCOUNT_SID,
        from: '+919876543210',
        to: '+918047491899',
        custom_parameters: this.customParameters,
        media_format: { encoding: 'audio/x-raw', sample_rate: String(this.sampleRate), bit_rate: '16' },
      },
    });
  }

  protected sendMedia(payload: Uint8Array): void {
    this.send({
      event: 'media',
      sequence_number: String(++this.seq),
      stream_sid: this.streamId,
      media: this.twilioMedia(payload, false),
    });
  }

  protected returnMark(name: string): boolean {
    this.send({
      event: 'mark',
      sequence_number: String(++this.seq),
      stream_sid: this.streamId,
      mark: { name },
    });
    return true;
  }

  protected onText(text: string, at: number): void {
    this.twilioStyle(text, at, { key: 'stream_sid' }, (bytes) => {
      if (bytes.length < MIN_BYTES || bytes.length > MAX_BYTES || bytes.length % MULTIPLE_OF_BYTES !== 0)
        this.violation(`media of ${bytes.length} bytes (Exotel: 3200 to 100 000, a multiple of 320)`);
    });
  }
}
