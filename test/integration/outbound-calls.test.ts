/**
 * Outbound calls (`POST /calls`) end to end: the real app, a fake of Twilio's Calls REST API
 * (testkit/fake-gateway-rest) and a fake Twilio that, once the call is "answered", opens the media
 * stream the call's TwiML names back to the app with its `<Parameter>`s, signed as Twilio signs it.
 * The call is followed by one id and one event stream from `call.ringing` to its end; its flow speaks
 * and hangs up at the gateway. Then what goes wrong: the gateway refusing the call (its reason), no
 * credentials, no public URL, a bad request, the cap on calls being placed, a stream naming no call of
 * ours, and (on a fake clock) a call whose stream never comes. The CLI places a call too. Everything
 * is logged at trace level into one buffer, which must not hold a single secret.
 */
import { PassThrough } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/app/logger.js';
import { callControlFor } from '../../src/call-control/index.js';
import { runCli } from '../../src/cli/cli.js';
import { twilioSignature } from '../../src/protocols/twilio-signature.js';
import { OutboundCalls } from '../../adapters/media-stream/outbound-calls.js';
import type { CallEvent } from '../../adapters/media-stream/call-events.js';
import {
  FakePlivoRest,
  FakeTwilioRest,
  twilioStream,
  type TwilioFakeCall,
  fakeGatewayCredentials,
  fakeSecret,
  fakeTwilioAccountSid,
} from '../../testkit/fake-gateway-rest/index.js';
import { freePort } from '../../testkit/ports.js';
import { SseReader } from '../../testkit/sse.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { FakePlivo } from '../helpers/gateways/plivo.js';
import { FakeTwilio } from '../helpers/gateways/twilio.js';

const ENV = {
  TWILIO_ACCOUNT_SID: fakeTwilioAccountSid(),
  TWILIO_AUTH_TOKEN: fakeSecret('twilio-token'),
  PLIVO_AUTH_ID: fakeGatewayCredentials().PLIVO_AUTH_ID,
  PLIVO_AUTH_TOKEN: fakeSecret('plivo-token'),
  MEDIA_STREAM_TOKEN: fakeSecret('media-stream-token'),
  CONTROL_TOKEN: fakeSecret('control-token'),
} as const;
const SECRETS = [
  ENV.TWILIO_ACCOUNT_SID,
  ENV.TWILIO_AUTH_TOKEN,
  ENV.PLIVO_AUTH_ID,
  ENV.PLIVO_AUTH_TOKEN,
  Buffer.from(`${ENV.PLIVO_AUTH_ID}:${ENV.PLIVO_AUTH_TOKEN}`).toString('base64'),
  ENV.MEDIA_STREAM_TOKEN,
  ENV.CONTROL_TOKEN,
  Buffer.from(`${ENV.TWILIO_ACCOUNT_SID}:${ENV.TWILIO_AUTH_TOKEN}`).toString('base64'),
];
const AUTH = { authorization: `Bearer ${ENV.CONTROL_TOKEN}` };
const CALLEE = '+15551234567';
const CALLER_ID = '+15550001111';
const REMINDER = 'Hello, this is your reminder.';

let log = '';
const logStream = new PassThrough();
logStream.on('data', (d: Buffer) => (log += d.toString()));

let fake: FakeTwilioRest;
let plivo: FakePlivoRest;
let t: TestApp;
let port: number;
const open: Array<{ close(): Promise<void> }> = [];

beforeAll(async () => {
  fake = await FakeTwilioRest.start({ accountSid: ENV.TWILIO_ACCOUNT_SID, authToken: ENV.TWILIO_AUTH_TOKEN });
  plivo = await FakePlivoRest.start({ authId: ENV.PLIVO_AUTH_ID, authToken: ENV.PLIVO_AUTH_TOKEN });
  port = await freePort();
  t = await startTestApp(
    {
      service: { workers: 1 },
      calls: {
        defaultFlow: null,
        bargeIn: { enabled: false },
        control: {
          twilio: { apiBaseUrl: fake.url },
          plivo: { apiBaseUrl: plivo.url },
          maxPlacing: 2,
          requestTimeoutMs: 3000,
        },
      },
      flows: {
        reminder: {
          start: 'hello',
          nodes: { hello: { type: 'say', text: REMINDER, next: 'bye' }, bye: { type: 'hangup' } },
        },
      },
    },
    undefined,
    { ...ENV, PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}/` },
    { logger: createLogger('trace', logStream) },
  );
});

afterAll(async () => {
  await Promise.all(open.map((o) => o.close()));
  await t.close();
  await fake.close();
  await plivo.close();
  // Every request and call event was logged, the REST fields at trace; no secret may be among them.
  expect(log).toContain('call control request');
  expect(log).toContain('call.ringing');
  for (const secret of SECRETS) expect(log).not.toContain(secret);
});

async function post(
  path: string,
  body: unknown,
  headers: Record<string, string> = { 'content-type': 'application/json', ...AUTH },
): Promise<{ status: number; json: Record<string, unknown>; headers: Headers }> {
  const res = await fetch(`${t.url}${path}`, {
    method: 'POST',
    headers,
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown>, headers: res.headers };
}

async function get(path: string): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(`${t.url}${path}`, { headers: AUTH });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

/** The callee answers: Twilio opens the stream its TwiML names, with its parameters, signed. */
async function answer(call: TwilioFakeCall): Promise<FakeTwilio> {
  const stream = twilioStream(call);
  if (!stream) throw new Error('the call has no <Connect><Stream>');
  const g = new FakeTwilio(stream.url, {
    callSid: call.sid,
    accountSid: call.accountSid,
    customParameters: stream.parameters,
    headers: { 'x-twilio-signature': twilioSignature(ENV.TWILIO_AUTH_TOKEN, stream.url) },
  });
  open.push(g);
  await g.start();
  return g;
}

const placeBody = (extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  gateway: 'twilio',
  to: CALLEE,
  from: CALLER_ID,
  flow: 'reminder',
  ...extra,
});

describe('POST /calls', () => {
  it('places the call, answers 201 with its id, and follows it by that id from ringing to its hang-up', async () => {
    const creating = fake.nextCreated();
    const placed = await post('/calls', placeBody({ parameters: { campaign: 'spring-2030' } }));
    expect(placed.status).toBe(201);
    const id = placed.json['id'] as string;
    expect(placed.json).toMatchObject({
      id,
      gateway: 'twilio',
      direction: 'outbound',
      to: CALLEE,
      flow: 'reminder',
    });
    expect(placed.headers.get('location')).toBe(`/calls/${id}`);
    const events = new SseReader(`${t.url}/calls/${id}/events?after=0`, AUTH);

    // The gateway was asked as Twilio documents: To, From, ring time, and TwiML streaming back here.
    const call = await creating;
    expect(call.created).toMatchObject({ To: [CALLEE], From: [CALLER_ID], Timeout: ['30'] });
    expect(twilioStream(call)).toEqual({
      url: `ws://127.0.0.1:${port}/media/twilio/${ENV.MEDIA_STREAM_TOKEN}`,
      parameters: { campaign: 'spring-2030', flow: 'reminder', voxbridge_call_id: id },
    });
    await events.until((e) => e.some((x) => x.event === 'call.ringing'));
    expect(events.of('call.ringing')[0]).toMatchObject({
      seq: 1,
      call_id: id,
      gateway: 'twilio',
      to: CALLEE,
      from: CALLER_ID,
      provider_call_id: call.sid,
    });
    const listed = (await get('/calls')).json['calls'] as Array<Record<string, unknown>>;
    expect(listed.find((c) => c['id'] === id)).toMatchObject({
      status: 'ringing',
      provider_call_id: call.sid,
    });

    // Answered: the stream comes back, the call keeps its id, the flow speaks, then hangs up for real.
    const g = await answer(call);
    await events.until((e) => e.some((x) => x.event === 'call.ended'), 20_000);
    await events.done;
    const types = events.events.map((e) => e.event);
    expect(types.slice(0, 4)).toEqual(['call.state', 'call.ringing', 'call.answered', 'call.started']);
    expect(types.at(-1)).toBe('call.ended');
    const seqs = events.events.slice(1).map((e) => (e.data as { seq: number }).seq);
    expect(seqs).toEqual(seqs.map((_, i) => i + 1));
    expect(events.of('call.answered')[0]).toMatchObject({
      call_id: id,
      stream_id: g.streamSid,
      provider_call_id: call.sid,
      ring_ms: expect.any(Number) as unknown,
    });
    expect(events.of('call.started')[0]).toMatchObject({ call_id: id, flow: 'reminder' });
    expect(events.of('utterance.finished')[0]).toMatchObject({
      call_id: id,
      result: { status: 'played', heard_text: REMINDER },
    });
    expect(events.of('call.ended')[0]).toMatchObject({ call_id: id, reason: 'hung up' });
    expect(g.mediaBytes()).toBeGreaterThan(8000); // over a second of the reminder
    expect(g.violations).toEqual([]);
    // The flow's hangup ended the call at the gateway, not only its stream.
    expect(call.status).toBe('completed');
    expect(call.updates.at(-1)).toEqual({ Status: ['completed'] });
    expect((await get(`/calls/${id}`)).status).toBe(404);
  });

  it('on Plivo: its answer XML is served by the app, and the stream is matched by voxbridge’s own id', async () => {
    const placed = await post('/calls', placeBody({ gateway: 'plivo' }));
    expect(placed.status).toBe(201);
    const id = placed.json['id'] as string;
    const events = new SseReader(`${t.url}/calls/${id}/events?after=0`, AUTH);
    await events.until((e) => e.some((x) => x.event === 'call.ringing'));
    // Plivo answers with a request id only: the call is known by its CallUUID once it streams.
    expect(events.of('call.ringing')[0]).toMatchObject({ call_id: id, provider_call_id: null });
    // Plivo fetched its answer_url from the app's document host, as it would over the internet.
    const made = [...plivo.calls.values()].find((c) => c.made !== undefined);
    if (!made) throw new Error('no call made');
    expect(made.made?.['answer_url']).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:${port}/call-documents/`));
    expect(plivo.documents.at(-1)).toMatchObject({ role: 'answer_url', status: 200 });
    const stream = made.xml?.children.find((c) => c.name === 'Stream');
    expect(stream?.attributes).toMatchObject({ bidirectional: 'true', keepCallAlive: 'true' });
    expect(stream?.text).toBe(`ws://127.0.0.1:${port}/media/plivo/${ENV.MEDIA_STREAM_TOKEN}`);
    const extraHeaders = Object.fromEntries(
      (stream?.attributes['extraHeaders'] ?? '').split(',').map((kv) => kv.split('=') as [string, string]),
    );
    expect(extraHeaders).toEqual({ flow: 'reminder', voxbridge_call_id: id });
    const g = new FakePlivo(stream!.text, { callId: made.uuid, extraHeaders });
    open.push(g);
    await g.start();
    await events.until((e) => e.some((x) => x.event === 'call.ended'), 20_000);
    expect(events.of('call.answered')[0]).toMatchObject({ call_id: id, stream_id: g.streamId });
    expect(events.of('utterance.finished')[0]).toMatchObject({
      result: { status: 'played', heard_text: REMINDER },
    });
    // Hung up by its CallUUID, from the stream's start message.
    expect(made.alive).toBe(false);
    expect(plivo.requests.at(-1)).toMatchObject({
      method: 'DELETE',
      path: `/v1/Account/${ENV.PLIVO_AUTH_ID}/Call/${made.uuid}/`,
    });
  });

  it('reports the gateway refusing the call as call.failed with its reason', async () => {
    fake.server.failNext({
      kind: 'answer',
      reply: {
        status: 400,
        json: {
          code: 21215,
          message: 'Geo Permission configuration is not permitting call',
          more_info: 'https://www.twilio.com/docs/errors/21215',
          status: 400,
        },
      },
    });
    const placed = await post('/calls', placeBody());
    expect(placed.status).toBe(201);
    const id = placed.json['id'] as string;
    // Subscribed after the failure may have come: a failed call is kept, its events replayed.
    const events = new SseReader(`${t.url}/calls/${id}/events?after=0`, AUTH);
    await events.until((e) => e.some((x) => x.event === 'call.failed'));
    await events.done;
    expect(events.of('call.failed')[0]).toMatchObject({
      seq: 1,
      call_id: id,
      gateway: 'twilio',
      code: 'rejected',
      reason: 'Geo Permission configuration is not permitting call',
      provider_code: '21215',
      status: 400,
    });
    expect((await get(`/calls/${id}`)).json).toMatchObject({
      status: 'failed',
      error: { code: 'rejected', reason: 'Geo Permission configuration is not permitting call' },
    });
    const listed = (await get('/calls')).json['calls'] as Array<Record<string, unknown>>;
    expect(listed.map((c) => c['id'])).not.toContain(id);
  });

  it('refuses a gateway without credentials with 409 naming the variables to set', async () => {
    const refused = await post('/calls', placeBody({ gateway: 'telnyx' }));
    expect(refused.status).toBe(409);
    expect(refused.json).toMatchObject({ code: 'missing_credentials', missing: ['TELNYX_API_KEY'] });
    expect(refused.json['error']).toContain('TELNYX_API_KEY');
  });

  it('refuses what it cannot place with a 4xx naming what is wrong, before anything is sent', async () => {
    const before = fake.requests.length;
    const asText = await post('/calls', JSON.stringify(placeBody()), {
      'content-type': 'text/plain',
      ...AUTH,
    });
    expect(asText.status).toBe(415);
    expect((await post('/calls', placeBody(), { 'content-type': 'application/json' })).status).toBe(401);
    const noFrom = await post('/calls', { gateway: 'twilio', to: CALLEE });
    expect(noFrom).toMatchObject({ status: 400, json: { param: 'from' } });
    const extra = await post('/calls', placeBody({ colour: 'red' }));
    expect(extra.status).toBe(400);
    const badTarget = await post('/calls', placeBody({ to: 'call me maybe' }));
    expect(badTarget).toMatchObject({ status: 400, json: { code: 'invalid_request' } });
    expect(badTarget.json['error']).toMatch(/E\.164/);
    const noFlow = await post('/calls', placeBody({ flow: 'nowhere' }));
    expect(noFlow).toMatchObject({ status: 400, json: { code: 'unknown_flow' } });
    const ours = await post('/calls', placeBody({ parameters: { voxbridge_call_id: 'VBmine' } }));
    expect(ours).toMatchObject({ status: 400, json: { param: 'parameters' } });
    const longRing = await post('/calls', placeBody({ ring_seconds: 120 }));
    expect(longRing).toMatchObject({ status: 400, json: { code: 'invalid_request' } });
    const huge = await post('/calls', placeBody({ to: 'x'.repeat(20_000) }));
    expect(huge.status).toBe(413);
    expect(fake.requests.length).toBe(before);
  });

  it('holds calls being placed to calls.control.maxPlacing (429), and cancels one with DELETE', async () => {
    fake.server.failNext({ kind: 'hang' });
    fake.server.failNext({ kind: 'hang' });
    const first = await post('/calls', placeBody());
    const second = await post('/calls', placeBody());
    expect([first.status, second.status]).toEqual([201, 201]);
    const third = await post('/calls', placeBody());
    expect(third.status).toBe(429);
    expect(third.json).toMatchObject({ code: 'too_many_placing' });
    expect(third.headers.get('retry-after')).toBe('1');
    for (const placed of [first, second]) {
      const id = placed.json['id'] as string;
      const del = await fetch(`${t.url}/calls/${id}`, { method: 'DELETE', headers: AUTH });
      expect(del.status).toBe(204);
      expect((await get(`/calls/${id}`)).json).toMatchObject({
        status: 'failed',
        error: { code: 'canceled' },
      });
    }
    // Room again: the next one is placed (and refused by the gateway, to leave nothing ringing).
    fake.server.failNext({
      kind: 'answer',
      reply: { status: 400, json: { code: 21211, message: 'Invalid To' } },
    });
    expect((await post('/calls', placeBody())).status).toBe(201);
  });

  it('refuses a stream that names an outbound call it is not waiting for', async () => {
    const url = `ws://127.0.0.1:${port}/media/twilio/${ENV.MEDIA_STREAM_TOKEN}`;
    const g = new FakeTwilio(url, { customParameters: { voxbridge_call_id: 'VB0000feedbeef' } });
    open.push(g);
    const closed = new Promise<[number, string]>((resolve) =>
      g.ws.once('close', (code, reason) => resolve([code, reason.toString()])),
    );
    await g.start();
    expect(await closed).toEqual([1008, 'no outbound call VB0000feedbeef waits for a stream']);
  });

  it('voxbridge call NUMBER places a call through a running instance and prints its id', async () => {
    const out: string[] = [];
    const err: string[] = [];
    const io = { out: (s: string) => void out.push(s), err: (s: string) => void err.push(s) };
    fake.server.failNext({
      kind: 'answer',
      reply: { status: 400, json: { code: 13224, message: 'Invalid phone number' } },
    });
    const args = ['call', CALLEE, '--from', CALLER_ID, '--flow', 'reminder', '--url', t.url];
    const env = { CONTROL_TOKEN: ENV.CONTROL_TOKEN };
    // --wait follows it: refused by the gateway, the command fails with the gateway's reason.
    expect(await runCli([...args, '--wait'], env, io)).toBe(1);
    expect(out.join('')).toMatch(/^VB[0-9a-f]{32}\n$/);
    expect(err.join('')).toContain('failed: Invalid phone number');
    const created = fake.nextCreated();
    out.length = 0;
    expect(await runCli([...args, '--param', 'ticket=42'], env, io)).toBe(0);
    const id = out.join('').trim();
    const call = await created;
    expect(twilioStream(call)?.parameters).toEqual({ ticket: '42', flow: 'reminder', voxbridge_call_id: id });
    expect((await fetch(`${t.url}/calls/${id}`, { method: 'DELETE', headers: AUTH })).status).toBe(204);
    // No token: the instance says so, and so does the command.
    err.length = 0;
    expect(await runCli(args, {}, io)).toBe(1);
    expect(err.join('')).toContain('bearer token required');
    expect(await runCli(['call', CALLEE, '--url', t.url], env, io)).toBe(2);
  });
});

describe('POST /calls without server.publicUrl', () => {
  it('refuses with 409 saying to set PUBLIC_URL', async () => {
    const bare = await startTestApp(
      { service: { workers: 1 }, calls: { defaultFlow: null, bargeIn: { enabled: false } } },
      undefined,
      { TWILIO_ACCOUNT_SID: ENV.TWILIO_ACCOUNT_SID, TWILIO_AUTH_TOKEN: ENV.TWILIO_AUTH_TOKEN },
    );
    try {
      const res = await fetch(`${bare.url}/calls`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(placeBody({ flow: undefined })),
      });
      expect(res.status).toBe(409);
      const body = (await res.json()) as Record<string, unknown>;
      expect(body['code']).toBe('public_url_unset');
      expect(body['error']).toContain('PUBLIC_URL');
    } finally {
      await bare.close();
    }
  });
});

describe('a call whose stream never comes', () => {
  it('fails (no_media) at calls.control.answerTimeoutMs and is hung up at the gateway', async () => {
    const made = callControlFor('twilio', ENV, { apiBaseUrl: fake.url });
    if (!made.ok) throw made.error;
    const clock = new FakeClock();
    const outbound = new OutboundCalls({
      controls: { port: () => made, hangUpAtGateway: true },
      settings: {
        publicUrl: 'https://voice.example.com',
        mediaStreamToken: undefined,
        gateways: ['twilio'],
        flows: new Set(),
        defaultFlow: undefined,
        webhookOf: () => undefined,
        maxPlacing: 5,
        maxCalls: 10,
        answerTimeoutMs: 45_000,
        ringSeconds: 30,
      },
      clock,
      logger: pino({ level: 'silent' }),
      activeCalls: () => 0,
    });
    try {
      const creating = fake.nextCreated();
      const placed = outbound.place({ gateway: 'twilio', to: CALLEE, from: CALLER_ID });
      const events: CallEvent[] = [];
      placed.on('event', (e) => events.push(e));
      const call = await creating;
      expect(twilioStream(call)?.url).toBe('wss://voice.example.com/media/twilio');
      for (let i = 0; i < 200 && events.length === 0; i++) await new Promise((r) => setTimeout(r, 5));
      expect(events.map((e) => e.type)).toEqual(['call.ringing']);
      await clock.advance(44_999);
      expect(placed.state.status).toBe('ringing');
      const hangingUp = fake.server.nextRequest((r) => r.form?.['Status']?.[0] === 'completed');
      await clock.advance(1);
      expect(events.map((e) => e.type)).toEqual(['call.ringing', 'call.failed']);
      expect(events[1]).toMatchObject({
        code: 'no_media',
        reason: 'no media stream within 45000 ms of placing the call',
      });
      expect((await hangingUp).path).toBe(
        `/2010-04-01/Accounts/${ENV.TWILIO_ACCOUNT_SID}/Calls/${call.sid}.json`,
      );
      expect(outbound.placing).toBe(0);
    } finally {
      outbound.close();
      await made.control.close();
    }
  });
});
