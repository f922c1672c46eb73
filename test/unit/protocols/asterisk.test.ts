/**
 * Asterisk chan_websocket against docs.asterisk.org Configuration/Channel-Drivers/WebSocket and the
 * event formats of channels/chan_websocket.c (fixtures under test/fixtures/gateways/asterisk: `.txt` for
 * the plain-text control format, `.json` for the JSON one).
 */
import { describe, expect, it } from 'vitest';
import { asterisk } from '../../../src/protocols/asterisk.js';
import { binaryOf, errorCode, fixtureMessage, json, jsonOf, pattern, startOf, text } from './fixtures.js';

const CONNECTION = 'e226e283-c90a-4ea9-9e37-389000b9ef47';
const ULAW = { encoding: 'mulaw', sampleRate: 8000, channels: 1 };
const parse = (name: string) => asterisk.parse(fixtureMessage('asterisk', name), false);
const textStream = () => startOf(parse('media-start.txt'));
const jsonStream = () => startOf(parse('media-start.json'));

describe('asterisk: parsing what Asterisk sends', () => {
  it('plain-text MEDIA_START: channel_id, connection_id, ulaw, multiples of optimal_frame_size', () => {
    expect(textStream()).toEqual({
      callId: 'pbx1-123456789.999',
      streamId: CONNECTION,
      inbound: ULAW,
      outbound: ULAW,
      framing: { minBytes: 160, multipleOfBytes: 160, maxBytes: 65_440, exact: false },
      parameters: {},
      dialect: { control: 'text' },
    });
  });

  it('the first plain-text MEDIA_START (20.16, no channel_id): the connection id is the call id', () => {
    const s = startOf(parse('media-start-20.16.txt'));
    expect([s.callId, s.streamId]).toEqual([CONNECTION, CONNECTION]);
  });

  it('JSON MEDIA_START: channel variables are the parameters; commands will be JSON', () => {
    const s = jsonStream();
    expect(s.parameters).toEqual({
      SOME_CHANNEL_VARIABLE: 'some value',
      ANOTHER_CHANNEL_VARIABLE: 'some other value',
    });
    expect(s.dialect).toEqual({ control: 'json' });
    expect(s.inbound).toEqual(ULAW);
  });

  it('slin16: s16le 16 kHz, 640-byte frames, ≤ 65 500 B per message', () => {
    const s = startOf(parse('media-start-slin16.json'));
    expect(s.outbound).toEqual({ encoding: 's16le', sampleRate: 16000, channels: 1 });
    expect(s.framing).toEqual({ minBytes: 640, multipleOfBytes: 640, maxBytes: 65_280, exact: false });
    expect(s.parameters).toEqual({ flow: 'support' });
  });

  it.each([
    ['alaw', 160, { encoding: 'alaw', sampleRate: 8000 }],
    ['slin', 320, { encoding: 's16le', sampleRate: 8000 }],
    ['slin24', 960, { encoding: 's16le', sampleRate: 24000 }],
    ['slin44', 1764, { encoding: 's16le', sampleRate: 44100 }],
    ['slin48', 1920, { encoding: 's16le', sampleRate: 48000 }],
  ])('format %s', (format, size, expected) => {
    const line = `MEDIA_START connection_id:c1 format:${format} optimal_frame_size:${size}`;
    const s = startOf(asterisk.parse(text(line), false));
    expect(s.outbound).toEqual({ ...expected, channels: 1 });
    expect(s.framing.multipleOfBytes).toBe(size);
  });

  it('binary messages are media, passed on as they came', () => {
    const audio = pattern(160);
    expect(asterisk.parse(audio, true)).toEqual({ type: 'media', payload: audio });
  });

  it('DTMF_END in both formats', () => {
    expect(parse('dtmf-end.txt')).toEqual({ type: 'dtmf', digit: '5' });
    expect(parse('dtmf-end.json')).toEqual({ type: 'dtmf', digit: '#' });
  });

  it('MEDIA_XOFF / MEDIA_XON are flow control', () => {
    expect(parse('media-xoff.txt')).toEqual({ type: 'flow', paused: true });
    expect(parse('media-xon.json')).toEqual({ type: 'flow', paused: false });
  });

  it('MEDIA_MARK_PROCESSED: our mark played, in both formats', () => {
    expect(parse('mark-processed.txt')).toEqual({ type: 'mark', name: 'm7', outcome: 'played' });
    expect(parse('mark-processed.json')).toEqual({ type: 'mark', name: 'm7', outcome: 'played' });
    expect(asterisk.parse(text('MEDIA_MARK_PROCESSED'), false).type).toBe('ignored');
  });

  it('notifications the call does not act on are ignored', () => {
    expect(parse('buffering-completed.txt')).toEqual({ type: 'ignored', what: 'MEDIA_BUFFERING_COMPLETED' });
    expect(parse('status.txt')).toEqual({ type: 'ignored', what: 'STATUS' });
    expect(parse('error.txt')).toEqual({ type: 'ignored', what: 'ERROR' });
  });
});

describe('asterisk: bad input', () => {
  it.each([
    ['an unknown event', text('MEDIA_PAUSED channel_id:x'), 'unknown_event'],
    ['an unknown JSON event', json({ event: 'HANGUP_REQUESTED' }), 'unknown_event'],
    ['not a control line', text('hello there'), 'malformed'],
    ['broken JSON', text('{"event":"MEDIA_START",'), 'malformed'],
    ['a DTMF_END without digit', text('DTMF_END channel_id:x'), 'malformed'],
    [
      'MEDIA_START without connection_id',
      text('MEDIA_START format:ulaw optimal_frame_size:160'),
      'invalid_start',
    ],
    [
      'a passthrough codec',
      text('MEDIA_START connection_id:c format:opus optimal_frame_size:0'),
      'invalid_start',
    ],
    [
      'a codec we cannot carry',
      text('MEDIA_START connection_id:c format:g722 optimal_frame_size:160'),
      'invalid_start',
    ],
  ])('%s', (_, data, code) => {
    expect(errorCode(() => asterisk.parse(data, false))).toBe(code);
  });
});

describe('asterisk: what we send', () => {
  it('media is binary, exactly the bytes given', () => {
    expect(binaryOf(asterisk.encodeMedia(pattern(320), textStream()))).toEqual(pattern(320));
  });

  it('plain-text commands for a plain-text call', () => {
    expect(asterisk.encodeClear(textStream())).toBe('FLUSH_MEDIA');
    expect(asterisk.encodeMark('m7', textStream())).toBe('MARK_MEDIA m7');
    expect(asterisk.encodeHangup(textStream())).toBe('HANGUP');
  });

  it('JSON commands for a JSON call', () => {
    expect(jsonOf(asterisk.encodeClear(jsonStream()))).toEqual({ command: 'FLUSH_MEDIA' });
    expect(jsonOf(asterisk.encodeMark('m7', jsonStream()))).toEqual({
      command: 'MARK_MEDIA',
      correlation_id: 'm7',
    });
    expect(jsonOf(asterisk.encodeHangup(jsonStream()))).toEqual({ command: 'HANGUP' });
  });

  it('acknowledges playout (MARK_MEDIA) and can hang up', () => {
    expect(asterisk.playoutAcks).toBe(true);
    expect(asterisk.canHangUp).toBe(true);
  });
});
