/**
 * All seven gateways side by side: audio we encode is what the vendor decodes (base64 JSON payloads,
 * binary frames, Telnyx's big-endian L16), audio the vendor sends in its own shape parses back to the
 * same bytes, and a mark we send, echoed the way the vendor echoes it, comes back as the same mark.
 */
import { describe, expect, it } from 'vitest';
import { frameBytes } from '../../../src/audio/framer.js';
import { PROTOCOLS } from '../../../src/protocols/index.js';
import {
  GATEWAYS,
  type GatewayName,
  type OutboundMessage,
  type ProtocolOptions,
  type StreamInfo,
} from '../../../src/protocols/types.js';
import {
  binaryOf,
  fixtureMessage,
  json,
  jsonOf,
  mediaOf,
  pattern,
  payloadOf,
  startOf,
  text,
} from './fixtures.js';

type Inbound = [data: Uint8Array, isBinary: boolean];

interface Row {
  gateway: GatewayName;
  label: string;
  start: string;
  options?: ProtocolOptions;
  /** What the vendor takes out of one of our media messages. */
  decode: (message: OutboundMessage) => Uint8Array;
  /** Caller audio as the vendor sends it. */
  inbound: (audio: Uint8Array, stream: StreamInfo) => Inbound;
  /** The vendor's echo of the mark message we sent. */
  echo: (mark: OutboundMessage, stream: StreamInfo) => Inbound;
}

const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64');
const swap16 = (bytes: Uint8Array) => bytes.map((_, i) => bytes[i ^ 1]!);
const markName = (mark: OutboundMessage) => (jsonOf(mark) as { mark: { name: string } }).mark.name;

const ROWS: Row[] = [
  {
    gateway: 'twilio',
    label: 'mu-law',
    start: 'start.json',
    decode: payloadOf,
    inbound: (a, s) => [
      json({ event: 'media', streamSid: s.streamId, media: { track: 'inbound', payload: b64(a) } }),
      false,
    ],
    echo: (m, s) => [json({ event: 'mark', streamSid: s.streamId, mark: { name: markName(m) } }), false],
  },
  {
    gateway: 'telnyx',
    label: 'PCMU',
    start: 'start.json',
    decode: payloadOf,
    inbound: (a, s) => [
      json({ event: 'media', stream_id: s.streamId, media: { track: 'inbound', payload: b64(a) } }),
      false,
    ],
    echo: (m, s) => [json({ event: 'mark', stream_id: s.streamId, mark: { name: markName(m) } }), false],
  },
  {
    gateway: 'telnyx',
    label: 'L16 out, big-endian on the wire',
    start: 'start.json',
    options: { outbound: { encoding: 's16le', sampleRate: 16000, channels: 1 } },
    decode: (m) => swap16(payloadOf(m)),
    inbound: (a, s) => [json({ event: 'media', stream_id: s.streamId, media: { payload: b64(a) } }), false],
    echo: (m, s) => [json({ event: 'mark', stream_id: s.streamId, mark: { name: markName(m) } }), false],
  },
  {
    gateway: 'plivo',
    label: 'mu-law',
    start: 'start.json',
    decode: payloadOf,
    inbound: (a, s) => [
      json({ event: 'media', streamId: s.streamId, media: { track: 'inbound', payload: b64(a) } }),
      false,
    ],
    echo: (m, s) => [
      json({ event: 'playedStream', streamId: s.streamId, name: (jsonOf(m) as { name: string }).name }),
      false,
    ],
  },
  {
    gateway: 'plivo',
    label: 'L16 16 kHz',
    start: 'start-l16.json',
    decode: payloadOf,
    inbound: (a, s) => [json({ event: 'media', streamId: s.streamId, media: { payload: b64(a) } }), false],
    echo: (m, s) => [
      json({ event: 'playedStream', streamId: s.streamId, name: (jsonOf(m) as { name: string }).name }),
      false,
    ],
  },
  {
    gateway: 'vonage',
    label: 'L16 16 kHz',
    start: 'connected.json',
    decode: binaryOf,
    inbound: (a) => [a, true],
    echo: (m) => [
      json({ event: 'websocket:notify', payload: (jsonOf(m) as { payload: unknown }).payload }),
      false,
    ],
  },
  {
    gateway: 'exotel',
    label: 'L16 8 kHz',
    start: 'start.json',
    decode: payloadOf,
    inbound: (a, s) => [
      json({
        event: 'media',
        stream_sid: s.streamId,
        media: { chunk: '1', timestamp: '0', payload: b64(a) },
      }),
      false,
    ],
    echo: (m, s) => [json({ event: 'mark', stream_sid: s.streamId, mark: { name: markName(m) } }), false],
  },
  {
    gateway: 'asterisk',
    label: 'ulaw, plain-text control',
    start: 'media-start.txt',
    decode: binaryOf,
    inbound: (a) => [a, true],
    echo: (m) => [text(`MEDIA_MARK_PROCESSED ${String(m).split(' ')[1]}`), false],
  },
  {
    gateway: 'asterisk',
    label: 'slin16, JSON control',
    start: 'media-start-slin16.json',
    decode: binaryOf,
    inbound: (a) => [a, true],
    echo: (m, s) => {
      const id = (jsonOf(m) as { correlation_id: string }).correlation_id;
      return [json({ event: 'MEDIA_MARK_PROCESSED', channel_id: s.callId, correlation_id: id }), false];
    },
  },
  {
    gateway: 'jambonz',
    label: 'L16 16 kHz',
    start: 'metadata.json',
    decode: binaryOf,
    inbound: (a) => [a, true],
    echo: (m) => {
      const { data } = jsonOf(m) as { data: { name: string } };
      return [json({ type: 'mark', data: { name: data.name, event: 'playout' } }), false];
    },
  },
];

describe('every gateway', () => {
  it('PROTOCOLS has one module per gateway, under its own name', () => {
    expect(Object.keys(PROTOCOLS).sort()).toEqual([...GATEWAYS].sort());
    for (const name of GATEWAYS) expect(PROTOCOLS[name].name).toBe(name);
  });

  it('the table covers them all', () => {
    expect(new Set(ROWS.map((r) => r.gateway))).toEqual(new Set(GATEWAYS));
  });
});

describe.each(ROWS)('$gateway ($label)', (row) => {
  const protocol = PROTOCOLS[row.gateway];
  const stream = () => startOf(protocol.parse(fixtureMessage(row.gateway, row.start), false, row.options));

  it('one message of our audio, as large as the framing allows at least, is what the vendor plays', () => {
    const s = stream();
    for (const size of [s.framing.minBytes, s.framing.exact ? s.framing.minBytes : s.framing.minBytes * 3]) {
      const audio = pattern(size);
      expect(row.decode(protocol.encodeMedia(audio, s))).toEqual(audio);
    }
  });

  it('20 ms of caller audio, sent the vendor’s way, parses to the same bytes', () => {
    const s = stream();
    const audio = pattern(frameBytes(s.inbound, 20));
    const [data, isBinary] = row.inbound(audio, s);
    expect(mediaOf(protocol.parse(data, isBinary, row.options)).payload).toEqual(audio);
  });

  it('a mark we send, echoed by the vendor, comes back as the same mark', () => {
    const s = stream();
    const mark = protocol.encodeMark('m12', s);
    expect(mark).toBeDefined();
    const [data, isBinary] = row.echo(mark!, s);
    expect(protocol.parse(data, isBinary, row.options)).toMatchObject({ type: 'mark', name: 'm12' });
  });

  it('the framing fits the outbound format: whole 20 ms frames, min ≤ max', () => {
    const { framing, outbound } = stream();
    const frame = frameBytes(outbound, 20);
    expect(framing.multipleOfBytes % frame === 0 || frame % framing.multipleOfBytes === 0).toBe(true);
    expect(framing.minBytes % framing.multipleOfBytes).toBe(0);
    expect(framing.maxBytes % framing.multipleOfBytes).toBe(0);
    expect(framing.minBytes).toBeLessThanOrEqual(framing.maxBytes);
  });
});
