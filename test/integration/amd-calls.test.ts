/**
 * Answering-machine detection on a placed call, end to end: the real app (barge-in off), a fake of
 * Twilio's Calls REST API, and a fake Twilio that opens the call's stream back and plays what answered
 * at real time, 8 kHz μ-law from testkit/amd-corpus.ts: a voicemail greeting ending in a beep, a short
 * "Hello." and then silence, or nothing at all. The flow waits silently for the `amd` decision and
 * branches on it; on a machine, its voicemail node speaks only once the beep has ended.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeMulaw } from '../../src/audio/g711.js';
import { twilioSignature } from '../../src/protocols/twilio-signature.js';
import { amdCall, type AmdCall } from '../../testkit/amd-corpus.js';
import {
  FakeTwilioRest,
  twilioStream,
  type TwilioFakeCall,
  fakeSecret,
  fakeTwilioAccountSid,
} from '../../testkit/fake-gateway-rest/index.js';
import { freePort } from '../../testkit/ports.js';
import { SseReader } from '../../testkit/sse.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { FakeTwilio } from '../helpers/gateways/twilio.js';

const ENV = {
  TWILIO_ACCOUNT_SID: fakeTwilioAccountSid(),
  TWILIO_AUTH_TOKEN: fakeSecret('twilio-token'),
  MEDIA_STREAM_TOKEN: fakeSecret('media-stream-token'),
  CONTROL_TOKEN: fakeSecret('control-token'),
} as const;
const AUTH = { authorization: `Bearer ${ENV.CONTROL_TOKEN}` };
const MESSAGE = 'Please call the clinic back.';
const HELLO = 'Hi, this is the clinic calling.';
const NOBODY = 'Sorry we missed you.';
/** From the beep's end to the message's first audio at the callee: detection, then the first speech. */
const MESSAGE_AFTER_BEEP_MS = 2500;
/** A decision falls on a 32 ms block, a rule's moment on a syllable's edge: this much either way. */
const SLACK_MS = 250;

let fake: FakeTwilioRest;
let t: TestApp;
let port: number;
const open: Array<{ close(): Promise<void> }> = [];

beforeAll(async () => {
  fake = await FakeTwilioRest.start({ accountSid: ENV.TWILIO_ACCOUNT_SID, authToken: ENV.TWILIO_AUTH_TOKEN });
  port = await freePort();
  t = await startTestApp(
    {
      service: { workers: 1 },
      calls: {
        defaultFlow: null,
        // AMD decodes the callee's audio itself: no VAD, no barge-in needed.
        bargeIn: { enabled: false },
        control: { twilio: { apiBaseUrl: fake.url }, requestTimeoutMs: 3000 },
      },
      flows: {
        outreach: {
          start: 'who',
          nodes: {
            who: { type: 'detect-machine', human: 'hello', machine: 'message', unknown: 'nobody' },
            hello: { type: 'say', text: HELLO, next: 'bye' },
            message: { type: 'voicemail', text: MESSAGE },
            nobody: { type: 'hangup', text: NOBODY },
            bye: { type: 'hangup' },
          },
        },
      },
    },
    undefined,
    { ...ENV, PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}/` },
  );
});

afterAll(async () => {
  await Promise.all(open.map((o) => o.close()));
  await t.close();
  await fake.close();
});

interface Answered {
  readonly events: SseReader;
  readonly g: FakeTwilio;
  /** performance.now() when the callee's first sample was sent. */
  readonly audioStartedAt: number;
  /** The call as the fake REST API has it (its create request's fields). */
  readonly call: TwilioFakeCall;
}

/**
 * Places a call with the outreach flow (and `extra` in its request); the callee answers and plays
 * `callee` at real time.
 */
async function callAnsweredBy(callee: AmdCall, extra: Record<string, unknown> = {}): Promise<Answered> {
  const creating = fake.nextCreated();
  const res = await fetch(`${t.url}/calls`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...AUTH },
    body: JSON.stringify({
      gateway: 'twilio',
      to: '+15551234567',
      from: '+15550001111',
      flow: 'outreach',
      ...extra,
    }),
  });
  expect(res.status).toBe(201);
  const id = ((await res.json()) as { id: string }).id;
  const events = new SseReader(`${t.url}/calls/${id}/events?after=0`, AUTH);
  const call = await creating;
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
  const audioStartedAt = performance.now();
  void g.sendLive(encodeMulaw(callee.samples)).then(() => g.startCallerAudio());
  return { events, g, audioStartedAt, call };
}

const ofType = (events: SseReader, type: string): Array<Record<string, unknown>> =>
  events.of(type) as Array<Record<string, unknown>>;
const nodeDetail = (events: SseReader, node: string, key: string): Record<string, unknown> | undefined =>
  ofType(events, 'flow')
    .map((e) => e['event'] as { node?: string; detail?: Record<string, unknown> })
    .find((e) => e.node === node && e.detail?.[key] !== undefined)?.detail;

describe('answering-machine detection on a placed call', () => {
  it('a voicemail with a beep: amd machine, and the voicemail message starts only after the beep', async () => {
    const callee = await amdCall('voicemail-beep', 2);
    const beep = callee.beep!;
    const { events, g, audioStartedAt } = await callAnsweredBy(callee);
    await events.until((e) => e.some((x) => x.event === 'call.ended'), 30_000);
    g.stopCallerAudio();

    const [amd, ...more] = ofType(events, 'amd');
    expect(more).toEqual([]);
    expect(amd).toMatchObject({ source: 'audio', result: 'machine', reason: 'long-speech' });
    // Decided 2.4 s into the greeting, on the callee's audio clock; the audible part of it (its words'
    // gaps left out) is most of that.
    expect(amd!['decided_at_ms']).toBeGreaterThanOrEqual(callee.speechStartMs! + 2400 - SLACK_MS);
    expect(amd!['decided_at_ms']).toBeLessThanOrEqual(callee.speechStartMs! + 2400 + SLACK_MS);
    expect(amd!['speech_ms']).toBeGreaterThan(1000);
    expect(amd!['speech_ms']).toBeLessThanOrEqual(2400 + SLACK_MS);
    expect(nodeDetail(events, 'who', 'result')).toMatchObject({ result: 'machine', next: 'message' });
    const greeting = nodeDetail(events, 'message', 'greeting');
    expect(greeting?.['greeting']).toBe('beep');
    expect(greeting?.['at_ms']).toBeGreaterThanOrEqual(beep.endMs - SLACK_MS);
    expect(greeting?.['at_ms']).toBeLessThanOrEqual(beep.endMs + SLACK_MS);

    // Silent until then: the bot's first audio reaches the callee after the beep ended, and soon after.
    const first = g.media()[0];
    if (!first) throw new Error('the bot never spoke');
    const beepEndedAt = audioStartedAt + beep.endMs;
    expect(first.at).toBeGreaterThan(beepEndedAt);
    expect(first.at - beepEndedAt).toBeLessThan(MESSAGE_AFTER_BEEP_MS);
    expect(ofType(events, 'utterance.finished').map((e) => e['result'])).toEqual([
      expect.objectContaining({ status: 'played', heard_text: MESSAGE }),
    ]);
    expect(ofType(events, 'call.ended')[0]).toMatchObject({ reason: 'hung up' });
    expect(g.violations).toEqual([]);
  }, 40_000);

  it('a person saying "Hello." goes to the human branch, decided 0.8 s after their word', async () => {
    const callee = await amdCall('hello', 11);
    const { events, g } = await callAnsweredBy(callee);
    await events.until((e) => e.some((x) => x.event === 'call.ended'), 20_000);
    g.stopCallerAudio();
    const [amd] = ofType(events, 'amd');
    expect(amd).toMatchObject({ source: 'audio', result: 'human', reason: 'short-speech' });
    expect(amd!['decided_at_ms']).toBeGreaterThanOrEqual(callee.speechEndMs! + 800 - SLACK_MS);
    expect(amd!['decided_at_ms']).toBeLessThanOrEqual(callee.speechEndMs! + 800 + SLACK_MS);
    expect(amd!['speech_ms']).toBeGreaterThan(0);
    expect(amd!['speech_ms']).toBeLessThan(1500);
    expect(nodeDetail(events, 'who', 'result')).toMatchObject({ result: 'human', next: 'hello' });
    expect(
      ofType(events, 'utterance.finished').map((e) => (e['result'] as { heard_text: string }).heard_text),
    ).toEqual([HELLO]);
  }, 30_000);

  it('silence is unknown at 5 s, and goes to the unknown branch', async () => {
    const callee = await amdCall('silence', 1);
    const { events, g } = await callAnsweredBy(callee);
    await events.until((e) => e.some((x) => x.event === 'call.ended'), 20_000);
    g.stopCallerAudio();
    const [amd] = ofType(events, 'amd');
    expect(amd).toMatchObject({ source: 'audio', result: 'unknown', reason: 'silence', speech_ms: 0 });
    expect(amd!['decided_at_ms']).toBeGreaterThanOrEqual(5000);
    expect(amd!['decided_at_ms']).toBeLessThanOrEqual(5000 + SLACK_MS);
    expect(nodeDetail(events, 'who', 'result')).toMatchObject({ result: 'unknown', next: 'nobody' });
    expect(
      ofType(events, 'utterance.finished').map((e) => (e['result'] as { heard_text: string }).heard_text),
    ).toEqual([NOBODY]);
  }, 30_000);
});

describe("the gateway's own detection, its verdict posted to voxbridge", () => {
  /** Posts a verdict to a callback URL, as Twilio posts it: form-encoded, signed over the URL and fields. */
  const postVerdict = (
    url: string,
    fields: Record<string, string>,
    signature = twilioSignature(ENV.TWILIO_AUTH_TOKEN, url, fields),
  ): Promise<Response> =>
    fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': signature },
      body: new URLSearchParams(fields).toString(),
    });

  it('asks Twilio to post to a route of its own, checks it, and reports both verdicts as amd events', async () => {
    const callee = await amdCall('hello', 11);
    const { events, g, call } = await callAnsweredBy(callee, { machine_detection: { mode: 'detect' } });
    // Twilio was asked for its detection, its verdict to voxbridge's own unguessable URL.
    expect(call.created).toMatchObject({ MachineDetection: ['Enable'], AsyncAmd: ['true'] });
    const url = call.created?.['AsyncAmdStatusCallback']?.[0] ?? '';
    expect(url).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:${port}/call-amd/[A-Za-z0-9_-]{32}$`));
    const verdict = {
      AccountSid: ENV.TWILIO_ACCOUNT_SID,
      CallSid: call.sid,
      AnsweredBy: 'human',
      MachineDetectionDuration: '2140',
    };

    // What is not Twilio's verdict for this call is refused, and changes nothing.
    expect((await postVerdict(url, verdict, twilioSignature('another-token', url, verdict))).status).toBe(
      403,
    );
    expect((await postVerdict(url, { ...verdict, AnsweredBy: 'machine_start' }, 'x'.repeat(28))).status).toBe(
      403,
    );
    const signedElsewhere = twilioSignature(ENV.TWILIO_AUTH_TOKEN, `${url}x`, verdict);
    expect((await postVerdict(url, verdict, signedElsewhere)).status).toBe(403);
    expect((await postVerdict(`${url.slice(0, -4)}AAAA`, verdict)).status).toBe(404);
    expect((await postVerdict(url, { ...verdict, AnsweredBy: 'robot' })).status).toBe(400);
    expect((await postVerdict(url, { ...verdict, MachineDetectionDuration: '-3' })).status).toBe(400);
    expect((await postVerdict(url, { ...verdict, Padding: 'p'.repeat(200) }, '')).status).toBe(403);
    const oversize = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `AnsweredBy=human&Padding=${'p'.repeat(9000)}`,
    });
    expect(oversize.status).toBe(413);
    expect((await fetch(url)).status).toBe(405);

    // Twilio's verdict: taken once.
    const taken = await postVerdict(url, verdict);
    expect(taken.status).toBe(204);
    expect((await postVerdict(url, verdict)).status).toBe(404);

    await events.until((e) => e.some((x) => x.event === 'call.ended'), 20_000);
    g.stopCallerAudio();
    const amd = ofType(events, 'amd');
    expect(amd).toHaveLength(2);
    expect(amd.find((e) => e['source'] === 'gateway')).toEqual({
      seq: expect.any(Number) as unknown,
      call_id: expect.any(String) as unknown,
      at: expect.any(String) as unknown,
      type: 'amd',
      source: 'gateway',
      result: 'human',
      answered_by: 'human',
      detection_ms: 2140,
    });
    // voxbridge's own detector decided too, from the audio, and the flow branched on that one.
    expect(amd.find((e) => e['source'] === 'audio')).toMatchObject({
      result: 'human',
      reason: 'short-speech',
    });
    expect(nodeDetail(events, 'who', 'result')).toMatchObject({ result: 'human', next: 'hello' });
    // The call is over: its callback with it.
    expect((await postVerdict(url, verdict)).status).toBe(404);
  }, 30_000);

  it('sends the verdict to the app’s callback_url when it gives one, as before', async () => {
    const callee = await amdCall('silence', 1);
    const { events, g, call } = await callAnsweredBy(callee, {
      machine_detection: { mode: 'detect-message-end', callback_url: 'https://app.example.com/amd' },
    });
    expect(call.created).toMatchObject({
      MachineDetection: ['DetectMessageEnd'],
      AsyncAmdStatusCallback: ['https://app.example.com/amd'],
    });
    await events.until((e) => e.some((x) => x.event === 'call.ended'), 20_000);
    g.stopCallerAudio();
    expect(ofType(events, 'amd').map((e) => e['source'])).toEqual(['audio']);
  }, 30_000);
});
