/** A relay app's URL per call (src/relay/url-template.ts). */
import { describe, expect, it } from 'vitest';
import { relayUrl, unknownFields } from '../../../src/relay/url-template.js';

const setup = {
  callSid: 'CA123',
  from: '+1 555 0100',
  to: '+15550199',
  direction: 'inbound',
  callType: 'PSTN',
  customParameters: { tenant: 'acme & co', 'queue.id': '7' },
  voxbridge: { gateway: 'twilio' },
};

describe('relay URL templates', () => {
  it('puts in the call’s fields and parameters, percent-encoded; a missing parameter is empty', () => {
    expect(
      relayUrl(
        'wss://app.example/relay/{callSid}?from={from}&t={param.tenant}&q={param.queue.id}&x={param.none}&s={sessionId}&d={direction}&to={to}',
        setup,
        'VX1',
      ),
    ).toBe(
      'wss://app.example/relay/CA123?from=%2B1%20555%200100&t=acme%20%26%20co&q=7&x=&s=VX1&d=inbound&to=%2B15550199',
    );
    expect(relayUrl('wss://app.example/relay', setup, 'VX1')).toBe('wss://app.example/relay');
  });

  it('names the placeholders that are not fields of a call', () => {
    expect(unknownFields('wss://a/{callSid}/{param.x}')).toEqual([]);
    expect(unknownFields('wss://a/{callsid}/{secret}/{param.}')).toEqual(['callsid', 'secret', 'param.']);
  });
});
