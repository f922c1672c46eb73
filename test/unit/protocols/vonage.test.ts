/**
 * Vonage Voice WebSockets against developer.vonage.com/en/voice/voice-api/concepts/websockets (fixtures
 * under test/fixtures/gateways/vonage): binary L16 audio, JSON text events.
 */
import { describe, expect, it } from 'vitest';
import { vonage } from '../../../src/protocols/vonage.js';
import {
  binaryOf,
  errorCode,
  fixtureJson,
  fixtureMessage,
  json,
  jsonOf,
  pattern,
  startOf,
  text,
} from './fixtures.js';

const parse = (name: string) => vonage.parse(fixtureMessage('vonage', name), false);

describe('vonage: parsing what Vonage sends', () => {
  it('websocket:connected is the start: L16 at the content-type rate, headers as parameters', () => {
    const s = startOf(parse('connected.json'));
    const l16 = { encoding: 's16le', sampleRate: 16000, channels: 1 };
    expect(s).toMatchObject({
      inbound: l16,
      outbound: l16,
      parameters: { prop1: 'value1', prop2: 'value2' },
    });
    expect(s.framing).toEqual({ minBytes: 640, multipleOfBytes: 640, maxBytes: 640, exact: true });
    // No call id in the message and none in the headers: a random UUID stands in.
    expect(s.callId).toMatch(/^[0-9a-f-]{36}$/);
    expect(s.streamId).toBe(s.callId);
  });

  it('websocket:connected at 8 kHz with the call uuid passed in headers', () => {
    const s = startOf(parse('connected-8k-uuid.json'));
    expect(s.callId).toBe('aaaaaaaa-bbbb-cccc-dddd-0123456789ab');
    expect(s.parameters).toEqual({ uuid: 'aaaaaaaa-bbbb-cccc-dddd-0123456789ab', flow: 'support' });
    expect(s.framing).toEqual({ minBytes: 320, multipleOfBytes: 320, maxBytes: 320, exact: true });
  });

  it('plays back in the content-type it streams: an outbound setting does not change it', () => {
    // Vonage takes back only the format it streams, so calls.formats.vonage is refused by the config.
    const settings = { outbound: { encoding: 'mulaw', sampleRate: 8000, channels: 1 } } as const;
    const s = startOf(vonage.parse(fixtureMessage('vonage', 'connected.json'), false, settings));
    expect(s.outbound).toEqual({ encoding: 's16le', sampleRate: 16000, channels: 1 });
    expect(s.outbound).toEqual(s.inbound);
  });

  it('binary messages are media, passed on as they came', () => {
    const audio = pattern(640);
    const event = vonage.parse(audio, true);
    expect(event).toEqual({ type: 'media', payload: audio });
    if (event.type === 'media') expect(event.payload).toBe(audio);
  });

  it('websocket:dtmf with its duration in ms, notify as our mark, cleared', () => {
    expect(parse('dtmf.json')).toEqual({ type: 'dtmf', digit: '5', durationMs: 260 });
    expect(parse('notify.json')).toEqual({ type: 'mark', name: 'm1' });
    expect(parse('cleared.json')).toEqual({ type: 'cleared' });
  });

  it('a notify without our name is ignored', () => {
    expect(vonage.parse(json({ event: 'websocket:notify', payload: { id: 7 } }), false).type).toBe('ignored');
  });
});

describe('vonage: bad input', () => {
  it.each([
    ['not JSON', text('websocket:connected'), 'malformed'],
    ['an unknown event', json({ event: 'websocket:media:error' }), 'unknown_event'],
    ['a DTMF key that is not one', json({ event: 'websocket:dtmf', digit: '55' }), 'malformed'],
    ['connected without content-type', json({ event: 'websocket:connected' }), 'invalid_start'],
    [
      'connected in a codec Vonage does not send',
      json({ event: 'websocket:connected', 'content-type': 'audio/x-mulaw;rate=8000' }),
      'invalid_start',
    ],
    [
      'connected at a rate that makes no 20 ms frames',
      json({ event: 'websocket:connected', 'content-type': 'audio/l16;rate=11025' }),
      'invalid_start',
    ],
  ])('%s', (_, data, code) => {
    expect(errorCode(() => vonage.parse(data, false))).toBe(code);
  });
});

describe('vonage: what we send', () => {
  const stream = () => startOf(parse('connected.json'));

  it('media is binary, exactly the bytes given', () => {
    expect(binaryOf(vonage.encodeMedia(pattern(640), stream()))).toEqual(pattern(640));
  });

  it('clear and notify (our mark)', () => {
    expect(jsonOf(vonage.encodeClear(stream()))).toEqual(fixtureJson('vonage', 'send-clear.json'));
    expect(jsonOf(vonage.encodeMark('m1', stream()))).toEqual(fixtureJson('vonage', 'send-notify.json'));
  });

  it('acknowledges playout through notify; no hang-up message', () => {
    expect(vonage.playoutAcks).toBe(true);
    expect(vonage.canHangUp).toBe(false);
    expect(vonage.encodeHangup(stream())).toBeUndefined();
  });
});
