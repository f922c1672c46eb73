/**
 * A Twilio voice app unchanged: its TwiML webhook (a plain `node:http` server answering TwiML written
 * from Twilio's docs, checking every signature with the `twilio` library) runs a call on the real app
 * with the local speech service; its `<ConversationRelay>` drives a relay app (a plain `ws` server),
 * and the `<Connect action>` URL gets the session's end with `HandoffData`.
 */
import twilio from 'twilio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeMulaw, encodeMulaw } from '../../src/audio/g711.js';
import { wavFile } from '../../src/audio/wav.js';
import { analyzeSpeech } from '../../src/service/voices/analyze.js';
import { FakeStt, FAKE_STT_KEY } from '../../testkit/fake-stt.js';
import { toWire } from '../../adapters/media-stream/call-events.js';
import { noisyUtterance, VOICES } from '../../testkit/vad-audio.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { FakeTwilio } from '../helpers/gateways/twilio.js';
import { RelayApp, until } from '../helpers/relay-app.js';
import { HANG, TwimlApp } from '../helpers/twiml-app.js';

const AUTH_TOKEN = 'twiml-test-auth-token-0123456789abcdef';

let web: TwimlApp;
let relayApp: RelayApp;
let stt: FakeStt;
let t: TestApp;
/** Every call's events as the control API's stream has them, by call id, from its first on. */
const events = new Map<string, Wire[]>();

/** A 440 Hz tone, 400 ms at 8 kHz, as a WAV file: what `<Play>` fetches. */
function toneWav(): Buffer {
  const samples = new Int16Array(3200);
  for (let i = 0; i < samples.length; i++)
    samples[i] = Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / 8000));
  return wavFile(samples, 8000);
}

beforeAll(async () => {
  web = await TwimlApp.start(AUTH_TOKEN);
  relayApp = await RelayApp.start();
  stt = await FakeStt.start({ transcribe: () => 'Hola, buenos días.' });
  const relayHost = new URL(relayApp.url).host;
  web
    .on(
      '/incoming-call',
      `<?xml version="1.0" encoding="UTF-8"?>
<Response>
  <Say>Welcome to the test line.</Say>
  <Connect action="/after-relay">
    <ConversationRelay url="${relayApp.url}" welcomeGreeting="Hi! How can I help?" dtmfDetection="true"
        voice="voxbridge-high" language="en-US" transcriptionProvider="Deepgram" madeUpAttribute="x"
        debug="tokens-played" events="speaker-events" partialPrompts="true" ignorebackchannel="true">
      <Language code="es-ES" voice="voxbridge-deep"/>
      <Parameter name="tenant" value="gold"/>
    </ConversationRelay>
  </Connect>
</Response>`,
    )
    .on('/after-relay', '<Response><Say>Thank you. Goodbye.</Say><Hangup/></Response>')
    .on(
      '/verbs',
      `<Response><Say voice="Polly.Joanna">Please hold.</Say><Play loop="2">/tone.wav</Play><Pause length="1"/><Redirect method="GET">/next?step=2</Redirect></Response>`,
    )
    .on('/next', '<Response><Play>http://198.51.100.7/elsewhere.wav</Play><Say>never said</Say></Response>')
    .on('/tone.wav', () => ({ status: 200, body: toneWav(), type: 'audio/wav' }))
    .on(
      '/dial',
      '<Response><Say>Transferring you now.</Say><Dial>+15550100</Dial><Say>Nobody could be reached.</Say></Response>',
    )
    .on(
      '/laughs',
      `<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;"><!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]><Response><Say>&lol3;</Say></Response>`,
    )
    .on('/huge', () => ({
      status: 200,
      body: `<Response><Say>${'a'.repeat(10 * 1024 * 1024)}</Say></Response>`,
    }))
    .on('/nested', () => ({ status: 200, body: '<Response>' + '<Say>'.repeat(5000) }))
    .on('/hang', () => HANG)
    .on('/broken', () => ({ status: 500, body: 'oops' }));
  const twimlFlow = (path: string, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
    start: 'answer',
    nodes: {
      answer: { type: 'twiml', url: `${web.origin}${path}`, hosts: [relayHost], timeoutMs: 1000, ...extra },
    },
  });
  t = await startTestApp(
    {
      calls: { defaultFlow: 'incoming' },
      stt: { baseUrl: stt.url, endOfTurnMs: 600 },
      flows: {
        incoming: twimlFlow('/incoming-call'),
        verbs: {
          start: 'answer',
          nodes: {
            answer: { type: 'twiml', url: `${web.origin}/verbs`, onError: 'sorry' },
            sorry: { type: 'hangup', text: 'Sorry, an application error has occurred.' },
          },
        },
        dial: twimlFlow('/dial'),
        laughs: twimlFlow('/laughs'),
        huge: twimlFlow('/huge'),
        nested: twimlFlow('/nested'),
        hang: twimlFlow('/hang'),
        broken: twimlFlow('/broken'),
      },
    },
    undefined,
    { STT_API_KEY: FAKE_STT_KEY, TWILIO_AUTH_TOKEN: AUTH_TOKEN },
  );
  t.app.calls.onCall((c) =>
    c.on('event', (e) => {
      const list = events.get(e.callId) ?? [];
      list.push(toWire(e));
      events.set(e.callId, list);
    }),
  );
}, 60_000);
afterAll(async () => {
  await t?.close();
  await web?.close();
  await relayApp?.close();
  await stt?.close();
});

type Wire = Record<string, unknown>;

/** One call's events so far, filtered to `type`. */
class CallEvents {
  constructor(private readonly callSid: string) {}
  of(type: string): Wire[] {
    return (events.get(this.callSid) ?? []).filter((e) => e['type'] === type);
  }
  async until(predicate: () => boolean, timeoutMs: number): Promise<void> {
    await until(predicate, timeoutMs, 'call events');
  }
}

interface Call {
  g: FakeTwilio;
  sse: CallEvents;
  close(): Promise<void>;
}

async function call(parameters: Record<string, string> = {}): Promise<Call> {
  const url = `${t.url.replace('http:', 'ws:')}/media/twilio`;
  // The media stream is signed as Twilio signs it (the wss:// URL: TLS ends in front of voxbridge).
  const signature = twilio.getExpectedTwilioSignature(AUTH_TOKEN, url.replace('ws:', 'wss:'), {});
  const g = new FakeTwilio(url, {
    customParameters: parameters,
    headers: { 'X-Twilio-Signature': signature },
  });
  await g.start();
  const sse = new CallEvents(g.callSid);
  await sse.until(() => sse.of('call.started').length > 0, 5000);
  return { g, sse, close: () => g.close() };
}

const heard = (sse: CallEvents): string[] =>
  sse.of('utterance.finished').map((e) => String((e['result'] as Wire)['heard_text']));
/** A `flow.twiml` event's detail: a verb run, a warning, or an error. */
type TwimlDetail = Partial<Record<'verb' | 'name' | 'warning' | 'error', string>>;
const twimlEvents = (sse: CallEvents): TwimlDetail[] =>
  sse
    .of('flow')
    .map((e) => e['event'] as Wire)
    .filter((e) => e['type'] === 'flow.twiml')
    .map((e) => e['detail'] as TwimlDetail);
const ended = (sse: CallEvents): boolean => sse.of('call.ended').length > 0;

/** The caller-heard audio between two indexes of what the fake received, as floats. */
function heardAudio(g: FakeTwilio, from: number, to: number): Float32Array {
  const media = g.received.slice(from, to).filter((r) => r.event === 'media');
  const bytes = Buffer.concat(media.map((r) => r.bytes!));
  const pcm = decodeMulaw(bytes);
  const out = new Float32Array(pcm.length);
  for (let i = 0; i < pcm.length; i++) out[i] = pcm[i]! / 32768;
  return out;
}

describe('a call run by a TwiML webhook', () => {
  it('requests the webhook as Twilio does, runs <Say> and <Connect><ConversationRelay>, and on `end` runs the action URL with HandoffData', async () => {
    const c = await call({ from: '+15550100', to: '+15550199' });
    await until(
      () => web.of('/incoming-call').some((r) => r.params['CallSid'] === c.g.callSid),
      5000,
      'the webhook',
    );
    const hook = web.of('/incoming-call').find((r) => r.params['CallSid'] === c.g.callSid)!;
    expect(hook.method).toBe('POST');
    expect(hook.signed).toBe(true);
    expect(hook.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(hook.params).toMatchObject({
      AccountSid: 'AC00000000000000000000000000000000',
      ApiVersion: '2010-04-01',
      CallStatus: 'ringing',
      Direction: 'inbound',
      From: '+15550100',
      To: '+15550199',
    });
    // The relay app's socket: the setup carries the <Parameter>s, the handshake Twilio's signature.
    await until(
      () => relayApp.sessions.some((s) => s.received[0]?.['callSid'] === c.g.callSid),
      10_000,
      'the setup',
    );
    const session = relayApp.sessions.find((s) => s.received[0]?.['callSid'] === c.g.callSid)!;
    const setup = session.received[0]!;
    expect(setup).toMatchObject({ type: 'setup', customParameters: { tenant: 'gold' }, from: '+15550100' });
    expect(
      twilio.validateRequest(AUTH_TOKEN, String(session.headers['x-twilio-signature']), relayApp.url, {}),
    ).toBe(true);
    expect(JSON.stringify(session.headers)).not.toContain(AUTH_TOKEN);
    // The caller hears the <Say>, then the relay's welcome greeting.
    await c.sse.until(() => heard(c.sse).length >= 2, 20_000);
    expect(heard(c.sse).slice(0, 2)).toEqual(['Welcome to the test line.', 'Hi! How can I help?']);
    // An attribute voxbridge does not know, and one it takes without effect, are each said once.
    const warnings = twimlEvents(c.sse).flatMap((d) => (d.warning === undefined ? [] : [String(d.warning)]));
    expect(warnings.filter((w) => w.includes('madeUpAttribute'))).toHaveLength(1);
    expect(warnings.filter((w) => w.includes('transcriptionProvider'))).toHaveLength(1);
    // Taken with effect (docs/relay.md: partial prompts, backchannels): no warning.
    expect(warnings.filter((w) => /partialPrompts|ignorebackchannel/.test(w))).toEqual([]);
    // As `debug` and `events` asked: who speaks, and what the caller heard of the greeting.
    await until(() => session.received.some((m) => m['name'] === 'tokensPlayed'), 5000, 'tokensPlayed');
    expect(session.received.filter((m) => m.type === 'info').map((m) => [m['name'], m['value']])).toEqual([
      ['agentSpeaking', 'on'],
      ['agentSpeaking', 'off'],
      ['tokensPlayed', 'Hi! How can I help?'],
    ]);
    // Key 9: the app ends the session (dtmfDetection="true" sends it the key) with handoff data.
    c.g.dtmf('9');
    await until(
      () => web.of('/after-relay').some((r) => r.params['CallSid'] === c.g.callSid),
      10_000,
      'the action',
    );
    const action = web.of('/after-relay').find((r) => r.params['CallSid'] === c.g.callSid)!;
    expect(action.signed).toBe(true);
    expect(action.params).toMatchObject({
      SessionId: setup['sessionId'],
      SessionStatus: 'ended',
      HandoffData: '{"reason":"caller pressed 9"}',
      CallStatus: 'in-progress',
    });
    expect(Number(action.params['SessionDuration'])).toBeGreaterThanOrEqual(0);
    // The action's TwiML runs next: a goodbye, then the hang-up.
    await c.sse.until(() => ended(c.sse), 20_000);
    expect(heard(c.sse).at(-1)).toBe('Thank you. Goodbye.');
    await c.close();
  }, 60_000);

  it("speaks each answer in its language's voice: a `language` message switches to the <Language> voice and the speech-to-text's language", async () => {
    const c = await call();
    await until(
      () => relayApp.sessions.some((s) => s.received[0]?.['callSid'] === c.g.callSid),
      10_000,
      'the setup',
    );
    const session = relayApp.sessions.find((s) => s.received[0]?.['callSid'] === c.g.callSid)!;
    await c.sse.until(() => heard(c.sse).length >= 2, 20_000); // the <Say> and the welcome
    const text = 'One, two, three, four, five.';
    const answer = async (): Promise<Float32Array> => {
      const before = c.g.received.length;
      const count = heard(c.sse).length;
      session.socket.send(JSON.stringify({ type: 'text', token: text, last: true }));
      await c.sse.until(() => heard(c.sse).length > count, 20_000);
      expect(heard(c.sse).at(-1)).toBe(text);
      return heardAudio(c.g, before, c.g.received.length);
    };
    const english = analyzeSpeech(await answer(), 8000);
    session.socket.send(
      JSON.stringify({ type: 'language', ttsLanguage: 'es-ES', transcriptionLanguage: 'es-ES' }),
    );
    const spanish = analyzeSpeech(await answer(), 8000);
    // voxbridge-high, then voxbridge-deep: the same words in a plainly lower voice.
    expect(english.f0Hz).toBeGreaterThan(spanish.f0Hz * 1.15);
    // The caller's next turn is transcribed in Spanish.
    const u = await noisyUtterance('Hello, good morning to you.', VOICES[1]!, 8000, 25, 31);
    const before = stt.requests.length;
    c.g.stopCallerAudio();
    await c.g.sendLive(encodeMulaw(u.samples));
    c.g.startCallerAudio();
    await until(() => session.received.some((m) => m.type === 'prompt'), 15_000, 'the prompt');
    expect(stt.requests.slice(before).find((r) => r.wav)?.languageCode).toBe('es-ES');
    expect(session.received.find((m) => m.type === 'prompt')).toMatchObject({
      voicePrompt: 'Hola, buenos días.',
      lang: 'es-ES',
    });
    c.g.stopCallerAudio();
    // The app's socket drops: the action URL hears of a failed session (Twilio's 64105), and runs.
    session.socket.close();
    await until(
      () => web.of('/after-relay').some((r) => r.params['CallSid'] === c.g.callSid),
      10_000,
      'the action',
    );
    expect(web.of('/after-relay').find((r) => r.params['CallSid'] === c.g.callSid)!.params).toMatchObject({
      SessionStatus: 'failed',
      ErrorCode: '64105',
    });
    await c.sse.until(() => ended(c.sse), 20_000);
    await c.close();
  }, 60_000);

  it('runs <Say>, <Play> (relative URL, looped), <Pause> and <Redirect>; a URL on a host not allowed is an error and the node goes to onError', async () => {
    const c = await call({ flow: 'verbs' });
    await c.sse.until(() => ended(c.sse), 30_000);
    expect(twimlEvents(c.sse).flatMap((d) => (d.verb === undefined ? [] : [d.verb]))).toEqual([
      'Say',
      'Play',
      'Pause',
      'Redirect',
      'Play',
    ]);
    const details = twimlEvents(c.sse);
    expect(details.some((d) => String(d.warning).includes('Polly.Joanna'))).toBe(true);
    expect(String(details.find((d) => d.error !== undefined)?.error)).toContain('198.51.100.7');
    // The tone played twice (one utterance, looped), then the onError node spoke.
    const finished = c.sse.of('utterance.finished').map((e) => e['result'] as Wire);
    expect(finished.map((r) => r['status'])).toEqual(['played', 'played', 'played']);
    expect(heard(c.sse)).toEqual(['Please hold.', '', 'Sorry, an application error has occurred.']);
    expect(Number(finished[1]!['played_ms'])).toBeGreaterThanOrEqual(780);
    // The redirect was a GET with the call's fields in its query, signed over that URL.
    const next = web.of('/next').find((r) => r.params['CallSid'] === c.g.callSid)!;
    expect(next).toMatchObject({
      method: 'GET',
      signed: true,
      params: { step: '2', CallStatus: 'in-progress' },
    });
    expect(web.requests.some((r) => r.path === '/elsewhere.wav')).toBe(false);
    await c.close();
  }, 60_000);

  it('a <Dial> where the gateway has no call control fails, naming what to set, and the document goes on', async () => {
    const c = await call({ flow: 'dial' });
    await c.sse.until(() => ended(c.sse), 20_000);
    // As Twilio goes on after a <Dial> that did not connect (no action: the next verb).
    expect(heard(c.sse)).toEqual(['Transferring you now.', 'Nobody could be reached.']);
    const failed = twimlEvents(c.sse).find((d) => (d as Record<string, unknown>)['dial'] === 'failed');
    expect(failed).toMatchObject({ code: 'missing_credentials' });
    expect(String(failed?.error)).toContain('TWILIO_ACCOUNT_SID');
    await c.close();
  }, 30_000);

  it('hangs up on hostile or broken webhooks (entities, 10 MB, 5000 deep, no answer, a 500), and the next call runs', async () => {
    const cases: Array<[string, string]> = [
      ['laughs', 'DOCTYPE'],
      ['huge', '65536'],
      ['nested', 'nest over 8'],
      ['hang', 'failed'],
      ['broken', 'answered 500'],
    ];
    const rssBefore = process.memoryUsage().rss;
    for (const [flow, message] of cases) {
      const started = performance.now();
      const c = await call({ flow });
      // Named, so that a call that never ends says which webhook held it.
      await c.sse
        .until(() => ended(c.sse), 10_000)
        .catch((error: unknown) => {
          throw new Error(`the ${flow} webhook's call did not end: ${String(error)}`);
        });
      expect(String(twimlEvents(c.sse).find((d) => d.error !== undefined)?.error)).toContain(message);
      expect(heard(c.sse)).toEqual([]);
      // Within the node's deadline (1 s), with room for a busy machine.
      expect(performance.now() - started).toBeLessThan(6000);
      await c.close();
    }
    expect(process.memoryUsage().rss - rssBefore).toBeLessThan(100 * 1024 * 1024);
    const c = await call({ flow: 'dial' });
    await c.sse.until(() => ended(c.sse), 20_000);
    expect(heard(c.sse)).toEqual(['Transferring you now.', 'Nobody could be reached.']);
    await c.close();
  }, 90_000);
});
