// Over 450 lines: one cluster (Redis, three instances, an attacker) set up once for every trust scenario.
/**
 * What an instance trusts of its registry, on a real Redis with real instances (`npm start`'s process)
 * and an attacker's HTTP server on loopback: anyone with write access to Redis can add an instance
 * entry pointing anywhere. Such an entry must never receive a credential, nor anything it could replay
 * to a real instance; its answers are cut at their bound (the instance's memory stays flat); thousands of
 * entries, or a huge one, cost a bounded amount of work. A tokenless loopback cluster keeps working,
 * trusting only loopback entries.
 */
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer, request as httpRequest, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createClient } from '@redis/client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CLUSTER_HEADER, sha256, signRequest, type SignedRequest } from '../../src/cluster/signature.js';
import { startInstance, type Instance } from '../../testkit/instance.js';
import { TestRedis } from '../../testkit/redis.js';
import { FakeTwilio } from '../helpers/gateways/twilio.js';

const CONTROL_TOKEN = randomBytes(18).toString('base64url');
const CLUSTER_TOKEN = randomBytes(18).toString('base64url');
const AUTH = { authorization: `Bearer ${CONTROL_TOKEN}` };
const PREFIX = 'voxbridge:';
const TOKENLESS_PREFIX = 'tokenless:';
const MiB = 1024 * 1024;
const HEARTBEAT_MS = 250;

interface Received {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** An HTTP server on loopback that an instance entry points at: it records what it gets. */
class Attacker {
  readonly received: Received[] = [];
  /** Bytes it managed to send on its large or endless answers. */
  sent = 0;

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(): Promise<Attacker> {
    const ref: { self?: Attacker } = {};
    const server = createServer((req, res) => {
      void (async () => {
        const parts: Buffer[] = [];
        for await (const chunk of req) parts.push(chunk as Buffer);
        ref.self!.received.push({
          method: req.method ?? '',
          url: req.url ?? '',
          headers: req.headers,
          body: Buffer.concat(parts).toString('utf8'),
        });
        await ref.self!.answer(req.url ?? '', res);
      })().catch(() => res.destroy());
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    ref.self = new Attacker(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    return ref.self;
  }

  private async flood(res: import('node:http').ServerResponse, total: number, chunk: Buffer): Promise<void> {
    while (this.sent < total && !res.destroyed) {
      this.sent += chunk.length;
      if (!res.write(chunk))
        await new Promise<void>((resolve) => {
          const go = (): void => {
            res.off('drain', go).off('close', go);
            resolve();
          };
          res.on('drain', go).on('close', go);
        });
    }
    res.end();
  }

  private async answer(url: string, res: import('node:http').ServerResponse): Promise<void> {
    const path = url.split('?')[0]!;
    if (path === '/calls') {
      res.writeHead(200, { 'content-type': 'application/json', 'set-cookie': 'stolen=1' });
      res.end(JSON.stringify({ calls: [{ id: 'CA-attacker-listed', status: 'active' }] }));
    } else if (path === '/calls/CA-huge') {
      res.writeHead(200, { 'content-type': 'application/json' });
      await this.flood(res, 50 * MiB, Buffer.alloc(64 * 1024, 0x20));
    } else if (path === '/calls/CA-huge-declared') {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(50 * MiB) });
      await this.flood(res, 50 * MiB, Buffer.alloc(64 * 1024, 0x20));
    } else if (path === '/calls/CA-events/events') {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      await this.flood(res, 1024 * MiB, Buffer.from(`data: ${'x'.repeat(64 * 1024)}\n\n`));
    } else if (path === '/calls/CA-slow') {
      res.writeHead(200, { 'content-type': 'application/json' });
      while (!res.destroyed) {
        res.write(' ');
        await new Promise((r) => setTimeout(r, 100));
      }
    } else if (path === '/calls/CA-silent') {
      await once(res, 'close'); // never answers
    } else {
      res.writeHead(200, { 'content-type': 'application/json', 'set-cookie': 'stolen=1' });
      res.end(JSON.stringify({ id: path.split('/')[2] ?? null, from: 'attacker' }));
    }
  }

  /** What it received for `path`. */
  of(path: string): Received[] {
    return this.received.filter((r) => r.url.split('?')[0] === path);
  }

  reset(): void {
    this.received.length = 0;
    this.sent = 0;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}

let redis: TestRedis;
let store: ReturnType<typeof createClient>;
let attacker: Attacker;
/** Real instances: a and b share the cluster token; t runs with no token at all. */
let a: Instance;
let b: Instance;
let t: Instance;
const fakes: Array<{ prefix: string; id: string; holdings: string[] }> = [];

/** An instance entry written straight into Redis, holding `holdings`: what an attacker can do. */
async function fake(
  id: string,
  url: string,
  holdings: string[] = [],
  options: { prefix?: string; entry?: string } = {},
): Promise<void> {
  const prefix = options.prefix ?? PREFIX;
  const entry = options.entry ?? JSON.stringify({ id, url, started_at: new Date().toISOString() });
  const multi = store.multi().set(`${prefix}instance:${id}`, entry).sAdd(`${prefix}instances`, id);
  for (const h of holdings) multi.hSet(`${prefix}calls`, h, id);
  await multi.exec();
  fakes.push({ prefix, id, holdings });
}

async function json(
  url: string,
  init: RequestInit = {},
): Promise<{ status: number; body: Record<string, unknown>; instance: string | null; headers: Headers }> {
  const res = await fetch(url, {
    ...init,
    headers: { ...AUTH, ...(init.headers as Record<string, string>) },
  });
  const text = await res.text();
  return {
    status: res.status,
    body: text ? (JSON.parse(text) as Record<string, unknown>) : {},
    instance: res.headers.get('x-voxbridge-instance'),
    headers: res.headers,
  };
}

/** Resident memory of an instance's process, in bytes. */
function rss(instance: Instance): number {
  const kb = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${instance.child.pid}/status`, 'utf8'))![1]!;
  return Number(kb) * 1024;
}

/**
 * Runs `work` while sampling `instance`'s RSS; the largest growth seen over what it was before. It waits
 * first for the RSS to settle (a process that just started grows by itself for a few seconds).
 */
async function peakGrowth<T>(
  instance: Instance,
  work: () => Promise<T>,
): Promise<{ value: T; grew: number }> {
  await until(
    async () => {
      const r0 = rss(instance);
      await new Promise((r) => setTimeout(r, 300));
      return Math.abs(rss(instance) - r0) < 2 * MiB;
    },
    15_000,
    'the RSS to settle',
  );
  const before = rss(instance);
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, rss(instance))), 20);
  try {
    const value = await work();
    peak = Math.max(peak, rss(instance));
    return { value, grew: peak - before };
  } finally {
    clearInterval(sampler);
  }
}

/** A request signed as instance code signs it, sent raw (the test knows the cluster token). */
async function signed(
  to: Instance,
  request: Omit<SignedRequest, 'bodySha256' | 'contentType'> & { body?: string; signedBody?: string },
  options: { token?: string; now?: number; header?: string } = {},
): Promise<{ status: number; body: Record<string, unknown>; header: string }> {
  const contentType = request.body === undefined ? undefined : 'application/json';
  const header =
    options.header ??
    signRequest(
      {
        ...request,
        contentType,
        bodySha256: sha256(request.signedBody ?? request.body ?? ''),
      },
      options.token ?? CLUSTER_TOKEN,
      options.now,
    );
  const res = await fetch(`${to.url}${request.pathAndQuery}`, {
    method: request.method,
    headers: { [CLUSTER_HEADER]: header, ...(contentType ? { 'content-type': contentType } : {}) },
    ...(request.body === undefined ? {} : { body: request.body }),
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {}, header };
}

async function until(
  probe: () => boolean | Promise<boolean>,
  timeoutMs: number,
  what: string,
): Promise<void> {
  const t0 = Date.now();
  while (!(await probe())) {
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

function logLines(instance: Instance, msg: string): Array<Record<string, unknown>> {
  return instance
    .output()
    .split('\n')
    .filter((l) => l.includes(msg))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

beforeAll(async () => {
  redis = await TestRedis.start();
  store = createClient({ url: redis.url });
  await store.connect();
  attacker = await Attacker.start();
  // No speech service: nothing here speaks (a say is accepted with wait: false, then fails unheard).
  // One VAD worker per instance (not one per core): each costs about 2 s of CPU to load and warm up.
  const common = {
    REDIS_URL: redis.url,
    SPEECH_BASE_URL: 'http://127.0.0.1:9',
    SPEECH_API_KEY: 'k',
    VAD_WORKERS: '1',
  };
  const overlay = (prefix: string) => ({
    calls: { defaultFlow: null },
    server: { shutdownGraceMs: 0 },
    cluster: { keyPrefix: prefix, heartbeatMs: HEARTBEAT_MS, ttlMs: 1000, answerTimeoutMs: 1000 },
  });
  [a, b, t] = await Promise.all([
    startInstance('a', { ...common, CONTROL_TOKEN, CLUSTER_TOKEN }, overlay(PREFIX)),
    startInstance('b', { ...common, CONTROL_TOKEN, CLUSTER_TOKEN }, overlay(PREFIX)),
    startInstance('t', common, overlay(TOKENLESS_PREFIX)),
  ]);
  await until(
    async () => ((await json(`${a.url}/healthz`)).body['cluster'] as { instances: number }).instances === 2,
    10_000,
    'a to see b',
  );
}, 60_000);

afterEach(async () => {
  for (const { prefix, id, holdings } of fakes.splice(0)) {
    const multi = store.multi().del(`${prefix}instance:${id}`).sRem(`${prefix}instances`, id);
    if (holdings.length) multi.hDel(`${prefix}calls`, holdings);
    await multi.exec();
  }
  attacker.reset();
});

afterAll(async () => {
  await Promise.all([a, b, t].map((i) => i?.kill('SIGKILL')));
  await attacker?.close();
  await store?.quit();
  await redis?.stop();
});

describe('an instance entry pointing at an attacker', () => {
  it('never receives the client’s credentials nor the cluster token, and nothing it can replay', async () => {
    await fake('evil', attacker.url, ['CA-evil']);
    const cookie = {
      cookie: 'session=client-cookie-secret',
      'proxy-authorization': `Basic ${CONTROL_TOKEN}`,
    };
    const described = await json(`${a.url}/calls/CA-evil`, { headers: cookie });
    expect(described).toMatchObject({ status: 200, instance: 'evil' });
    // What the owner answers is relayed, not its attempts at setting state in a browser.
    expect(described.headers.get('set-cookie')).toBeNull();
    const said = await json(`${a.url}/calls/CA-evil/say`, {
      method: 'POST',
      headers: { ...cookie, 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'hello', wait: false }),
    });
    expect(said.status).toBe(200);
    // A text streamed as it arrives (curl -T -), chunked.
    await new Promise<void>((resolve, reject) => {
      const req = httpRequest(`${a.url}/calls/CA-evil/say?wait=false`, {
        method: 'PUT',
        headers: { ...AUTH, ...cookie, 'content-type': 'text/plain' },
      });
      req.on('response', (res) => {
        res.resume();
        res.on('end', resolve);
      });
      req.on('error', reject);
      req.write('streamed ');
      setTimeout(() => req.end('text'), 50);
    });
    expect((await json(`${a.url}/calls/CA-evil`, { method: 'DELETE', headers: cookie })).status).toBe(200);
    const list = await json(`${a.url}/calls`, { headers: cookie });
    expect(list.body['calls']).toEqual(
      expect.arrayContaining([{ id: 'CA-attacker-listed', status: 'active', instance: 'evil' }]),
    );

    const got = attacker.received;
    expect(got.map((r) => `${r.method} ${r.url}`)).toEqual(
      expect.arrayContaining([
        'GET /calls/CA-evil',
        'POST /calls/CA-evil/say',
        'PUT /calls/CA-evil/say?wait=false',
        'DELETE /calls/CA-evil',
        'GET /calls',
      ]),
    );
    expect(got.find((r) => r.method === 'PUT')?.body).toBe('streamed text');
    for (const r of got) {
      expect(r.headers['authorization']).toBeUndefined();
      expect(r.headers['cookie']).toBeUndefined();
      expect(r.headers['proxy-authorization']).toBeUndefined();
      const everything = JSON.stringify(r);
      expect(everything).not.toContain(CONTROL_TOKEN);
      expect(everything).not.toContain(CLUSTER_TOKEN);
      expect(everything).not.toContain('client-cookie-secret');
      expect(r.headers[CLUSTER_HEADER]).toMatch(
        /^v1;i=evil;t=\d+;n=[\w-]{22};b=([\w-]{43}|unsigned);a=1;s=[\w-]{43}$/,
      );
    }

    // Replayed at once to the real instances, each captured request is refused: it was signed for "evil".
    for (const r of got.filter((x) => x.method === 'GET')) {
      for (const to of [a, b]) {
        const res = await fetch(`${to.url}${r.url}`, {
          headers: { [CLUSTER_HEADER]: String(r.headers[CLUSTER_HEADER]) },
        });
        expect(res.status).toBe(401);
        expect(await res.json()).toMatchObject({
          error: 'cluster_signature_invalid',
          reason: 'wrong_instance',
        });
      }
    }
  });

  it('gets no request whose target names another host (`GET //host/calls/…`): only its own URL is used', async () => {
    const elsewhere = await Attacker.start();
    try {
      await fake('evil', attacker.url, ['CA-evil']);
      const target = `//${new URL(elsewhere.url).host}/calls/CA-evil`;
      const status = await new Promise<number>((resolve, reject) => {
        const req = httpRequest({
          host: '127.0.0.1',
          port: new URL(a.url).port,
          path: target,
          headers: AUTH,
        });
        req.on('response', (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on('error', reject);
        req.end();
      });
      expect(status).toBe(200);
      expect(elsewhere.received).toEqual([]);
      expect(attacker.of('/calls/CA-evil')).toHaveLength(1);
    } finally {
      await elsewhere.close();
    }
  });

  it('has its huge answers cut with a coded error, the instance’s memory flat', async () => {
    await fake('evil', attacker.url, ['CA-huge', 'CA-huge-declared', 'CA-events', 'CA-slow', 'CA-silent']);
    // 50 MB as fast as loopback carries it, no length declared: cut at cluster.maxAnswerBytes (4 MiB).
    const { value: huge, grew } = await peakGrowth(a, () => json(`${a.url}/calls/CA-huge`));
    expect(huge.status).toBe(502);
    expect(huge.body).toMatchObject({ error: 'owner_answer_too_large', instance: 'evil' });
    expect(grew).toBeLessThan(100 * MiB);
    expect(attacker.sent).toBeLessThan(30 * MiB);

    // Declared larger than the bound: refused unread.
    attacker.reset();
    const declared = await json(`${a.url}/calls/CA-huge-declared`);
    expect(declared.body).toMatchObject({ error: 'owner_answer_too_large' });
    expect(attacker.sent).toBeLessThan(30 * MiB);

    // An endless event stream to a client that reads nothing: backpressure, not buffering.
    attacker.reset();
    const { grew: streamGrew } = await peakGrowth(a, async () => {
      const req = httpRequest(`${a.url}/calls/CA-events/events`, { headers: AUTH });
      const res = await new Promise<import('node:http').IncomingMessage>((resolve, reject) => {
        req.on('response', resolve);
        req.on('error', reject);
        req.end();
      });
      expect(res.headers['content-type']).toBe('text/event-stream');
      res.pause();
      await new Promise((r) => setTimeout(r, 2000));
      req.destroy();
    });
    expect(attacker.sent).toBeLessThan(64 * MiB);
    expect(streamGrew).toBeLessThan(100 * MiB);

    // Too slow: headers that never come, a body that never ends (cluster.answerTimeoutMs: 1 s).
    for (const [id, within] of [
      ['CA-silent', 3000],
      ['CA-slow', 3000],
    ] as const) {
      const t0 = Date.now();
      const slow = await json(`${a.url}/calls/${id}`);
      expect(slow.status).toBe(504);
      expect(slow.body).toMatchObject({ error: 'owner_timeout', instance: 'evil' });
      expect(Date.now() - t0).toBeLessThan(within);
    }
    // The instance is fine.
    expect((await json(`${a.url}/calls`)).status).toBe(200);
    const metrics = await (await fetch(`${a.url}/metrics`, { headers: AUTH })).text();
    expect(metrics).toMatch(/^voxbridge_cluster_forwarded_total\{outcome="refused"\} [1-9]/m);
  }, 30_000);
});

describe('signed requests between instances', () => {
  it('are refused outside their window, twice, forged, or in the old clear-token form', async () => {
    const list = { method: 'GET', pathAndQuery: '/calls', target: 'b', bearer: true };
    const fresh = await signed(b, list);
    expect(fresh.status).toBe(200);
    expect(fresh.body).toHaveProperty('calls');
    // The same request again, within the window.
    expect((await signed(b, list, { header: fresh.header })).body).toMatchObject({ reason: 'replayed' });
    // Captured and replayed later: outside the 30 s window (either way).
    for (const skew of [-31_000, 31_000])
      expect((await signed(b, list, { now: Date.now() + skew })).body).toMatchObject({ reason: 'stale' });
    // Signed for another instance, with another token, or for another path.
    expect((await signed(b, { ...list, target: 'a' })).body).toMatchObject({ reason: 'wrong_instance' });
    expect((await signed(b, list, { token: 'not-the-token' })).body).toMatchObject({
      reason: 'bad_signature',
    });
    const other = signRequest({ ...list, contentType: undefined, bodySha256: sha256('') }, CLUSTER_TOKEN);
    expect((await signed(b, { ...list, pathAndQuery: '/calls/CA1' }, { header: other })).body).toMatchObject({
      reason: 'bad_signature',
    });
    // What instances sent before: the token itself.
    const clear = await fetch(`${b.url}/calls`, { headers: { [CLUSTER_HEADER]: CLUSTER_TOKEN } });
    expect(clear.status).toBe(401);
    expect(await clear.json()).toMatchObject({ reason: 'malformed' });
  });

  it('carry a JSON body that must be the one signed, and forward a real call between two instances', async () => {
    const g = new FakeTwilio(`${b.url.replace('http:', 'ws:')}/media/twilio`);
    await g.start();
    try {
      await until(
        async () => (await json(`${a.url}/calls/${g.callSid}`)).instance === 'b',
        5000,
        'a to find the call on b',
      );
      const say = { method: 'POST', pathAndQuery: `/calls/${g.callSid}/say`, target: 'b', bearer: true };
      const swapped = await signed(b, {
        ...say,
        signedBody: JSON.stringify({ text: 'what was signed', wait: false }),
        body: JSON.stringify({ text: 'what was sent instead', wait: false }),
      });
      expect(swapped).toMatchObject({ status: 400, body: { code: 'body_digest_mismatch' } });
      const same = await signed(b, { ...say, body: JSON.stringify({ text: 'Signed.', wait: false }) });
      expect(same.status).toBe(202);
      // Through a: the client's token checked there, the request signed to b.
      const via = await json(`${a.url}/calls/${g.callSid}/say`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ text: 'Through a.', wait: false }),
      });
      expect(via).toMatchObject({ status: 202, instance: 'b' });
      const listed = await json(`${a.url}/calls`);
      expect(listed.body['calls']).toEqual([expect.objectContaining({ id: g.callSid, instance: 'b' })]);
      // Without the client's token, a refuses before anything is forwarded.
      expect((await fetch(`${a.url}/calls/${g.callSid}`)).status).toBe(401);
    } finally {
      await g.close();
    }
  });
});

describe('the registry, bounded', () => {
  it('asks at most cluster.maxInstances (256) instances for a list, with 5000 registered', async () => {
    const ids = Array.from({ length: 5000 }, (_, i) => `flood-${i}`);
    for (let i = 0; i < ids.length; i += 500) {
      const multi = store.multi();
      for (const id of ids.slice(i, i + 500))
        multi
          .set(`${PREFIX}instance:${id}`, JSON.stringify({ id, url: attacker.url }))
          .sAdd(`${PREFIX}instances`, id);
      await multi.exec();
    }
    fakes.push(...ids.map((id) => ({ prefix: PREFIX, id, holdings: [] })));
    const t0 = Date.now();
    const list = await json(`${a.url}/calls`);
    const ms = Date.now() - t0;
    expect(list.status).toBe(200);
    expect(attacker.of('/calls').length).toBeGreaterThan(0);
    expect(attacker.of('/calls').length).toBeLessThanOrEqual(256);
    expect((list.body['cluster'] as { instances: number }).instances).toBeLessThanOrEqual(257);
    expect(ms).toBeLessThan(5000);
    // Said once, not on every heartbeat.
    const overflow = (): number => logLines(a, 'more instances registered than cluster.maxInstances').length;
    await until(() => overflow() > 0, 2000, 'the warning');
    await new Promise((r) => setTimeout(r, 4 * HEARTBEAT_MS));
    expect(overflow()).toBe(1);
  }, 30_000);

  it('skips a 5 MB entry without reading it, logs it once, and still uses a valid neighbour', async () => {
    const pad = 'x'.repeat(5 * MiB);
    await fake('big', attacker.url, ['CA-big'], {
      entry: JSON.stringify({ id: 'big', url: attacker.url, pad }),
    });
    await fake('good', attacker.url, ['CA-good']);
    // Several heartbeats of every instance.
    await new Promise((r) => setTimeout(r, 6 * HEARTBEAT_MS));
    const big = await json(`${a.url}/calls/CA-big`);
    expect(big.status).toBe(404);
    expect(attacker.of('/calls/CA-big')).toEqual([]);
    const good = await json(`${a.url}/calls/CA-good`);
    expect(good).toMatchObject({ status: 200, instance: 'good', body: { from: 'attacker' } });
    for (const instance of [a, b]) {
      const skipped = logLines(instance, 'instance entry skipped').filter((l) => l['instance'] === 'big');
      expect(skipped).toHaveLength(1);
      expect(String(skipped[0]!['reason'])).toMatch(/^it is \d+ bytes, over 4096$/);
    }
  });
});

describe('a loopback cluster with no token', () => {
  it('forwards to loopback instances (unsigned, nothing secret to send) and trusts no other', async () => {
    await fake('loop', attacker.url, ['CA-loop'], { prefix: TOKENLESS_PREFIX });
    // Not a loopback name, though it reaches this machine (so nothing leaves it, even if it were used).
    await fake('far', `http://0.0.0.0:${new URL(attacker.url).port}`, ['CA-far'], {
      prefix: TOKENLESS_PREFIX,
    });
    const loop = await json(`${t.url}/calls/CA-loop`);
    expect(loop).toMatchObject({ status: 200, instance: 'loop' });
    const [got] = attacker.of('/calls/CA-loop');
    expect(got!.headers[CLUSTER_HEADER]).toMatch(/^v1;i=loop;t=\d+;n=[\w-]{22};b=[\w-]{43};a=1$/);
    expect(got!.headers['authorization']).toBeUndefined();
    const t0 = Date.now();
    expect((await json(`${t.url}/calls/CA-far`)).status).toBe(404);
    expect(attacker.of('/calls/CA-far')).toEqual([]);
    expect(Date.now() - t0).toBeLessThan(500);
    await until(
      () => logLines(t, 'instance entry skipped').some((l) => String(l['reason']).includes('not loopback')),
      2000,
      'the skipped entry to be logged',
    );
    // Another tokenless instance's request is taken as it comes.
    const header = signRequest(
      {
        method: 'GET',
        pathAndQuery: '/calls',
        contentType: undefined,
        bodySha256: sha256(''),
        target: 't',
        bearer: false,
      },
      undefined,
    );
    expect((await fetch(`${t.url}/calls`, { headers: { [CLUSTER_HEADER]: header } })).status).toBe(200);
  });
});
