/**
 * Plivo Audio Streaming against plivo.com/docs/voice-agents/audio-streaming/concepts/
 * audio-streaming-reference and docs.plivo.com/docs/voice/xml/audiostream (fixtures under
 * test/fixtures/gateways/plivo), and support.plivo.com's checkpoint article for `played`.
 */
import { describe, expect, it } from 'vitest';
import { plivo } from '../../../src/protocols/plivo.js';
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

const CALL = '12345678-1234-1234-1234-123456789abc';
const SID = '87654321-4321-4321-4321-cba987654321';
const MULAW_8K = { encoding: 'mulaw', sampleRate: 8000, channels: 1 } as const;
const L16_8K = { encoding: 's16le', sampleRate: 8000, channels: 1 } as const;
const parse = (name: string, options?: ProtocolOptions) =>
  plivo.parse(fixtureMessage('plivo', name), false, options);
const withHeaders = (extra_headers: string) =>
  startOf(plivo.parse(json({ ...fixtureJson('plivo', 'start.json'), extra_headers }), false));

describe('plivo: parsing what Plivo sends', () => {
  it('start: callId, streamId, mediaFormat, extra_headers as parameters', () => {
    expect(startOf(parse('start.json'))).toEqual({
      callId: CALL,
      streamId: SID,
      inbound: MULAW_8K,
      outbound: MULAW_8K,
      framing: { minBytes: 160, multipleOfBytes: 160, maxBytes: 8000, exact: false },
      parameters: { userId: '12345', sessionId: 'abc-xyz' },
    });
  });

  it('start: L16 16 kHz as the Stream contentType set it, comma-separated extraHeaders', () => {
    const s = startOf(parse('start-l16.json'));
    expect(s.inbound).toEqual({ encoding: 's16le', sampleRate: 16000, channels: 1 });
    expect(s.outbound).toEqual(s.inbound);
    expect(s.framing).toEqual({ minBytes: 640, multipleOfBytes: 640, maxBytes: 32_000, exact: false });
    expect(s.parameters).toEqual({ test1: '12', test2: '123' });
  });

  it('start: extra_headers as a JSON string, or "{}"', () => {
    expect(withHeaders('{"flow":"sales"}').parameters).toEqual({ flow: 'sales' });
    expect(withHeaders('{}').parameters).toEqual({});
  });

  it('start: the deployment may choose what we play, and the inbound format without mediaFormat', () => {
    expect(startOf(parse('start.json', { outbound: L16_8K })).outbound).toEqual(L16_8K);
    const message = fixtureJson('plivo', 'start.json');
    const { mediaFormat: _, ...start } = message['start'] as Record<string, unknown>;
    const bare = startOf(plivo.parse(json({ ...message, start }), false));
    expect(bare.inbound).toEqual(MULAW_8K);
    const set = startOf(plivo.parse(json({ ...message, start }), false, { outbound: L16_8K }));
    expect(set.inbound).toEqual(L16_8K);
  });

  it('media: decoded payload; the Unix-time timestamp is not passed on', () => {
    expect(mediaOf(parse('media.json'))).toEqual({ payload: pattern(160), timestampMs: undefined });
  });

  it('dtmf, playedStream (a checkpoint played), clearedAudio', () => {
    expect(parse('dtmf.json')).toEqual({ type: 'dtmf', digit: '5' });
    expect(parse('playedStream.json')).toEqual({ type: 'mark', name: 'checkpoint-name', outcome: 'played' });
    expect(parse('clearedAudio.json')).toEqual({ type: 'cleared' });
  });

  it('played (the checkpoint answer as Plivo support names it) is playedStream', () => {
    // support.plivo.com/hc/en-us/articles/32800564168345: the same streamId and name, event "played".
    const played = { ...fixtureJson('plivo', 'playedStream.json'), event: 'played' };
    expect(plivo.parse(json(played), false)).toEqual(parse('playedStream.json'));
    expect(plivo.parse(json(played), false)).toEqual({
      type: 'mark',
      name: 'checkpoint-name',
      outcome: 'played',
    });
  });

  it('stop (not in the reference, taken when it comes); playFailed and error are ignored', () => {
    expect(plivo.parse(json({ event: 'stop', streamId: SID }), false)).toEqual({ type: 'stop' });
    expect(plivo.parse(json({ event: 'playFailed', reason: 'bad audio' }), false)).toEqual({
      type: 'ignored',
      what: 'playFailed: bad audio',
    });
    expect(plivo.parse(json({ event: 'error' }), false).type).toBe('ignored');
  });
});

describe('plivo: bad input', () => {
  it.each([
    ['not JSON', new TextEncoder().encode('playAudio'), 'malformed'],
    ['an unknown event', json({ event: 'connected' }), 'unknown_event'],
    ['bad base64', json({ event: 'media', media: { payload: 'AAA' } }), 'malformed'],
    ['playedStream without a name', json({ event: 'playedStream', streamId: SID }), 'malformed'],
    ['played without a name', json({ event: 'played', streamId: SID }), 'malformed'],
    ['a start without streamId', json({ event: 'start', start: { callId: CALL } }), 'invalid_start'],
    [
      'extra_headers that look like JSON but are not',
      json({ ...fixtureJson('plivo', 'start.json'), extra_headers: '{flow' }),
      'malformed',
    ],
  ])('%s', (_, data, code) => {
    expect(errorCode(() => plivo.parse(data, false))).toBe(code);
  });

  it('binary is unexpected', () => {
    expect(errorCode(() => plivo.parse(pattern(160), true))).toBe('unexpected_binary');
  });

  it('a format playAudio cannot take is refused', () => {
    const alaw = { encoding: 'alaw', sampleRate: 8000, channels: 1 } as const;
    expect(errorCode(() => parse('start.json', { outbound: alaw }))).toBe('invalid_start');
    expect(errorCode(() => parse('start.json', { outbound: { ...L16_8K, sampleRate: 24000 } }))).toBe(
      'invalid_start',
    );
  });
});

describe('plivo: what we send', () => {
  const stream = () => startOf(parse('start.json'));

  it('playAudio: contentType and sampleRate of the outbound format, base64 that round-trips', () => {
    const message = plivo.encodeMedia(pattern(160), stream());
    expect(jsonOf(message)).toEqual(fixtureJson('plivo', 'send-playAudio.json'));
    expect(payloadOf(message)).toEqual(pattern(160));
    const l16 = startOf(parse('start-l16.json'));
    expect(jsonOf(plivo.encodeMedia(pattern(640), l16))).toMatchObject({
      event: 'playAudio',
      media: { contentType: 'audio/x-l16', sampleRate: 16000 },
    });
  });

  it('checkpoint and clearAudio carry the streamId', () => {
    expect(jsonOf(plivo.encodeMark('checkpoint-name', stream()))).toEqual(
      fixtureJson('plivo', 'send-checkpoint.json'),
    );
    expect(jsonOf(plivo.encodeClear(stream()))).toEqual(fixtureJson('plivo', 'send-clearAudio.json'));
  });

  it('acknowledges playout (playedStream or played); no hang-up message', () => {
    expect(plivo.playoutAcks).toBe(true);
    expect(plivo.canHangUp).toBe(false);
    expect(plivo.encodeHangup(stream())).toBeUndefined();
  });
});
