/**
 * Call control against fake gateway REST APIs on loopback (testkit/fake-gateway-rest/), each written
 * from its vendor's reference: for every gateway, hanging up, a cold and (where the gateway allows) a
 * warm transfer, and an outbound call, checked in what reaches the fake and in what the fake's calls
 * became; then what goes wrong: missing credentials, a vendor's error, a gateway that never answers, an
 * answer too large, an abort, a refused connection. Everything is logged at trace level into one buffer,
 * which must not hold a single credential. Last, the official `twilio` client is pointed at the same
 * fake and makes the same requests: ours must be the ones Twilio's own library makes.
 */
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { pino } from 'pino';
import twilio from 'twilio';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  CALL_CONTROL_GATEWAYS,
  callControlFor,
  CallControlError,
  CREDENTIAL_VARIABLES,
  parseCallTarget,
  type CallControl,
  type CallControlGateway,
  type CallControlSettings,
} from '../../src/call-control/index.js';
import { GATEWAYS } from '../../src/protocols/types.js';
import {
  FakeAsteriskAri,
  FakeDocumentHost,
  FakeExotelRest,
  FakeJambonzRest,
  FakePlivoRest,
  FakeTelnyxRest,
  FakeTwilioRest,
  FakeVonageRest,
  findAll,
  parseXml,
  type RecordedRequest,
  type XmlElement,
  fakeGatewayCredentials,
  fakeTwilioAccountSid,
} from '../../testkit/fake-gateway-rest/index.js';
import { freePort } from '../../testkit/ports.js';

const { privateKey: VONAGE_KEY, publicKey: VONAGE_PUBLIC } = generateKeyPairSync('rsa', {
  modulusLength: 2048,
});
const VONAGE_PEM = VONAGE_KEY.export({ type: 'pkcs8', format: 'pem' }).toString();

/** A subaccount of the test's account (its own SID). */
const SUBACCOUNT = fakeTwilioAccountSid();

const ENV = { ...fakeGatewayCredentials(), VONAGE_PRIVATE_KEY: VONAGE_PEM };

/** What must never be logged or put in an error: every value above, and the Basic headers' base64. */
const SECRETS = [
  ...Object.values(ENV).filter((v) => v !== VONAGE_PEM),
  ...VONAGE_PEM.split('\n').filter((line) => line.length > 40),
  Buffer.from(`${ENV.TWILIO_ACCOUNT_SID}:${ENV.TWILIO_AUTH_TOKEN}`).toString('base64'),
  Buffer.from(`${ENV.PLIVO_AUTH_ID}:${ENV.PLIVO_AUTH_TOKEN}`).toString('base64'),
  Buffer.from(`${ENV.ASTERISK_ARI_USER}:${ENV.ASTERISK_ARI_PASSWORD}`).toString('base64'),
  Buffer.from(`${ENV.EXOTEL_API_KEY}:${ENV.EXOTEL_API_TOKEN}`).toString('base64'),
];

const STREAM = 'wss://voice.example.com/media';
const CALLER_ID = '+15550001111';
const AGENT = parseCallTarget('+15551234567', 'twilio', 'test');
const AGENT_SIP = parseCallTarget('sip:agent@pbx.example.com', 'twilio', 'test');
const HOLD_MUSIC = 'https://music.example.com/hold.mp3';
const SUMMARY_AUDIO = 'https://voice.example.com/summaries/42.wav';
const SUMMARY = 'The caller wants to move their appointment to Friday.';

let log = '';
const logStream = new PassThrough();
logStream.on('data', (d: Buffer) => (log += d.toString()));
const logger = pino({ level: 'trace' }, logStream);

let documents: FakeDocumentHost;
const open: Array<{ close(): Promise<void> }> = [];

beforeAll(async () => {
  documents = await FakeDocumentHost.start();
});

afterEach(async () => {
  await Promise.all(open.splice(0).map((o) => o.close()));
});

afterAll(async () => {
  await documents.close();
  // Every request above was logged at debug and its fields at trace; no credential may be among them.
  expect(log).toContain('call control request');
  for (const secret of SECRETS) expect(log).not.toContain(secret);
});

function track<T extends { close(): Promise<void> }>(thing: T): T {
  open.push(thing);
  return thing;
}

function port(
  gateway: CallControlGateway,
  apiBaseUrl: string,
  settings: CallControlSettings = {},
  env: Record<string, string | undefined> = ENV,
): CallControl {
  const made = callControlFor(gateway, env, { apiBaseUrl, logger, documents, ...settings });
  if (!made.ok) throw made.error;
  return track(made.control);
}

async function failure(promise: Promise<unknown>): Promise<CallControlError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(CallControlError);
    const e = error as CallControlError;
    for (const secret of SECRETS) expect(`${e.message} ${e.reason ?? ''}`).not.toContain(secret);
    return e;
  }
  throw new Error('expected a CallControlError');
}

function only<T>(items: readonly T[]): T {
  expect(items).toHaveLength(1);
  return items[0]!;
}

function last(requests: readonly RecordedRequest[]): RecordedRequest {
  const r = requests.at(-1);
  if (!r) throw new Error('no request');
  return r;
}

function child(root: XmlElement | undefined, ...names: string[]): XmlElement {
  let at = root;
  for (const name of names) at = at?.children.find((c) => c.name === name);
  if (!at) throw new Error(`no ${names.join(' > ')}`);
  return at;
}

describe('the gateways', () => {
  it('are the media-stream protocols’ gateways, each with its credential variables', () => {
    expect([...CALL_CONTROL_GATEWAYS].sort()).toEqual([...GATEWAYS].sort());
    for (const gateway of CALL_CONTROL_GATEWAYS)
      expect(CREDENTIAL_VARIABLES[gateway].length).toBeGreaterThan(0);
  });

  it('name exactly the variables that are missing', () => {
    const cases: Array<[CallControlGateway, Record<string, string>, string[]]> = [
      ['twilio', {}, ['TWILIO_ACCOUNT_SID', 'TWILIO_AUTH_TOKEN']],
      ['twilio', { TWILIO_ACCOUNT_SID: 'AC1' }, ['TWILIO_AUTH_TOKEN']],
      ['telnyx', {}, ['TELNYX_API_KEY']],
      ['plivo', { PLIVO_AUTH_TOKEN: 't' }, ['PLIVO_AUTH_ID']],
      ['vonage', { VONAGE_PRIVATE_KEY: '   ' }, ['VONAGE_APPLICATION_ID', 'VONAGE_PRIVATE_KEY']],
      ['jambonz', { JAMBONZ_API_KEY: 'k' }, ['JAMBONZ_ACCOUNT_SID']],
      ['asterisk', { ASTERISK_ARI_USER: 'u' }, ['ASTERISK_ARI_PASSWORD']],
      ['exotel', { EXOTEL_API_KEY: 'k' }, ['EXOTEL_ACCOUNT_SID', 'EXOTEL_API_TOKEN']],
    ];
    for (const [gateway, env, missing] of cases) {
      const made = callControlFor(gateway, env);
      expect(made.ok).toBe(false);
      if (made.ok) continue;
      expect(made.error.code).toBe('missing_credentials');
      expect(made.error.missing).toEqual(missing);
      for (const name of missing) expect(made.error.message).toContain(name);
    }
  });

  it('refuse a target that is neither an E.164 number nor a SIP URI', () => {
    for (const bad of ['5551234', '+0123', 'sip:a b@c', 'sip:x@y"><Hangup/>', 'tel:+15551234567', ''])
      expect(() => parseCallTarget(bad, 'twilio', 'transfer')).toThrow(CallControlError);
    expect(parseCallTarget(' +15551234567 ', 'twilio', 'transfer')).toEqual({
      kind: 'number',
      number: '+15551234567',
    });
    expect(parseCallTarget('sips:bob@example.com:5061;transport=tls', 'twilio', 'x')).toEqual({
      kind: 'sip',
      uri: 'sips:bob@example.com:5061;transport=tls',
    });
  });
});

describe('twilio', () => {
  async function setup(
    settings: CallControlSettings = {},
  ): Promise<{ fake: FakeTwilioRest; control: CallControl }> {
    const fake = track(
      await FakeTwilioRest.start({
        accountSid: ENV.TWILIO_ACCOUNT_SID,
        authToken: ENV.TWILIO_AUTH_TOKEN,
        subaccounts: [SUBACCOUNT],
      }),
    );
    return { fake, control: port('twilio', fake.url, settings) };
  }

  it('hangs up with Status=completed, and says when the call was already over', async () => {
    const { fake, control } = await setup();
    const call = fake.addCall();
    expect(await control.hangUp({ callId: call.sid })).toEqual({ alreadyEnded: false });
    expect(call.status).toBe('completed');
    const sent = last(fake.requests);
    expect(sent.method).toBe('POST');
    expect(sent.path).toBe(`/2010-04-01/Accounts/${ENV.TWILIO_ACCOUNT_SID}/Calls/${call.sid}.json`);
    expect(sent.form).toEqual({ Status: ['completed'] });
    expect(await control.hangUp({ callId: call.sid })).toEqual({ alreadyEnded: true });
    expect(await control.hangUp({ callId: 'CA00000000000000000000000000000000' })).toEqual({
      alreadyEnded: true,
    });
  });

  it("acts on a subaccount's call under that account", async () => {
    const { fake, control } = await setup();
    const call = fake.addCall(SUBACCOUNT);
    await control.hangUp({ callId: call.sid, accountSid: call.accountSid });
    expect(call.status).toBe('completed');
    expect(last(fake.requests).path).toContain(`/Accounts/${SUBACCOUNT}/Calls/`);
  });

  it('cold-transfers with <Dial><Number> or <Dial><Sip>', async () => {
    const { fake, control } = await setup();
    const call = fake.addCall();
    expect(
      await control.transfer({ callId: call.sid }, AGENT, { mode: 'cold', callerId: CALLER_ID }),
    ).toEqual({
      mode: 'cold',
    });
    const dial = child(call.twiml, 'Dial');
    expect(dial.attributes).toEqual({ callerId: CALLER_ID, timeout: '30' });
    expect(child(dial, 'Number').text).toBe('+15551234567');
    await control.transfer({ callId: call.sid }, AGENT_SIP, { mode: 'cold', timeoutSeconds: 12 });
    expect(child(call.twiml, 'Dial').attributes).toEqual({ timeout: '12' });
    expect(child(call.twiml, 'Dial', 'Sip').text).toBe('sip:agent@pbx.example.com');
    expect(call.status).toBe('in-progress');
  });

  it('warm-transfers through a conference: the target hears the summary, the caller the hold music', async () => {
    const { fake, control } = await setup();
    const call = fake.addCall();
    const result = await control.transfer({ callId: call.sid }, AGENT, {
      mode: 'warm',
      callerId: CALLER_ID,
      summary: { text: SUMMARY },
      holdMusicUrl: HOLD_MUSIC,
    });
    expect(result.mode).toBe('warm');
    const target = fake.calls.get(result.targetCallId ?? '');
    expect(target?.to).toBe('+15551234567');
    expect(target?.from).toBe(CALLER_ID);
    expect(child(target?.twiml, 'Say').text).toBe(SUMMARY);
    const agentRoom = child(target?.twiml, 'Dial', 'Conference');
    expect(agentRoom.attributes).toMatchObject({
      startConferenceOnEnter: 'true',
      endConferenceOnExit: 'true',
    });
    const callerRoom = child(call.twiml, 'Dial', 'Conference');
    expect(callerRoom.attributes).toMatchObject({
      startConferenceOnEnter: 'false',
      endConferenceOnExit: 'true',
      waitUrl: HOLD_MUSIC,
      waitMethod: 'GET',
    });
    expect(callerRoom.text).toBe(agentRoom.text);
    // The target's call is placed before the caller is moved.
    const [create, update] = fake.requests.slice(-2);
    expect(create?.path.endsWith('/Calls.json')).toBe(true);
    expect(update?.path.endsWith(`/Calls/${call.sid}.json`)).toBe(true);

    const audio = await control.transfer({ callId: fake.addCall().sid }, AGENT, {
      mode: 'warm',
      callerId: CALLER_ID,
      summary: { audioUrl: SUMMARY_AUDIO },
    });
    expect(child(fake.calls.get(audio.targetCallId ?? '')?.twiml, 'Play').text).toBe(SUMMARY_AUDIO);
  });

  it('hangs the target up again when the caller cannot be moved', async () => {
    const { fake, control } = await setup();
    const gone = fake.addCall();
    gone.status = 'completed';
    const e = await failure(
      control.transfer({ callId: gone.sid }, AGENT, {
        mode: 'warm',
        callerId: CALLER_ID,
        summary: { text: SUMMARY },
      }),
    );
    expect(e.code).toBe('call_not_found');
    expect(e.providerCode).toBe('21220');
    const placed = [...fake.calls.values()].find((c) => c.sid !== gone.sid);
    expect(placed?.status).toBe('completed');
    expect(await failure(control.transfer({ callId: gone.sid }, AGENT, { mode: 'warm' }))).toMatchObject({
      code: 'invalid_request',
    });
  });

  it('originates with <Connect><Stream>, its parameters, progress callbacks and asynchronous AMD', async () => {
    const { fake, control } = await setup();
    const result = await control.originate({
      to: AGENT,
      from: CALLER_ID,
      streamUrl: `${STREAM}/twilio/stream-token-1`,
      parameters: { flow: 'reminder', voxbridgeCall: 'c-17' },
      timeoutSeconds: 25,
      statusCallbackUrl: 'https://voice.example.com/calls/status',
      machineDetection: { mode: 'detect-message-end', callbackUrl: 'https://voice.example.com/calls/amd' },
    });
    const call = fake.calls.get(result.callId ?? '');
    expect(call?.created).toMatchObject({
      To: ['+15551234567'],
      From: [CALLER_ID],
      Timeout: ['25'],
      StatusCallback: ['https://voice.example.com/calls/status'],
      StatusCallbackEvent: ['initiated', 'ringing', 'answered', 'completed'],
      MachineDetection: ['DetectMessageEnd'],
      AsyncAmd: ['true'],
      AsyncAmdStatusCallback: ['https://voice.example.com/calls/amd'],
    });
    const stream = child(call?.twiml, 'Connect', 'Stream');
    expect(stream.attributes).toEqual({ url: `${STREAM}/twilio/stream-token-1` });
    expect(stream.children.map((p) => p.attributes)).toEqual([
      { name: 'flow', value: 'reminder' },
      { name: 'voxbridgeCall', value: 'c-17' },
    ]);
    const e = await failure(
      control.originate({ to: AGENT, from: CALLER_ID, streamUrl: `${STREAM}/twilio?token=x` }),
    );
    expect(e.code).toBe('invalid_request');
  });

  it('escapes what it writes into TwiML', async () => {
    const { fake, control } = await setup();
    const result = await control.transfer({ callId: fake.addCall().sid }, AGENT, {
      mode: 'warm',
      callerId: CALLER_ID,
      summary: { text: 'Tom & Jerry said "<Hangup/>" twice' },
    });
    const target = fake.calls.get(result.targetCallId ?? '');
    expect(child(target?.twiml, 'Say').text).toBe('Tom & Jerry said "<Hangup/>" twice');
    expect(findAll(target!.twiml!, 'Hangup')).toEqual([]);
  });
});

describe('telnyx', () => {
  async function setup(env: Record<string, string | undefined> = ENV) {
    const fake = track(
      await FakeTelnyxRest.start({ apiKey: ENV.TELNYX_API_KEY, connectionId: ENV.TELNYX_CONNECTION_ID }),
    );
    return { fake, control: port('telnyx', fake.url, {}, env) };
  }

  it('hangs up, and takes 90018 as a call already over', async () => {
    const { fake, control } = await setup();
    const call = fake.addCall();
    expect(await control.hangUp({ callId: call.callControlId })).toEqual({ alreadyEnded: false });
    expect(call.alive).toBe(false);
    expect(last(fake.requests).path).toBe(`/v2/calls/${call.callControlId}/actions/hangup`);
    expect(await control.hangUp({ callId: call.callControlId })).toEqual({ alreadyEnded: true });
    expect(last(fake.requests).status).toBe(422);
  });

  it('cold-transfers to a number or a SIP URI, warm with an audio summary only', async () => {
    const { fake, control } = await setup();
    const call = fake.addCall();
    await control.transfer({ callId: call.callControlId }, AGENT, { mode: 'cold', callerId: CALLER_ID });
    await control.transfer({ callId: call.callControlId }, AGENT_SIP, {
      mode: 'warm',
      summary: { audioUrl: SUMMARY_AUDIO },
      holdMusicUrl: HOLD_MUSIC,
    });
    expect(call.commands).toEqual([
      { action: 'transfer', body: { to: '+15551234567', from: CALLER_ID, timeout_secs: 30 } },
      {
        action: 'transfer',
        body: { to: 'sip:agent@pbx.example.com', timeout_secs: 30, audio_url: SUMMARY_AUDIO },
      },
    ]);
    expect(control.capabilities).toMatchObject({ warmTransfer: true, holdMusic: false, summary: ['audio'] });
    const e = await failure(
      control.transfer({ callId: call.callControlId }, AGENT, { mode: 'warm', summary: { text: SUMMARY } }),
    );
    expect(e.code).toBe('unsupported');
  });

  it('originates through the Call Control application with a bidirectional RTP stream', async () => {
    const { fake, control } = await setup();
    const result = await control.originate({
      to: AGENT,
      from: CALLER_ID,
      streamUrl: `${STREAM}/telnyx?token=stream-token-2`,
      parameters: { flow: 'survey' },
      machineDetection: {
        mode: 'detect-message-end',
        callbackUrl: 'https://voice.example.com/telnyx/events',
        timeoutSeconds: 8,
      },
      statusCallbackUrl: 'https://voice.example.com/telnyx/events',
    });
    const call = fake.calls.get(result.callId ?? '');
    expect(call?.dialed).toEqual({
      connection_id: ENV.TELNYX_CONNECTION_ID,
      to: '+15551234567',
      from: CALLER_ID,
      timeout_secs: 30,
      stream_url: `${STREAM}/telnyx?token=stream-token-2&flow=survey`,
      stream_track: 'inbound_track',
      stream_bidirectional_mode: 'rtp',
      stream_bidirectional_codec: 'PCMU',
      webhook_url: 'https://voice.example.com/telnyx/events',
      answering_machine_detection: 'greeting_end',
      answering_machine_detection_config: { total_analysis_time_millis: 8000 },
    });
    const e = await failure(
      control.originate({
        to: AGENT,
        from: CALLER_ID,
        streamUrl: STREAM,
        statusCallbackUrl: 'https://a.example.com/status',
        machineDetection: { mode: 'detect', callbackUrl: 'https://a.example.com/amd' },
      }),
    );
    expect(e.code).toBe('invalid_request');
  });

  it('names TELNYX_CONNECTION_ID when an outbound call needs it', async () => {
    const { TELNYX_CONNECTION_ID: _, ...env } = ENV;
    const { fake, control } = await setup(env);
    const before = fake.requests.length;
    const e = await failure(control.originate({ to: AGENT, from: CALLER_ID, streamUrl: STREAM }));
    expect(e.code).toBe('missing_credentials');
    expect(e.missing).toEqual(['TELNYX_CONNECTION_ID']);
    expect(fake.requests.length).toBe(before);
  });
});

describe('plivo', () => {
  async function setup(settings: CallControlSettings = {}) {
    const fake = track(
      await FakePlivoRest.start({ authId: ENV.PLIVO_AUTH_ID, authToken: ENV.PLIVO_AUTH_TOKEN }),
    );
    return { fake, control: port('plivo', fake.url, settings) };
  }

  it('hangs up with DELETE, and takes 404 as a call already over', async () => {
    const { fake, control } = await setup();
    const call = fake.addCall();
    expect(await control.hangUp({ callId: call.uuid })).toEqual({ alreadyEnded: false });
    const sent = last(fake.requests);
    expect([sent.method, sent.path, sent.status]).toEqual([
      'DELETE',
      `/v1/Account/${ENV.PLIVO_AUTH_ID}/Call/${call.uuid}/`,
      204,
    ]);
    expect(await control.hangUp({ callId: call.uuid })).toEqual({ alreadyEnded: true });
  });

  it('transfers through a published <Dial>: cold, and warm with dialMusic and confirmSound', async () => {
    const { fake, control } = await setup();
    const call = fake.addCall();
    await control.transfer({ callId: call.uuid }, AGENT, { mode: 'cold', callerId: CALLER_ID });
    expect(last(fake.requests).json).toMatchObject({ legs: 'aleg', aleg_method: 'GET' });
    let dial = child(call.xml, 'Dial');
    expect(dial.attributes).toEqual({ callerId: '15550001111', timeout: '30' });
    expect(child(dial, 'Number').text).toBe('15551234567');

    fake.documents.length = 0;
    await control.transfer({ callId: call.uuid }, AGENT_SIP, {
      mode: 'warm',
      summary: { text: SUMMARY },
      holdMusicUrl: HOLD_MUSIC,
    });
    dial = child(call.xml, 'Dial');
    expect(child(dial, 'User').text).toBe('sip:agent@pbx.example.com');
    expect(fake.documents.map((d) => [d.role, d.method, d.status, d.error])).toEqual([
      ['aleg_url', 'GET', 200, undefined],
      ['confirmSound', 'POST', 200, undefined],
      ['dialMusic', 'POST', 200, undefined],
    ]);
    const byRole = new Map(fake.documents.map((d) => [d.role, d.root]));
    expect(child(byRole.get('confirmSound'), 'Speak').text).toBe(SUMMARY);
    expect(child(byRole.get('dialMusic'), 'Play').text).toBe(HOLD_MUSIC);
  });

  it('originates with an answer URL that streams back, its parameters as extraHeaders', async () => {
    const { fake, control } = await setup();
    const result = await control.originate({
      to: AGENT,
      from: CALLER_ID,
      streamUrl: `${STREAM}/plivo?token=stream-token-3`,
      parameters: { flow: 'reminder', voxbridgeCall: 'c-18' },
      statusCallbackUrl: 'https://voice.example.com/plivo/status',
      machineDetection: {
        mode: 'detect',
        callbackUrl: 'https://voice.example.com/plivo/amd',
        timeoutSeconds: 4,
      },
    });
    expect(result.callId).toBeUndefined();
    expect(result.requestId).toMatch(/^[0-9a-f-]{36}$/);
    const placed = [...fake.calls.values()].find((c) => c.made !== undefined);
    expect(placed?.made).toMatchObject({
      from: '15550001111',
      to: '15551234567',
      answer_method: 'GET',
      ring_timeout: 30,
      ring_url: 'https://voice.example.com/plivo/status',
      hangup_url: 'https://voice.example.com/plivo/status',
      machine_detection: 'true',
      machine_detection_url: 'https://voice.example.com/plivo/amd',
      machine_detection_time: 4000,
    });
    const stream = child(placed?.xml, 'Stream');
    expect(stream.text).toBe(`${STREAM}/plivo?token=stream-token-3`);
    expect(stream.attributes).toEqual({
      bidirectional: 'true',
      keepCallAlive: 'true',
      contentType: 'audio/x-mulaw;rate=8000',
      extraHeaders: 'flow=reminder,voxbridgeCall=c-18',
    });
    const e = await failure(
      control.originate({ to: AGENT, from: CALLER_ID, streamUrl: STREAM, parameters: { note: 'a,b=c' } }),
    );
    expect(e.code).toBe('invalid_request');
  });

  it('says what it needs without a document host, and still hangs up', async () => {
    const fake = track(
      await FakePlivoRest.start({ authId: ENV.PLIVO_AUTH_ID, authToken: ENV.PLIVO_AUTH_TOKEN }),
    );
    const made = callControlFor('plivo', ENV, { apiBaseUrl: fake.url, logger });
    if (!made.ok) throw made.error;
    const control = track(made.control);
    expect(control.capabilities).toMatchObject({ hangUp: true, coldTransfer: false, originate: false });
    const call = fake.addCall();
    expect((await failure(control.transfer({ callId: call.uuid }, AGENT, { mode: 'cold' }))).code).toBe(
      'not_configured',
    );
    expect((await failure(control.originate({ to: AGENT, from: CALLER_ID, streamUrl: STREAM }))).code).toBe(
      'not_configured',
    );
    expect(await control.hangUp({ callId: call.uuid })).toEqual({ alreadyEnded: false });
  });
});

describe('vonage', () => {
  async function setup(env: Record<string, string | undefined> = ENV) {
    const fake = track(
      await FakeVonageRest.start({
        applicationId: ENV.VONAGE_APPLICATION_ID,
        publicKeyPem: VONAGE_PUBLIC.export({ type: 'spki', format: 'pem' }).toString(),
      }),
    );
    return { fake, control: port('vonage', fake.url, {}, env) };
  }

  it('signs every request with a JWT of the application, and hangs up', async () => {
    const { fake, control } = await setup();
    const call = fake.addCall();
    expect(await control.hangUp({ callId: call.uuid })).toEqual({ alreadyEnded: false });
    const sent = last(fake.requests);
    expect([sent.method, sent.path, sent.status]).toEqual(['PUT', `/v1/calls/${call.uuid}`, 204]);
    expect(sent.json).toEqual({ action: 'hangup' });
    const claims = fake.verifyJwt(sent.headers.authorization?.slice('Bearer '.length));
    expect(claims).toMatchObject({ application_id: ENV.VONAGE_APPLICATION_ID });
    const { iat, exp } = claims as { iat: number; exp: number };
    expect(exp - iat).toBe(900);
    expect(await control.hangUp({ callId: call.uuid })).toEqual({ alreadyEnded: true });
  });

  it('reads the private key from a file or from a PEM with escaped newlines, and refuses one that is not a key', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'voxbridge-vonage-'));
    try {
      const file = join(dir, 'private.key');
      await writeFile(file, VONAGE_PEM);
      for (const key of [file, VONAGE_PEM.replace(/\n/g, '\\n')]) {
        const { fake, control } = await setup({ ...ENV, VONAGE_PRIVATE_KEY: key });
        const call = fake.addCall();
        expect(await control.hangUp({ callId: call.uuid })).toEqual({ alreadyEnded: false });
      }
      for (const bad of [
        join(dir, 'absent.key'),
        '-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----',
      ]) {
        const made = callControlFor('vonage', { ...ENV, VONAGE_PRIVATE_KEY: bad });
        expect(made.ok).toBe(false);
        if (!made.ok) {
          expect(made.error.code).toBe('invalid_credentials');
          expect(made.error.missing).toEqual(['VONAGE_PRIVATE_KEY']);
        }
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('transfers with an NCCO connect: cold, and warm with ringback music and an onAnswer summary', async () => {
    const { fake, control } = await setup();
    const call = fake.addCall();
    await control.transfer({ callId: call.uuid }, AGENT, {
      mode: 'cold',
      callerId: CALLER_ID,
      timeoutSeconds: 20,
    });
    await control.transfer({ callId: call.uuid }, AGENT_SIP, {
      mode: 'warm',
      summary: { text: SUMMARY },
      holdMusicUrl: HOLD_MUSIC,
    });
    const [cold, warm] = call.actions;
    expect(cold).toEqual({
      action: 'transfer',
      destination: {
        type: 'ncco',
        ncco: [
          {
            action: 'connect',
            timeout: 20,
            endpoint: [{ type: 'phone', number: '15551234567' }],
            from: '15550001111',
          },
        ],
      },
    });
    const connect = (warm?.['destination'] as { ncco: Array<Record<string, unknown>> }).ncco[0];
    expect(connect?.['ringbackTone']).toBe(HOLD_MUSIC);
    expect(connect?.['endpoint']).toMatchObject([{ type: 'sip', uri: 'sip:agent@pbx.example.com' }]);
    expect(fake.fetched).toEqual([[{ action: 'talk', text: SUMMARY }]]);
  });

  it('originates with an inline NCCO that connects the callee to the stream, and its machine detection', async () => {
    const { fake, control } = await setup();
    const result = await control.originate({
      to: AGENT_SIP,
      from: CALLER_ID,
      streamUrl: `${STREAM}/vonage?token=stream-token-4`,
      parameters: { flow: 'survey', voxbridgeCall: 'c-19' },
      statusCallbackUrl: 'https://voice.example.com/vonage/events',
      machineDetection: {
        mode: 'detect-message-end',
        callbackUrl: 'https://voice.example.com/vonage/events',
      },
    });
    expect(fake.calls.get(result.callId ?? '')?.created).toEqual({
      to: [{ type: 'sip', uri: 'sip:agent@pbx.example.com' }],
      from: { type: 'phone', number: '15550001111' },
      ncco: [
        {
          action: 'connect',
          endpoint: [
            {
              type: 'websocket',
              uri: `${STREAM}/vonage?token=stream-token-4`,
              'content-type': 'audio/l16;rate=16000',
              headers: { flow: 'survey', voxbridgeCall: 'c-19' },
            },
          ],
        },
      ],
      ringing_timer: 30,
      event_url: ['https://voice.example.com/vonage/events'],
      event_method: 'POST',
      advanced_machine_detection: { behavior: 'continue', mode: 'detect_beep' },
    });
  });
});

describe('jambonz', () => {
  async function setup() {
    const fake = track(
      await FakeJambonzRest.start({ accountSid: ENV.JAMBONZ_ACCOUNT_SID, apiKey: ENV.JAMBONZ_API_KEY }),
    );
    return { fake, control: port('jambonz', fake.url) };
  }

  it('hangs up with call_status completed', async () => {
    const { fake, control } = await setup();
    const call = fake.addCall();
    expect(await control.hangUp({ callId: call.callSid })).toEqual({ alreadyEnded: false });
    const sent = last(fake.requests);
    expect([sent.method, sent.path, sent.status]).toEqual([
      'PUT',
      `/v1/Accounts/${ENV.JAMBONZ_ACCOUNT_SID}/Calls/${call.callSid}`,
      202,
    ]);
    expect(call.updates).toEqual([{ call_status: 'completed' }]);
    expect(await control.hangUp({ callId: call.callSid })).toEqual({ alreadyEnded: true });
  });

  it('transfers with a call_hook to a dial verb: cold, and warm with dialMusic and a confirmHook', async () => {
    const { fake, control } = await setup();
    const call = fake.addCall();
    await control.transfer({ callId: call.callSid }, AGENT, { mode: 'cold', callerId: CALLER_ID });
    await control.transfer({ callId: call.callSid }, AGENT_SIP, {
      mode: 'warm',
      summary: { audioUrl: SUMMARY_AUDIO },
      holdMusicUrl: HOLD_MUSIC,
    });
    expect(fake.fetched.map((f) => [f.role, f.verbs])).toEqual([
      [
        'call_hook',
        [
          {
            verb: 'dial',
            target: [{ type: 'phone', number: '15551234567' }],
            timeout: 30,
            callerId: '15550001111',
          },
        ],
      ],
      [
        'call_hook',
        [
          {
            verb: 'dial',
            target: [{ type: 'sip', sipUri: 'sip:agent@pbx.example.com' }],
            timeout: 30,
            dialMusic: HOLD_MUSIC,
            confirmHook: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/documents\//) as unknown,
            confirmMethod: 'GET',
          },
        ],
      ],
      ['confirmHook', [{ verb: 'play', url: SUMMARY_AUDIO }]],
    ]);
  });

  it('originates with createCall and a listen verb that streams back', async () => {
    const { fake, control } = await setup();
    const result = await control.originate({
      to: AGENT,
      from: CALLER_ID,
      streamUrl: `${STREAM}/jambonz?token=stream-token-5`,
      parameters: { flow: 'reminder' },
      statusCallbackUrl: 'https://voice.example.com/jambonz/status',
      machineDetection: {
        mode: 'detect',
        callbackUrl: 'https://voice.example.com/jambonz/amd',
        timeoutSeconds: 5,
      },
    });
    const call = fake.calls.get(result.callId ?? '');
    expect(call?.created).toMatchObject({
      from: '15550001111',
      to: { type: 'phone', number: '15551234567' },
      call_status_hook: { url: 'https://voice.example.com/jambonz/status', method: 'POST' },
      amd: { actionHook: 'https://voice.example.com/jambonz/amd', timers: { decisionTimeoutMs: 5000 } },
      speech_synthesis_vendor: 'google',
    });
    expect(only(fake.fetched).verbs).toEqual([
      {
        verb: 'listen',
        url: `${STREAM}/jambonz?token=stream-token-5`,
        actionHook: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/documents\//) as unknown,
        sampleRate: 8000,
        mixType: 'mono',
        passDtmf: true,
        bidirectionalAudio: { enabled: true, streaming: true, sampleRate: 8000 },
        metadata: { flow: 'reminder' },
      },
    ]);
    const listen = (only(fake.fetched).verbs as Array<{ actionHook: string }>)[0]!;
    const afterwards = documents.published.find((d) => d.url === listen.actionHook);
    expect(JSON.parse(afterwards?.body ?? 'null')).toEqual([{ verb: 'hangup' }]);
  });
});

describe('asterisk', () => {
  async function setup(settings: CallControlSettings = {}) {
    const fake = track(
      await FakeAsteriskAri.start({ user: ENV.ASTERISK_ARI_USER, password: ENV.ASTERISK_ARI_PASSWORD }),
    );
    return { fake, control: port('asterisk', fake.url, settings) };
  }

  it('hangs a channel up', async () => {
    const { fake, control } = await setup();
    const channel = fake.addChannel();
    expect(await control.hangUp({ callId: channel.id })).toEqual({ alreadyEnded: false });
    const sent = last(fake.requests);
    expect([sent.method, sent.path, sent.query, sent.status]).toEqual([
      'DELETE',
      `/ari/channels/${channel.id}`,
      { reason: 'normal' },
      204,
    ]);
    expect(await control.hangUp({ callId: channel.id })).toEqual({ alreadyEnded: true });
  });

  it('redirects a Stasis channel, says why ARI refuses another, and offers no warm transfer', async () => {
    const { fake, control } = await setup();
    const channel = fake.addChannel();
    await control.transfer({ callId: channel.id }, AGENT, { mode: 'cold' });
    await control.transfer({ callId: channel.id }, AGENT_SIP, { mode: 'cold' });
    expect(channel.commands).toEqual([
      { command: 'redirect', query: { endpoint: 'PJSIP/+15551234567' } },
      { command: 'redirect', query: { endpoint: 'PJSIP/sip:agent@pbx.example.com' } },
    ]);
    const outside = fake.addChannel({ inStasis: false });
    const e = await failure(control.transfer({ callId: outside.id }, AGENT, { mode: 'cold' }));
    expect([e.code, e.status, e.reason]).toEqual(['rejected', 409, 'Channel not in a Stasis application']);
    expect((await failure(control.transfer({ callId: channel.id }, AGENT, { mode: 'warm' }))).code).toBe(
      'unsupported',
    );
  });

  it('continues the channel in a transfer context when configured', async () => {
    const { fake, control } = await setup({ asterisk: { transferContext: 'agents' } });
    const channel = fake.addChannel();
    await control.transfer({ callId: channel.id }, AGENT, { mode: 'cold' });
    expect(channel.commands).toEqual([
      { command: 'continue', query: { context: 'agents', extension: '+15551234567', priority: '1' } },
    ]);
    expect((await failure(control.transfer({ callId: channel.id }, AGENT_SIP, { mode: 'cold' }))).code).toBe(
      'invalid_request',
    );
  });

  it('originates into the dialplan context that connects the stream, or says what it lacks', async () => {
    const unconfigured = await setup();
    expect(unconfigured.control.capabilities.originate).toBe(false);
    expect(
      (await failure(unconfigured.control.originate({ to: AGENT, from: CALLER_ID, streamUrl: STREAM }))).code,
    ).toBe('not_configured');
    const { fake, control } = await setup({
      asterisk: { originateContext: 'voxbridge-out', dialTemplates: { number: 'PJSIP/{number}@trunk' } },
    });
    const result = await control.originate({
      to: AGENT,
      from: '"Clinic" <+15550001111>',
      streamUrl: `${STREAM}/asterisk`,
      parameters: { flow: 'reminder', voxbridgeCall: 'c-20' },
      timeoutSeconds: 40,
    });
    expect(fake.channels.get(result.callId ?? '')?.originated).toEqual({
      query: {
        endpoint: 'PJSIP/+15551234567@trunk',
        context: 'voxbridge-out',
        extension: 's',
        priority: '1',
        callerId: '"Clinic" <+15550001111>',
        timeout: '40',
      },
      variables: {
        VOXBRIDGE_STREAM_URL: `${STREAM}/asterisk`,
        VOXBRIDGE_STREAM_PARAMS: 'flow=reminder&voxbridgeCall=c-20',
      },
    });
    expect(
      (await failure(control.originate({ to: AGENT_SIP, from: CALLER_ID, streamUrl: STREAM }))).code,
    ).toBe('not_configured');
  });
});

describe('exotel', () => {
  it('places calls to a flow, and says it cannot touch a call in progress', async () => {
    const fake = track(
      await FakeExotelRest.start({
        accountSid: ENV.EXOTEL_ACCOUNT_SID,
        apiKey: ENV.EXOTEL_API_KEY,
        apiToken: ENV.EXOTEL_API_TOKEN,
      }),
    );
    const control = port('exotel', fake.url, { exotel: { flowAppId: '223344' } });
    expect(control.capabilities).toMatchObject({
      hangUp: false,
      coldTransfer: false,
      warmTransfer: false,
      originate: true,
    });
    expect((await failure(control.hangUp({ callId: 'abc' }))).code).toBe('unsupported');
    expect((await failure(control.transfer({ callId: 'abc' }, AGENT, { mode: 'cold' }))).code).toBe(
      'unsupported',
    );
    const result = await control.originate({
      to: AGENT,
      from: '+914430000000',
      streamUrl: `${STREAM}/exotel`,
      parameters: { flow: 'reminder' },
      statusCallbackUrl: 'https://voice.example.com/exotel/status',
    });
    expect(result.callId).toMatch(/^[0-9a-f]{32}$/);
    expect(only(fake.placed)).toEqual({
      From: ['+15551234567'],
      CallerId: ['+914430000000'],
      Url: [`http://my.exotel.com/${ENV.EXOTEL_ACCOUNT_SID}/exoml/start_voice/223344`],
      TimeOut: ['30'],
      CustomField: ['{"flow":"reminder"}'],
      StatusCallback: ['https://voice.example.com/exotel/status'],
      'StatusCallbackEvents[0]': ['terminal'],
      'StatusCallbackEvents[1]': ['answered'],
    });
    const unconfigured = port('exotel', fake.url);
    expect(
      (await failure(unconfigured.originate({ to: AGENT, from: CALLER_ID, streamUrl: STREAM }))).code,
    ).toBe('not_configured');
  });
});

describe('when the gateway fails', () => {
  async function twilioSetup(settings: CallControlSettings = {}) {
    const fake = track(
      await FakeTwilioRest.start({ accountSid: ENV.TWILIO_ACCOUNT_SID, authToken: ENV.TWILIO_AUTH_TOKEN }),
    );
    return { fake, control: port('twilio', fake.url, settings) };
  }

  it("turns a vendor's error into a coded error with its reason", async () => {
    const { fake, control } = await twilioSetup();
    fake.server.failNext({
      kind: 'answer',
      reply: {
        status: 400,
        json: {
          code: 21211,
          message: "Invalid 'To' Phone Number: +15551234567",
          more_info: 'https://www.twilio.com/docs/errors/21211',
          status: 400,
        },
      },
    });
    const e = await failure(control.originate({ to: AGENT, from: CALLER_ID, streamUrl: `${STREAM}/twilio` }));
    expect(e).toMatchObject({
      code: 'rejected',
      gateway: 'twilio',
      operation: 'originate',
      status: 400,
      providerCode: '21211',
      reason: "Invalid 'To' Phone Number: +15551234567",
      retryable: false,
    });
    fake.server.failNext({
      kind: 'answer',
      reply: { status: 503, text: '<html>Service Unavailable</html>' },
    });
    expect(await failure(control.hangUp({ callId: fake.addCall().sid }))).toMatchObject({
      code: 'provider_error',
      reason: '<html>Service Unavailable</html>',
      retryable: true,
    });
    const telnyx = track(
      await FakeTelnyxRest.start({ apiKey: ENV.TELNYX_API_KEY, connectionId: ENV.TELNYX_CONNECTION_ID }),
    );
    const e2 = await failure(
      port('telnyx', telnyx.url).transfer({ callId: 'v3:unknown' }, AGENT, { mode: 'cold' }),
    );
    expect(e2).toMatchObject({ code: 'call_not_found', status: 404, providerCode: '10005' });
  });

  it('scrubs credentials a gateway echoes back, and says when they are refused', async () => {
    const { fake, control } = await twilioSetup();
    fake.server.failNext({
      kind: 'answer',
      reply: {
        status: 401,
        json: {
          code: 20003,
          message: `Authenticate: ${ENV.TWILIO_ACCOUNT_SID}:${ENV.TWILIO_AUTH_TOKEN} is not valid`,
          status: 401,
        },
      },
    });
    const e = await failure(control.hangUp({ callId: fake.addCall().sid }));
    expect(e.code).toBe('unauthorized');
    expect(e.reason).toBe('Authenticate: [redacted]:[redacted] is not valid');
    const wrong = port('twilio', fake.url, {}, { ...ENV, TWILIO_AUTH_TOKEN: 'a-wrong-token-1234' });
    const refused = await failure(wrong.hangUp({ callId: fake.addCall().sid }));
    expect([refused.code, refused.providerCode]).toEqual(['unauthorized', '20003']);
    expect(refused.message).not.toContain('a-wrong-token-1234');
  });

  it('gives up at the deadline on a gateway that never answers', async () => {
    const { fake, control } = await twilioSetup({ requestTimeoutMs: 150 });
    fake.server.failNext({ kind: 'hang' });
    const started = performance.now();
    const e = await failure(control.hangUp({ callId: fake.addCall().sid }));
    expect(e).toMatchObject({ code: 'timeout', retryable: true });
    expect(performance.now() - started).toBeLessThan(2000);
  });

  it('refuses an answer larger than the bound, declared or not', async () => {
    const { fake, control } = await twilioSetup({ maxAnswerBytes: 4096 });
    fake.server.failNext({ kind: 'oversize', bytes: 64 * 1024 });
    expect(
      (await failure(control.originate({ to: AGENT, from: CALLER_ID, streamUrl: `${STREAM}/twilio` }))).code,
    ).toBe('answer_too_large');
    fake.server.failNext({ kind: 'oversize', bytes: 64 * 1024, declared: false });
    expect(
      (await failure(control.originate({ to: AGENT, from: CALLER_ID, streamUrl: `${STREAM}/twilio` }))).code,
    ).toBe('answer_too_large');
    // The port still works afterwards.
    expect(
      (await control.originate({ to: AGENT, from: CALLER_ID, streamUrl: `${STREAM}/twilio` })).callId,
    ).toMatch(/^CA/);
  });

  it('rejects with the caller’s own reason when the caller aborts', async () => {
    const { fake, control } = await twilioSetup();
    fake.server.failNext({ kind: 'hang' });
    const ctl = new AbortController();
    const reason = new Error('the call went away');
    const pending = control.hangUp({ callId: fake.addCall().sid }, { signal: ctl.signal });
    setImmediate(() => ctl.abort(reason));
    await expect(pending).rejects.toBe(reason);
  });

  it('refuses a success that lacks what the API documents', async () => {
    const telnyx = track(
      await FakeTelnyxRest.start({ apiKey: ENV.TELNYX_API_KEY, connectionId: ENV.TELNYX_CONNECTION_ID }),
    );
    const control = port('telnyx', telnyx.url);
    telnyx.server.failNext({ kind: 'answer', reply: { status: 200, json: { data: { is_alive: false } } } });
    const e = await failure(control.originate({ to: AGENT, from: CALLER_ID, streamUrl: STREAM }));
    expect(e).toMatchObject({ code: 'invalid_answer', gateway: 'telnyx', operation: 'originate' });
    telnyx.server.failNext({ kind: 'answer', reply: { status: 200, text: '<html>captive portal</html>' } });
    expect((await failure(control.originate({ to: AGENT, from: CALLER_ID, streamUrl: STREAM }))).code).toBe(
      'invalid_answer',
    );
  });

  it('says the connection failed when nothing listens', async () => {
    const control = port('jambonz', `http://127.0.0.1:${await freePort()}`);
    const e = await failure(control.hangUp({ callId: 'abc' }));
    expect(e).toMatchObject({ code: 'connection_failed', retryable: true });
  });
});

describe("Twilio's own library", () => {
  /** Method, path, form fields and credentials of a request: what both clients must agree on. */
  function essence(r: RecordedRequest): unknown {
    return { method: r.method, path: r.path, form: r.form, authorization: r.headers.authorization };
  }

  it('makes the same hang-up, update and create requests as this port', async () => {
    const fake = track(
      await FakeTwilioRest.start({ accountSid: ENV.TWILIO_ACCOUNT_SID, authToken: ENV.TWILIO_AUTH_TOKEN }),
    );
    const control = port('twilio', fake.url);
    const client = twilio(ENV.TWILIO_ACCOUNT_SID, ENV.TWILIO_AUTH_TOKEN);
    client.api.baseUrl = fake.url;

    const ours = fake.addCall();
    const theirs = fake.addCall();
    await control.hangUp({ callId: ours.sid });
    await client.calls(theirs.sid).update({ status: 'completed' });
    const [hangOurs, hangTheirs] = fake.requests.slice(-2).map(essence);
    expect(hangOurs).toEqual({
      ...(hangTheirs as object),
      path: expect.stringContaining(ours.sid) as unknown,
    });
    expect(theirs.status).toBe('completed');

    const ours2 = fake.addCall();
    const theirs2 = fake.addCall();
    await control.transfer({ callId: ours2.sid }, AGENT, { mode: 'cold', callerId: CALLER_ID });
    const response = new twilio.twiml.VoiceResponse();
    response.dial({ callerId: CALLER_ID, timeout: 30 }).number('+15551234567');
    await client.calls(theirs2.sid).update({ twiml: response.toString() });
    const [moveOurs, moveTheirs] = fake.requests.slice(-2);
    expect(Object.keys(moveOurs!.form!)).toEqual(Object.keys(moveTheirs!.form!));
    // The same document, as Twilio's own TwiML builder writes it.
    expect(parseXml(moveOurs!.form!['Twiml']![0]!)).toEqual(parseXml(moveTheirs!.form!['Twiml']![0]!));
    expect(moveOurs!.headers.authorization).toBe(moveTheirs!.headers.authorization);

    const request = {
      to: AGENT,
      from: CALLER_ID,
      streamUrl: `${STREAM}/twilio/stream-token-1`,
      parameters: { flow: 'reminder' },
      timeoutSeconds: 25,
      statusCallbackUrl: 'https://voice.example.com/calls/status',
      machineDetection: {
        mode: 'detect',
        callbackUrl: 'https://voice.example.com/calls/amd',
        timeoutSeconds: 10,
      },
    } as const;
    await control.originate(request);
    const connect = new twilio.twiml.VoiceResponse();
    connect.connect().stream({ url: request.streamUrl }).parameter({ name: 'flow', value: 'reminder' });
    await client.calls.create({
      to: '+15551234567',
      from: CALLER_ID,
      twiml: connect.toString(),
      timeout: 25,
      statusCallback: request.statusCallbackUrl,
      statusCallbackEvent: ['initiated', 'ringing', 'answered', 'completed'],
      statusCallbackMethod: 'POST',
      machineDetection: 'Enable',
      asyncAmd: 'true',
      asyncAmdStatusCallback: request.machineDetection.callbackUrl,
      asyncAmdStatusCallbackMethod: 'POST',
      machineDetectionTimeout: 10,
    });
    const [createOurs, createTheirs] = fake.requests.slice(-2);
    const { Twiml: ourTwiml, ...ourFields } = createOurs!.form!;
    const { Twiml: theirTwiml, ...theirFields } = createTheirs!.form!;
    expect(ourFields).toEqual(theirFields);
    expect(parseXml(ourTwiml![0]!)).toEqual(parseXml(theirTwiml![0]!));
    expect([createOurs!.method, createOurs!.path, createOurs!.headers.authorization]).toEqual([
      createTheirs!.method,
      createTheirs!.path,
      createTheirs!.headers.authorization,
    ]);
    expect(createTheirs!.status).toBe(201);
  });
});
