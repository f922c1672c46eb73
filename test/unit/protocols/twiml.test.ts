import { describe, expect, it } from 'vitest';
import { parseTwiml, TWIML_LIMITS, TwimlError } from '../../../src/protocols/twiml.js';

describe('parseTwiml', () => {
  it('reads the verbs a ConversationRelay app answers with, attributes and children included', () => {
    const verbs = parseTwiml(`<?xml version="1.0" encoding="UTF-8"?>
<Response>
  <Say voice="Polly.Joanna" language="en-US" loop="2">Hello &amp; welcome &#8212; caller</Say>
  <Play loop="0">https://media.example/hold.mp3</Play>
  <Pause length="3"/>
  <Connect action="/after" method="GET">
    <ConversationRelay url="wss://app.example/ws" welcomeGreeting="Hi" dtmfDetection="true">
      <Language code="es-ES" voice="v-es" ttsProvider="ElevenLabs"/>
      <Parameter name="tenant" value="gold"/>
    </ConversationRelay>
  </Connect>
  <Redirect>/next</Redirect>
  <Reject reason="busy"/>
  <Hangup/>
</Response>`);
    expect(verbs).toEqual([
      { verb: 'Say', text: 'Hello & welcome — caller', voice: 'Polly.Joanna', language: 'en-US', loop: 2 },
      { verb: 'Play', url: 'https://media.example/hold.mp3', loop: 0 },
      { verb: 'Pause', seconds: 3 },
      {
        verb: 'Connect',
        action: '/after',
        method: 'GET',
        relay: {
          attributes: { url: 'wss://app.example/ws', welcomeGreeting: 'Hi', dtmfDetection: 'true' },
          languages: [{ code: 'es-ES', voice: 'v-es', ttsProvider: 'ElevenLabs' }],
          parameters: [{ name: 'tenant', value: 'gold' }],
        },
      },
      { verb: 'Redirect', url: '/next', method: 'POST' },
      { verb: 'Reject', reason: 'busy' },
      { verb: 'Hangup' },
    ]);
  });

  it('keeps a verb voxbridge does not run by name, so the call fails there; a word that is no verb is an error', () => {
    expect(parseTwiml('<Response><Say>Hold on</Say><Gather/></Response>')).toEqual([
      { verb: 'Say', text: 'Hold on', loop: 1 },
      { verb: 'Unsupported', name: 'Gather' },
    ]);
    expect(parseTwiml('<Response><Dial><Conference>room</Conference></Dial></Response>')).toEqual([
      { verb: 'Unsupported', name: 'Dial/Conference' },
    ]);
    expect(parseTwiml('<Response><Connect><Stream url="wss://x"/></Connect></Response>')).toEqual([
      { verb: 'Unsupported', name: 'Connect/Stream' },
    ]);
    expect(() => parseTwiml('<Response><Shout>hi</Shout></Response>')).toThrow(/<Shout> is not a TwiML verb/);
  });

  it('reads <Dial> to one number or SIP address, with timeout, callerId and action as Twilio documents them', () => {
    expect(parseTwiml('<Response><Dial> +1 (555) 010-0123 </Dial></Response>')).toEqual([
      {
        verb: 'Dial',
        target: { kind: 'number', number: '+15550100123' },
        timeoutSeconds: 30,
        method: 'POST',
        ignored: [],
      },
    ]);
    expect(
      parseTwiml(
        '<Response><Dial timeout="12" callerId="+15550001111" action="/after" method="GET" record="record-from-answer">' +
          '<Number sendDigits="ww1">+15550100123</Number></Dial></Response>',
      ),
    ).toEqual([
      {
        verb: 'Dial',
        target: { kind: 'number', number: '+15550100123' },
        timeoutSeconds: 12,
        callerId: '+15550001111',
        action: '/after',
        method: 'GET',
        ignored: ['record', 'Number@sendDigits'],
      },
    ]);
    expect(parseTwiml('<Response><Dial><Sip>sip:agent@pbx.example.com</Sip></Dial></Response>')).toEqual([
      {
        verb: 'Dial',
        target: { kind: 'sip', uri: 'sip:agent@pbx.example.com' },
        timeoutSeconds: 30,
        method: 'POST',
        ignored: [],
      },
    ]);
  });

  it.each([
    ['a <Dial> with nothing to dial', '<Response><Dial> </Dial></Response>', /<Dial> has no number/],
    [
      'a <Dial> of two numbers at once',
      '<Response><Dial><Number>+15550100</Number><Number>+15550101</Number></Dial></Response>',
      /one number or SIP address at a time/,
    ],
    [
      'a <Dial timeout> out of range',
      '<Response><Dial timeout="2">+15550100</Dial></Response>',
      /from 5 to 600/,
    ],
    [
      'a <Dial> of an unknown noun',
      '<Response><Dial><Pager>x</Pager></Dial></Response>',
      /cannot hold <Pager>/,
    ],
  ])('refuses %s with a TwimlError', (_what, xml, message) => {
    expect(() => parseTwiml(xml)).toThrow(TwimlError);
    expect(() => parseTwiml(xml)).toThrow(message);
  });

  it.each([
    [
      'a DOCTYPE (and so any entity)',
      '<!DOCTYPE r [<!ENTITY a "aaaa">]><Response><Say>&a;</Say></Response>',
      /DOCTYPE/,
    ],
    ['an undeclared entity', '<Response><Say>&lol;</Say></Response>', /not well-formed/],
    [
      'an external entity',
      '<!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]><Response><Say>&x;</Say></Response>',
      /DOCTYPE/,
    ],
    ['XML that is not well-formed', '<Response><Say>hi</Response>', /not well-formed/],
    ['another root', '<Say>hi</Say>', /not <Response>/],
    ['no element at all', '   ', /not well-formed|no element/],
    [
      'a huge document',
      `<Response><Say>${'a'.repeat(TWIML_LIMITS.chars)}</Say></Response>`,
      /characters; at most/,
    ],
    ['a long text', `<Response><Say>${'a'.repeat(5000)}</Say></Response>`, /over 4096 characters/],
    ['deep nesting', '<Response>' + '<Connect>'.repeat(50), /nest over 8/],
    ['too many verbs', `<Response>${'<Hangup/>'.repeat(101)}</Response>`, /101 verbs/],
    [
      'too many elements',
      `<Response><Connect><ConversationRelay url="wss://a">${'<Parameter name="a"/>'.repeat(600)}</ConversationRelay></Connect></Response>`,
      /over 512 elements/,
    ],
    [
      'a loop that is no count',
      '<Response><Play loop="-1">https://a/b.wav</Play></Response>',
      /whole number/,
    ],
    ['a pause that is no count', '<Response><Pause length="1e9x"/></Response>', /whole number/],
    ['a pause over an hour', '<Response><Pause length="99999999999"/></Response>', /up to 3600/],
    [
      'a method that is neither GET nor POST',
      '<Response><Redirect method="PUT">/x</Redirect></Response>',
      /GET or POST/,
    ],
    ['a relay without url', '<Response><Connect><ConversationRelay/></Connect></Response>', /no url/],
    [
      'a relay with a foreign child',
      '<Response><Connect><ConversationRelay url="wss://a"><Say>x</Say></ConversationRelay></Connect></Response>',
      /cannot hold <Say>/,
    ],
  ])('refuses %s with a TwimlError', (_what, xml, message) => {
    expect(() => parseTwiml(xml)).toThrow(TwimlError);
    expect(() => parseTwiml(xml)).toThrow(message);
  });

  it('reads a deeply nested hostile document in bounded time (it stops at the depth bound)', () => {
    const started = performance.now();
    expect(() => parseTwiml('<Response>' + '<a>'.repeat(20_000))).toThrow(/nest over/);
    expect(performance.now() - started).toBeLessThan(1000);
  });
});
