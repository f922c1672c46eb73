/**
 * Twilio Media Streams against the message shapes of twilio.com/docs/voice/media-streams/websocket-messages
 * (fixtures under test/fixtures/gateways/twilio).
 */
import { describe, expect, it } from 'vitest';
import { twilio } from '../../../src/protocols/twilio.js';
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
  text,
} from './fixtures.js';

const MULAW_8K = { encoding: 'mulaw', sampleRate: 8000, channels: 1 };
const SID = 'MZ18ad3ab5a668481ce02b83e7395059f0';
const parse = (name: string) => twilio.parse(fixtureMessage('twilio', name), false);
const stream = () => startOf(parse('start.json'));

describe('twilio: parsing what Twilio sends', () => {
  it('connected', () => {
    expect(parse('connected.json')).toEqual({ type: 'connected' });
  });

  it('start: callSid, accountSid, streamSid, mu-law both ways, customParameters, whole 160-byte frames', () => {
    expect(stream()).toEqual({
      callId: 'CA123',
      accountSid: 'AC123',
      streamId: SID,
      inbound: MULAW_8K,
      outbound: MULAW_8K,
      framing: { minBytes: 160, multipleOfBytes: 160, maxBytes: 16_000, exact: false },
      parameters: { FirstName: 'Jane', LastName: 'Doe', RemoteParty: 'Bob' },
    });
  });

  it('start: the top-level streamSid serves when start has none; no callSid falls back to it', () => {
    const message = fixtureJson('twilio', 'start.json');
    const { streamSid: _, callSid: __, ...rest } = message['start'] as Record<string, unknown>;
    const s = startOf(twilio.parse(json({ ...message, start: rest }), false));
    expect([s.callId, s.streamId]).toEqual([SID, SID]);
  });

  it('media: decoded payload and the string timestamp as ms', () => {
    expect(mediaOf(parse('media.json'))).toEqual({ payload: pattern(160), timestampMs: 5 });
  });

  it('media on the outbound track is ignored (our own voice)', () => {
    const message = fixtureJson('twilio', 'media.json');
    const media = { ...(message['media'] as object), track: 'outbound' };
    expect(twilio.parse(json({ ...message, media }), false).type).toBe('ignored');
  });

  it('dtmf, mark echo (outcome left to the sink), stop', () => {
    expect(parse('dtmf.json')).toEqual({ type: 'dtmf', digit: '1' });
    expect(parse('mark.json')).toEqual({ type: 'mark', name: 'my label' });
    expect(parse('stop.json')).toEqual({ type: 'stop' });
  });
});

describe('twilio: bad input', () => {
  it.each([
    ['not JSON', text('{"event":'), 'malformed'],
    ['a JSON array', json([1, 2]), 'malformed'],
    ['no event name', json({ streamSid: SID }), 'malformed'],
    ['an unknown event', json({ event: 'transcription', streamSid: SID }), 'unknown_event'],
    ['bad base64', json({ event: 'media', media: { payload: 'no+Jhoa*Jjpz' } }), 'malformed'],
    ['media without payload', json({ event: 'media', media: { track: 'inbound' } }), 'malformed'],
    [
      'a non-numeric timestamp',
      json({ event: 'media', media: { payload: 'AAAA', timestamp: 'x' } }),
      'malformed',
    ],
    ['a DTMF key that is not one', json({ event: 'dtmf', dtmf: { digit: 'E' } }), 'malformed'],
    ['a start without streamSid', json({ event: 'start', start: { callSid: 'CA1' } }), 'invalid_start'],
    [
      'a start in a codec Twilio does not stream',
      json({
        event: 'start',
        streamSid: SID,
        start: { mediaFormat: { encoding: 'audio/opus', sampleRate: 48000 } },
      }),
      'invalid_start',
    ],
    ['invalid UTF-8', new Uint8Array([0x7b, 0xff, 0x7d]), 'malformed'],
  ])('%s', (_, data, code) => {
    expect(errorCode(() => twilio.parse(data, false))).toBe(code);
  });

  it('binary is unexpected: Twilio sends JSON text only', () => {
    expect(errorCode(() => twilio.parse(pattern(160), true))).toBe('unexpected_binary');
  });
});

describe('twilio: what we send', () => {
  it('media: the documented shape, base64 that round-trips', () => {
    const message = twilio.encodeMedia(pattern(160), stream());
    expect(jsonOf(message)).toEqual(fixtureJson('twilio', 'send-media.json'));
    expect(payloadOf(message)).toEqual(pattern(160));
  });

  it('mark and clear carry the streamSid', () => {
    expect(jsonOf(twilio.encodeMark('my label', stream()))).toEqual(fixtureJson('twilio', 'send-mark.json'));
    expect(jsonOf(twilio.encodeClear(stream()))).toEqual(fixtureJson('twilio', 'send-clear.json'));
  });

  it('acknowledges playout; no hang-up message (closing the socket ends <Connect>)', () => {
    expect(twilio.playoutAcks).toBe(true);
    expect(twilio.canHangUp).toBe(false);
    expect(twilio.encodeHangup(stream())).toBeUndefined();
    expect(twilio.subprotocol).toBeUndefined();
  });
});
