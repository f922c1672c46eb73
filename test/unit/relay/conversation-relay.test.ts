/** The ConversationRelay message parser: lenient where real peers need it, bounded, and precise when it refuses. */
import { describe, expect, it } from 'vitest';
import {
  parseFromApp,
  parseRelayInfoOptions,
  RelayParseError,
  RELAY_MAX_MESSAGE_BYTES,
  serializeToApp,
} from '../../../src/protocols/conversation-relay.js';

const parse = (m: unknown): ReturnType<typeof parseFromApp> => parseFromApp(JSON.stringify(m));

describe('messages from a relay app', () => {
  it('reads every type ConversationRelay defines', () => {
    expect(parse({ type: 'text', token: 'Hi', last: false })).toMatchObject({
      type: 'text',
      token: 'Hi',
      last: false,
    });
    expect(parse({ type: 'play', source: 'https://x/a.mp3', loop: 2 })).toMatchObject({ loop: 2 });
    expect(parse({ type: 'sendDigits', digits: '12w34#' })).toMatchObject({ digits: '12w34#' });
    expect(parse({ type: 'language', ttsLanguage: 'es-ES', transcriptionLanguage: 'es-ES' })).toMatchObject({
      transcriptionLanguage: 'es-ES',
    });
    expect(parse({ type: 'end', handoffData: '{"a":1}' })).toEqual({ type: 'end', handoffData: '{"a":1}' });
  });

  it('takes numbers and booleans as strings, unknown fields, and interruptible as a word or a boolean', () => {
    expect(
      parse({ type: 'text', token: 'x', last: 'true', preemptible: 'false', colour: 'red' }),
    ).toMatchObject({
      last: true,
      preemptible: false,
    });
    expect(parse({ type: 'play', source: 's', loop: '3' })).toMatchObject({ loop: 3 });
    expect(parse({ type: 'text', token: 'x', interruptible: false })).toMatchObject({
      interruptible: 'none',
    });
    expect(parse({ type: 'text', token: 'x', interruptible: 'true' })).toMatchObject({
      interruptible: 'any',
    });
    expect(parse({ type: 'text', token: 'x', interruptible: 'dtmf' })).toMatchObject({
      interruptible: 'dtmf',
    });
    expect(parse({ type: 'text', token: 42 })).toMatchObject({ token: '42' });
    expect(parse({ type: 'end', handoffData: { reason: 'done' } })).toMatchObject({
      handoffData: '{"reason":"done"}',
    });
  });

  it('refuses what it cannot use, saying what is wrong', () => {
    const refused = (data: string): string => {
      try {
        parseFromApp(data);
      } catch (error) {
        expect(error).toBeInstanceOf(RelayParseError);
        return (error as Error).message;
      }
      throw new Error(`accepted ${data}`);
    };
    expect(refused('{')).toMatch(/not JSON/);
    expect(refused('[1]')).toMatch(/not a JSON object/);
    expect(refused('{"token":"x"}')).toMatch(/no type/);
    expect(refused('{"type":"constructor"}')).toMatch(/unknown message type: constructor/);
    expect(refused('{"type":"dance"}')).toMatch(/unknown message type: dance/);
    expect(refused(JSON.stringify({ type: 'text', token: { a: 1 } }))).toMatch(/invalid text message: token/);
    expect(refused(JSON.stringify({ type: 'text', token: 'x', last: 'yes' }))).toMatch(/last/);
    expect(refused(JSON.stringify({ type: 'sendDigits', digits: '12; rm -rf' }))).toMatch(/digits/);
    expect(refused(JSON.stringify({ type: 'play', source: 's', loop: '99999' }))).toMatch(/loop/);
    expect(refused(JSON.stringify({ type: 'text', token: 'x'.repeat(20_000) }))).toMatch(/token/);
    expect(refused(' '.repeat(RELAY_MAX_MESSAGE_BYTES + 1))).toMatch(/over/);
  });
});

describe('the info messages an app asks for (the debug attribute)', () => {
  it('reads the words of debug="…" (spaces or commas, any case) or a list, and returns the unknown ones once', () => {
    expect(parseRelayInfoOptions('speaker-events tokens-played')).toEqual({
      options: new Set(['speaker-events', 'tokens-played']),
      unknown: [],
    });
    expect(parseRelayInfoOptions(' Debugging,speaker-events ,, ')).toEqual({
      options: new Set(['debugging', 'speaker-events']),
      unknown: [],
    });
    expect(parseRelayInfoOptions(['tokens-played', 'speaker_events', 'verbose speaker_events'])).toEqual({
      options: new Set(['tokens-played']),
      unknown: ['speaker_events', 'verbose'],
    });
    expect(parseRelayInfoOptions('')).toEqual({ options: new Set(), unknown: [] });
  });

  it('serialises info as Twilio sends it: name and value, and the time of a speaker event', () => {
    expect(
      JSON.parse(serializeToApp({ type: 'info', name: 'agentSpeaking', value: 'on', ts: 1752091234567 })),
    ).toEqual({
      type: 'info',
      name: 'agentSpeaking',
      value: 'on',
      ts: 1752091234567,
    });
    expect(serializeToApp({ type: 'info', name: 'tokensPlayed', value: 'Hello there,' })).toBe(
      '{"type":"info","name":"tokensPlayed","value":"Hello there,"}',
    );
  });
});
