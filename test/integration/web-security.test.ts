/**
 * What a web page the operator visits, or a hostile client, can do to a loopback voxbridge: each case is
 * an attack that worked before (issue 14) and must fail now, next to the legitimate use that must keep
 * working (the browser phone on its own origin, a gateway that sends an Origin but carries a token, a
 * proxy with a configured host name).
 */
import { randomBytes } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SAY_MAX_CHARS } from '../../src/control/say-request.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { FakeTwilio } from '../helpers/gateways/twilio.js';
import { upgradeStatus } from '../helpers/upgrade.js';

let open: TestApp;
let tokens: TestApp;
let proxied: TestApp;
// Generated per run: no secret is written into the repository.
const MEDIA_TOKEN = randomBytes(12).toString('hex');
const CONTROL_TOKEN = randomBytes(12).toString('hex');

// Three apps start at once, each with its speech engine and VAD workers: 14 s on Node 20 beside the
// other test worker, over 30 s once on Node 24 (CI, 35e546a). The same allowance as other files that
// start several apps.
beforeAll(async () => {
  [open, tokens, proxied] = await Promise.all([
    startTestApp({ calls: { defaultFlow: null } }),
    startTestApp({ calls: { defaultFlow: null } }, undefined, {
      MEDIA_STREAM_TOKEN: MEDIA_TOKEN,
      CONTROL_TOKEN,
    }),
    startTestApp({ calls: { defaultFlow: null } }, undefined, {
      ALLOWED_HOSTS: 'voice.example.com, .corp.example',
    }),
  ]);
}, 60_000);
afterAll(async () => {
  await Promise.all([open?.close(), tokens?.close(), proxied?.close()]);
});

interface Answer {
  status: number;
  body: string;
}

/** A request with exactly these headers (fetch cannot set Host or Origin). */
function send(
  base: string,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<Answer> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request({ hostname, port, path, method, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** A live Twilio call on `app`, started by a fake gateway. */
async function liveCall(app: TestApp, path = '/media/twilio'): Promise<FakeTwilio> {
  const g = new FakeTwilio(`${app.url.replace('http', 'ws')}${path}`);
  await g.start();
  await g.until(() => app.app.calls.get(g.callId)?.state.status === 'active', 5000, 'the call');
  return g;
}

describe('DNS rebinding: only our own Host names are answered', () => {
  it('refuses a foreign Host on every route, the control API and events included', async () => {
    const g = await liveCall(open);
    try {
      for (const path of [
        '/calls',
        `/calls/${g.callId}`,
        `/calls/${g.callId}/events`,
        '/phone/voices',
        '/',
      ]) {
        const r = await send(open.url, 'GET', path, { host: 'evil.example:8080' });
        expect(r.status, path).toBe(403);
        expect(r.body).toContain('server.allowedHosts');
      }
      // The WebSocket endpoint too: a rebound page cannot start calls.
      const port = new URL(open.url).port;
      expect(
        await upgradeStatus(`ws://127.0.0.1:${port}/media/twilio`, { host: `evil.example:${port}` }),
      ).toBe(403);
    } finally {
      await g.close();
    }
  });

  it('answers loopback names and IP literals, and the configured names (exact and .domain)', async () => {
    for (const host of ['127.0.0.1:1', 'localhost:8080', 'app.localhost', '[::1]:8080', '10.1.2.3'])
      expect((await send(open.url, 'GET', '/calls', { host })).status, host).toBe(200);
    expect((await send(open.url, 'GET', '/calls', { host: 'voice.example.com' })).status).toBe(403);
    for (const host of ['voice.example.com', 'VOICE.example.com:443', 'corp.example', 'a.b.corp.example'])
      expect((await send(proxied.url, 'GET', '/calls', { host })).status, host).toBe(200);
    expect((await send(proxied.url, 'GET', '/calls', { host: 'evilcorp.example' })).status).toBe(403);
  });
});

describe('cross-site requests', () => {
  it("refuses a page's no-cors text/plain say: 415, and the call says nothing", async () => {
    const g = await liveCall(open);
    try {
      const said: unknown[] = [];
      open.app.calls.get(g.callId)!.on('event', (e) => {
        if (e.type === 'utterance.started') said.push(e);
      });
      const body = JSON.stringify({ text: 'Transfer all the money.' });
      // What fetch(…, {mode: 'no-cors', headers: {'Content-Type': 'text/plain'}}) sends.
      const plain = await send(
        open.url,
        'POST',
        `/calls/${g.callId}/say`,
        { 'content-type': 'text/plain;charset=UTF-8' },
        body,
      );
      expect(plain.status).toBe(415);
      // A form post, or the same with a foreign Origin and the right type (which a page cannot send
      // without a preflight, but a non-browser client spoofing one is refused the same).
      const foreign = await send(
        open.url,
        'POST',
        `/calls/${g.callId}/say`,
        { 'content-type': 'application/json', origin: 'https://evil.example' },
        body,
      );
      expect(foreign.status).toBe(403);
      expect(foreign.body).toContain('cross-site POST refused');
      const nullOrigin = await send(open.url, 'DELETE', `/calls/${g.callId}`, { origin: 'null' });
      expect(nullOrigin.status).toBe(403);
      expect(said).toEqual([]);
      expect(open.app.calls.get(g.callId)?.state.status).toBe('active');

      // The browser phone's own page (same origin) still speaks.
      const own = await send(
        open.url,
        'POST',
        `/calls/${g.callId}/say`,
        { 'content-type': 'application/json; charset=utf-8', origin: open.url },
        JSON.stringify({ text: 'Hello.', wait: false }),
      );
      expect(own.status).toBe(202);
      expect(said).toHaveLength(1);
    } finally {
      await g.close();
    }
  });

  it('refuses a WebSocket from a foreign origin without a token; the own origin and tokens pass', async () => {
    const ws = (app: TestApp, path = '/media/twilio'): string => `${app.url.replace('http', 'ws')}${path}`;
    expect(await upgradeStatus(ws(open), { origin: 'https://evil.example' })).toBe(403);
    expect(await upgradeStatus(ws(open), { origin: 'null' })).toBe(403);
    // The browser phone (same origin) and gateways that send no Origin.
    expect(await upgradeStatus(ws(open), { origin: open.url })).toBe(101);
    expect(await upgradeStatus(ws(open), {})).toBe(101);
    // A gateway that sends an Origin of its own works once it carries the token.
    expect(
      await upgradeStatus(ws(tokens, `/media/twilio/${MEDIA_TOKEN}`), { origin: 'https://gw.example' }),
    ).toBe(101);
    expect(await upgradeStatus(ws(tokens), { origin: 'https://gw.example' })).toBe(401);
    // Behind a proxy that rewrites Host to the loopback address, the page's origin is a configured name.
    expect(await upgradeStatus(ws(proxied), { origin: 'https://voice.example.com' })).toBe(101);
    expect(await upgradeStatus(ws(proxied), { origin: 'https://evil.example' })).toBe(403);
  });

  it('keeps the control API working for an app that sends JSON with its token', async () => {
    const g = await liveCall(tokens, `/media/twilio/${MEDIA_TOKEN}`);
    try {
      const r = await send(
        tokens.url,
        'POST',
        `/calls/${g.callId}/say`,
        { 'content-type': 'application/json', authorization: `Bearer ${CONTROL_TOKEN}` },
        JSON.stringify({ text: 'Hi.', wait: false }),
      );
      expect(r.status).toBe(202);
    } finally {
      await g.close();
    }
  });
});

describe('malformed input on the control APIs', () => {
  it('answers 400, not 500, for a malformed %-escape in a call or guild id', async () => {
    for (const path of ['/calls/%zz', '/calls/%E0%A4%A/say', '/discord/guilds/%zz']) {
      const r = await send(open.url, 'GET', path);
      expect(r.status, path).toBe(400);
      expect(r.body).toContain('percent-encoding');
    }
  });

  it('takes a say as long as the schema allows, refuses longer with 400 (never 413), and blank text', async () => {
    const g = await liveCall(open);
    try {
      const path = `/calls/${g.callId}/say`;
      const json = { 'content-type': 'application/json' };
      const word = 'word ';
      const longest = word.repeat(SAY_MAX_CHARS / word.length);
      expect(longest.length).toBe(SAY_MAX_CHARS);
      const ok = await send(open.url, 'POST', path, json, JSON.stringify({ text: longest, wait: false }));
      expect(ok.status).toBe(202);
      // Escaped as \uXXXX, the longest text is six times its length in bytes: still taken.
      const escaped = JSON.stringify({ text: 'é'.repeat(SAY_MAX_CHARS), wait: false }).replace(
        /é/g,
        '\\u00e9',
      );
      const ok2 = await send(open.url, 'POST', path, json, escaped);
      expect(ok2.status).toBe(202);
      const over = await send(open.url, 'POST', path, json, JSON.stringify({ text: `${longest}x` }));
      expect(over.status).toBe(400);
      expect(JSON.parse(over.body)).toMatchObject({ param: 'text' });
      const blank = await send(open.url, 'POST', path, json, JSON.stringify({ text: ' \n\t ' }));
      expect(blank.status).toBe(400);
    } finally {
      await g.close();
    }
  });
});

describe('event-stream subscribers that do not read', () => {
  it('are dropped once they fall 1 MiB behind, and the call goes on', async () => {
    const g = await liveCall(open);
    const { port } = new URL(open.url);
    const socket: Socket = connect(Number(port), '127.0.0.1');
    await new Promise((r) => socket.once('connect', r));
    socket.write(`GET /calls/${g.callId}/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
    // Never read: the kernel's buffers fill, then the server's.
    socket.pause();
    let closed = false;
    socket.once('close', () => (closed = true));
    try {
      const text = `${'blah '.repeat(12_000)}.`; // 60 KB, as in the finding
      const json = { 'content-type': 'application/json' };
      const call = open.app.calls.get(g.callId)!;
      for (let i = 0; i < 300; i++) {
        const r = await send(
          open.url,
          'POST',
          `/calls/${g.callId}/say`,
          json,
          JSON.stringify({ text, wait: false }),
        );
        expect(r.status).toBe(202);
        // Cut at once, so the call's queue (bounded) never fills: each say is one more event of 60 KB.
        expect((await send(open.url, 'POST', `/calls/${g.callId}/interrupt`, json, '{}')).status).toBe(200);
      }
      // The server gave up on the subscriber: its socket is ended, and destroyed when it still does not read.
      await g.until(() => closed || socket.readableLength > 0 || socket.destroyed, 10_000, 'the drop');
      await new Promise((r) => setTimeout(r, 6000));
      socket.resume();
      let received = '';
      socket.on('data', (c: Buffer) => (received = (received + c.toString('latin1')).slice(-4096)));
      await g.until(() => closed, 10_000, 'the subscriber to be closed');
      // Whatever it got ends with the overflow notice, or it was cut before even that arrived.
      if (received.includes('stream.overflow')) expect(received).toMatch(/event: stream\.overflow/);
      expect(call.state.status).toBe('active');
      expect(call.listenerCount('event')).toBeLessThanOrEqual(2);
    } finally {
      socket.destroy();
      await g.close();
    }
  }, 60_000);
});

describe('slow and silent connections', () => {
  let tight: TestApp;
  beforeAll(async () => {
    tight = await startTestApp({
      server: { maxConnections: 16, headersTimeoutMs: 1000, requestTimeoutMs: 2000 },
      calls: { defaultFlow: null },
    });
  });
  afterAll(async () => {
    await tight?.close();
  });

  it('refuses connections past the cap with 503, and frees slots held by silent clients', async () => {
    const { port } = new URL(tight.url);
    const silent: Socket[] = [];
    for (let i = 0; i < 16; i++) {
      const s = connect(Number(port), '127.0.0.1');
      s.on('error', () => undefined);
      // Connected, or refused and closed at once (a loaded machine): either way it takes no slot now.
      await new Promise((r) => {
        s.once('connect', r);
        s.once('close', r);
      });
      silent.push(s);
    }
    await new Promise((r) => setTimeout(r, 100));
    // Past the cap: a clear refusal, not a hang or a reset.
    const refused = await send(tight.url, 'GET', '/healthz');
    expect(refused.status).toBe(503);
    expect(refused.body).toContain('too many connections');
    expect(tight.app.connections.refused).toBeGreaterThan(0);
    // The silent ones never send headers: they are closed within the header timeout.
    await Promise.all(silent.map((s) => new Promise((r) => (s.destroyed ? r(null) : s.once('close', r)))));
    expect((await send(tight.url, 'GET', '/healthz')).status).toBe(200);
  }, 20_000);

  it('closes a client that sends its headers a byte at a time (slow loris)', async () => {
    const { port } = new URL(tight.url);
    const s = connect(Number(port), '127.0.0.1');
    s.on('error', () => undefined);
    await new Promise((r) => s.once('connect', r));
    const closed = new Promise((r) => s.once('close', r));
    const started = performance.now();
    const head = 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ';
    let i = 0;
    const drip = setInterval(() => {
      if (!s.destroyed) s.write(head[i++ % head.length]!);
    }, 100);
    try {
      await closed;
      // headersTimeoutMs is 1 s: generous bound for the sweep and a loaded machine.
      expect(performance.now() - started).toBeLessThan(8000);
    } finally {
      clearInterval(drip);
      s.destroy();
    }
  }, 20_000);
});
