/**
 * Exotel Voicebot (AgentStream) against developer.exotel.com/docs/agentstream/websocket-protocol and the
 * chunk rules of .../stream-voicebot-applet (fixtures under test/fixtures/gateways/exotel).
 */
import { describe, expect, it } from 'vitest';
import { exotel } from '../../../src/protocols/exotel.js';
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

const SID = 'MZxxxxxxxxxxxxxxxxxxxxxxxx';
const parse = (name: string) => exotel.parse(fixtureMessage('exotel', name), false);
const startWith = (patch: Record<string, unknown>) => {
  const message = fixtureJson('exotel', 'start.json');
  return exotel.parse(json({ ...message, start: { ...(message['start'] as object), ...patch } }), false);
};

describe('exotel: parsing what Exotel sends', () => {
  it('connected', () => {
    expect(parse('connected.json')).toEqual({ type: 'connected' });
  });

  it('start: call_sid, stream_sid, L16 8 kHz both ways, custom_parameters, ≥ 3200 B in 320 B steps', () => {
    const l16 = { encoding: 's16le', sampleRate: 8000, channels: 1 };
    expect(startOf(parse('start.json'))).toEqual({
      callId: 'CAxxxxxxxxxxxxxxxxxxxxxxxx',
      streamId: SID,
      inbound: l16,
      outbound: l16,
      framing: { minBytes: 3200, multipleOfBytes: 320, maxBytes: 99_840, exact: false },
      parameters: { key1: 'value1' },
    });
  });

  it('start at 16 and 24 kHz: ≥ 3200 B and ≥ 100 ms, in multiples of 320 B, ≤ 100 000 B', () => {
    const s16 = startOf(startWith({ media_format: { encoding: 'audio/x-raw', sample_rate: '16000' } }));
    expect(s16.framing).toEqual({ minBytes: 3200, multipleOfBytes: 640, maxBytes: 99_840, exact: false });
    const s24 = startOf(startWith({ media_format: { encoding: 'audio/x-raw', sample_rate: '24000' } }));
    expect(s24.framing.multipleOfBytes % 320).toBe(0);
    expect(s24.framing.minBytes).toBe(4800);
  });

  it('start: camelCase ids as in Exotel sample code', () => {
    const message = { event: 'start', streamSid: 'S1', start: { streamSid: 'S1', callSid: 'C1' } };
    const s = startOf(exotel.parse(json(message), false));
    expect([s.callId, s.streamId]).toEqual(['C1', 'S1']);
  });

  it('media: 100 ms of decoded PCM, timestamp in ms', () => {
    expect(mediaOf(parse('media.json'))).toEqual({ payload: pattern(1600), timestampMs: 200 });
  });

  it('dtmf with duration, mark echo, stop with its reason', () => {
    expect(parse('dtmf.json')).toEqual({ type: 'dtmf', digit: '5', durationMs: 100 });
    expect(parse('mark.json')).toEqual({ type: 'mark', name: 'my-label' });
    expect(parse('stop.json')).toEqual({ type: 'stop', reason: 'callended' });
  });
});

describe('exotel: bad input', () => {
  it.each([
    ['not JSON', new TextEncoder().encode('{event:media}'), 'malformed'],
    ['an unknown event', json({ event: 'clear', stream_sid: SID }), 'unknown_event'],
    ['bad base64', json({ event: 'media', media: { payload: 'AAAAA' } }), 'malformed'],
    ['a start without stream_sid', json({ event: 'start', start: { call_sid: 'CA1' } }), 'invalid_start'],
  ])('%s', (_, data, code) => {
    expect(errorCode(() => exotel.parse(data, false))).toBe(code);
  });

  it('binary is unexpected', () => {
    expect(errorCode(() => exotel.parse(pattern(320), true))).toBe('unexpected_binary');
  });

  it('an encoding we cannot carry is refused', () => {
    expect(
      errorCode(() => startWith({ media_format: { encoding: 'audio/opus', sample_rate: '16000' } })),
    ).toBe('invalid_start');
  });
});

describe('exotel: what we send', () => {
  const stream = () => startOf(parse('start.json'));

  it('media: stream_sid and base64 L16 that round-trips', () => {
    const message = exotel.encodeMedia(pattern(3200), stream());
    expect(jsonOf(message)).toEqual(fixtureJson('exotel', 'send-media.json'));
    expect(payloadOf(message)).toEqual(pattern(3200));
  });

  it('mark and clear carry stream_sid', () => {
    expect(jsonOf(exotel.encodeMark('response-turn-3', stream()))).toEqual(
      fixtureJson('exotel', 'send-mark.json'),
    );
    expect(jsonOf(exotel.encodeClear(stream()))).toEqual(fixtureJson('exotel', 'send-clear.json'));
  });

  it('acknowledges playout; no hang-up message', () => {
    expect(exotel.playoutAcks).toBe(true);
    expect(exotel.canHangUp).toBe(false);
    expect(exotel.encodeHangup(stream())).toBeUndefined();
  });
});
