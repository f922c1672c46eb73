// Over 450 lines: one app and one fake Twilio set up once for every scenario of a call.
/**
 * Phone calls over Twilio's media-stream protocol, end to end: a fake Twilio (a real ws client that
 * plays out at real time and returns marks by Twilio's rules) against the real app with the local
 * speech service. The control API drives speech; the default flow is exercised with DTMF.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import twilio from 'twilio';
import WebSocket from 'ws';
import { twilioSignature } from '../../src/protocols/twilio-signature.js';
import { encodeMulaw } from '../../src/audio/g711.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { FakeTwilio } from '../helpers/gateways/twilio.js';
import { SseReader } from '../../testkit/sse.js';
import { noisyUtterance, VOICES } from '../../testkit/vad-audio.js';

/** Asymmetric matchers, typed `unknown` so they sit in expected objects without an unsafe any. */
const A_NUMBER: unknown = expect.any(Number);
const A_STRING: unknown = expect.any(String);
const ANYTHING: unknown = expect.anything();
const FLOW_NODE: unknown = expect.objectContaining({ type: 'flow.node', flow: 'default', detail: ANYTHING });
let t: TestApp;
let wsUrl: string;
beforeAll(async () => {
  t = await startTestApp({
    calls: { defaultFlow: null, maxCalls: 6, maxMessagesPerSecond: 100, maxPayloadBytes: 65536 },
  });
  wsUrl = t.url.replace('http:', 'ws:');
});
afterAll(async () => {
  await t.close();
});

async function connect(
  options: ConstructorParameters<typeof FakeTwilio>[1] = {},
  query = '',
): Promise<FakeTwilio> {
  const g = new FakeTwilio(`${wsUrl}/media/twilio${query}`, options);
  await g.start();
  await g.until(() => t.app.calls.get(g.callSid)?.state.status === 'active', 5000, 'the call to start');
  return g;
}

async function post(path: string, body: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(`${t.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

describe('Twilio media stream', () => {
  it('sends nothing before start, ignores media before it, then speaks in whole 160-byte frames', async () => {
    const g = new FakeTwilio(`${wsUrl}/media/twilio`);
    await g.open();
    g.sendAudio(new Uint8Array(800).fill(0xff)); // before start: ignored
    await new Promise((r) => setTimeout(r, 100));
    expect(g.received).toHaveLength(0);
    await g.start();
    await g.until(() => t.app.calls.get(g.callSid) !== undefined, 5000, 'the call');
    const said = await post(`/calls/${g.callSid}/say`, { text: 'Hello caller, this is a test.' });
    expect(said.status).toBe(200);
    expect(said.json).toMatchObject({ status: 'played', heard_text: 'Hello caller, this is a test.' });
    // The one result shape of both control APIs: every field there, snake_case, no error when it played.
    expect(Object.keys(said.json).sort()).toEqual(
      ['first_byte_ms', 'first_frame_ms', 'heard_text', 'id', 'played_ms', 'status', 'underruns'].sort(),
    );
    // Over a second of audio, in messages of whole 160-byte frames (two at a time, as paced).
    expect(g.mediaBytes()).toBeGreaterThan(50 * 160);
    expect(g.violations).toEqual([]);
    // played_ms is what the far end played, confirmed by the returned marks.
    expect(said.json['played_ms']).toBe((g.mediaBytes() / 8) | 0);
    expect(g.marksReturned.length).toBeGreaterThan(0);
    expect(g.marksReturned.every((m) => !m.cleared)).toBe(true);
    expect(Math.abs(g.playout.playedMs - (said.json['played_ms'] as number))).toBeLessThanOrEqual(20);
    await g.close();
  });

  it('plays in real time with no gap inside an utterance', async () => {
    const g = await connect();
    const text = 'The first sentence of this reply. A second sentence follows it. And a third one ends it.';
    const said = await post(`/calls/${g.callSid}/say`, { text });
    expect(said.json).toMatchObject({ status: 'played', underruns: 0 });
    expect(g.playout.gaps).toEqual([]);
    await g.close();
  });

  it('interrupt: clears the gateway, and not one frame of the old utterance follows the clear', async () => {
    const g = await connect();
    const long = 'This is a long answer that goes on and on. '.repeat(8);
    const pending = post(`/calls/${g.callSid}/say`, { text: long });
    await g.until(() => g.playout.playedMs > 1000, 10_000, '1 s played');
    const cut = await post(`/calls/${g.callSid}/interrupt`, {});
    expect(cut.json['interrupted']).toBe(true);
    const result = (await pending).json;
    expect(result['status']).toBe('interrupted');
    await g.until(() => g.received.some((r) => r.event === 'clear'), 2000, 'the clear');
    const clearIndex = g.received.findIndex((r) => r.event === 'clear');
    await new Promise((r) => setTimeout(r, 500));
    expect(g.received.slice(clearIndex + 1).filter((r) => r.event === 'media')).toEqual([]);
    // What was heard is what played before the clear (± one frame), and its text is a prefix.
    expect(Math.abs((result['played_ms'] as number) - g.playout.playedMs)).toBeLessThanOrEqual(100);
    expect(long.startsWith(result['heard_text'] as string)).toBe(true);
    expect((result['heard_text'] as string).length).toBeGreaterThan(0);
    expect(g.violations).toEqual([]);
    await g.close();
  });

  it('a caller hanging up mid-utterance aborts the speech request at once', async () => {
    const g = await connect();
    // One long sentence: its response is still streaming when the caller goes.
    const sentence = 'A very long reply that goes on, and on, '.repeat(118) + 'until it ends.';
    const disconnectedBefore = t.app.service!.requestStats.disconnected;
    const pending = post(`/calls/${g.callSid}/say`, { text: sentence });
    await g.until(() => g.playout.playedMs > 300, 10_000, 'audio');
    const t0 = performance.now();
    g.ws.terminate();
    // The service sees the request go (its socket closes) and stops synthesising it.
    await g.until(
      () => t.app.service!.requestStats.disconnected > disconnectedBefore,
      2000,
      'the speech service to see the request go',
    );
    expect(performance.now() - t0).toBeLessThan(500);
    expect((await pending).json['status']).toBe('interrupted');
    expect(t.app.calls.get(g.callSid)).toBeUndefined();
    g.playout.stop();
  });

  it('control API: lists calls, describes one, streams its events, and hangs up', async () => {
    // Query parameters of the stream URL are call parameters too; the start message's win.
    const g = await connect({ customParameters: { customer: 'c-42' } }, '?campaign=spring&customer=url');
    const list = (await (await fetch(`${t.url}/calls`)).json()) as { calls: Array<Record<string, unknown>> };
    expect(list.calls.map((c) => c['id'])).toContain(g.callSid);
    const one = (await (await fetch(`${t.url}/calls/${g.callSid}`)).json()) as Record<string, unknown>;
    expect(one).toMatchObject({
      id: g.callSid,
      gateway: 'twilio',
      status: 'active',
      stream_id: g.streamSid,
      parameters: { customer: 'c-42', campaign: 'spring' },
      inbound: { encoding: 'mulaw', sample_rate: 8000, channels: 1 },
    });
    const sse = new SseReader(`${t.url}/calls/${g.callSid}/events`);
    const replay = new SseReader(`${t.url}/calls/${g.callSid}/events?after=0`);
    await sse.until((e) => e.some((x) => x.event === 'call.state'));
    // The snapshot is the call as GET /calls/{id} describes it.
    expect(sse.of('call.state')[0]).toEqual(one);
    // Events are snake_case on the wire; the call's parameters keep the caller's own keys.
    await replay.until((e) => e.some((x) => x.event === 'call.started'));
    expect(replay.of('call.started')[0]).toEqual({
      type: 'call.started',
      seq: 1,
      at: A_STRING,
      call_id: g.callSid,
      gateway: 'twilio',
      stream_id: g.streamSid,
      flow: null,
      parameters: { customer: 'c-42', campaign: 'spring' },
    });
    replay.close();
    const accepted = await post(`/calls/${g.callSid}/say`, { text: 'Queued without waiting.', wait: false });
    expect(accepted.status).toBe(202);
    await sse.until((e) => e.some((x) => x.event === 'utterance.finished'));
    const finished = sse.of('utterance.finished')[0] as Record<string, unknown>;
    expect(finished).toMatchObject({ call_id: g.callSid, utterance_id: accepted.json['id'] });
    // The same result serialiser as `say` answers with.
    expect(finished['result']).toEqual({
      status: 'played',
      played_ms: A_NUMBER,
      heard_text: 'Queued without waiting.',
      first_byte_ms: A_NUMBER,
      first_frame_ms: A_NUMBER,
      underruns: A_NUMBER,
    });
    expect(sse.of('utterance.started')[0]).toMatchObject({
      utterance_id: accepted.json['id'],
      text: 'Queued without waiting.',
    });
    const closed = new Promise((r) => g.ws.once('close', r));
    const del = await fetch(`${t.url}/calls/${g.callSid}`, { method: 'DELETE' });
    expect(del.status).toBe(204);
    await closed;
    await sse.until((e) => e.some((x) => x.event === 'call.ended'));
    await sse.done;
    expect(sse.of('utterance.started')).toHaveLength(1);
    expect((await fetch(`${t.url}/calls/${g.callSid}`)).status).toBe(404);
    g.playout.stop();
  });

  it('control API: 400 naming the parameter, 404 for an unknown call, 405 for a wrong method', async () => {
    const g = await connect();
    const bad = await post(`/calls/${g.callSid}/say`, { text: '' });
    expect(bad.status).toBe(400);
    expect(bad.json['param']).toBe('text');
    const extra = await post(`/calls/${g.callSid}/say`, { text: 'x', colour: 'red' });
    expect(extra.status).toBe(400);
    expect((await post('/calls/CAnope/say', { text: 'hi' })).status).toBe(404);
    expect((await fetch(`${t.url}/calls/${g.callSid}/say`)).status).toBe(405);
    const notJson = await fetch(`${t.url}/calls/${g.callSid}/say`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{',
    });
    expect(notJson.status).toBe(400);
    // A body not sent as JSON is refused before it is read (a web page can send text/plain anywhere).
    const plain = await fetch(`${t.url}/calls/${g.callSid}/say`, { method: 'POST', body: '{"text":"hi"}' });
    expect(plain.status).toBe(415);
    await g.close();
  });

  it('bad input is dropped and only the offending connection is closed; other calls never notice', async () => {
    const bystander = await connect();
    const speaking = post(`/calls/${bystander.callSid}/say`, {
      text: 'I keep talking while others misbehave.',
    });
    const g = await connect();
    g.ws.send('{not json');
    g.ws.send(JSON.stringify({ event: 'no-such-event', streamSid: g.streamSid }));
    g.ws.send(Buffer.from([1, 2, 3]), { binary: true });
    g.send({ event: 'media', streamSid: g.streamSid, media: { payload: '!!not base64!!' } });
    await new Promise((r) => setTimeout(r, 100));
    expect(g.ws.readyState).toBe(WebSocket.OPEN);
    expect(t.app.calls.get(g.callSid)!.dropped).toBeGreaterThanOrEqual(3);
    // Oversized: the connection is closed with 1009.
    const tooBig = new Promise<number>((r) => g.ws.once('close', (code) => r(code)));
    g.ws.send('x'.repeat(70_000));
    expect(await tooBig).toBe(1009);
    // A flood: closed with 1008.
    const flooder = await connect();
    const flooded = new Promise<number>((r) => flooder.ws.once('close', (code) => r(code)));
    for (let i = 0; i < 400; i++)
      flooder.send({ event: 'mark', streamSid: flooder.streamSid, mark: { name: 'x' } });
    expect(await flooded).toBe(1008);
    expect((await speaking).json).toMatchObject({ status: 'played', underruns: 0 });
    expect(bystander.violations).toEqual([]);
    await bystander.close();
    g.playout.stop();
    flooder.playout.stop();
  });

  it('refuses calls beyond maxCalls with close code 1013', async () => {
    const open: FakeTwilio[] = [];
    for (let i = 0; i < 6; i++) open.push(await connect());
    const extra = new FakeTwilio(`${wsUrl}/media/twilio`);
    const code = await new Promise<number>((r) => extra.ws.once('close', (c) => r(c)));
    expect(code).toBe(1013);
    extra.playout.stop();
    await Promise.all(open.map((g) => g.close()));
  });

  it('answers 404 on an unknown gateway path', async () => {
    const ws = new WebSocket(`${wsUrl}/media/skype`);
    const status = await new Promise<number>((r) =>
      ws.once('unexpected-response', (_req, res) => r(res.statusCode ?? 0)),
    );
    expect(status).toBe(404);
  });
});

describe('the default flow over Twilio', () => {
  let flowApp: TestApp;
  beforeAll(async () => {
    flowApp = await startTestApp();
  });
  afterAll(async () => {
    await flowApp.close();
  });

  it('greets, answers a key with speech, and hangs up on #', async () => {
    const g = new FakeTwilio(`${flowApp.url.replace('http:', 'ws:')}/media/twilio`);
    await g.start();
    await g.until(() => flowApp.app.calls.get(g.callSid) !== undefined, 5000, 'the call');
    const sse = new SseReader(`${flowApp.url}/calls/${g.callSid}/events`);
    // The greeting: at least four seconds of speech.
    await sse.until((e) => e.some((x) => x.event === 'utterance.finished'), 20_000);
    const greeting = sse.of('utterance.finished')[0] as { result: { status: string; played_ms: number } };
    expect(greeting.result.status).toBe('played');
    expect(greeting.result.played_ms).toBeGreaterThanOrEqual(4000);
    // The menu prompt starts; a key cuts it and is answered.
    const started = (text: string) => (e: typeof sse.events) =>
      e.some((x) => x.event === 'utterance.started' && (x.data as { text: string }).text.startsWith(text));
    await sse.until(started('Press any key'));
    g.dtmf('5');
    await sse.until(started('You pressed five.'));
    // Then the menu again.
    await sse.until(
      (e) =>
        e.filter(
          (x) =>
            x.event === 'utterance.started' && (x.data as { text: string }).text.startsWith('Press any key'),
        ).length >= 2,
      20_000,
    );
    const closed = new Promise((r) => g.ws.once('close', r));
    g.dtmf('#');
    await closed;
    const texts = sse.of('utterance.started').map((u) => (u as { text: string }).text);
    expect(texts.at(-1)).toBe('Thank you for calling. Goodbye.');
    expect(sse.of('dtmf').map((d) => (d as { digit: string }).digit)).toEqual(['5', '#']);
    // Flow events nest the runner's own, snake_case too.
    expect(sse.of('flow')).toContainEqual(
      expect.objectContaining({
        call_id: g.callSid,
        event: FLOW_NODE,
      }),
    );
    sse.close();
    g.playout.stop();
  });
});

describe('the default flow after a barge-in (Twilio)', () => {
  let flowApp: TestApp;
  let speech: Uint8Array;
  beforeAll(async () => {
    flowApp = await startTestApp();
    speech = encodeMulaw(
      (await noisyUtterance('Hello? Hello, is anybody there?', VOICES[2]!, 8000, 25, 21)).samples,
    );
  });
  afterAll(async () => {
    await flowApp.close();
  });

  it('stops the greeting when the caller talks, then waits at least 5 s for a key before the menu', async () => {
    const g = new FakeTwilio(`${flowApp.url.replace('http:', 'ws:')}/media/twilio`);
    await g.start();
    await g.until(() => flowApp.app.calls.get(g.callSid) !== undefined, 5000, 'the call');
    const sse = new SseReader(`${flowApp.url}/calls/${g.callSid}/events`);
    await g.until(() => g.playout.playedMs > 1000, 10_000, 'the greeting to be heard');
    await g.sendLive(speech);
    await sse.until((e) => e.some((x) => x.event === 'barge-in'), 5000);
    const greeting = (await (async () => {
      await sse.until((e) => e.some((x) => x.event === 'utterance.finished'));
      return sse.of('utterance.finished')[0];
    })()) as { result: { status: string } };
    expect(greeting.result.status).toBe('interrupted');
    // The menu comes only after the wait for a key.
    await sse.until(
      (e) =>
        e.some(
          (x) =>
            x.event === 'utterance.started' && (x.data as { text: string }).text.startsWith('Press any key'),
        ),
      15_000,
    );
    // On the call's own clock (the events' timestamps): the menu starts ≥ 5 s after the barge-in.
    const at = (event: string, text?: string): number =>
      Date.parse(
        (
          sse.events.find(
            (e) =>
              e.event === event && (text === undefined || (e.data as { text: string }).text.startsWith(text)),
          )!.data as { at: string }
        ).at,
      );
    expect(at('utterance.started', 'Press any key') - at('barge-in')).toBeGreaterThanOrEqual(5000);
    sse.close();
    await g.close();
  }, 30_000);
});

describe('X-Twilio-Signature on the upgrade', () => {
  const SIGNING_SECRET = 'made-up-signing-secret-0123456789';
  let signed: TestApp;
  let url: string;
  beforeAll(async () => {
    signed = await startTestApp({ calls: { defaultFlow: null } }, undefined, {
      TWILIO_AUTH_TOKEN: SIGNING_SECRET,
    });
    url = `${signed.url.replace('http:', 'ws:')}/media/twilio`;
  });
  afterAll(async () => {
    await signed.close();
  });

  async function upgradeStatus(headers: Record<string, string>): Promise<number> {
    const ws = new WebSocket(url, { headers });
    return new Promise((resolve) => {
      ws.once('open', () => {
        ws.close();
        resolve(101);
      });
      ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
    });
  }

  it("accepts the signature the twilio package computes, and ours passes the package's validator", async () => {
    // Twilio signs the wss:// URL it connects to (TLS ends in front of voxbridge).
    const publicUrl = url.replace('ws:', 'wss:');
    const signature = twilio.getExpectedTwilioSignature(SIGNING_SECRET, publicUrl, {});
    expect(twilioSignature(SIGNING_SECRET, publicUrl)).toBe(signature);
    expect(
      twilio.validateRequest(SIGNING_SECRET, twilioSignature(SIGNING_SECRET, publicUrl), publicUrl, {}),
    ).toBe(true);
    expect(await upgradeStatus({ 'X-Twilio-Signature': signature })).toBe(101);
  });

  it('refuses a missing (401) or wrong (403) signature, before any WebSocket exists', async () => {
    expect(await upgradeStatus({})).toBe(401);
    const wrong = twilio.getExpectedTwilioSignature('another-token', url.replace('ws:', 'wss:'), {});
    expect(await upgradeStatus({ 'X-Twilio-Signature': wrong })).toBe(403);
    expect(signed.app.calls.list()).toHaveLength(0);
  });
});

describe('MEDIA_STREAM_TOKEN and CONTROL_TOKEN', () => {
  let locked: TestApp;
  beforeAll(async () => {
    locked = await startTestApp({ calls: { defaultFlow: null } }, undefined, {
      MEDIA_STREAM_TOKEN: 'media-token-0123456789',
      CONTROL_TOKEN: 'control-token-0123456789',
    });
  });
  afterAll(async () => {
    await locked.close();
  });

  it('needs the media token on the upgrade (path segment, bearer, Basic or query) and the bearer on the API', async () => {
    const base = `${locked.url.replace('http:', 'ws:')}/media/twilio`;
    const status = (target: string, headers: Record<string, string> = {}): Promise<number> =>
      new Promise((resolve) => {
        const ws = new WebSocket(target, { headers });
        ws.once('open', () => {
          ws.close();
          resolve(101);
        });
        ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      });
    expect(await status(base)).toBe(401);
    expect(await status(`${base}/wrong-token`)).toBe(403);
    expect(await status(`${base}/media-token-0123456789`)).toBe(101);
    // A malformed escape in the path token is no token at all: 401 (it once threw in the upgrade
    // handler and took the process down); the server goes on accepting.
    expect(await status(`${base}/%zz`)).toBe(401);
    expect(await status(`${base}/media-token-%E0%A4%A`)).toBe(401);
    expect(await status(`${base}/media-token-0123456789`)).toBe(101);
    expect(await status(base, { Authorization: 'Bearer media-token-0123456789' })).toBe(101);
    const basic = Buffer.from('exotel:media-token-0123456789').toString('base64');
    expect(await status(base.replace('twilio', 'exotel'), { Authorization: `Basic ${basic}` })).toBe(101);
    expect(await status(`${base.replace('twilio', 'vonage')}?token=media-token-0123456789`)).toBe(101);
    expect((await fetch(`${locked.url}/calls`)).status).toBe(401);
    const wrong = await fetch(`${locked.url}/calls`, { headers: { Authorization: 'Bearer nope' } });
    expect(wrong.status).toBe(401);
    const ok = await fetch(`${locked.url}/calls`, {
      headers: { Authorization: 'Bearer control-token-0123456789' },
    });
    expect(ok.status).toBe(200);
  });
});

/** Caller audio at real time, one 20 ms message every 20 ms, as a live call streams it. */

describe('barge-in on the caller voice (Twilio)', () => {
  let voiceApp: TestApp;
  let speech: Uint8Array;
  let speechOnsetMs: number;
  let cough: Uint8Array;
  beforeAll(async () => {
    voiceApp = await startTestApp({ calls: { defaultFlow: null } });
    const u = await noisyUtterance(
      'Sorry, can I stop you there? I have a question.',
      VOICES[1]!,
      8000,
      20,
      11,
    );
    speech = encodeMulaw(u.samples);
    speechOnsetMs = u.onsetMs;
    // 80 ms of speech, in the bot's first second: under minSpeechMs (128), which holds over the bot from
    // its first second too (before the echo path is known, the echo is taken at its loudest).
    const burst = new Int16Array(u.samples.length);
    const end = Math.round(((u.onsetMs + 80) / 1000) * 8000);
    burst.set(u.samples.subarray(0, end));
    cough = encodeMulaw(burst);
  });
  afterAll(async () => {
    await voiceApp.close();
  });

  it('clears the gateway and aborts the reply when the caller talks over it; a short burst does not', async () => {
    const g = new FakeTwilio(`${voiceApp.url.replace('http:', 'ws:')}/media/twilio`);
    await g.start();
    await g.until(() => voiceApp.app.calls.get(g.callSid)?.state.status === 'active', 5000, 'the call');
    const sse = new SseReader(`${voiceApp.url}/calls/${g.callSid}/events`);
    const reply = 'This is a long answer that goes on, and on, and on, '.repeat(30) + 'until it ends.';
    const pending = fetch(`${voiceApp.url}/calls/${g.callSid}/say`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ text: reply }),
    });
    await g.until(() => g.playout.playedMs > 800, 10_000, 'the reply to be heard');
    await g.sendLive(cough);
    await new Promise((r) => setTimeout(r, 300));
    expect(g.received.some((r) => r.event === 'clear')).toBe(false);
    const onsetAt = g.inboundTimestampMs;
    void g.sendLive(speech);
    await g.until(() => g.received.some((r) => r.event === 'clear'), 5000, 'the clear');
    const clearIndex = g.received.findIndex((r) => r.event === 'clear');
    const result = (await (await pending).json()) as Record<string, unknown>;
    expect(result['status']).toBe('interrupted');
    expect(reply.startsWith(result['heard_text'] as string)).toBe(true);
    await new Promise((r) => setTimeout(r, 400));
    expect(g.received.slice(clearIndex + 1).filter((r) => r.event === 'media')).toEqual([]);
    await sse.until((e) => e.some((x) => x.event === 'barge-in'));
    const event = sse.of('barge-in')[0] as Record<string, unknown> & {
      onset_ms: number;
      detected_ms: number;
    };
    expect(event).toMatchObject({
      call_id: g.callSid,
      utterance_id: A_STRING,
      played_ms: A_NUMBER,
      heard_text: A_STRING,
    });
    // The onset is placed on the caller's timeline, where the speech begins in what we sent (or at its
    // second word: "Sorry," alone is too short to count while the bot talks).
    expect(event.onset_ms).toBeGreaterThan(onsetAt + speechOnsetMs - 100);
    expect(event.onset_ms).toBeLessThan(onsetAt + speechOnsetMs + 800);
    // The line carries no echo of the bot: once the echo estimator has heard the bot for a couple of
    // seconds and found none, a short run of speech suffices while it talks.
    expect(event.detected_ms - event.onset_ms).toBeLessThan(380);
    // Confirmed where the detector's run of speech reached its length (128 ms by default), not earlier.
    expect(event.detected_ms - event.onset_ms).toBeGreaterThanOrEqual(128);
    sse.close();
    await g.close();
  });
});
