/**
 * Hardening of the media endpoints against what a peer chooses (issue 14), against the real app with
 * real ws clients and its log captured:
 * - a start naming an absurd sample rate (jambonz 1e9, Vonage rate=1e9) is refused at once with a close
 *   reason, while `/healthz` keeps answering (it used to freeze the process for 90 s);
 * - sockets that never send a start neither keep a real call out nor stay open: they count apart from
 *   `calls.maxCalls`, are capped by `calls.maxPendingSockets` and closed after `calls.startTimeoutMs`;
 * - a second connection claiming a connected call's id is refused, the first keeps the call;
 * - every call event log line carries the gateway's call id and stream id;
 * - custom parameters (start message and URL query) are bounded, with one warning, and the call works.
 */
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { PARAMETER_LIMITS } from '../../src/protocols/parameters.js';
import { startApp, type App } from '../../src/app/app.js';
import { loadConfig } from '../../src/app/config.js';
import { createLogger } from '../../src/app/logger.js';
import { JAMBONZ_SUBPROTOCOL } from '../helpers/gateways/jambonz.js';
import { FakeTwilio } from '../helpers/gateways/twilio.js';

const START_TIMEOUT_MS = 1500;
const MAX_PENDING = 10;
const MAX_CALLS = 3;

let app: App;
let dir: string;
let wsBase: string;
let log = '';

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'voxbridge-hardening-'));
  const out = new PassThrough();
  out.on('data', (d: Buffer) => (log += d.toString()));
  const overlay = join(dir, 'config.json');
  await writeFile(
    overlay,
    JSON.stringify({
      service: { workers: 1 },
      calls: {
        defaultFlow: null,
        maxCalls: MAX_CALLS,
        maxPendingSockets: MAX_PENDING,
        startTimeoutMs: START_TIMEOUT_MS,
      },
    }),
  );
  const loaded = loadConfig({ VOXBRIDGE_CONFIG: overlay, PORT: '0', DATA_DIR: dir, LOG_LEVEL: 'info' });
  app = await startApp(loaded, { logger: createLogger('info', out) });
  wsBase = app.url.replace('http:', 'ws:');
});
afterAll(async () => {
  await app.close();
  await rm(dir, { recursive: true, force: true });
});

function logLines(): Array<Record<string, unknown>> {
  return log
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** The close code and reason the server sent, or a rejection after `timeoutMs`. */
function closed(ws: WebSocket, timeoutMs = 10_000): Promise<{ code: number; reason: string; atMs: number }> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the socket was not closed')), timeoutMs);
    ws.once('close', (code, reason) => {
      clearTimeout(timer);
      resolve({ code, reason: reason.toString(), atMs: performance.now() });
    });
  });
}

async function opened(url: string, protocols: string[] = []): Promise<WebSocket> {
  const ws = new WebSocket(url, protocols);
  ws.on('error', () => undefined);
  await once(ws, 'open');
  return ws;
}

async function say(callId: string, text: string): Promise<Record<string, unknown>> {
  const res = await fetch(`${app.url}/calls/${encodeURIComponent(callId)}/say`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ text }),
  });
  expect(res.status).toBe(200);
  return (await res.json()) as Record<string, unknown>;
}

async function startedTwilio(options: ConstructorParameters<typeof FakeTwilio>[1] = {}, query = '') {
  const g = new FakeTwilio(`${wsBase}/media/twilio${query}`, options);
  await g.start();
  await g.until(() => app.calls.get(g.callSid)?.state.status === 'active', 5000, 'the call to start');
  return g;
}

describe('a start message asking for an absurd format', () => {
  it('jambonz sampleRate 1e9 and Vonage rate=1e9: closed at once with the reason; /healthz keeps answering', async () => {
    let polling = true;
    const healthMs: number[] = [];
    const poll = (async () => {
      while (polling) {
        const started = performance.now();
        const res = await fetch(`${app.url}/healthz`, { signal: AbortSignal.timeout(5000) });
        await res.arrayBuffer();
        healthMs.push(performance.now() - started);
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    try {
      const jambonz = await opened(`${wsBase}/media/jambonz`, [JAMBONZ_SUBPROTOCOL]);
      const sentAt = performance.now();
      const jambonzClosed = closed(jambonz);
      // The flow would greet the caller: speech resampled to 1 GHz, had the start been taken.
      jambonz.send(
        JSON.stringify({ callSid: 'jz-absurd-rate', sampleRate: 1e9, mixType: 'mono', flow: 'default' }),
      );
      const j = await jambonzClosed;
      expect(j.code).toBe(1003);
      expect(j.reason).toMatch(/unsupported sample rate 1000000000 Hz/);
      expect(j.atMs - sentAt).toBeLessThan(1000);

      const vonage = await opened(`${wsBase}/media/vonage`);
      const vonageClosed = closed(vonage);
      vonage.send(
        JSON.stringify({
          event: 'websocket:connected',
          'content-type': 'audio/l16;rate=1e9',
          flow: 'default',
        }),
      );
      const v = await vonageClosed;
      expect(v.code).toBe(1003);
      expect(v.reason).toMatch(/unsupported sample rate/);
      // Let /healthz be asked a few more times after the refusals.
      await new Promise((r) => setTimeout(r, 500));
    } finally {
      polling = false;
      await poll;
    }
    expect(healthMs.length).toBeGreaterThan(3);
    // Generous: a shared 2-core machine; the frozen process took 90 s.
    expect(Math.max(...healthMs)).toBeLessThan(1000);
    const refused = logLines().filter((l) => l['msg'] === 'call refused');
    expect(refused.some((l) => String(l['reason']).includes('unsupported sample rate'))).toBe(true);
    expect(app.calls.list().filter((c) => c.state.status !== 'ended')).toHaveLength(0);
  });
});

describe('sockets that never send a start', () => {
  it('neither keep a real call out nor stay open: closed after startTimeoutMs; past maxPendingSockets, 1013', async () => {
    // More silent sockets than maxCalls: they are not calls yet.
    const silent = await Promise.all(
      Array.from({ length: MAX_PENDING - 2 }, () => opened(`${wsBase}/media/twilio`)),
    );
    const silentClosed = silent.map((ws) => closed(ws, START_TIMEOUT_MS + 10_000));
    const openedAt = performance.now();
    const g = await startedTwilio();

    // Pending sockets are capped apart from calls: fill the cap, then one more is refused. (At once,
    // while the silent ones still wait: a say first took longer than their timeout on a busy machine.)
    const more = await Promise.all([opened(`${wsBase}/media/twilio`), opened(`${wsBase}/media/twilio`)]);
    const extra = new WebSocket(`${wsBase}/media/twilio`);
    extra.on('error', () => undefined);
    const refused = await closed(extra);
    expect(refused.code).toBe(1013);
    expect(refused.reason).toBe('too many connections waiting for a start message');
    expect(await say(g.callSid, 'A real call gets through.')).toMatchObject({ status: 'played' });

    const results = await Promise.all(silentClosed);
    for (const r of results) {
      expect(r.code).toBe(1008);
      expect(r.reason).toBe(`no start message within ${START_TIMEOUT_MS} ms`);
      // Closed after the timeout, and not long after it (generous: a busy shared machine).
      expect(r.atMs - openedAt).toBeGreaterThan(START_TIMEOUT_MS - 300);
      expect(r.atMs - openedAt).toBeLessThan(START_TIMEOUT_MS + 5000);
    }
    await Promise.all(more.map((ws) => closed(ws, START_TIMEOUT_MS + 10_000)));
    // The real call was never touched.
    expect(app.calls.get(g.callSid)?.state.status).toBe('active');
    expect(g.violations).toEqual([]);
    await g.close();
  });
});

describe('a second connection claiming a connected call id', () => {
  it('is refused with 1008 and the reason; the first keeps the call, listed once, and control reaches it', async () => {
    const first = await startedTwilio();
    const second = new FakeTwilio(`${wsBase}/media/twilio`, { callSid: first.callSid });
    const secondClosed = closed(second.ws);
    await second.start();
    const c = await secondClosed;
    expect(c.code).toBe(1008);
    expect(c.reason).toBe(`call id ${first.callSid} is already connected`);

    const res = await fetch(`${app.url}/calls`);
    const { calls } = (await res.json()) as { calls: Array<{ id: string; stream_id: string | null }> };
    const listed = calls.filter((call) => call.id === first.callSid);
    expect(listed).toHaveLength(1);
    expect(listed[0]!.stream_id).toBe(first.streamSid);
    expect(await say(first.callSid, 'Still yours.')).toMatchObject({ status: 'played' });
    expect(first.mediaBytes()).toBeGreaterThan(0);
    expect(second.mediaBytes()).toBe(0);
    await first.close();
  });
});

describe('the log of a call', () => {
  it("carries the gateway's call id and stream id on every call event line, and on the call's own lines", async () => {
    const g = await startedTwilio();
    await say(g.callSid, 'Hello.');
    g.sendRaw('{not json'); // logged by the call: "inbound message dropped"
    await g.close();
    await g.until(() => app.calls.get(g.callSid) === undefined, 5000, 'the call to end');
    await new Promise((r) => setTimeout(r, 100));
    const lines = logLines();
    const mine = lines.filter((l) => l['callId'] === g.callSid);
    const messages = new Set(mine.map((l) => l['msg']));
    for (const msg of ['call.started', 'utterance.started', 'utterance.finished', 'call.ended'])
      expect(messages, msg).toContain(msg);
    expect(messages).toContain('inbound message dropped');
    for (const line of mine) expect(line['streamId'], String(line['msg'])).toBe(g.streamSid);
    // No line about this stream names another call id (the random one a call has before its start).
    for (const line of lines.filter((l) => l['streamId'] === g.streamSid))
      expect(line['callId'], String(line['msg'])).toBe(g.callSid);
  });
});

describe('custom parameters', () => {
  it('are bounded (start message and URL query), with one warning saying how much was dropped; the call works', async () => {
    const customParameters: Record<string, string> = {
      flow: 'none-such-flow-name',
      huge: 'x'.repeat(100_000),
    };
    for (let i = 0; i < 40; i++) customParameters[`p${i}`] = 'v'.repeat(300);
    const query = `?${Array.from({ length: 50 }, (_, i) => `q${i}=${'y'.repeat(200)}`).join('&')}`;
    const before = logLines().length;
    const g = await startedTwilio({ customParameters }, query);
    expect(await say(g.callSid, 'Parameters or not, I speak.')).toMatchObject({ status: 'played' });

    const res = await fetch(`${app.url}/calls/${g.callSid}`);
    const body = await res.text();
    const { parameters } = JSON.parse(body) as { parameters: Record<string, string> };
    const { maxCount, maxNameChars, maxValueChars, maxTotalChars } = PARAMETER_LIMITS;
    expect(Object.keys(parameters).length).toBeLessThanOrEqual(maxCount);
    let total = 0;
    for (const [name, value] of Object.entries(parameters)) {
      expect(name.length).toBeLessThanOrEqual(maxNameChars);
      expect(value.length).toBeLessThanOrEqual(maxValueChars);
      total += name.length + value.length;
    }
    expect(total).toBeLessThanOrEqual(maxTotalChars);
    expect(parameters['flow']).toBe('none-such-flow-name');
    expect(parameters['huge']).toBeUndefined();
    expect(body.length).toBeLessThan(16 * 1024);

    await g.close();
    await new Promise((r) => setTimeout(r, 100));
    const lines = logLines().slice(before);
    const warnings = lines.filter((l) => l['msg'] === 'call parameters over the limits dropped');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ callId: g.callSid });
    expect(warnings[0]!['dropped']).toBeGreaterThan(0);
    expect(warnings[0]!['droppedChars']).toBeGreaterThan(100_000);
    // The log of the whole call stays small: no line carries the dropped values.
    expect(lines.every((l) => JSON.stringify(l).length < 16 * 1024)).toBe(true);
  });
});
