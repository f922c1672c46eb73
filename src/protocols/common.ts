/**
 * What the gateway modules share to read and write their wires: a message's bytes as text or a JSON
 * object, typed fields out of vendor JSON (which sends numbers as strings as often as not), base64 that
 * is checked instead of silently truncated, codec names and content types as WireFormats, framing counted
 * in 20 ms frames, DTMF digits, and custom parameters flattened to strings. Every failure is a
 * ProtocolError with the code the call logs. What a peer chose is bounded here before anything is sized
 * from it: the formats a start may name (`CARRIED_FORMATS`), and the call's parameters
 * (`limitParameters`).
 */
import { FRAME_MS, frameBytes, type WireEncoding, type WireFormat } from '../audio/framer.js';
import { ProtocolError, type Framing, type GatewayName, type InboundEvent } from './types.js';

export type JsonObject = { readonly [key: string]: unknown };

const UTF8 = new TextDecoder('utf-8', { fatal: true });

export function decodeUtf8(data: Uint8Array): string {
  try {
    return UTF8.decode(data);
  } catch (cause) {
    throw new ProtocolError('malformed', 'message is not UTF-8 text', { cause });
  }
}

/** A text message as a JSON object; binary is refused for gateways whose every message is JSON. */
export function jsonMessage(data: Uint8Array, isBinary: boolean, gateway: GatewayName): JsonObject {
  if (isBinary) throw new ProtocolError('unexpected_binary', `${gateway} sends no binary messages`);
  return parseJsonObject(decodeUtf8(data));
}

export function parseJsonObject(text: string): JsonObject {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (cause) {
    throw new ProtocolError('malformed', 'message is not JSON', { cause });
  }
  if (!isObject(value)) throw new ProtocolError('malformed', 'message is not a JSON object');
  return value;
}

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The string at `key`: absent or null is undefined, any other type is malformed. */
export function stringAt(o: JsonObject, key: string): string | undefined {
  const value = o[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw new ProtocolError('malformed', `${key} is not a string`);
  return value;
}

export function requireString(o: JsonObject, key: string): string {
  const value = stringAt(o, key);
  if (value === undefined) throw new ProtocolError('malformed', `${key} is missing`);
  return value;
}

/** The object at `key`: absent or null is undefined, any other type is malformed. */
export function objectAt(o: JsonObject, key: string): JsonObject | undefined {
  const value = o[key];
  if (value === undefined || value === null) return undefined;
  if (!isObject(value)) throw new ProtocolError('malformed', `${key} is not an object`);
  return value;
}

export function requireObject(o: JsonObject, key: string): JsonObject {
  const value = objectAt(o, key);
  if (value === undefined) throw new ProtocolError('malformed', `${key} is missing`);
  return value;
}

/** At most `max` characters of a peer's text, JSON-quoted, for an error message that gets logged. */
export function quote(value: unknown, max = 40): string {
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value));
  return JSON.stringify(text.length > max ? `${text.slice(0, max)}…` : text);
}

/** A non-negative number sent as a JSON number or a decimal string ("8000", "5"); absent is undefined. */
export function numberAt(o: JsonObject, key: string): number | undefined {
  const value = o[key];
  if (value === undefined || value === null || value === '') return undefined;
  const n = typeof value === 'number' ? value : typeof value === 'string' ? Number(value) : NaN;
  if (!Number.isFinite(n) || n < 0) throw new ProtocolError('malformed', `${key} is not a number`);
  return n;
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Standard padded base64 to bytes (a Buffer over fresh memory); anything else is malformed. */
export function decodeBase64(text: string, what: string): Uint8Array {
  if (!BASE64.test(text)) throw new ProtocolError('malformed', `${what} is not base64`);
  return Buffer.from(text, 'base64');
}

export function encodeBase64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
}

/**
 * The media event of the Twilio-style gateways (`media: {track, timestamp, payload}`). Audio on the
 * `outbound` track is what the gateway plays, our own voice: ignored, so it never reaches the VAD.
 * `withTimestamp` only where `media.timestamp` is ms since the stream began.
 */
export function jsonMedia(
  message: JsonObject,
  withTimestamp: boolean,
  streamIdKeys: readonly string[],
): InboundEvent {
  const media = requireObject(message, 'media');
  if (stringAt(media, 'track')?.startsWith('outbound'))
    return { type: 'ignored', what: 'outbound-track media' };
  const payload = decodeBase64(requireString(media, 'payload'), 'media.payload');
  const timestampMs = withTimestamp ? numberAt(media, 'timestamp') : undefined;
  const streamId = streamIdKeys.map((k) => stringAt(message, k)).find((id) => id !== undefined);
  return {
    type: 'media',
    payload,
    ...(timestampMs === undefined ? {} : { timestampMs }),
    ...(streamId === undefined ? {} : { streamId }),
  };
}

const DIGIT = /^[0-9*#A-D]$/;

/** A DTMF key as '0'–'9', '*', '#', 'A'–'D' (a JSON number 0–9 is taken too). */
export function dtmfDigit(value: unknown): string {
  const digit =
    typeof value === 'string' ? value.trim().toUpperCase() : typeof value === 'number' ? String(value) : '';
  if (!DIGIT.test(digit)) throw new ProtocolError('malformed', `not a DTMF digit: ${quote(value)}`);
  return digit;
}

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

/**
 * A start message's custom parameters, in either shape they come in: an object (`{"flow": "sales"}`,
 * as Telnyx's AsyncAPI start frame and Exotel show them) or the `[{"name": "flow", "value": "sales"}]`
 * list that Telnyx's Call Control `streaming_start` takes. Both give the same record (values as
 * `flattenParameters` makes them); list entries that are not `{name: string, …}` are skipped, and
 * anything that is neither an object nor a list is no parameters: never a reason to refuse the call.
 */
export function customParameters(value: unknown): Record<string, string> {
  if (Array.isArray(value)) {
    const pairs: Array<[string, unknown]> = [];
    for (const item of value as unknown[])
      if (isObject(item) && typeof item['name'] === 'string') pairs.push([item['name'], item['value']]);
    return stringEntries(pairs);
  }
  return isObject(value) ? flattenParameters(value) : {};
}

/**
 * Custom parameters (Twilio `customParameters`, jambonz metadata, Vonage headers, …) as strings: strings
 * kept, numbers and booleans printed, objects and arrays as JSON, null dropped, `skip` keys left out.
 */
export function flattenParameters(
  source: JsonObject | undefined,
  skip: readonly string[] = [],
): Record<string, string> {
  if (!source) return {};
  return stringEntries(Object.entries(source).filter(([key]) => !skip.includes(key)));
}

function stringEntries(pairs: ReadonlyArray<readonly [string, unknown]>): Record<string, string> {
  const entries: Array<[string, string]> = [];
  for (const [key, value] of pairs) {
    if (value === null || value === undefined) continue;
    // JSON gives nothing else: strings, numbers, booleans, objects and arrays.
    entries.push([key, typeof value === 'string' ? value : JSON.stringify(value)]);
  }
  // fromEntries defines own properties, so a key like "__proto__" stays data.
  return Object.fromEntries(entries);
}

/**
 * What a call keeps of the parameters a gateway (and the stream URL's query) gave it. They are listed by
 * `GET /calls`, sent in `call.started` and logged, so a peer must not size them: 150 calls with 1 MiB
 * each made a 157 MB log and a 157 MB `GET /calls`.
 */
export const PARAMETER_LIMITS = {
  maxCount: 32,
  maxNameChars: 64,
  maxValueChars: 1024,
  /** Names and values together. */
  maxTotalChars: 8192,
} as const;

export interface LimitedParameters {
  readonly parameters: Record<string, string>;
  /** How many were left out, and how many characters (names and values) they had. */
  readonly dropped: number;
  readonly droppedChars: number;
}

/**
 * `parameters` within `PARAMETER_LIMITS`: a parameter whose name or value is too long is left out
 * whole (a cut value would be a different value), and so is every one past the count or the total.
 * Those named in `first` (`flow`, which picks the call's flow) are taken first; the rest keep their
 * order. The call goes on with what is kept; the caller logs what was dropped.
 */
export function limitParameters(
  parameters: Readonly<Record<string, string>>,
  first: readonly string[] = ['flow'],
): LimitedParameters {
  const { maxCount, maxNameChars, maxValueChars, maxTotalChars } = PARAMETER_LIMITS;
  const entries = Object.entries(parameters);
  const ordered = [
    ...entries.filter(([name]) => first.includes(name)),
    ...entries.filter(([name]) => !first.includes(name)),
  ];
  const kept: Array<[string, string]> = [];
  let total = 0;
  let dropped = 0;
  let droppedChars = 0;
  for (const [name, value] of ordered) {
    const chars = name.length + value.length;
    if (
      name.length > maxNameChars ||
      value.length > maxValueChars ||
      kept.length >= maxCount ||
      total + chars > maxTotalChars
    ) {
      dropped++;
      droppedChars += chars;
      continue;
    }
    kept.push([name, value]);
    total += chars;
  }
  return { parameters: Object.fromEntries(kept), dropped, droppedChars };
}

/** The longest call or stream id taken: every call event and log line carries them. */
export const MAX_ID_CHARS = 128;

/** The start's ids if they are short enough to log and address (`/calls/{id}`); else `invalid_start`. */
export function checkIds(gateway: GatewayName, stream: { callId: string; streamId: string }): void {
  for (const [what, id] of [
    ['call id', stream.callId],
    ['stream id', stream.streamId],
  ] as const)
    if (id.length > MAX_ID_CHARS)
      throw new ProtocolError(
        'invalid_start',
        `${gateway}: ${what} of ${id.length} characters (at most ${MAX_ID_CHARS})`,
      );
}
