// Over 450 lines: one table of six gateways run through the same end-to-end checks, sharing one app.
/**
 * Phone calls over the six gateways besides Twilio, end to end: for each, a fake gateway written from
 * the vendor's docs (a real ws client that plays out at real time, returns marks by the vendor's rules
 * and records every breach of them) against the real app with the local speech service. Outbound
 * formats are those `config/default.yaml` sets (`calls.formats`: Telnyx mu-law 8 kHz) or the start
 * message says (Plivo mu-law 8 kHz, Vonage and jambonz L16 16 kHz, Exotel L16 8 kHz, Asterisk ulaw and
 * slin16). Where the vendor's docs disagree with themselves (Telnyx's custom_parameters, Plivo's
 * checkpoint answer), both forms have a case. Gateways run concurrently: each test has its own call.
 * Then the upgrade's token check against malformed path segments, on an app with both secrets set.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, it } from 'vitest';
import WebSocket, { WebSocketServer } from 'ws';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { FakeAsterisk } from '../helpers/gateways/asterisk.js';
import { FakeExotel } from '../helpers/gateways/exotel.js';
import type { FakeGateway } from '../helpers/gateways/fake-gateway.js';
import { FakeJambonz } from '../helpers/gateways/jambonz.js';
import { FakePlivo } from '../helpers/gateways/plivo.js';
import { FakeTelnyx } from '../helpers/gateways/telnyx.js';
import { FakeVonage } from '../helpers/gateways/vonage.js';
import { SseReader } from '../../testkit/sse.js';
import { upgradeStatus } from '../helpers/upgrade.js';

/** `calls.markIntervalMs` of config/default.yaml: how far a mark-based played_ms may trail playout. */
const MARK_INTERVAL_MS = 200;
const SHORT = 'Hello caller, this is a test.';
const LONG = 'This is a long answer that goes on and on. '.repeat(3).trim();
const PROMPT = 'Press a key, and I will tell you which one it was.';
const BRANCHES: Record<string, string> = {
  '1': 'You chose one.',
  '2': 'You chose two.',
  '3': 'You chose three.',
  '4': 'You chose four.',
  '5': 'You chose five.',
  '*': 'You chose star.',
  '#': 'You chose pound.',
};
const NODE_NAMES: Record<string, string> = { '*': 'star', '#': 'pound' };
const nodeOf = (digit: string): string => NODE_NAMES[digit] ?? `key-${digit}`;

/** A gather whose branches say different texts, then hang up. */
const KEYS_FLOW = {
  start: 'menu',
  nodes: {
    menu: {
      type: 'gather',
      prompt: PROMPT,
      timeoutMs: 8000,
      retries: 0,
      branches: Object.fromEntries(Object.keys(BRANCHES).map((d) => [d, nodeOf(d)])),
      onFail: 'bye',
    },
    ...Object.fromEntries(
      Object.entries(BRANCHES).map(([d, text]) => [nodeOf(d), { type: 'say', text, next: 'bye' }]),
    ),
    bye: { type: 'hangup' },
  },
};

interface GatewayCase {
  name: string;
  gateway: string;
  /** A fake connecting to `base` (ws://host:port); `parameters` go where the gateway carries them. */
  make(base: string, parameters: Record<string, string>): FakeGateway;
  /** The call's outbound format. */
  outbound: { encoding: 'mulaw' | 's16le'; sampleRate: number };
  /** Custom parameters reach the call (so `flow` can pick a flow). */
  parameters: boolean;
  /** The gateway returns marks; else played_ms comes from the local playout clock. */
  marks: boolean;
  /** DELETE sends a hang-up message (Asterisk `HANGUP`) before the socket closes. */
  hangupMessage: boolean;
  digit: string;
  /** Messages the gateway never sends, each to be dropped while the call goes on. */
  badInput(g: FakeGateway): Array<string | Uint8Array>;
}

const BINARY = new Uint8Array([1, 2, 3]);
/** Bad input for gateways that send only JSON text with an event name and a stream id at `idKey`. */
const jsonOnlyBadInput =
  (idKey: string) =>
  (g: FakeGateway): Array<string | Uint8Array> => [
    '{not json',
    BINARY,
    JSON.stringify({ event: 'no-such-event', [idKey]: g.streamId }),
    JSON.stringify({ event: 'media', [idKey]: g.streamId, media: { payload: '!!not base64!!' } }),
  ];

const CASES: GatewayCase[] = [
  {
    name: 'telnyx (PCMU 8 kHz)',
    gateway: 'telnyx',
    make: (base, p) => new FakeTelnyx(`${base}/media/telnyx`, { customParameters: p }),
    outbound: { encoding: 'mulaw', sampleRate: 8000 },
    parameters: true,
    marks: true,
    hangupMessage: false,
    digit: '1',
    badInput: jsonOnlyBadInput('stream_id'),
  },
  {
    // What `streaming_start`'s custom_parameters are: a [{name, value}] list, not the AsyncAPI's object.
    name: 'telnyx (custom_parameters as a [{name, value}] list)',
    gateway: 'telnyx',
    make: (base, p) =>
      new FakeTelnyx(`${base}/media/telnyx`, { customParameters: p, parametersAsList: true }),
    outbound: { encoding: 'mulaw', sampleRate: 8000 },
    parameters: true,
    marks: true,
    hangupMessage: false,
    digit: '1',
    badInput: jsonOnlyBadInput('stream_id'),
  },
  {
    name: 'plivo (mu-law 8 kHz)',
    gateway: 'plivo',
    make: (base, p) => new FakePlivo(`${base}/media/plivo`, { extraHeaders: p }),
    outbound: { encoding: 'mulaw', sampleRate: 8000 },
    parameters: true,
    marks: true,
    hangupMessage: false,
    digit: '2',
    badInput: jsonOnlyBadInput('streamId'),
  },
  {
    // Plivo's support article names the checkpoint answer `played`; the reference says `playedStream`.
    name: 'plivo (checkpoints answered as played)',
    gateway: 'plivo',
    make: (base, p) => new FakePlivo(`${base}/media/plivo`, { extraHeaders: p, playedEvent: 'played' }),
    outbound: { encoding: 'mulaw', sampleRate: 8000 },
    parameters: true,
    marks: true,
    hangupMessage: false,
    digit: '2',
    badInput: jsonOnlyBadInput('streamId'),
  },
  {
    name: 'vonage (L16 16 kHz)',
    gateway: 'vonage',
    make: (base, p) => new FakeVonage(`${base}/media/vonage`, { rate: 16000, ncco: p }),
    outbound: { encoding: 's16le', sampleRate: 16000 },
    parameters: true,
    marks: true,
    hangupMessage: false,
    digit: '*',
    badInput: () => [
      '{not json',
      'plain text',
      JSON.stringify({ event: 'websocket:no-such-event' }),
      JSON.stringify({ digit: '5' }),
    ],
  },
  {
    name: 'exotel (L16 8 kHz)',
    gateway: 'exotel',
    make: (base, p) => new FakeExotel(`${base}/media/exotel`, { customParameters: p }),
    outbound: { encoding: 's16le', sampleRate: 8000 },
    parameters: true,
    marks: true,
    hangupMessage: false,
    digit: '3',
    badInput: jsonOnlyBadInput('stream_sid'),
  },
  {
    name: 'asterisk 20.16 (ulaw, plain text, no marks)',
    gateway: 'asterisk',
    make: (base) => new FakeAsterisk(`${base}/media/asterisk`, { legacyStart: true, marks: false }),
    outbound: { encoding: 'mulaw', sampleRate: 8000 },
    parameters: false,
    marks: false,
    hangupMessage: true,
    digit: '#',
    badInput: () => ['hello there', 'NO_SUCH_EVENT foo:bar', '{not json'],
  },
  {
    name: 'asterisk (slin16, JSON control, optimal_frame_size 640)',
    gateway: 'asterisk',
    make: (base, p) =>
      new FakeAsterisk(`${base}/media/asterisk`, { format: 'slin16', control: 'json', channelVariables: p }),
    outbound: { encoding: 's16le', sampleRate: 16000 },
    parameters: true,
    marks: true,
    hangupMessage: true,
    digit: '4',
    badInput: () => ['{not json', JSON.stringify({ event: 'NO_SUCH_EVENT' }), 'not a control line'],
  },
  {
    name: 'jambonz (L16 16 kHz)',
    gateway: 'jambonz',
    make: (base, p) => new FakeJambonz(`${base}/media/jambonz`, { sampleRate: 16000, metadata: p }),
    outbound: { encoding: 's16le', sampleRate: 16000 },
    parameters: true,
    marks: true,
    hangupMessage: false,
    digit: '5',
    badInput: (g) => [
      '{not json',
      JSON.stringify({ type: 'no-such-type' }),
      JSON.stringify({}),
      JSON.stringify({ callSid: g.callId, sampleRate: 8000 }),
    ],
  },
];

/** The app every test uses: no default flow (calls are driven by the control API), plus `keys`. */
let main: TestApp;
/** For gateways that cannot pass parameters: `keys` is the default flow. */
let keyed: TestApp;
const fakes = new Set<FakeGateway>();

beforeAll(async () => {
  [main, keyed] = await Promise.all([
    startTestApp({ calls: { defaultFlow: null }, flows: { keys: KEYS_FLOW } }),
    startTestApp({ calls: { defaultFlow: 'keys' }, flows: { keys: KEYS_FLOW } }),
  ]);
});
afterAll(async () => {
  await Promise.all([...fakes].map((g) => g.close()));
  await Promise.all([main?.close(), keyed?.close()]);
});

const wsBase = (app: TestApp): string => app.url.replace('http:', 'ws:');
const callPath = (g: FakeGateway): string => `/calls/${encodeURIComponent(g.callId)}`;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function fake(app: TestApp, c: GatewayCase, parameters: Record<string, string> = {}): FakeGateway {
  const g = c.make(wsBase(app), parameters);
  fakes.add(g);
  return g;
}

/** A fake whose call is active, streaming the caller's silence as a live call does. */
async function connect(
  app: TestApp,
  c: GatewayCase,
  parameters: Record<string, string> = {},
): Promise<FakeGateway> {
  const g = fake(app, c, parameters);
  await g.start();
  await g.until(() => app.app.calls.get(g.callId)?.state.status === 'active', 5000, `the ${c.name} call`);
  g.startCallerAudio();
  return g;
}

async function api(
  app: TestApp,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(`${app.url}${path}`, {
    method,
    ...(body === undefined
      ? {}
      : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, json: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

/** G.711 mu-law to linear (ITU-T G.711), written out here so the check does not lean on our codec. */
function mulawSample(byte: number): number {
  const u = ~byte & 0xff;
  const magnitude = ((((u & 0x0f) << 3) + 0x84) << ((u >> 4) & 0x07)) - 0x84;
  return u & 0x80 ? -magnitude : magnitude;
}

/**
 * How rough the played audio is: mean |x[n] − x[n−1]| over mean |x[n]|. Speech decoded in the right
 * codec and byte order is smooth (well under 1); the wrong codec or byte order is noise (about 1.3).
 */
function roughness(bytes: Uint8Array[], encoding: 'mulaw' | 's16le'): number {
  let previous = 0;
  let diff = 0;
  let level = 0;
  for (const b of bytes) {
    const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
    const count = encoding === 'mulaw' ? b.length : b.length >> 1;
    for (let i = 0; i < count; i++) {
      const x = encoding === 'mulaw' ? mulawSample(b[i]!) : view.getInt16(2 * i, true);
      diff += Math.abs(x - previous);
      level += Math.abs(x);
      previous = x;
    }
  }
  return level === 0 ? Infinity : diff / level;
}

describe.concurrent.each(CASES)('$name', (c) => {
  it('speaks only after the start message, in its framing; played_ms is what it played', async ({
    expect,
  }) => {
    const g = fake(main, c);
    await g.open();
    g.sendAudio(new Uint8Array(640)); // before the start: ignored
    await sleep(100);
    expect(g.received).toEqual([]);
    await g.start();
    await g.until(() => main.app.calls.get(g.callId)?.state.status === 'active', 5000, 'the call');
    const call = main.app.calls.get(g.callId)!;
    expect(call.dropped).toBeGreaterThanOrEqual(1);
    const droppedBeforeSpeaking = call.dropped;
    g.startCallerAudio();
    const said = await api(main, 'POST', `${callPath(g)}/say`, { text: SHORT });
    expect(said.status).toBe(200);
    expect(said.json).toMatchObject({ status: 'played', heard_text: SHORT });
    expect(g.received[0]).toMatchObject({ event: 'media' });
    expect(g.received[0]!.at).toBeGreaterThanOrEqual(g.startedAt);
    expect(g.media().length).toBeGreaterThan(4);
    expect(g.violations).toEqual([]);
    // What it played is speech in the codec it expects.
    const played = g.playout.played.map((f) => f.bytes);
    expect(roughness(played, c.outbound.encoding)).toBeLessThan(0.9);
    const playedMs = said.json['played_ms'] as number;
    expect(playedMs).toBeGreaterThan(1000);
    expect(Math.abs(g.playout.playedMs - playedMs)).toBeLessThanOrEqual(MARK_INTERVAL_MS);
    if (c.marks) {
      expect(g.marksReturned.length).toBeGreaterThan(0);
      expect(g.marksReturned.filter((m) => m.cleared)).toEqual([]);
    } else expect(g.marksReturned).toEqual([]);
    // Everything the gateway sent meanwhile (the caller's audio, its playout acks) was understood.
    expect(call.dropped).toBe(droppedBeforeSpeaking);
    // The caller hangs up: the gateway's stop message, or the socket closes.
    g.stop();
    await g.until(() => main.app.calls.get(g.callId) === undefined, 5000, 'the call to end');
    await g.close();
  });

  it('interrupt mid-utterance: the clear arrives and not one media message follows it', async ({
    expect,
  }) => {
    const g = await connect(main, c);
    const speaking = api(main, 'POST', `${callPath(g)}/say`, { text: LONG });
    await g.until(() => g.playout.positionMs > 1000, 15_000, '1 s played');
    expect((await api(main, 'POST', `${callPath(g)}/interrupt`, {})).json).toMatchObject({
      interrupted: true,
    });
    const { status, played_ms, heard_text } = (await speaking).json;
    expect(status).toBe('interrupted');
    const isClear = (r: { event: string }): boolean => r.event === 'clear';
    await g.until(() => g.received.some(isClear), 2000, 'the clear');
    await sleep(500); // anything of the old utterance would have come by now
    const afterClear = g.received.slice(g.received.findIndex(isClear));
    expect(afterClear.filter(isClear)).toHaveLength(1);
    expect(g.media(g.received.length - afterClear.length + 1)).toEqual([]);
    // What was heard is what had played when the clear arrived, and its text is a prefix.
    expect(Math.abs((played_ms as number) - g.clearedAtMs[0]!)).toBeLessThanOrEqual(MARK_INTERVAL_MS);
    expect(heard_text).toMatch(/^\S/);
    expect(LONG.startsWith(heard_text as string)).toBe(true);
    expect(g.violations).toEqual([]);
    await g.close();
  });

  it(`a key drives the flow: ${c.digit} picks its branch, which speaks, then the flow hangs up`, async ({
    expect,
  }) => {
    const app = c.parameters ? main : keyed;
    const g = await connect(app, c, { flow: 'keys' });
    expect(app.app.calls.get(g.callId)!.flow).toBe('keys');
    const sse = new SseReader(`${app.url}${callPath(g)}/events`);
    await sse.until((e) => e.some((x) => x.event === 'call.state'));
    // The prompt is playing: the key cuts it (the gateway's clear) and picks the branch.
    await g.until(() => g.playout.positionMs > 300, 10_000, 'the prompt');
    const closed = new Promise((r) => g.ws.once('close', r));
    g.dtmf(c.digit);
    await closed;
    await sse.until((e) => e.some((x) => x.event === 'call.ended'));
    sse.close();
    const texts = sse.of('utterance.started').map((u) => (u as { text: string }).text);
    expect(texts.filter((t) => t !== PROMPT)).toEqual([BRANCHES[c.digit]]);
    const finished = sse.of('utterance.finished').map((u) => (u as { result: { status: string } }).result);
    expect(finished.at(-1)?.status).toBe('played');
    expect(sse.of('dtmf')).toMatchObject([{ digit: c.digit }]);
    expect(g.received.some((r) => r.event === 'clear')).toBe(true);
    expect(g.received.some((r) => r.event === 'hangup')).toBe(c.hangupMessage);
    expect(g.violations).toEqual([]);
  });

  it("has the gateway's call id; bad input is dropped and the call goes on; DELETE hangs up", async ({
    expect,
  }) => {
    const g = await connect(main, c, { customer: 'c-42' });
    const list = await api(main, 'GET', '/calls');
    expect((list.json['calls'] as Array<{ id: string }>).map((x) => x.id)).toContain(g.callId);
    const one = await api(main, 'GET', callPath(g));
    expect(one.json).toMatchObject({
      id: g.callId,
      gateway: c.gateway,
      status: 'active',
      stream_id: g.streamId,
      outbound: { encoding: c.outbound.encoding, sample_rate: c.outbound.sampleRate, channels: 1 },
    });
    if (c.parameters) expect(one.json['parameters']).toMatchObject({ customer: 'c-42' });
    const sse = new SseReader(`${main.url}${callPath(g)}/events`);
    await sse.until((e) => e.some((x) => x.event === 'call.state'));
    const call = main.app.calls.get(g.callId)!;
    const before = call.dropped;
    const bad = c.badInput(g);
    for (const m of bad) g.sendRaw(m);
    // A key after the bad input still arrives: the call goes on.
    g.dtmf(c.digit);
    await sse.until((e) => e.some((x) => x.event === 'dtmf'));
    expect(call.dropped - before).toBe(bad.length);
    expect(call.state.status).toBe('active');
    expect(g.ws.readyState).toBe(WebSocket.OPEN);
    const closed = new Promise((r) => g.ws.once('close', r));
    const del = await api(main, 'DELETE', callPath(g));
    expect(del.status).toBe(204);
    await closed;
    expect(g.received.some((r) => r.event === 'hangup')).toBe(c.hangupMessage);
    await sse.until((e) => e.some((x) => x.event === 'call.ended'));
    await sse.done;
    expect((await api(main, 'GET', callPath(g))).status).toBe(404);
    expect(g.violations).toEqual([]);
  });
});

describe('a malformed %-escape in the path token', () => {
  // Generated per run: no secret is written into the repository.
  const TOKEN = randomBytes(12).toString('hex');
  /** Both secrets set: every gateway needs the token, Twilio a signature (or, without one, the token). */
  let locked: TestApp;
  beforeAll(async () => {
    locked = await startTestApp({ calls: { defaultFlow: null } }, undefined, {
      MEDIA_STREAM_TOKEN: TOKEN,
      TWILIO_AUTH_TOKEN: randomBytes(12).toString('hex'),
    });
  });
  afterAll(async () => {
    await locked?.close();
  });

  it('is no token: 401 on every gateway, never a crash, and the next valid connection is a call', async ({
    expect,
  }) => {
    const base = wsBase(locked);
    for (const gateway of ['telnyx', 'plivo', 'vonage', 'exotel', 'asterisk', 'jambonz'])
      expect(await upgradeStatus(`${base}/media/${gateway}/%zz`), gateway).toBe(401);
    // A cut-off escape after the right token; Twilio without a signature, where the token is looked for.
    expect(await upgradeStatus(`${base}/media/telnyx/${TOKEN}%E0%A4%A`)).toBe(401);
    expect(await upgradeStatus(`${base}/media/twilio/%zz`)).toBe(401);
    // A segment that decodes to a wrong token is refused as wrong (403). No refusal made a call.
    expect(await upgradeStatus(`${base}/media/telnyx/wrong%2Dtoken`)).toBe(403);
    expect(locked.app.calls.list()).toEqual([]);
    // The malformed segment is not there at all, so the right token in a header still opens the stream.
    expect(await upgradeStatus(`${base}/media/plivo/%zz`, { Authorization: `Bearer ${TOKEN}` })).toBe(101);
    // The server is still up: a gateway with the token in its path gets a call.
    const g = new FakeTelnyx(`${wsBase(locked)}/media/telnyx/${TOKEN}`);
    fakes.add(g);
    await g.start();
    await g.until(() => locked.app.calls.get(g.callId)?.state.status === 'active', 5000, 'the call');
    expect(g.violations).toEqual([]);
    await g.close();
  });
});

/**
 * The far end each fake stands for, driven by hand from a server that breaks the rules: proof that
 * the zero-violation checks above can fail, and that marks come back by each vendor's rules.
 */
interface RogueCase {
  name: string;
  make(url: string): FakeGateway;
  /** 200 ms of audio, a mark named by `mark`, and a clear, as the gateway takes them. */
  audio: string | Uint8Array;
  mark(name: string): string;
  clear: string;
  /** What the gateway answers to [audio, mark a, clear, mark b]: b is returned at once (nothing buffered). */
  answers: unknown[];
  /** Messages that each break one rule, and the violation each must leave, in order. */
  rogue: Array<string | Uint8Array>;
  violations: RegExp[];
}

const json = (o: unknown): string => JSON.stringify(o);
const b64 = (bytes: number): string => Buffer.alloc(bytes, 0x55).toString('base64');
const twilioFamily = (id: string) => ({
  mark: (name: string) => json({ event: 'mark', ...(id ? { [id]: '<id>' } : {}), mark: { name } }),
  clear: json({ event: 'clear', ...(id ? { [id]: '<id>' } : {}) }),
});

const ROGUE: RogueCase[] = [
  {
    name: 'telnyx',
    make: (url) => new FakeTelnyx(url),
    audio: json({ event: 'media', media: { payload: b64(1600) } }),
    ...twilioFamily(''),
    answers: [
      { event: 'mark', mark: { name: 'a' } },
      { event: 'mark', mark: { name: 'b' } },
    ],
    rogue: [
      json({ event: 'media', media: { payload: b64(80) } }),
      json({ event: 'clear', stream_id: 'someone-else' }),
      new Uint8Array(160),
      json({ event: 'hangup' }),
    ],
    violations: [/10 ms \(Telnyx takes 20 ms to 30 s\)/, /wrong stream_id/, /binary/, /unknown event hangup/],
  },
  {
    name: 'plivo',
    make: (url) => new FakePlivo(url),
    audio: json({
      event: 'playAudio',
      media: { contentType: 'audio/x-mulaw', sampleRate: 8000, payload: b64(1600) },
    }),
    mark: (name) => json({ event: 'checkpoint', streamId: '<id>', name }),
    clear: json({ event: 'clearAudio', streamId: '<id>' }),
    answers: [{ event: 'clearedAudio' }, { event: 'playedStream', name: 'b' }],
    rogue: [
      json({
        event: 'playAudio',
        media: { contentType: 'audio/x-l16', sampleRate: 8000, payload: b64(320) },
      }),
      json({ event: 'checkpoint', name: 'x' }),
      json({ event: 'clear', streamId: '<id>' }),
    ],
    violations: [/playAudio as audio\/x-l16;rate=8000/, /wrong streamId undefined/, /unknown event clear/],
  },
  {
    name: 'vonage',
    make: (url) => new FakeVonage(url, { rate: 16000 }),
    audio: new Uint8Array(640),
    mark: (name) => json({ action: 'notify', payload: { name, turn: 3 } }),
    clear: json({ action: 'clear' }),
    answers: [{ event: 'websocket:cleared' }, { event: 'websocket:notify', payload: { name: 'b', turn: 3 } }],
    rogue: [new Uint8Array(320), json({ action: 'hangup' }), json({ action: 'notify' }), 'clear'],
    violations: [/exactly 640/, /unknown action hangup/, /notify without a payload/, /not a JSON object/],
  },
  {
    name: 'exotel',
    make: (url) => new FakeExotel(url),
    audio: json({ event: 'media', stream_sid: '<id>', media: { payload: b64(3200) } }),
    ...twilioFamily('stream_sid'),
    answers: [
      { event: 'mark', mark: { name: 'a' } },
      { event: 'mark', mark: { name: 'b' } },
    ],
    rogue: [
      json({ event: 'media', stream_sid: '<id>', media: { payload: b64(1600) } }),
      json({ event: 'media', stream_sid: '<id>', media: { payload: b64(3520 + 2) } }),
      json({ event: 'clear' }),
    ],
    violations: [/media of 1600 bytes/, /media of 3522 bytes/, /wrong stream_sid undefined/],
  },
  {
    name: 'asterisk (plain text)',
    make: (url) => new FakeAsterisk(url),
    audio: new Uint8Array(1600),
    mark: (name) => `MARK_MEDIA ${name}`,
    clear: 'FLUSH_MEDIA',
    answers: ['MEDIA_MARK_PROCESSED b'],
    rogue: [
      new Uint8Array(200),
      json({ command: 'FLUSH_MEDIA' }),
      'PLAY_MEDIA',
      `MARK_MEDIA ${'x'.repeat(130)}`,
    ],
    violations: [
      /200 bytes \(not a multiple of optimal_frame_size 160\)/,
      /JSON command/,
      /unknown command/,
      /128/,
    ],
  },
  {
    name: 'asterisk (JSON, slin16)',
    make: (url) => new FakeAsterisk(url, { format: 'slin16', control: 'json' }),
    audio: new Uint8Array(6400),
    mark: (name) => json({ command: 'MARK_MEDIA', correlation_id: name }),
    clear: json({ command: 'FLUSH_MEDIA' }),
    answers: [{ event: 'MEDIA_MARK_PROCESSED', correlation_id: 'b' }],
    rogue: [new Uint8Array(320), 'FLUSH_MEDIA', new Uint8Array(640 * 103)],
    violations: [
      /320 bytes \(not a multiple of optimal_frame_size 640\)/,
      /not a JSON object/,
      /over 65 500/,
    ],
  },
  {
    name: 'jambonz',
    make: (url) => new FakeJambonz(url, { sampleRate: 16000 }),
    audio: new Uint8Array(6400),
    mark: (name) => json({ type: 'mark', data: { name } }),
    clear: json({ type: 'killAudio' }),
    answers: [
      { type: 'mark', data: { name: 'a', event: 'cleared' } },
      { type: 'mark', data: { name: 'b', event: 'playout' } },
    ],
    rogue: [
      new Uint8Array(32_000),
      ...Array.from({ length: 31 }, (_, i) => json({ type: 'mark', data: { name: `r${i}` } })),
      new Uint8Array(3),
      json({ type: 'no-such-type' }),
    ],
    violations: [/more than 30 marks/, /binary of 3 bytes/, /unknown type no-such-type/],
  },
];

describe.concurrent.each(ROGUE)('the fake $name', (r) => {
  it('returns marks by its rules and records every message that breaks them', async ({ expect }) => {
    const server = new WebSocketServer({ port: 0, handleProtocols: (offered) => [...offered][0] ?? false });
    await new Promise((resolve) => server.once('listening', resolve));
    const connected = new Promise<WebSocket>((resolve) => server.once('connection', resolve));
    const g = r.make(`ws://127.0.0.1:${(server.address() as { port: number }).port}/media`);
    fakes.add(g);
    await g.start();
    const socket = await connected;
    const got: unknown[] = [];
    socket.on('message', (data: Buffer, isBinary) => {
      if (isBinary) return;
      const text = data.toString('utf8');
      try {
        got.push(JSON.parse(text));
      } catch {
        got.push(text);
      }
    });
    const send = (m: string | Uint8Array): void =>
      socket.send(typeof m === 'string' ? m.replaceAll('<id>', g.streamId) : m, {
        binary: typeof m !== 'string',
      });
    await g.until(() => g.ws.readyState === WebSocket.OPEN, 2000, 'the socket');
    await new Promise((resolve) => setTimeout(resolve, 20)); // the start message(s) are in
    got.length = 0;
    for (const m of [r.audio, r.mark('a'), r.clear, r.mark('b')]) send(m);
    await g.until(() => got.length >= r.answers.length, 2000, 'the answers');
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(got).toMatchObject(r.answers);
    expect(got).toHaveLength(r.answers.length);
    expect(g.violations).toEqual([]);
    for (const m of r.rogue) send(m);
    await g.until(() => g.violations.length >= r.violations.length, 2000, 'the violations');
    expect(g.violations).toHaveLength(r.violations.length);
    r.violations.forEach((v, i) => expect(g.violations[i]).toMatch(v));
    await g.close();
    await new Promise((resolve) => server.close(resolve));
  });
});
