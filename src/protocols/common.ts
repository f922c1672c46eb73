/**
 * What the gateway modules share to read their JSON wires: a message's bytes as text or a JSON object,
 * typed fields out of vendor JSON (which sends numbers as strings as often as not), base64 that is
 * checked instead of silently truncated, Twilio-style media events and DTMF digits. Every failure is a
 * ProtocolError with the code the call logs. Formats are in `formats.ts`, custom parameters and ids in
 * `parameters.ts`.
 */
import { ProtocolError, type GatewayName, type InboundEvent } from './types.js';

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

/**
 * Standard padded base64 to bytes (a Buffer over fresh memory); anything else is malformed. Node's
 * decoder skips what is not base64 and stops at padding, so any such character leaves the bytes short
 * of what the text's length promises; it also takes the URL-safe alphabet, refused here. (A regular
 * expression over the text cost about 1 % of the event loop at 200 calls.)
 */
export function decodeBase64(text: string, what: string): Uint8Array {
  const padding = text.endsWith('==') ? 2 : text.endsWith('=') ? 1 : 0;
  const bytes = text.length % 4 === 0 ? Buffer.from(text, 'base64') : undefined;
  if (
    bytes === undefined ||
    bytes.length !== (text.length / 4) * 3 - padding ||
    text.includes('-') ||
    text.includes('_')
  )
    throw new ProtocolError('malformed', `${what} is not base64`);
  return bytes;
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
