/**
 * Telnyx Media Streaming against developers.telnyx.com/docs/voice/programmable-voice/media-streaming and
 * its AsyncAPI page (fixtures under test/fixtures/gateways/telnyx).
 */
import { describe, expect, it } from 'vitest';
import { telnyx } from '../../../src/protocols/telnyx.js';
import type { ProtocolOptions } from '../../../src/protocols/types.js';
import {
  errorCode,
  fixtureJson,
  fixtureMessage,
  json,
  jsonOf,
  mediaOf,
  pattern,
  payloadOf,
  startOf,
} from './fixtures.js';

const SID = '32DE0DEA-53CB-4B21-89A4-9E1819C043BC';
const CALL = 'v2:T02llQxIyaRkhfRKxgAP8nY511EhFLizdvdUKJiSw8d6A9BborherQ';
const parse = (name: string, options?: ProtocolOptions) =>
  telnyx.parse(fixtureMessage('telnyx', name), false, options);
const startWith = (mediaFormat: object, options?: ProtocolOptions) => {
  const message = fixtureJson('telnyx', 'start.json');
  const start = { ...(message['start'] as object), media_format: mediaFormat };
  return telnyx.parse(json({ ...message, start }), false, options);
};

describe('telnyx: parsing what Telnyx sends', () => {
  it('connected', () => {
    expect(parse('connected.json')).toEqual({ type: 'connected' });
  });

  it('start: call_control_id, top-level stream_id, PCMU in, PCMU out by default', () => {
    expect(startOf(parse('start.json'))).toEqual({
      callId: CALL,
      streamId: SID,
      inbound: { encoding: 'mulaw', sampleRate: 8000, channels: 1 },
      outbound: { encoding: 'mulaw', sampleRate: 8000, channels: 1 },
      framing: { minBytes: 160, multipleOfBytes: 160, maxBytes: 8000, exact: false },
      parameters: {},
      dialect: { l16ByteOrder: 'big' },
    });
  });

  it('start: the older MIME encoding names and PCMA', () => {
    expect(startOf(parse('start-mime-encoding.json')).inbound.encoding).toBe('mulaw');
    expect(startOf(startWith({ encoding: 'PCMA', sample_rate: 8000, channels: 1 })).inbound.encoding).toBe(
      'alaw',
    );
  });

  it('start: custom parameters flattened to strings', () => {
    const message = fixtureJson('telnyx', 'start.json');
    const start = { ...(message['start'] as object), custom_parameters: { flow: 'sales', tries: 2 } };
    expect(startOf(telnyx.parse(json({ ...message, start }), false)).parameters).toEqual({
      flow: 'sales',
      tries: '2',
    });
  });

  it('start: custom parameters as the [{name, value}] list Call Control takes; a malformed one is ignored', () => {
    const message = fixtureJson('telnyx', 'start.json');
    const withParameters = (custom_parameters: unknown) =>
      startOf(
        telnyx.parse(
          json({ ...message, start: { ...(message['start'] as object), custom_parameters } }),
          false,
        ),
      );
    expect(
      withParameters([
        { name: 'flow', value: 'sales' },
        { name: 'tries', value: 2 },
        { value: 'nameless' },
        'stray',
      ]).parameters,
    ).toEqual({ flow: 'sales', tries: '2' });
    // Not parameters at all: the call still starts, without them.
    expect(withParameters('flow=sales').parameters).toEqual({});
    expect(withParameters(42).callId).toBe(startOf(parse('start.json')).callId);
  });

  it('start: the list and the object (the AsyncAPI example) give the same parameters', () => {
    const message = fixtureJson('telnyx', 'start.json');
    const withParameters = (custom_parameters: unknown) =>
      startOf(
        telnyx.parse(
          json({ ...message, start: { ...(message['start'] as object), custom_parameters } }),
          false,
        ),
      );
    const asObject = {
      customer_id: 'customer_123',
      flow: 'sales',
      tries: 2,
      vip: true,
      tags: ['a'],
      gone: null,
    };
    const asList = Object.entries(asObject).map(([name, value]) => ({ name, value }));
    const expected = { customer_id: 'customer_123', flow: 'sales', tries: '2', vip: 'true', tags: '["a"]' };
    expect(withParameters(asObject).parameters).toEqual(expected);
    expect(withParameters(asList).parameters).toEqual(expected);
    // Malformed entries or values are skipped, never a refused start: the call starts with the rest.
    const plain = startOf(parse('start.json'));
    for (const bad of [
      null,
      true,
      [],
      [null, 7, ['flow', 'x']],
      [{ name: 3, value: 'x' }],
      [{ value: 'x' }],
    ]) {
      const s = withParameters(bad);
      expect(s.parameters).toEqual({});
      expect({ ...s, parameters: {} }).toEqual(plain);
    }
    expect(withParameters([{ name: 'flow' }, { name: 'flow', value: 'sales' }]).parameters).toEqual({
      flow: 'sales',
    });
  });

  it('start: the outbound codec is the deployment setting (stream_bidirectional_codec)', () => {
    const l16 = { encoding: 's16le', sampleRate: 16000, channels: 1 } as const;
    const s = startOf(parse('start.json', { outbound: l16 }));
    expect(s.outbound).toEqual(l16);
    expect(s.framing).toEqual({ minBytes: 640, multipleOfBytes: 640, maxBytes: 32_000, exact: false });
    const wide = startOf(parse('start.json', { outbound: { ...l16, sampleRate: 24000 } }));
    expect(wide.framing.minBytes).toBe(960);
  });

  it('media, dtmf, mark echo, error, stop', () => {
    expect(mediaOf(parse('media.json'))).toEqual({ payload: pattern(160), timestampMs: 5 });
    expect(parse('dtmf.json')).toEqual({ type: 'dtmf', digit: '1' });
    expect(parse('mark.json')).toEqual({ type: 'mark', name: 'some_mark_name' });
    expect(parse('error.json')).toEqual({ type: 'ignored', what: 'error: unknown_error' });
    expect(parse('stop.json')).toEqual({ type: 'stop' });
  });

  it('media on the outbound track (both_tracks) is ignored', () => {
    const message = fixtureJson('telnyx', 'media.json');
    const media = { ...(message['media'] as object), track: 'outbound' };
    expect(telnyx.parse(json({ ...message, media }), false).type).toBe('ignored');
  });
});

describe('telnyx: bad input', () => {
  it.each([
    ['an unknown event', json({ event: 'transcription' }), 'unknown_event'],
    ['bad base64', json({ event: 'media', media: { payload: '@@@@' } }), 'malformed'],
    [
      'a start without stream_id',
      json({ event: 'start', start: { call_control_id: CALL } }),
      'invalid_start',
    ],
  ])('%s', (_, data, code) => {
    expect(errorCode(() => telnyx.parse(data, false))).toBe(code);
  });

  it('binary is unexpected', () => {
    expect(errorCode(() => telnyx.parse(pattern(160), true))).toBe('unexpected_binary');
  });

  it('codecs we cannot carry are refused at the start', () => {
    expect(errorCode(() => startWith({ encoding: 'G722', sample_rate: 16000, channels: 1 }))).toBe(
      'invalid_start',
    );
    const alaw16k = { encoding: 'alaw', sampleRate: 16000, channels: 1 } as const;
    expect(errorCode(() => parse('start.json', { outbound: alaw16k }))).toBe('invalid_start');
  });

  it('inbound L16: refused while the byte order is big-endian (media cannot be swapped statelessly)', () => {
    const l16 = { encoding: 'L16', sample_rate: 16000, channels: 1 };
    expect(errorCode(() => startWith(l16))).toBe('invalid_start');
    expect(startOf(startWith(l16, { l16ByteOrder: 'little' })).inbound).toEqual({
      encoding: 's16le',
      sampleRate: 16000,
      channels: 1,
    });
  });
});

describe('telnyx: what we send', () => {
  const stream = () => startOf(parse('start.json'));

  it('media: {"event":"media","media":{"payload"}}, no stream id, base64 that round-trips', () => {
    const message = telnyx.encodeMedia(pattern(160), stream());
    expect(jsonOf(message)).toEqual(fixtureJson('telnyx', 'send-media.json'));
    expect(payloadOf(message)).toEqual(pattern(160));
  });

  it('mark and clear', () => {
    expect(jsonOf(telnyx.encodeMark('some_mark_name', stream()))).toEqual(
      fixtureJson('telnyx', 'send-mark.json'),
    );
    expect(jsonOf(telnyx.encodeClear(stream()))).toEqual(fixtureJson('telnyx', 'send-clear.json'));
  });

  it('L16 goes out big-endian by default, as set with l16ByteOrder: little', () => {
    const l16 = { encoding: 's16le', sampleRate: 16000, channels: 1 } as const;
    const s16le = new Uint8Array([0x01, 0x02, 0x03, 0x04]);
    const big = startOf(parse('start.json', { outbound: l16 }));
    expect(payloadOf(telnyx.encodeMedia(s16le, big))).toEqual(new Uint8Array([0x02, 0x01, 0x04, 0x03]));
    const little = startOf(parse('start.json', { outbound: l16, l16ByteOrder: 'little' }));
    expect(payloadOf(telnyx.encodeMedia(s16le, little))).toEqual(s16le);
  });

  it('acknowledges playout; no hang-up message', () => {
    expect(telnyx.playoutAcks).toBe(true);
    expect(telnyx.canHangUp).toBe(false);
    expect(telnyx.encodeHangup(stream())).toBeUndefined();
  });
});
