/**
 * Transfers and hang-ups through the gateway's call control, end to end: the real app, a fake of
 * Twilio's Calls REST API (testkit/fake-gateway-rest) that knows each inbound call, and a fake Twilio
 * media stream for that call. A flow's `transfer` node (cold, warm, and one that fails to its `onFail`,
 * whose `hangup` then ends the call at the gateway), `POST /calls/{id}/transfer` while the bot talks
 * (not a frame of it after), a relay app's `end` naming a transfer in its handoffData, and a TwiML
 * `<Dial>` (transferred; and failed, asking its `action` what next). On a Telnyx call, which has no
 * credentials here, a transfer is refused naming what to set. Everything is logged at trace level into
 * one buffer, which must not hold a single secret.
 */
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toWire } from '../../adapters/media-stream/call-events.js';
import { createLogger } from '../../src/app/logger.js';
import { twilioSignature } from '../../src/protocols/twilio-signature.js';
import {
  FakeTwilioRest,
  type TwilioFakeCall,
  type XmlElement,
  fakeSecret,
  fakeTwilioAccountSid,
} from '../../testkit/fake-gateway-rest/index.js';
import { SseReader, type SseEvent } from '../../testkit/sse.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { FakeTelnyx } from '../helpers/gateways/telnyx.js';
import { FakeTwilio } from '../helpers/gateways/twilio.js';
import { RelayApp } from '../helpers/relay-app.js';
import { TwimlApp } from '../helpers/twiml-app.js';

const ENV = {
  TWILIO_ACCOUNT_SID: fakeTwilioAccountSid(),
  TWILIO_AUTH_TOKEN: fakeSecret('twilio-token'),
  CONTROL_TOKEN: fakeSecret('control-token'),
  MEDIA_STREAM_TOKEN: fakeSecret('media-stream-token'),
} as const;
const SECRETS = [
  ...Object.values(ENV),
  Buffer.from(`${ENV.TWILIO_ACCOUNT_SID}:${ENV.TWILIO_AUTH_TOKEN}`).toString('base64'),
];
const AUTH = { authorization: `Bearer ${ENV.CONTROL_TOKEN}` };
const AGENT = '+15551234567';
const CALLER_ID = '+15550001111';
const HOLD_MUSIC = 'https://music.example.com/hold.mp3';
const SUMMARY = 'The caller wants to move their appointment to Friday.';

let log = '';
const logStream = new PassThrough();
logStream.on('data', (d: Buffer) => (log += d.toString()));

let fake: FakeTwilioRest;
let relay: RelayApp;
let webhook: TwimlApp;
let t: TestApp;
const open: Array<{ close(): Promise<void> }> = [];

/**
 * Every call's events as the event stream sends them, from its first: a flow may transfer a call
 * within milliseconds of its start, before a subscriber could have asked for its events by id.
 */
class Recorded {
  readonly events: SseEvent[] = [];
  of(type: string): unknown[] {
    return this.events.filter((e) => e.event === type).map((e) => e.data);
  }
  async until(predicate: (events: SseEvent[]) => boolean, timeoutMs = 10_000): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    while (!predicate(this.events)) {
      if (performance.now() > deadline)
        throw new Error(`timed out; got ${this.events.map((e) => e.event).join(', ')}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  }
}
const recorded = new Map<string, Recorded>();
const recordingOf = (id: string): Recorded => {
  let r = recorded.get(id);
  if (!r) recorded.set(id, (r = new Recorded()));
  return r;
};

beforeAll(async () => {
  fake = await FakeTwilioRest.start({ accountSid: ENV.TWILIO_ACCOUNT_SID, authToken: ENV.TWILIO_AUTH_TOKEN });
  relay = await RelayApp.start();
  webhook = await TwimlApp.start(ENV.TWILIO_AUTH_TOKEN);
  webhook
    .on(
      '/voice',
      `<Response><Say>Putting you through.</Say><Dial timeout="15" callerId="${CALLER_ID}" action="/dialed" record="true">+1 (555) 123-4567</Dial></Response>`,
    )
    .on(
      '/voice-busy',
      `<Response><Dial action="/dialed"><Sip>sip:desk@pbx.example.com</Sip></Dial></Response>`,
    )
    .on('/dialed', '<Response><Say>Nobody could take your call.</Say><Hangup/></Response>');
  t = await startTestApp(
    {
      service: { workers: 1 },
      calls: {
        defaultFlow: null,
        bargeIn: { enabled: false },
        control: { twilio: { apiBaseUrl: fake.url }, requestTimeoutMs: 3000 },
      },
      relays: { agent: { url: relay.url } },
      flows: {
        cold: {
          start: 't',
          nodes: {
            t: {
              type: 'transfer',
              text: 'Connecting you now.',
              to: AGENT,
              callerId: CALLER_ID,
              timeoutSeconds: 20,
            },
          },
        },
        warm: {
          start: 't',
          nodes: {
            t: {
              type: 'transfer',
              mode: 'warm',
              to: AGENT,
              callerId: CALLER_ID,
              summary: SUMMARY,
              holdMusicUrl: HOLD_MUSIC,
            },
          },
        },
        failing: {
          start: 't',
          nodes: {
            t: { type: 'transfer', to: AGENT, onFail: 'sorry' },
            sorry: { type: 'hangup', text: 'Sorry, nobody is free.' },
          },
        },
        relayed: {
          start: 'r',
          nodes: {
            r: { type: 'relay', relay: 'agent', onClose: 'sorry' },
            sorry: { type: 'hangup', text: 'Sorry.' },
          },
        },
        dial: { start: 'w', nodes: { w: { type: 'twiml', url: `${webhook.origin}/voice` } } },
        busy: { start: 'w', nodes: { w: { type: 'twiml', url: `${webhook.origin}/voice-busy` } } },
      },
    },
    undefined,
    ENV,
    { logger: createLogger('trace', logStream) },
  );
  t.app.calls.onCall((call) =>
    call.on('event', (e) => recordingOf(e.callId).events.push({ event: e.type, data: toWire(e) })),
  );
});

afterAll(async () => {
  await Promise.all(open.map((o) => o.close()));
  await t.close();
  await Promise.all([fake.close(), relay.close(), webhook.close()]);
  expect(log).toContain('call control request');
  expect(log).toContain('transferred by the gateway');
  for (const secret of SECRETS) expect(log).not.toContain(secret);
});

/** An inbound call the gateway knows, and its media stream to the app (signed as Twilio signs it). */
async function inbound(
  parameters: Record<string, string>,
): Promise<{ rest: TwilioFakeCall; g: FakeTwilio; events: Recorded }> {
  const rest = fake.addCall();
  const url = `${t.url.replace('http:', 'ws:')}/media/twilio`;
  const g = new FakeTwilio(url, {
    callSid: rest.sid,
    accountSid: rest.accountSid,
    customParameters: parameters,
    headers: { 'x-twilio-signature': twilioSignature(ENV.TWILIO_AUTH_TOKEN, url) },
  });
  open.push(g);
  await g.start();
  const events = recordingOf(rest.sid);
  await events.until((e) => e.some((x) => x.event === 'call.started'), 5000);
  return { rest, g, events };
}

function child(root: XmlElement | undefined, ...names: string[]): XmlElement {
  let at = root;
  for (const name of names) at = at?.children.find((c) => c.name === name);
  if (!at) throw new Error(`no ${names.join(' > ')}`);
  return at;
}

const flowEvents = (events: SseEvent[]): Array<Record<string, unknown>> =>
  events.filter((e) => e.event === 'flow').map((e) => (e.data as { event: Record<string, unknown> }).event);

describe('a flow’s transfer node', () => {
  it('cold: says its text, moves the caller with <Dial><Number>, and the call leaves voxbridge', async () => {
    const { rest, g, events } = await inbound({ flow: 'cold' });
    await events.until((e) => e.some((x) => x.event === 'call.ended'), 15_000);
    const dial = child(rest.twiml, 'Dial');
    expect(dial.attributes).toEqual({ callerId: CALLER_ID, timeout: '20' });
    expect(child(dial, 'Number').text).toBe(AGENT);
    expect(rest.status).toBe('in-progress'); // moved, not hung up
    expect(events.of('utterance.finished')[0]).toMatchObject({
      result: { status: 'played', heard_text: 'Connecting you now.' },
    });
    expect(events.of('transfer')[0]).toMatchObject({ status: 'done', mode: 'cold', to: AGENT });
    expect(flowEvents(events.events).at(-1)).toMatchObject({
      type: 'flow.end',
      detail: { reason: 'transfer' },
    });
    expect(events.of('call.ended')[0]).toMatchObject({ reason: 'transferred' });
    // The flow said so before the call ended.
    const order = events.events.map((e) => e.event);
    expect(order.lastIndexOf('flow')).toBeLessThan(order.indexOf('call.ended'));
    expect(g.mediaBytes()).toBeGreaterThan(0);
  });

  it('warm: calls the target with the summary into a room, then moves the caller in over hold music', async () => {
    const { rest, events } = await inbound({ flow: 'warm' });
    await events.until((e) => e.some((x) => x.event === 'call.ended'), 15_000);
    const target = [...fake.calls.values()].find((c) => c.created !== undefined && c.to === AGENT);
    if (!target) throw new Error('the target was not called');
    expect(target.created).toMatchObject({ From: [CALLER_ID] });
    expect(child(target.twiml, 'Say').text).toBe(SUMMARY);
    const room = child(target.twiml, 'Dial', 'Conference').text;
    const conference = child(rest.twiml, 'Dial', 'Conference');
    expect(conference.text).toBe(room);
    expect(conference.attributes).toMatchObject({ waitUrl: HOLD_MUSIC, startConferenceOnEnter: 'false' });
    expect(events.of('transfer')[0]).toMatchObject({
      status: 'done',
      mode: 'warm',
      target_call_id: target.sid,
    });
    expect(events.of('call.ended')[0]).toMatchObject({ reason: 'transferred' });
  });

  it('goes to onFail when the gateway refuses, whose hangup then ends the call at the gateway', async () => {
    fake.server.failNext({
      kind: 'answer',
      reply: {
        status: 400,
        json: { code: 13223, message: 'Dial: Invalid phone number format', status: 400 },
      },
    });
    const { rest, events } = await inbound({ flow: 'failing' });
    await events.until((e) => e.some((x) => x.event === 'call.ended'), 15_000);
    expect(events.of('transfer')[0]).toMatchObject({ status: 'failed', code: 'rejected', to: AGENT });
    expect(flowEvents(events.events)).toContainEqual(
      expect.objectContaining({
        type: 'flow.node',
        node: 't',
        detail: expect.objectContaining({ transfer: 'failed' }) as unknown,
      }),
    );
    expect(events.of('utterance.finished')[0]).toMatchObject({
      result: { heard_text: 'Sorry, nobody is free.' },
    });
    expect(events.of('call.ended')[0]).toMatchObject({ reason: 'hung up' });
    expect(rest.status).toBe('completed');
    expect(rest.updates.at(-1)).toEqual({ Status: ['completed'] });
  });
});

describe('POST /calls/{id}/transfer', () => {
  it('moves the caller while the bot talks, and not one frame of the bot leaves after it', async () => {
    const { rest, g } = await inbound({});
    const events = new SseReader(`${t.url}/calls/${rest.sid}/events?after=0`, AUTH);
    const long = 'This is a long answer that goes on while the caller waits for a person. '.repeat(6);
    const said = await fetch(`${t.url}/calls/${rest.sid}/say`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...AUTH },
      body: JSON.stringify({ text: long, wait: false }),
    });
    expect(said.status).toBe(202);
    await g.until(() => g.mediaBytes() > 4000, 10_000, 'half a second of the bot');
    const res = await fetch(`${t.url}/calls/${rest.sid}/transfer`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...AUTH },
      body: JSON.stringify({ to: 'sip:agent@pbx.example.com', timeout_seconds: 25 }),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ id: rest.sid, mode: 'cold', to: 'sip:agent@pbx.example.com' });
    expect(child(rest.twiml, 'Dial', 'Sip').text).toBe('sip:agent@pbx.example.com');
    expect(child(rest.twiml, 'Dial').attributes).toEqual({ timeout: '25' });
    await events.until((e) => e.some((x) => x.event === 'call.ended'));
    const mediaAtEnd = g.media().length;
    await new Promise((r) => setTimeout(r, 300));
    expect(g.media().length).toBe(mediaAtEnd);
    expect(events.of('utterance.finished')[0]).toMatchObject({ result: { status: 'interrupted' } });
    expect(events.of('call.ended')[0]).toMatchObject({ reason: 'transferred' });
  });

  it('answers what it cannot do with the status and code that say why', async () => {
    const { rest } = await inbound({});
    const post = (body: unknown): Promise<Response> =>
      fetch(`${t.url}/calls/${rest.sid}/transfer`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...AUTH },
        body: JSON.stringify(body),
      });
    const warmOnly = await post({ to: AGENT, summary: 'hi' });
    expect(warmOnly.status).toBe(400);
    expect(await warmOnly.json()).toMatchObject({ param: 'summary' });
    const badTarget = await post({ to: '5551234' });
    expect(badTarget.status).toBe(400);
    expect(await badTarget.json()).toMatchObject({ code: 'invalid_request' });
    // Twilio places a call for a warm transfer: it needs the caller id to place it from.
    const noCallerId = await post({ to: AGENT, mode: 'warm' });
    expect(noCallerId.status).toBe(400);
    expect(((await noCallerId.json()) as { error: string }).error).toContain('callerId');
    fake.server.failNext({
      kind: 'answer',
      reply: { status: 503, json: { code: 20500, message: 'Service unavailable' } },
    });
    const down = await post({ to: AGENT });
    expect(down.status).toBe(502);
    expect(await down.json()).toMatchObject({
      code: 'provider_error',
      provider_code: '20500',
      reason: 'Service unavailable',
    });
    // Nothing moved: the call is still here.
    expect(t.app.calls.get(rest.sid)?.state.status).toBe('active');
    expect((await fetch(`${t.url}/calls/CAnone/transfer`, { method: 'POST', headers: AUTH })).status).toBe(
      404,
    );
  });

  it('on a gateway without credentials: 409 naming the variables, and a transfer node goes to onFail', async () => {
    const g = new FakeTelnyx(`${t.url.replace('http:', 'ws:')}/media/telnyx`, {
      customParameters: { flow: 'failing' },
      headers: { authorization: `Bearer ${ENV.MEDIA_STREAM_TOKEN}` },
    });
    open.push(g);
    await g.start();
    const events = recordingOf(g.callId);
    await events.until((e) => e.some((x) => x.event === 'transfer'));
    expect(events.of('transfer')[0]).toMatchObject({ status: 'failed', code: 'missing_credentials' });
    expect(String((events.of('transfer')[0] as { error: string }).error)).toContain('TELNYX_API_KEY');
    await events.until((e) => e.some((x) => x.event === 'call.ended'), 15_000);
    expect(events.of('call.ended')[0]).toMatchObject({ reason: 'hung up' });

    const idle = new FakeTelnyx(`${t.url.replace('http:', 'ws:')}/media/telnyx`, {
      headers: { authorization: `Bearer ${ENV.MEDIA_STREAM_TOKEN}` },
    });
    open.push(idle);
    await idle.start();
    await idle.until(() => t.app.calls.get(idle.callId) !== undefined, 5000, 'the call');
    const res = await fetch(`${t.url}/calls/${encodeURIComponent(idle.callId)}/transfer`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...AUTH },
      body: JSON.stringify({ to: AGENT }),
    });
    expect(res.status).toBe(409);
    expect(await res.json()).toMatchObject({ code: 'missing_credentials', missing: ['TELNYX_API_KEY'] });
  });
});

describe('a relay app’s end naming a transfer', () => {
  it('moves the caller to the target its handoffData names', async () => {
    relay.onSetup = () => {
      setTimeout(
        () =>
          relay.latest().socket.send(
            JSON.stringify({
              type: 'end',
              handoffData: JSON.stringify({ transfer: { to: AGENT, caller_id: CALLER_ID } }),
            }),
          ),
        20,
      );
      return undefined;
    };
    const { rest, events } = await inbound({ flow: 'relayed' });
    await events.until((e) => e.some((x) => x.event === 'call.ended'), 15_000);
    expect(child(rest.twiml, 'Dial', 'Number').text).toBe(AGENT);
    expect(child(rest.twiml, 'Dial').attributes).toMatchObject({ callerId: CALLER_ID });
    expect(events.of('relay').at(-1)).toMatchObject({ status: 'ended', reason: 'end' });
    expect(events.of('transfer')[0]).toMatchObject({ status: 'done', to: AGENT });
    expect(events.of('call.ended')[0]).toMatchObject({ reason: 'transferred' });
  });

  it('goes to onClose when the transfer it names cannot be made', async () => {
    relay.onSetup = () => {
      setTimeout(
        () =>
          relay
            .latest()
            .socket.send(
              JSON.stringify({ type: 'end', handoffData: { transfer: { to: 'the front desk' } } }),
            ),
        20,
      );
      return undefined;
    };
    const { rest, events } = await inbound({ flow: 'relayed' });
    await events.until((e) => e.some((x) => x.event === 'call.ended'), 15_000);
    expect(rest.twiml).toBeUndefined();
    expect(flowEvents(events.events)).toContainEqual(
      expect.objectContaining({
        detail: expect.objectContaining({ transfer: 'failed', code: 'invalid_request' }) as unknown,
      }),
    );
    expect(events.of('utterance.finished')[0]).toMatchObject({ result: { heard_text: 'Sorry.' } });
    expect(rest.status).toBe('completed');
    relay.onSetup = undefined;
  });
});

describe('TwiML <Dial>', () => {
  it('transfers the caller as Twilio would dial them, with its timeout and callerId', async () => {
    const { rest, events } = await inbound({ flow: 'dial' });
    await events.until((e) => e.some((x) => x.event === 'call.ended'), 15_000);
    const dial = child(rest.twiml, 'Dial');
    expect(dial.attributes).toEqual({ callerId: CALLER_ID, timeout: '15' });
    expect(child(dial, 'Number').text).toBe(AGENT);
    const twiml = flowEvents(events.events).filter((e) => e['type'] === 'flow.twiml');
    expect(twiml.map((e) => e['detail'])).toEqual(
      expect.arrayContaining([
        { verb: 'Dial' },
        { dial: 'transferred', to: AGENT },
        expect.objectContaining({ warning: expect.stringContaining('<Dial record>') as unknown }),
        expect.objectContaining({
          warning: expect.stringContaining('<Dial action> is not requested') as unknown,
        }),
      ]),
    );
    expect(webhook.of('/dialed')).toHaveLength(0);
    expect(events.of('call.ended')[0]).toMatchObject({ reason: 'transferred' });
  });

  it('a dial that fails asks its action what next, with DialCallStatus=failed', async () => {
    fake.server.failNext({
      kind: 'answer',
      reply: { status: 400, json: { code: 13224, message: 'Invalid SIP URI' } },
    });
    const { rest, events } = await inbound({ flow: 'busy' });
    await events.until((e) => e.some((x) => x.event === 'call.ended'), 15_000);
    const asked = webhook.of('/dialed').at(-1);
    expect(asked?.params).toMatchObject({ CallSid: rest.sid, DialCallStatus: 'failed' });
    expect(asked?.signed).toBe(true);
    expect(events.of('utterance.finished')[0]).toMatchObject({
      result: { heard_text: 'Nobody could take your call.' },
    });
    expect(events.of('call.ended')[0]).toMatchObject({ reason: 'hung up' });
    expect(rest.status).toBe('completed');
  });
});
