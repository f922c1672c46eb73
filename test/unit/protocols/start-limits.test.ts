/**
 * What a start message may ask of us is bounded before anything is sized from it (issue 14): each
 * gateway takes only the codecs and rates it really streams (`CARRIED_FORMATS`), so a start naming
 * 1 GHz, 11.025 kHz, 0 Hz or "abc" is refused with `invalid_start` instead of designing a resampler
 * filter that froze the process for 90 s and took 2 GB; every rate that is taken designs its filters
 * in milliseconds. The call's parameters and ids are bounded too.
 */
import { describe, expect, it } from 'vitest';
import { CARRIED_FORMATS } from '../../../src/protocols/formats.js';
import {
  MAX_ID_CHARS,
  PARAMETER_LIMITS,
  checkIds,
  limitParameters,
} from '../../../src/protocols/parameters.js';
import { PROTOCOLS } from '../../../src/protocols/index.js';
import { ProtocolError, GATEWAYS, type GatewayName } from '../../../src/protocols/types.js';
import { closeReason } from '../../../src/http/ws-close.js';
import { designResampler } from '../../../src/audio/resampler.js';
import { json, startOf } from './fixtures.js';

/** A start message of each gateway whose sample rate is `rate` (as the gateway would carry it). */
const START_AT: Record<GatewayName, (rate: unknown) => unknown> = {
  twilio: (rate) => ({
    event: 'start',
    start: {
      streamSid: 'MZ1',
      callSid: 'CA1',
      mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: rate, channels: 1 },
    },
  }),
  telnyx: (rate) => ({
    event: 'start',
    stream_id: 's1',
    start: { call_control_id: 'v3:c1', media_format: { encoding: 'PCMU', sample_rate: rate, channels: 1 } },
  }),
  plivo: (rate) => ({
    event: 'start',
    start: { callId: 'c1', streamId: 's1', mediaFormat: { encoding: 'audio/x-l16', sampleRate: rate } },
  }),
  vonage: (rate) => ({ event: 'websocket:connected', 'content-type': `audio/l16;rate=${String(rate)}` }),
  exotel: (rate) => ({
    event: 'start',
    stream_sid: 's1',
    start: { stream_sid: 's1', call_sid: 'c1', media_format: { encoding: 'audio/x-raw', sample_rate: rate } },
  }),
  // Asterisk names the rate in the format: slin16 is 16 kHz.
  asterisk: (rate) => ({
    event: 'MEDIA_START',
    connection_id: 'conn-1',
    channel_id: 'pbx1-1.1',
    format: typeof rate === 'number' && rate % 1000 === 0 ? `slin${rate / 1000}` : `slin${String(rate)}`,
    optimal_frame_size: 320,
    ptime: 20,
  }),
  jambonz: (rate) => ({ callSid: 'c1', sampleRate: rate, mixType: 'mono' }),
};

/** A rate each gateway does take (in the encoding its START_AT uses). */
const GOOD_RATE: Record<GatewayName, number> = {
  twilio: 8000,
  telnyx: 8000,
  plivo: 16_000,
  vonage: 16_000,
  exotel: 16_000,
  asterisk: 16_000,
  jambonz: 16_000,
};

const BAD_RATES: unknown[] = [1e9, '1e9', 11_025, 22_050, 0, '0', 'abc', 'NaN', 'Infinity', -16_000, 8000.5];

function refusal(gateway: GatewayName, message: unknown): ProtocolError {
  try {
    PROTOCOLS[gateway].parse(json(message), false);
  } catch (error) {
    expect(error).toBeInstanceOf(ProtocolError);
    return error as ProtocolError;
  }
  throw new Error(`${gateway} took ${JSON.stringify(message)}`);
}

describe('a start message names only a format its gateway streams', () => {
  for (const gateway of GATEWAYS) {
    it(`${gateway}: refuses 1e9, 11025, 0 and non-numbers with invalid_start; takes ${GOOD_RATE[gateway]}`, () => {
      expect(
        startOf(PROTOCOLS[gateway].parse(json(START_AT[gateway](GOOD_RATE[gateway])), false)).inbound
          .sampleRate,
      ).toBe(GOOD_RATE[gateway]);
      for (const rate of BAD_RATES) {
        const error = refusal(gateway, START_AT[gateway](rate));
        expect(error.code, `${gateway} at ${String(rate)}`).toBe('invalid_start');
        // Short enough to log and to be a close reason, whatever the peer sent.
        expect(error.message.length).toBeLessThan(120);
      }
      expect(refusal(gateway, START_AT[gateway](1e9)).message).toMatch(/sample rate|format/);
    });
  }

  it('twilio: mu-law 8 kHz only; telnyx: G.711 at 8 kHz only', () => {
    expect(refusal('twilio', START_AT.twilio(16_000)).code).toBe('invalid_start');
    const telnyxPcmu16k = {
      event: 'start',
      stream_id: 's1',
      start: { media_format: { encoding: 'PCMU', sample_rate: 16_000, channels: 1 } },
    };
    expect(refusal('telnyx', telnyxPcmu16k).message).toContain('unsupported sample rate 16000');
  });

  it('plivo takes L16 at 8 and 16 kHz, not 24; a rate in the content type counts the same', () => {
    expect(refusal('plivo', START_AT.plivo(24_000)).code).toBe('invalid_start');
    const inContentType = {
      event: 'start',
      start: { callId: 'c1', streamId: 's1', mediaFormat: { encoding: 'audio/x-l16;rate=1000000000' } },
    };
    expect(refusal('plivo', inContentType).message).toContain('unsupported sample rate');
  });

  it('vonage: a content type without a rate number is refused too', () => {
    for (const contentType of [
      'audio/l16;rate=',
      'audio/l16;rate=1e9',
      `audio/l16;rate=${'9'.repeat(400)}`,
    ]) {
      const error = refusal('vonage', { event: 'websocket:connected', 'content-type': contentType });
      expect(error.code).toBe('invalid_start');
      expect(error.message.length).toBeLessThan(120);
    }
  });

  it('asterisk: slin96 and slin192 are refused; an optimal_frame_size over a message is refused', () => {
    expect(refusal('asterisk', START_AT.asterisk(96_000)).code).toBe('invalid_start');
    expect(refusal('asterisk', START_AT.asterisk(192_000)).code).toBe('invalid_start');
    const huge = { ...(START_AT.asterisk(16_000) as object), optimal_frame_size: 1e9 };
    expect(refusal('asterisk', huge).message).toContain('optimal_frame_size');
  });

  it('jambonz: stereo at a carried rate is taken, 32 kHz (playback only) is not', () => {
    const stereo = startOf(
      PROTOCOLS.jambonz.parse(json({ callSid: 'c', sampleRate: 48_000, mixType: 'stereo' }), false),
    );
    expect(stereo.inbound).toEqual({ encoding: 's16le', sampleRate: 48_000, channels: 2 });
    expect(refusal('jambonz', START_AT.jambonz(32_000)).code).toBe('invalid_start');
  });

  it('every carried rate designs its filters (speaker 24 kHz → it, it → the VAD’s 16 kHz) in milliseconds', () => {
    const rates = new Set<number>();
    for (const byEncoding of Object.values(CARRIED_FORMATS))
      for (const list of Object.values(byEncoding)) for (const rate of list ?? []) rates.add(rate);
    for (const rate of rates) {
      const started = performance.now();
      const pairs = [designResampler(24_000, rate), designResampler(rate, 16_000)];
      // Generous: a cold design takes ≈ 12 ms; the refused ones took seconds.
      expect(performance.now() - started, `${rate} Hz`).toBeLessThan(1000);
      for (const design of pairs) expect(design.up * design.tapsPerPhase, `${rate} Hz`).toBeLessThan(100_000);
    }
  });
});

describe('the ids and parameters of a start are bounded', () => {
  it('a call or stream id over MAX_ID_CHARS is invalid_start', () => {
    expect(() => checkIds('twilio', { callId: 'CA1', streamId: 'MZ1' })).not.toThrow();
    const long = 'x'.repeat(MAX_ID_CHARS + 1);
    for (const ids of [
      { callId: long, streamId: 'MZ1' },
      { callId: 'CA1', streamId: long },
    ]) {
      expect(() => checkIds('twilio', ids)).toThrow(ProtocolError);
    }
  });

  it('keeps flow first, drops whole parameters past the count, name, value and total limits', () => {
    const { maxCount, maxNameChars, maxValueChars, maxTotalChars } = PARAMETER_LIMITS;
    const many = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`p${i}`, 'v']));
    const limited = limitParameters({ ...many, flow: 'sales' });
    expect(Object.keys(limited.parameters)).toHaveLength(maxCount);
    expect(limited.parameters['flow']).toBe('sales');
    expect(limited.dropped).toBe(41 - maxCount);

    const sized = limitParameters({
      ok: 'fine',
      ['n'.repeat(maxNameChars + 1)]: 'v',
      big: 'v'.repeat(maxValueChars + 1),
      ...Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`k${i}`, 'w'.repeat(maxValueChars - 3)])),
    });
    expect(sized.parameters['ok']).toBe('fine');
    expect(sized.parameters['big']).toBeUndefined();
    const total = Object.entries(sized.parameters).reduce((n, [k, v]) => n + k.length + v.length, 0);
    expect(total).toBeLessThanOrEqual(maxTotalChars);
    expect(sized.dropped).toBeGreaterThanOrEqual(4);
    expect(sized.droppedChars).toBeGreaterThan(maxValueChars);
    expect(limitParameters({ a: '1' })).toEqual({ parameters: { a: '1' }, dropped: 0, droppedChars: 0 });
  });

  it('a close reason fits in 123 bytes of UTF-8, cut at a character', () => {
    expect(closeReason('short')).toBe('short');
    const cut = closeReason(`call id ${'é'.repeat(200)} is already connected`);
    expect(Buffer.byteLength(cut)).toBeLessThanOrEqual(123);
    expect(cut.endsWith('…')).toBe(true);
    expect(cut).not.toContain('\uFFFD');
  });
});
