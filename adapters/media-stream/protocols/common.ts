/**
 * What the gateway modules share to read and write their wires: a message's bytes as text or a JSON
 * object, typed fields out of vendor JSON (which sends numbers as strings as often as not), base64 that
 * is checked instead of silently truncated, codec names and content types as WireFormats, framing counted
 * in 20 ms frames, DTMF digits, and custom parameters flattened to strings. Every failure is a
 * ProtocolError with the code the call logs.
 */
import { FRAME_MS, frameBytes, type WireEncoding, type WireFormat } from '../../../src/audio/framer.js';
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
  if (!DIGIT.test(digit)) throw new ProtocolError('malformed', `not a DTMF digit: ${JSON.stringify(value)}`);
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

/** `format` if it makes whole 20 ms frames (every sink needs them); else `invalid_start`. */
export function framesOf(gateway: GatewayName, format: WireFormat): WireFormat {
  try {
    frameBytes(format, FRAME_MS);
  } catch (cause) {
    const { encoding, sampleRate, channels } = format;
    throw new ProtocolError('invalid_start', `${gateway}: ${encoding} ${sampleRate} Hz × ${channels}`, {
      cause,
    });
  }
  return format;
}

/**
 * A format a start message describes. Codecs we cannot carry (G.722, Opus, …) and impossible rates or
 * channel counts are `invalid_start`: the call could not understand a word.
 */
export function describedFormat(
  gateway: GatewayName,
  codec: string,
  sampleRate: number,
  channels = 1,
): WireFormat {
  const encoding = codecEncoding(codec);
  if (!encoding) throw new ProtocolError('invalid_start', `${gateway}: codec ${codec} is not supported`);
  if (channels !== 1 && channels !== 2)
    throw new ProtocolError('invalid_start', `${gateway}: ${channels} channels`);
  return framesOf(gateway, { encoding, sampleRate, channels });
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
 * Custom parameters (Twilio `customParameters`, jambonz metadata, Vonage headers, …) as strings: strings
 * kept, numbers and booleans printed, objects and arrays as JSON, null dropped, `skip` keys left out.
 */
/**
 * A start message's custom parameters, in either shape gateways use: an object (`{"flow": "sales"}`)
 * or the list the Call Control APIs take (`[{"name": "flow", "value": "sales"}]`, Telnyx's
 * `custom_parameters`). Entries without a string name are skipped; anything else is no parameters.
 */
export function customParameters(value: unknown): Record<string, string> {
  if (Array.isArray(value)) {
    const entries: Array<[string, string]> = [];
    for (const item of value as unknown[]) {
      if (typeof item !== 'object' || item === null) continue;
      const { name, value: v } = item as { name?: unknown; value?: unknown };
      if (typeof name !== 'string' || name === '' || v === null || v === undefined) continue;
      entries.push([name, typeof v === 'string' ? v : JSON.stringify(v)]);
    }
    return Object.fromEntries(entries);
  }
  if (typeof value === 'object' && value !== null) return flattenParameters(value as JsonObject);
  return {};
}

export function flattenParameters(
  source: JsonObject | undefined,
  skip: readonly string[] = [],
): Record<string, string> {
  if (!source) return {};
  const entries: Array<[string, string]> = [];
  for (const [key, value] of Object.entries(source)) {
    if (value === null || value === undefined || skip.includes(key)) continue;
    // JSON gives nothing else: strings, numbers, booleans, objects and arrays.
    const text = typeof value === 'string' ? value : JSON.stringify(value);
    entries.push([key, text]);
  }
  // fromEntries defines own properties, so a key like "__proto__" stays data.
  return Object.fromEntries(entries);
}
