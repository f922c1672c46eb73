/**
 * Fixture access for the gateway protocol tests. Fixtures under test/fixtures/gateways/<gateway>/ are
 * messages as the vendors' docs (or source) show them: JSON ones carry a `_source` field naming the page,
 * dropped before a message goes to `parse` or is compared with an encoder's output; `.txt` ones are
 * Asterisk's plain-text control lines. Audio payloads are a known test pattern (`pattern(n)`), so decoded
 * bytes can be checked byte for byte.
 */
import { readFileSync } from 'node:fs';
import { expect } from 'vitest';
import {
  ProtocolError,
  type GatewayName,
  type InboundEvent,
  type OutboundMessage,
  type ProtocolErrorCode,
  type StreamInfo,
} from '../../../src/protocols/types.js';

const ROOT = new URL('../../fixtures/gateways/', import.meta.url);

/** The bytes the fixtures' payloads hold: `(i * 37 + 11) & 0xff`. */
export function pattern(length: number): Uint8Array {
  return Uint8Array.from({ length }, (_, i) => (i * 37 + 11) & 0xff);
}

function read(gateway: GatewayName, name: string): string {
  return readFileSync(new URL(`${gateway}/${name}`, ROOT), 'utf8');
}

/** A JSON fixture without its `_source` (which every JSON fixture must have). */
export function fixtureJson(gateway: GatewayName, name: string): Record<string, unknown> {
  const { _source, ...message } = JSON.parse(read(gateway, name)) as Record<string, unknown>;
  expect(typeof _source, `${gateway}/${name} names its source`).toBe('string');
  return message;
}

/** A fixture as the bytes of the text message the gateway sends. */
export function fixtureMessage(gateway: GatewayName, name: string): Uint8Array {
  if (name.endsWith('.txt')) return text(read(gateway, name).trimEnd());
  return json(fixtureJson(gateway, name));
}

export function text(value: string): Uint8Array {
  return new TextEncoder().encode(value);
}

export function json(value: unknown): Uint8Array {
  return text(JSON.stringify(value));
}

/** The code of the ProtocolError `fn` throws; anything else thrown, or nothing, fails the test. */
export function errorCode(fn: () => unknown): ProtocolErrorCode {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ProtocolError);
    return (error as ProtocolError).code;
  }
  throw new Error('expected a ProtocolError, nothing was thrown');
}

export function startOf(event: InboundEvent): StreamInfo {
  if (event.type !== 'start') throw new Error(`expected a start, got ${event.type}`);
  return event.stream;
}

/** A media event's payload as a plain Uint8Array (Buffers compare as their own class otherwise). */
export function mediaOf(event: InboundEvent): { payload: Uint8Array; timestampMs: number | undefined } {
  if (event.type !== 'media') throw new Error(`expected media, got ${event.type}`);
  return { payload: new Uint8Array(event.payload), timestampMs: event.timestampMs };
}

/** An outbound text frame parsed as JSON. */
export function jsonOf(message: OutboundMessage | undefined): unknown {
  if (typeof message !== 'string') throw new Error('expected a text message');
  return JSON.parse(message);
}

/** An outbound binary frame as a plain Uint8Array. */
export function binaryOf(message: OutboundMessage | undefined): Uint8Array {
  if (!(message instanceof Uint8Array)) throw new Error('expected a binary message');
  return new Uint8Array(message);
}

/** The base64 `media.payload` of an outbound JSON message, decoded. */
export function payloadOf(message: OutboundMessage | undefined): Uint8Array {
  const { media } = jsonOf(message) as { media: { payload: string } };
  return new Uint8Array(Buffer.from(media.payload, 'base64'));
}
