/**
 * Audio formats on the gateways' wires: codec names and content types as WireFormats, what each gateway
 * can carry (`CARRIED_FORMATS`, checked before anything is sized from a rate the peer chose), and
 * framing counted in whole 20 ms frames.
 */
import { FRAME_MS, frameBytes, type WireEncoding, type WireFormat } from '../audio/framer.js';
import { quote, type JsonObject } from './common.js';
import { ProtocolError, type Framing, type GatewayName } from './types.js';

const CODECS: ReadonlyMap<string, WireEncoding> = new Map([
  ['audio/x-mulaw', 'mulaw'],
  ['audio/mulaw', 'mulaw'],
  ['audio/pcmu', 'mulaw'],
  ['pcmu', 'mulaw'],
  ['audio/x-alaw', 'alaw'],
  ['audio/alaw', 'alaw'],
  ['audio/pcma', 'alaw'],
  ['pcma', 'alaw'],
  ['audio/l16', 's16le'],
  ['audio/x-l16', 's16le'],
  ['l16', 's16le'],
]);

/** The encoding a codec name or MIME type stands for ('PCMU', 'audio/x-l16', …); undefined if unknown. */
export function codecEncoding(name: string): WireEncoding | undefined {
  return CODECS.get(name.trim().toLowerCase());
}

/**
 * The formats each gateway can stream to us, by encoding and sample rate, from its docs (each protocol
 * module names its sources). A start that names anything else is refused (`invalid_start`) before a
 * single buffer is sized from it: the frame buffers, the VAD's resampler and the speaker's, whose filter
 * design for an arbitrary rate pair (1 GHz, say) takes seconds and gigabytes. Every rate here designs
 * its filters in milliseconds (test/unit/protocols/start-limits.test.ts measures them).
 *
 * - Twilio: mu-law 8 kHz only.
 * - Telnyx: the call's PCMU/PCMA at 8 kHz; L16 at `bidirectionalSamplingRate`'s 8/16/24 kHz.
 * - Plivo: `audio/x-mulaw;rate=8000`, `audio/x-l16;rate=8000|16000`.
 * - Vonage: `audio/l16;rate=8000|16000`; 24 kHz is in none of its docs but costs no more than Telnyx's.
 * - Exotel: raw L16 at 8 kHz, 16/24 kHz with `sample-rate`; mu-law 8 kHz (the newer `MediaFormat`).
 * - Asterisk: ulaw, alaw, slin…slin48 (12, 16, 24, 32, 44.1, 48 kHz); slin96/slin192 carry nothing a
 *   phone call needs and cost 4–8× the work, so they are refused.
 * - jambonz: L16 at the listen verb's `sampleRate` values, 8/16/24/48/64 kHz.
 */
export const CARRIED_FORMATS: Readonly<
  Record<GatewayName, Readonly<Partial<Record<WireEncoding, readonly number[]>>>>
> = {
  twilio: { mulaw: [8000] },
  telnyx: { mulaw: [8000], alaw: [8000], s16le: [8000, 16_000, 24_000] },
  plivo: { mulaw: [8000], s16le: [8000, 16_000] },
  vonage: { s16le: [8000, 16_000, 24_000] },
  exotel: { mulaw: [8000], s16le: [8000, 16_000, 24_000] },
  asterisk: {
    mulaw: [8000],
    alaw: [8000],
    s16le: [8000, 12_000, 16_000, 24_000, 32_000, 44_100, 48_000],
  },
  jambonz: { s16le: [8000, 16_000, 24_000, 48_000, 64_000] },
};

/**
 * `format` if the gateway can stream it (`CARRIED_FORMATS`), mono or stereo, in whole 20 ms frames
 * (every sink needs them); else `invalid_start`, saying what was refused.
 */
export function framesOf(gateway: GatewayName, format: WireFormat): WireFormat {
  const { encoding, sampleRate, channels } = format;
  const rates = CARRIED_FORMATS[gateway][encoding];
  if (!rates) throw new ProtocolError('invalid_start', `unsupported codec ${encoding} on ${gateway}`);
  if (!rates.includes(sampleRate))
    throw new ProtocolError(
      'invalid_start',
      `unsupported sample rate ${String(sampleRate)} Hz for ${encoding} on ${gateway}`,
    );
  if (channels !== 1 && channels !== 2)
    throw new ProtocolError('invalid_start', `unsupported channel count ${String(channels)} on ${gateway}`);
  try {
    frameBytes(format, FRAME_MS);
  } catch (cause) {
    throw new ProtocolError('invalid_start', `${gateway}: ${encoding} ${sampleRate} Hz × ${channels}`, {
      cause,
    });
  }
  return format;
}

/**
 * A number of a start message's format (a sample rate, a channel count) as a JSON number or a decimal
 * string; absent is undefined. Anything else refuses the start (`invalid_start`), so the call is closed
 * with the reason rather than left waiting for a start that parses.
 */
export function formatNumberAt(gateway: GatewayName, o: JsonObject, key: string): number | undefined {
  const value = o[key];
  if (value === undefined || value === null || value === '') return undefined;
  const n = typeof value === 'number' ? value : typeof value === 'string' ? Number(value) : NaN;
  if (!Number.isFinite(n))
    throw new ProtocolError('invalid_start', `${gateway}: ${key} ${quote(value, 16)} is not a number`);
  return n;
}

/**
 * A format a start message describes. Codecs we cannot carry (G.722, Opus, …) and rates or channel
 * counts the gateway does not stream are `invalid_start`: the call could not understand a word.
 */
export function describedFormat(
  gateway: GatewayName,
  codec: string,
  sampleRate: number,
  channels = 1,
): WireFormat {
  const encoding = codecEncoding(codec);
  if (!encoding)
    throw new ProtocolError('invalid_start', `${gateway}: codec ${quote(codec)} is not supported`);
  return framesOf(gateway, { encoding, sampleRate, channels: channels as 1 | 2 });
}

/**
 * `audio/x-mulaw;rate=8000`, `audio/l16;rate=16000` or a bare codec name as a WireFormat; without a
 * `rate` parameter the rate is `defaultRate`.
 */
export function parseContentType(gateway: GatewayName, value: string, defaultRate: number): WireFormat {
  const [type = '', ...params] = value.split(';');
  let rate = defaultRate;
  let channels = 1;
  for (const param of params) {
    const [key = '', v = ''] = param.split('=').map((s) => s.trim());
    if (key.toLowerCase() === 'rate') rate = Number(v);
    if (key.toLowerCase() === 'channels') channels = Number(v);
  }
  return describedFormat(gateway, type, rate, channels);
}

/** The outbound format the deployment configured, if it is one `plays` accepts; else `fallback`. */
export function configuredOutbound(
  gateway: GatewayName,
  configured: WireFormat | undefined,
  fallback: WireFormat,
  plays: (format: WireFormat) => boolean,
): WireFormat {
  const format = configured ?? fallback;
  if (!plays(format)) {
    const { encoding, sampleRate } = format;
    throw new ProtocolError('invalid_start', `${gateway} cannot play ${encoding} at ${sampleRate} Hz`);
  }
  return format;
}

export interface FramingRule {
  /** The shortest message, in ms of audio and/or in bytes (the larger wins), rounded up to whole frames. */
  readonly minMs: number;
  readonly minBytes?: number;
  /**
   * The longest message, in ms of audio and/or in bytes (the smaller wins; one is needed unless `exact`),
   * rounded down to whole frames.
   */
  readonly maxMs?: number;
  readonly maxBytes?: number;
  /** Every message exactly `minMs` (Vonage). */
  readonly exact?: boolean;
}

/**
 * A gateway's framing rule in bytes of `format`, in whole 20 ms frames (what the sink produces); a rate
 * that cannot make whole frames is `invalid_start`.
 */
export function framingFor(format: WireFormat, rule: FramingRule): Framing {
  try {
    const step = frameBytes(format, FRAME_MS);
    const least = Math.max(frameBytes(format, rule.minMs), rule.minBytes ?? 0);
    const minBytes = Math.ceil(least / step) * step;
    const max = Math.min(
      rule.maxMs === undefined ? Infinity : frameBytes(format, rule.maxMs),
      rule.maxBytes ?? Infinity,
    );
    if (!rule.exact && !Number.isFinite(max)) throw new RangeError('a framing rule needs a maximum');
    const maxBytes = rule.exact ? minBytes : max - (max % step);
    return { minBytes, multipleOfBytes: step, maxBytes, exact: rule.exact ?? false };
  } catch (cause) {
    const { encoding, sampleRate } = format;
    throw new ProtocolError('invalid_start', `cannot frame ${encoding} at ${sampleRate} Hz`, { cause });
  }
}
