/**
 * ConversationRelay end to end on a Twilio-protocol call: a relay app written here from Twilio's
 * message reference (a plain `ws` server, nothing of ours), a fake speech-to-text service, the real app
 * with the local speech service, and a fake Twilio caller that talks and presses keys.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeMulaw } from '../../src/audio/g711.js';
import { FakeStt, FAKE_STT_KEY } from '../../testkit/fake-stt.js';
import { SseReader } from '../../testkit/sse.js';
import { noisyUtterance, VOICES } from '../../testkit/vad-audio.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { RelayApp, until } from '../helpers/relay-app.js';
import { FakeTelnyx } from '../helpers/gateways/telnyx.js';
import { FakeTwilio } from '../helpers/gateways/twilio.js';

let relayApp: RelayApp;
let stt: FakeStt;
let t: TestApp;
let question: { mulaw: Uint8Array; speechMs: number };
beforeAll(async () => {
  relayApp = await RelayApp.start();
  stt = await FakeStt.start({ transcribe: () => 'What time do you open tomorrow?' });
  t = await startTestApp(
    {
      calls: { defaultFlow: 'assistant' },
      stt: { baseUrl: stt.url, endOfTurnMs: 600 },
      relays: {
        helper: {
          url: relayApp.url,
          headers: { Authorization: 'env:RELAY_TOKEN' },
          welcome: 'Hello, this is the assistant.',
          debug: 'speaker-events tokens-played',
        },
        // Nothing listens there: the socket never opens.
        gone: { url: 'ws://127.0.0.1:9/relay', connectTimeoutMs: 2000 },
      },
      flows: {
        assistant: {
          start: 'talk',
          nodes: {
            talk: { type: 'relay', relay: 'helper', onClose: 'bye' },
            bye: { type: 'hangup', text: 'The assistant has left. Goodbye.' },
          },
        },
        unreachable: {
          start: 'talk',
          nodes: {
            talk: { type: 'relay', relay: 'gone', onClose: 'sorry' },
            sorry: { type: 'hangup', text: 'Sorry, the assistant is not available.' },
          },
        },
      },
    },
    undefined,
    { STT_API_KEY: FAKE_STT_KEY, RELAY_TOKEN: 'Bearer relay-secret' },
  );
  const u = await noisyUtterance('What time do you open tomorrow?', VOICES[1]!, 8000, 25, 31);
  question = { mulaw: encodeMulaw(u.samples), speechMs: u.speechMs };
}, 60_000);
afterAll(async () => {
  await t?.close();
  await relayApp?.close();
  await stt?.close();
});

async function call(parameters: Record<string, string> = {}): Promise<{ g: FakeTwilio; sse: SseReader }> {
  const g = new FakeTwilio(`${t.url.replace('http:', 'ws:')}/media/twilio`, { customParameters: parameters });
  await g.start();
  await g.until(() => t.app.calls.get(g.callSid)?.state.status === 'active', 5000, 'the call');
  const sse = new SseReader(`${t.url}/calls/${g.callSid}/events?after=0`);
  await until(
    () => relayApp.sessions.some((s) => s.received.some((m) => m['callSid'] === g.callSid)),
    5000,
    'setup',
  );
  return { g, sse };
}

describe('a call handed to a relay app', () => {
  it('says setup with the call, its parameters and the gateway, on a socket with the configured headers', async () => {
    const { g, sse } = await call({ from: '+15550100', to: '+15550199', account: 'gold' });
    const session = relayApp.latest();
    const setup = session.received[0]!;
    expect(setup).toMatchObject({
      type: 'setup',
      callSid: g.callSid,
      from: '+15550100',
      to: '+15550199',
      direction: 'inbound',
      customParameters: { account: 'gold' },
      voxbridge: { gateway: 'twilio', prompts: true },
    });
    expect(String(setup['sessionId'])).toMatch(/^VX[0-9a-f]{32}$/);
    expect(session.headers['authorization']).toBe('Bearer relay-secret');
    // The welcome is spoken to the caller.
    await sse.until((e) => e.some((x) => x.event === 'utterance.finished'), 15_000);
    expect(sse.of('utterance.finished')[0]).toMatchObject({
      result: { status: 'played', heard_text: 'Hello, this is the assistant.' },
    });
    await g.close();
    sse.close();
  });

  it("turns the caller's spoken turn into a prompt with the transcript, and speaks the app's tokens as they come", async () => {
    const { g, sse } = await call();
    await sse.until((e) => e.some((x) => x.event === 'utterance.finished'), 15_000); // the welcome
    g.startCallerAudio();
    const before = stt.requests.length;
    g.stopCallerAudio();
    await g.sendLive(question.mulaw);
    g.startCallerAudio();
    const session = relayApp.latest();
    await until(() => session.received.some((m) => m.type === 'prompt'), 10_000, 'the prompt');
    const prompt = session.received.find((m) => m.type === 'prompt')!;
    expect(prompt).toMatchObject({ voicePrompt: 'What time do you open tomorrow?', last: true });
    // The fake heard the caller's turn: 16 kHz mono 16-bit WAV, about as long as the speech.
    const heard = stt.requests.slice(before).find((r) => r.wav);
    expect(heard?.wav).toMatchObject({ sampleRate: 16_000, channels: 1, bitsPerSample: 16 });
    expect(heard!.wav!.durationMs).toBeGreaterThan(question.speechMs * 0.8);
    expect(heard!.wav!.durationMs).toBeLessThan(question.speechMs + 1500);
    // The answer: audio reaches the caller before the app's last token, and plays with no underrun.
    const mediaBefore = g.media().length;
    await sse.until((e) => e.filter((x) => x.event === 'utterance.finished').length >= 2, 20_000);
    const answer = sse.of('utterance.finished')[1] as {
      result: { status: string; heard_text: string; underruns: number };
    };
    expect(answer.result).toMatchObject({
      status: 'played',
      heard_text: 'You said: What time do you open tomorrow?. What else can I do for you today?',
      underruns: 0,
    });
    expect(g.media().length).toBeGreaterThan(mediaBefore);
    expect(g.violations).toEqual([]);
    g.stopCallerAudio();
    await g.close();
    sse.close();
  });

  it('tells the app what the caller heard when they barge in, and drops the rest of that answer', async () => {
    const { g, sse } = await call();
    await sse.until((e) => e.some((x) => x.event === 'utterance.finished'), 15_000);
    const session = relayApp.latest();
    const long =
      'Our opening hours are from nine in the morning until six in the evening on weekdays, and from ten until four on Saturdays, and we are closed on Sundays and public holidays.';
    void relayApp.answer(session.socket, long);
    await until(() => g.playout.playedMs > 1500 + 2000, 15_000, 'the answer to be heard a while');
    await g.sendLive(question.mulaw);
    await until(() => session.received.some((m) => m.type === 'interrupt'), 10_000, 'the interrupt');
    const interrupt = session.received.find((m) => m.type === 'interrupt')!;
    await sse.until((e) => e.some((x) => x.event === 'barge-in'), 5000);
    const bargeIn = sse.of('barge-in')[0] as { heard_text: string; played_ms: number };
    expect(interrupt['utteranceUntilInterrupt']).toBe(bargeIn.heard_text);
    expect(interrupt['durationUntilInterruptMs']).toBe(bargeIn.played_ms);
    expect(typeof interrupt['durationUntilInterruptMs']).toBe('number');
    expect(long.startsWith(String(interrupt['utteranceUntilInterrupt']))).toBe(true);
    expect(String(interrupt['utteranceUntilInterrupt']).length).toBeGreaterThan(10);
    // The info messages the relay asked for (debug), in order: the welcome heard whole, then the cut.
    await until(
      () =>
        session.received.some(
          (m) => m['name'] === 'tokensPlayed' && m['value'] !== 'Hello, this is the assistant.',
        ),
      5000,
      'tokensPlayed of the cut answer',
    );
    const told = session.received
      .filter((m) => m.type === 'info' || m.type === 'interrupt')
      .map((m) => (m.type === 'info' ? `${String(m['name'])} ${String(m['value'])}` : m.type));
    expect(told.slice(0, 3)).toEqual([
      'agentSpeaking on',
      'agentSpeaking off',
      'tokensPlayed Hello, this is the assistant.',
    ]);
    const at = told.indexOf('interrupt');
    expect(told.slice(at - 3, at + 2)).toEqual([
      'agentSpeaking on',
      'clientSpeaking on',
      'agentSpeaking off',
      'interrupt',
      `tokensPlayed ${String(interrupt['utteranceUntilInterrupt'])}`,
    ]);
    // The caller's words become the next prompt; what the app still sent of the cut answer is not
    // spoken: the next utterance is the answer to that prompt.
    await sse.until((e) => e.filter((x) => x.event === 'utterance.finished').length >= 3, 20_000);
    const [, cut, next] = sse.of('utterance.finished') as Array<{
      result: { status: string; heard_text: string };
    }>;
    expect(cut!.result.status).toBe('interrupted');
    expect(next!.result.heard_text).toMatch(/^You said: /);
    await g.close();
    sse.close();
  });

  it('sends key presses as dtmf, and ends the call with the handoff data when the app says end', async () => {
    const { g, sse } = await call();
    const session = relayApp.latest();
    g.dtmf('4');
    await until(() => session.received.some((m) => m.type === 'dtmf'), 5000, 'the dtmf');
    expect(session.received.find((m) => m.type === 'dtmf')).toEqual({ type: 'dtmf', digit: '4' });
    g.dtmf('9');
    await sse.until((e) => e.some((x) => x.event === 'call.ended'), 10_000);
    expect(sse.of('call.ended')[0]).toMatchObject({ handoff_data: '{"reason":"caller pressed 9"}' });
    expect(sse.of('relay').map((r) => (r as { status: string }).status)).toEqual(['started', 'ended']);
    sse.close();
    await g.close();
  });

  it('answers garbage with error and goes on; a dropped socket takes the call to onClose', async () => {
    const { g, sse } = await call();
    const session = relayApp.latest();
    session.socket.send('not json');
    session.socket.send(JSON.stringify({ type: 'dance' }));
    session.socket.send(JSON.stringify({ type: 'text', token: { nested: true } }));
    session.socket.send(JSON.stringify({ type: 'play', source: 'https://example.com/a.mp3' }));
    await until(() => session.received.filter((m) => m.type === 'error').length >= 4, 5000, 'four errors');
    const errors = session.received.filter((m) => m.type === 'error').map((m) => String(m['description']));
    expect(errors[0]).toMatch(/not JSON/);
    expect(errors[1]).toMatch(/unknown message type: dance/);
    expect(errors[2]).toMatch(/token/);
    // Tolerated: booleans as strings, unknown fields.
    session.socket.send(JSON.stringify({ type: 'text', token: 'Still here.', last: 'true', colour: 'red' }));
    await sse.until((e) => e.filter((x) => x.event === 'utterance.finished').length >= 2, 15_000);
    expect(sse.of('utterance.finished')[1]).toMatchObject({
      result: { status: 'played', heard_text: 'Still here.' },
    });
    // Keys go out in-band: two digits of tone and gap, played whole.
    session.socket.send(JSON.stringify({ type: 'sendDigits', digits: '12' }));
    await sse.until((e) => e.filter((x) => x.event === 'utterance.finished').length >= 3, 15_000);
    expect(sse.of('utterance.finished')[2]).toMatchObject({ result: { status: 'played', played_ms: 400 } });
    expect(session.received.filter((m) => m.type === 'error')).toHaveLength(4);
    // The app goes away: the flow's onClose node says goodbye and hangs up.
    session.socket.terminate();
    await sse.until((e) => e.some((x) => x.event === 'call.ended'), 15_000);
    const started = sse.of('utterance.started').map((u) => (u as { text: string | null }).text);
    expect(started).toContain('The assistant has left. Goodbye.');
    expect(sse.of('relay').at(-1)).toMatchObject({ status: 'ended', reason: 'closed' });
    sse.close();
    await g.close();
  });
});

describe('an app whose socket drops mid-utterance', () => {
  it('speaks what it had sent, then goes to onClose', async () => {
    const { g, sse } = await call();
    await sse.until((e) => e.some((x) => x.event === 'utterance.finished'), 15_000); // the welcome
    const session = relayApp.latest();
    for (const token of ['Let me look ', 'that up ', 'for you, ', 'one moment ']) {
      session.socket.send(JSON.stringify({ type: 'text', token }));
      await new Promise((r) => setTimeout(r, 50));
    }
    await until(() => g.media().length > 0 && g.playout.playedMs > 2500, 10_000, 'the answer to start');
    session.socket.terminate();
    await sse.until((e) => e.some((x) => x.event === 'call.ended'), 20_000);
    const results = sse
      .of('utterance.finished')
      .map((u) => (u as { result: { status: string; heard_text: string } }).result);
    expect(results[1]).toEqual(
      expect.objectContaining({ status: 'played', heard_text: 'Let me look that up for you, one moment' }),
    );
    expect(results.at(-1)).toEqual(
      expect.objectContaining({ status: 'played', heard_text: 'The assistant has left. Goodbye.' }),
    );
    expect(sse.of('relay').at(-1)).toMatchObject({ status: 'ended', reason: 'closed' });
    sse.close();
    await g.close();
  });
});

describe('a relay app that cannot be reached', () => {
  it('takes the call to onClose at once, and says why', async () => {
    const g = new FakeTwilio(`${t.url.replace('http:', 'ws:')}/media/twilio`, {
      customParameters: { flow: 'unreachable' },
    });
    await g.start();
    await g.until(() => t.app.calls.get(g.callSid) !== undefined, 5000, 'the call');
    const sse = new SseReader(`${t.url}/calls/${g.callSid}/events?after=0`);
    await sse.until((e) => e.some((x) => x.event === 'call.ended'), 15_000);
    expect(sse.of('relay').at(-1)).toMatchObject({ status: 'ended', reason: 'closed' });
    expect(sse.of('utterance.finished').at(-1)).toMatchObject({
      result: { status: 'played', heard_text: 'Sorry, the assistant is not available.' },
    });
    sse.close();
    await g.close();
  });
});

describe('the relay on Telnyx', () => {
  it('says setup naming the gateway, prompts the transcript of a spoken turn, and speaks the answer', async () => {
    const g = new FakeTelnyx(`${t.url.replace('http:', 'ws:')}/media/telnyx`, {
      customParameters: { from: '+15550111' },
    });
    await g.start();
    await g.until(() => t.app.calls.get(g.callId)?.state.status === 'active', 5000, 'the call');
    const sse = new SseReader(`${t.url}/calls/${encodeURIComponent(g.callId)}/events?after=0`);
    await until(
      () => relayApp.sessions.some((s) => s.received.some((m) => m['callSid'] === g.callId)),
      5000,
      'setup',
    );
    const session = relayApp.latest();
    expect(session.received[0]).toMatchObject({
      type: 'setup',
      callSid: g.callId,
      from: '+15550111',
      voxbridge: { gateway: 'telnyx', prompts: true },
    });
    await sse.until((e) => e.some((x) => x.event === 'utterance.finished'), 15_000); // the welcome
    await g.sendLive(question.mulaw);
    await until(() => session.received.some((m) => m.type === 'prompt'), 10_000, 'the prompt');
    expect(session.received.find((m) => m.type === 'prompt')).toMatchObject({
      voicePrompt: 'What time do you open tomorrow?',
    });
    await sse.until((e) => e.filter((x) => x.event === 'utterance.finished').length >= 2, 20_000);
    expect(sse.of('utterance.finished')[1]).toMatchObject({ result: { status: 'played', underruns: 0 } });
    expect(g.violations).toEqual([]);
    sse.close();
    await g.close();
  });
});

describe('many calls, each on its own relay socket', () => {
  it('runs 100 calls at once, each with its own session, each answer spoken whole', async () => {
    const before = relayApp.sessions.length;
    relayApp.onSetup = (setup) => `Hello caller ${String(setup['callSid']).slice(-6)}, how can I help?`;
    try {
      const gateways: FakeTwilio[] = [];
      for (let i = 0; i < 100; i++) {
        const g = new FakeTwilio(`${t.url.replace('http:', 'ws:')}/media/twilio`);
        await g.start();
        gateways.push(g);
      }
      await until(
        () => relayApp.sessions.slice(before).filter((s) => s.received.length > 0).length >= 100,
        20_000,
        '100 relay sessions set up',
      );
      const sessions = relayApp.sessions.slice(before);
      expect(new Set(sessions.map((s) => s.received[0]!['sessionId'])).size).toBe(100);
      expect(new Set(sessions.map((s) => s.received[0]!['callSid']))).toEqual(
        new Set(gateways.map((g) => g.callSid)),
      );
      // Each call hears the welcome and then its own answer, whole.
      await until(
        () =>
          gateways.every(
            (g) =>
              t.app.calls
                .get(g.callSid)
                ?.eventsAfter(0)
                .filter((e) => e.type === 'utterance.finished').length === 2,
          ),
        60_000,
        'every answer to be played',
      );
      for (const g of gateways) {
        const finished = t.app.calls
          .get(g.callSid)!
          .eventsAfter(0)
          .filter((e) => e.type === 'utterance.finished')
          .map((e) => (e as { result: { status: string; heardText: string } }).result);
        expect(finished.map((r) => r.status)).toEqual(['played', 'played']);
        expect(finished[1]!.heardText).toBe(`Hello caller ${g.callSid.slice(-6)}, how can I help?`);
        expect(g.violations).toEqual([]);
      }
      await Promise.all(gateways.map((g) => g.close()));
      // Every relay socket is closed once its call ended.
      await until(
        () => sessions.every((s) => s.socket.readyState === s.socket.CLOSED),
        10_000,
        'the sockets to close',
      );
    } finally {
      relayApp.onSetup = undefined;
    }
  }, 120_000);
});
