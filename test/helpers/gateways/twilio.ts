/**
 * A fake Twilio `<Connect><Stream>`, written from Twilio's media-stream docs: JSON text messages only,
 * mu-law 8 kHz, `connected` then `start` (with `customParameters`), inbound `media` with string
 * numbers and a millisecond `timestamp`, `dtmf`, `stop`; it accepts only `media`, `mark` and `clear`
 * carrying its `streamSid`, plays media at real time, and returns marks by Twilio's rules: when the
 * audio before them has played, and every pending one on a clear.
 */
import { FakeGateway, randomId } from './fake-gateway.js';

export type { Received } from './fake-gateway.js';

export interface TwilioOptions {
  callSid?: string;
  streamSid?: string;
  customParameters?: Record<string, string>;
  headers?: Record<string, string>;
  /** The account the start message says the call belongs to. */
  accountSid?: string;
}

const FRAME_BYTES = 160;
const ACCOUNT_SID = 'AC00000000000000000000000000000000';

export class FakeTwilio extends FakeGateway {
  readonly callSid: string;
  readonly streamSid: string;
  private readonly customParameters: Record<string, string>;
  private readonly accountSid: string;

  constructor(url: string, options: TwilioOptions = {}) {
    const mulaw = { inboundBytesPerMs: 8, inboundChunkBytes: FRAME_BYTES, inboundSilence: 0xff };
    super(url, { ...mulaw, outboundBytesPerMs: 8 }, options);
    this.callSid = options.callSid ?? randomId('CA');
    this.streamSid = options.streamSid ?? randomId('MZ');
    this.customParameters = options.customParameters ?? {};
    this.accountSid = options.accountSid ?? ACCOUNT_SID;
  }

  get callId(): string {
    return this.callSid;
  }

  get streamId(): string {
    return this.streamSid;
  }

  dtmf(digit: string): void {
    this.send({
      event: 'dtmf',
      streamSid: this.streamSid,
      sequenceNumber: String(++this.seq),
      dtmf: { track: 'inbound_track', digit },
    });
  }

  override stop(): void {
    this.send({
      event: 'stop',
      sequenceNumber: String(++this.seq),
      streamSid: this.streamSid,
      stop: { accountSid: this.accountSid, callSid: this.callSid },
    });
  }

  protected sendStart(): void {
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

  protected sendMedia(payload: Uint8Array): void {
    this.send({
      event: 'media',
      sequenceNumber: String(++this.seq),
      media: this.twilioMedia(payload, true),
      streamSid: this.streamSid,
    });
  }

  protected returnMark(name: string): boolean {
    this.send({
      event: 'mark',
      sequenceNumber: String(++this.seq),
      streamSid: this.streamSid,
      mark: { name },
    });
    return true;
  }

  protected onText(text: string, at: number): void {
    this.twilioStyle(text, at, { key: 'streamSid' }, (bytes) => {
      if (bytes.length === 0 || bytes.length % FRAME_BYTES !== 0)
        this.violation(`media of ${bytes.length} bytes (not whole 160-byte frames)`);
    });
  }
}
