/**
 * The gateway's end of a Twilio Media Stream, as messages: what Twilio sends for a caller (`connected`,
 * `start`, `media`, `dtmf`, mark echoes, `stop`) and what it takes from the server (`media`, `mark`,
 * `clear`). No transport and nothing of Node's: the terminal softphone (`voxbridge call`) and the
 * browser phone (`GET /`) both speak through it.
 *
 * Source: twilio.com/docs/voice/media-streams/websocket-messages.
 */

/** Twilio's placeholder account: the server never checks it. */
export const TWILIO_ACCOUNT_SID = 'AC' + '0'.repeat(32);
/** Mu-law 8 kHz: one byte per sample, 8 per millisecond. */
const BYTES_PER_MS = 8;

/** A Twilio-style id: a prefix and 32 hex digits. */
export function twilioSid(prefix: 'CA' | 'MZ'): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return prefix + Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

export function toBase64(bytes: Uint8Array): string {
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000)
    binary += String.fromCharCode(...bytes.subarray(i, Math.min(i + 0x8000, bytes.length)));
  return btoa(binary);
}

export function fromBase64(text: string): Uint8Array {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

export interface TwilioCallIds {
  callSid: string;
  streamSid: string;
}

/** What the server sends the gateway; anything else is ignored (undefined). */
export type TwilioServerMessage =
  { type: 'media'; payload: Uint8Array } | { type: 'mark'; name: string } | { type: 'clear' };

export function parseServerMessage(text: string): TwilioServerMessage | undefined {
  let msg: { event?: unknown; media?: { payload?: unknown }; mark?: { name?: unknown } };
  try {
    msg = JSON.parse(text) as typeof msg;
  } catch {
    return undefined;
  }
  if (typeof msg !== 'object' || msg === null) return undefined;
  switch (msg.event) {
    case 'media':
      if (typeof msg.media?.payload !== 'string') return undefined;
      try {
        return { type: 'media', payload: fromBase64(msg.media.payload) };
      } catch {
        return undefined;
      }
    case 'mark':
      return typeof msg.mark?.name === 'string' ? { type: 'mark', name: msg.mark.name } : undefined;
    case 'clear':
      return { type: 'clear' };
    default:
      return undefined;
  }
}

/**
 * The messages of one call, numbered as Twilio numbers them (`sequenceNumber`, `chunk`, and `timestamp`
 * in ms of caller audio since the stream began, all as strings).
 */
export class TwilioCallerMessages {
  #seq = 0;
  #chunk = 0;
  #inboundBytes = 0;

  constructor(
    readonly ids: TwilioCallIds,
    private readonly parameters: Record<string, string>,
  ) {}

  /** What Twilio sends once the call's stream starts: `connected`, then `start`. */
  start(): [object, object] {
    const { callSid, streamSid } = this.ids;
    return [
      { event: 'connected', protocol: 'Call', version: '1.0.0' },
      {
        event: 'start',
        sequenceNumber: this.#next(),
        start: {
          accountSid: TWILIO_ACCOUNT_SID,
          streamSid,
          callSid,
          tracks: ['inbound'],
          customParameters: this.parameters,
          mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 },
        },
        streamSid,
      },
    ];
  }

  /** The caller's audio, mu-law 8 kHz; `timestampMs` is where it starts on the caller's timeline. */
  media(payload: Uint8Array): { message: object; timestampMs: number } {
    const timestampMs = Math.round(this.#inboundBytes / BYTES_PER_MS);
    this.#inboundBytes += payload.length;
    return {
      timestampMs,
      message: {
        event: 'media',
        sequenceNumber: this.#next(),
        media: {
          track: 'inbound',
          chunk: String(++this.#chunk),
          timestamp: String(timestampMs),
          payload: toBase64(payload),
        },
        streamSid: this.ids.streamSid,
      },
    };
  }

  /** A mark whose audio has played (or was cleared), echoed back. */
  mark(name: string): object {
    return { event: 'mark', sequenceNumber: this.#next(), streamSid: this.ids.streamSid, mark: { name } };
  }

  dtmf(digit: string): object {
    return {
      event: 'dtmf',
      streamSid: this.ids.streamSid,
      sequenceNumber: this.#next(),
      dtmf: { track: 'inbound_track', digit },
    };
  }

  /** The caller hung up. */
  stop(): object {
    return {
      event: 'stop',
      sequenceNumber: this.#next(),
      streamSid: this.ids.streamSid,
      stop: { accountSid: TWILIO_ACCOUNT_SID, callSid: this.ids.callSid },
    };
  }

  #next(): string {
    return String(++this.#seq);
  }
}
