/**
 * jambonz `listen` against docs.jambonz.org (verbs/listen, webhooks/listen), the feature server's
 * lib/tasks/listen.js and mod_audio_fork (fixtures under test/fixtures/gateways/jambonz).
 */
import { describe, expect, it } from 'vitest';
import { jambonz } from '../../../src/protocols/jambonz.js';
import type { ProtocolOptions } from '../../../src/protocols/types.js';
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

const CALL = 'b5b2c2e4-3f0e-4a0e-9a3c-0123456789ab';
const parse = (name: string, options?: ProtocolOptions) =>
  jambonz.parse(fixtureMessage('jambonz', name), false, options);
const stream = () => startOf(parse('metadata.json'));

describe('jambonz: parsing what jambonz sends', () => {
  it('the metadata frame is the start: callSid, L16 at sampleRate, every attribute as a parameter', () => {
    const l16 = { encoding: 's16le', sampleRate: 16000, channels: 1 };
    expect(stream()).toEqual({
      callId: CALL,
      streamId: CALL,
      inbound: l16,
      outbound: l16,
      framing: { minBytes: 640, multipleOfBytes: 640, maxBytes: 32_000, exact: false },
      parameters: {
        sampleRate: '16000',
        mixType: 'mono',
        callSid: CALL,
        direction: 'inbound',
        from: '+15083084809',
        to: '+15083728299',
        callId: '6a2b1d3e-5f4c@192.168.1.10',
        sipStatus: '200',
        callStatus: 'in-progress',
        accountSid: 'fef61e75-cec3-496c-a7bc-8368e4ab8b52',
        applicationSid: '0e0681b6-2b4a-4b55-9a17-d8c1c5b9d1b0',
        customerData: '{"crm":"42"}',
        flow: 'support',
      },
    });
  });

  it('stereo mixType: two channels in, mono out', () => {
    const s = startOf(parse('metadata-stereo.json'));
    expect(s.inbound).toEqual({ encoding: 's16le', sampleRate: 8000, channels: 2 });
    expect(s.outbound).toEqual({ encoding: 's16le', sampleRate: 8000, channels: 1 });
    expect(s.framing).toEqual({ minBytes: 320, multipleOfBytes: 320, maxBytes: 16_000, exact: false });
  });

  it('bidirectionalAudio.sampleRate is the deployment setting when it differs from sampleRate', () => {
    const l16_8k = { encoding: 's16le', sampleRate: 8000, channels: 1 } as const;
    const s = startOf(parse('metadata.json', { outbound: l16_8k }));
    expect(s.inbound.sampleRate).toBe(16000);
    expect(s.outbound).toEqual(l16_8k);
    expect(s.framing.minBytes).toBe(320);
  });

  it('binary messages are media', () => {
    const audio = pattern(640);
    expect(jambonz.parse(audio, true)).toEqual({ type: 'media', payload: audio });
  });

  it('mark echoes say whether the audio played or was cleared', () => {
    expect(parse('mark-playout.json')).toEqual({ type: 'mark', name: 'm3', outcome: 'played' });
    expect(parse('mark-cleared.json')).toEqual({ type: 'mark', name: 'm4', outcome: 'cleared' });
  });

  it('dtmf: the FreeSWITCH duration (8 kHz samples) as ms', () => {
    expect(parse('dtmf.json')).toEqual({ type: 'dtmf', digit: '#', durationMs: 160 });
  });

  it('playDone (after a playAudio file) is ignored', () => {
    expect(jambonz.parse(json({ type: 'playDone', data: { id: 'x' } }), false)).toEqual({
      type: 'ignored',
      what: 'playDone',
    });
  });
});

describe('jambonz: bad input', () => {
  it.each([
    ['not JSON', text('hello'), 'malformed'],
    ['JSON without type, event or call attributes', json({ foo: 1 }), 'malformed'],
    ['an unknown type', json({ type: 'transcription', data: {} }), 'unknown_event'],
    ['a mark without data', json({ type: 'mark' }), 'malformed'],
    ['metadata without callSid', json({ sampleRate: 8000, mixType: 'mono' }), 'invalid_start'],
    ['metadata at a rate with no 20 ms frames', json({ callSid: 'c', sampleRate: 11025 }), 'invalid_start'],
  ])('%s', (_, data, code) => {
    expect(errorCode(() => jambonz.parse(data, false))).toBe(code);
  });

  it('an outbound format jambonz cannot play is refused', () => {
    const mulaw = { encoding: 'mulaw', sampleRate: 8000, channels: 1 } as const;
    expect(errorCode(() => parse('metadata.json', { outbound: mulaw }))).toBe('invalid_start');
  });
});

describe('jambonz: what we send', () => {
  it('media is binary L16, exactly the bytes given', () => {
    expect(binaryOf(jambonz.encodeMedia(pattern(640), stream()))).toEqual(pattern(640));
  });

  it('killAudio and mark', () => {
    expect(jsonOf(jambonz.encodeClear(stream()))).toEqual(fixtureJson('jambonz', 'send-killAudio.json'));
    expect(jsonOf(jambonz.encodeMark('m3', stream()))).toEqual(fixtureJson('jambonz', 'send-mark.json'));
  });

  it('asks for its subprotocol, acknowledges playout, leaves hang-up to closing the socket', () => {
    expect(jambonz.subprotocol).toBe('audio.jambonz.org');
    expect(jambonz.playoutAcks).toBe(true);
    expect(jambonz.canHangUp).toBe(false);
    expect(jambonz.encodeHangup(stream())).toBeUndefined();
  });
});
