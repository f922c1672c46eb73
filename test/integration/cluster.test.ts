/**
 * Three real instances (`npm start`'s process) on one real Redis, speaking through one speech service
 * behind a proxy that counts its requests. A Twilio-protocol call on one instance is listed, spoken
 * to, interrupted, followed and hung up through the others; instances are stopped, killed, and
 * Redis goes away and comes back under a call that keeps playing.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SseReader } from '../../testkit/sse.js';
import { TestRedis } from '../../testkit/redis.js';
import { KEYS, startTestApp, type TestApp } from '../helpers/app.js';
import { FakeTwilio } from '../helpers/gateways/twilio.js';
import { CountingProxy, startInstance, type Instance } from '../../testkit/instance.js';

const CONTROL_TOKEN = randomBytes(18).toString('base64url');
const AUTH = { authorization: `Bearer ${CONTROL_TOKEN}` };
const JSON_AUTH = { ...AUTH, 'content-type': 'application/json' };

let redis: TestRedis;
let speech: TestApp;
let proxy: CountingProxy;
const instances = new Map<string, Instance>();
const gateways: FakeTwilio[] = [];

async function start(id: string): Promise<Instance> {
  const instance = await startInstance(
    id,
    {
      REDIS_URL: redis.url,
      CONTROL_TOKEN,
      SPEECH_BASE_URL: proxy.url,
      SPEECH_API_KEY: KEYS.main,
      // One VAD worker (not one per core): each costs about 2 s of CPU to load and warm up.
      VAD_WORKERS: '1',
    },
    { calls: { defaultFlow: null }, server: { shutdownGraceMs: 0 } },
  );
  instances.set(id, instance);
  return instance;
}

function at(id: string): string {
  return instances.get(id)!.url;
}

async function get(
  url: string,
): Promise<{ status: number; body: Record<string, unknown>; instance: string | null }> {
  const res = await fetch(url, { headers: AUTH });
  return {
    status: res.status,
    body: (await res.json()) as Record<string, unknown>,
    instance: res.headers.get('x-voxbridge-instance'),
  };
}

async function post(url: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(url, { method: 'POST', headers: JSON_AUTH, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function listed(via: string): Promise<Array<{ id: string; instance: string }>> {
  const { status, body } = await get(`${at(via)}/calls`);
  expect(status).toBe(200);
  return body['calls'] as Array<{ id: string; instance: string }>;
}

async function until<T>(
  probe: () => Promise<T>,
  ok: (value: T) => boolean,
  timeoutMs: number,
  what: string,
): Promise<{ value: T; ms: number }> {
  const t0 = performance.now();
  for (;;) {
    const value = await probe();
    if (ok(value)) return { value, ms: performance.now() - t0 };
    if (performance.now() - t0 > timeoutMs)
      throw new Error(`timed out (${timeoutMs} ms) waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A caller on instance `id`'s Twilio endpoint, streaming silence as a live call does. */
async function call(id: string, callSid?: string): Promise<FakeTwilio> {
  const g = new FakeTwilio(`${at(id).replace('http:', 'ws:')}/media/twilio`, callSid ? { callSid } : {});
  gateways.push(g);
  await g.start();
  g.startCallerAudio();
  await until(
    () => listed(id),
    (calls) => calls.some((c) => c.id === g.callSid),
    5000,
    'the call to start',
  );
  return g;
}

beforeAll(async () => {
  redis = await TestRedis.start();
  speech = await startTestApp();
  proxy = await CountingProxy.start(speech.url);
  await Promise.all(['a', 'b', 'c'].map((id) => start(id)));
  // Every instance sees the other two.
  for (const id of ['a', 'b', 'c'])
    await until(
      () => get(`${at(id)}/healthz`),
      (h) => (h.body['cluster'] as { instances?: number } | undefined)?.instances === 3,
      10_000,
      `${id} to see three instances`,
    );
}, 60_000);

afterAll(async () => {
  for (const g of gateways) await g.close();
  await Promise.all([...instances.values()].map((i) => i.kill('SIGKILL')));
  await proxy?.close();
  await speech?.close();
  await redis?.stop();
});

describe('a cluster of three instances', () => {
  it('lists, describes, speaks to, interrupts, follows and hangs up a call on A through B and C', async () => {
    const g = await call('a');
    const id = g.callSid;
    for (const via of ['b', 'c']) {
      const calls = await listed(via);
      expect(calls.filter((c) => c.id === id)).toEqual([expect.objectContaining({ id, instance: 'a' })]);
    }
    const described = await get(`${at('c')}/calls/${id}`);
    expect(described.status).toBe(200);
    expect(described.body).toMatchObject({ id, gateway: 'twilio', status: 'active' });
    expect(described.instance).toBe('a');

    // Events through C, as they happen.
    const sse = new SseReader(`${at('c')}/calls/${id}/events`, AUTH);
    await sse.until((e) => e.some((x) => x.event === 'call.state'));

    // A say through B waits for its end, as it does on A.
    const before = g.mediaBytes();
    const said = await post(`${at('b')}/calls/${id}/say`, {
      text: 'Spoken through another instance.',
      wait: true,
    });
    expect(said.status).toBe(200);
    expect(said.body).toMatchObject({ status: 'played' });
    expect(said.body['played_ms']).toBeGreaterThan(500);
    expect(g.mediaBytes() - before).toBeGreaterThan(4000);

    // Interrupt through C while a long say (sent through B) plays.
    const long = await post(`${at('b')}/calls/${id}/say`, {
      text: 'This is a long sentence that goes on and on so that there is time to interrupt it from elsewhere.',
      wait: false,
    });
    expect(long.status).toBe(202);
    await g.until(() => g.mediaBytes() > before + 8000 + 4000, 10_000, 'the long say to play');
    const clears = g.received.filter((r) => r.event === 'clear').length;
    const interrupted = await post(`${at('c')}/calls/${id}/interrupt`, {});
    expect(interrupted.status).toBe(200);
    expect(interrupted.body).toMatchObject({ interrupted: true });
    await g.until(() => g.received.filter((r) => r.event === 'clear').length > clears, 2000, 'the clear');

    await sse.until((e) => e.filter((x) => x.event === 'utterance.finished').length >= 2);
    // Replay from an event id, through B.
    const finished = sse.events.find((x) => x.event === 'utterance.finished')!;
    const seq = (finished.data as { seq: number }).seq;
    const replay = new SseReader(`${at('b')}/calls/${id}/events?after=${seq}`, AUTH);
    await replay.until((e) => e.some((x) => x.event === 'utterance.finished'));
    expect((replay.of('utterance.finished')[0] as { seq: number }).seq).toBeGreaterThan(seq);
    replay.close();
    // The same with the header a reconnecting EventSource sends, through C.
    const resumed = new SseReader(`${at('c')}/calls/${id}/events`, { ...AUTH, 'last-event-id': String(seq) });
    await resumed.until((e) => e.some((x) => x.event === 'utterance.finished'));
    expect((resumed.of('utterance.finished')[0] as { seq: number }).seq).toBeGreaterThan(seq);
    resumed.close();

    // Hang up through C: the caller's socket closes, and the call leaves every list.
    const hungUp = await fetch(`${at('c')}/calls/${id}`, { method: 'DELETE', headers: AUTH });
    expect(hungUp.status).toBe(204);
    await sse.until((e) => e.some((x) => x.event === 'call.ended'));
    await sse.done;
    await g.until(() => g.ws.readyState === g.ws.CLOSED, 5000, 'the socket to close');
    for (const via of ['a', 'b', 'c']) expect((await listed(via)).some((c) => c.id === id)).toBe(false);
    const gone = await get(`${at('b')}/calls/${id}`);
    expect(gone.status).toBe(404);
  });

  it('refuses a second connection under a call id another instance holds, naming it', async () => {
    const first = await call('a');
    const dup = new FakeTwilio(`${at('b').replace('http:', 'ws:')}/media/twilio`, { callSid: first.callSid });
    gateways.push(dup);
    const closed = new Promise<{ code: number; reason: string }>((resolve) =>
      dup.ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })),
    );
    await dup.start();
    const { code, reason } = await closed;
    expect(code).toBe(1008);
    expect(reason).toContain('instance a');
    // The first keeps the call, and the cluster still routes to it.
    expect((await get(`${at('c')}/calls/${first.callSid}`)).instance).toBe('a');
    await first.close();
  });

  it('synthesizes a phrase once for the whole cluster', async () => {
    const ga = await call('a');
    const gb = await call('b');
    const text = `A phrase for the whole cluster, number ${randomBytes(4).toString('hex')}.`;
    expect((await post(`${at('a')}/calls/${ga.callSid}/say`, { text, wait: true })).body).toMatchObject({
      status: 'played',
    });
    const onB = await post(`${at('c')}/calls/${gb.callSid}/say`, { text, wait: true });
    expect(onB.body).toMatchObject({ status: 'played' });
    expect(onB.body['played_ms']).toBeGreaterThan(500);
    expect(proxy.texts.filter((t) => t === text)).toHaveLength(1);
    await ga.close();
    await gb.close();
  });

  it('keeps a call playing while Redis is away: local control works, remote control answers 503, all of it comes back', async () => {
    const g = await call('a');
    const id = g.callSid;
    await post(`${at('a')}/calls/${id}/say`, {
      text: 'A long announcement that keeps playing while the cluster loses its registry and finds it again. '.repeat(
        3,
      ),
      wait: false,
    });
    await g.until(() => g.mediaBytes() > 4000, 10_000, 'speech to start');
    const gapsBefore = g.playout.gaps.length;
    await redis.stop();
    const during = await until(
      () => get(`${at('b')}/calls/${id}`),
      (r) => r.status === 503,
      5000,
      'B to answer 503',
    );
    expect(during.value.body).toMatchObject({ error: 'cluster_unavailable' });
    expect(String(during.value.body['message'])).toContain('Redis');
    expect((await get(`${at('a')}/calls/${id}`)).status).toBe(200);
    expect((await get(`${at('b')}/healthz`)).body).toMatchObject({ status: 'degraded' });
    const metrics = await (await fetch(`${at('b')}/metrics`, { headers: AUTH })).text();
    expect(metrics).toMatch(/^voxbridge_cluster_registry_up 0$/m);
    // The call plays on through the outage.
    const bytes = g.mediaBytes();
    await new Promise((r) => setTimeout(r, 1000));
    expect(g.mediaBytes() - bytes).toBeGreaterThan(4000);
    await redis.start();
    const back = await until(
      () => get(`${at('b')}/calls/${id}`),
      (r) => r.status === 200,
      10_000,
      'B to reach the call again',
    );
    expect(back.value.instance).toBe('a');
    expect(back.ms).toBeLessThan(5000);
    expect((await get(`${at('b')}/healthz`)).body).toMatchObject({ status: 'ok' });
    // Still speaking, and it never ran dry.
    const after = g.mediaBytes();
    await new Promise((r) => setTimeout(r, 300));
    expect(g.mediaBytes()).toBeGreaterThan(after);
    expect(g.playout.gaps.length).toBe(gapsBefore);
    await g.close();
  });

  it('starts with Redis down (degraded, calls served), and joins the cluster once Redis is up', async () => {
    const later = await TestRedis.start();
    await later.stop();
    const lone = await startInstance(
      'lone',
      {
        REDIS_URL: later.url,
        CONTROL_TOKEN,
        SPEECH_BASE_URL: proxy.url,
        SPEECH_API_KEY: KEYS.main,
        VAD_WORKERS: '1',
      },
      { calls: { defaultFlow: null } },
    );
    try {
      expect((await get(`${lone.url}/healthz`)).body).toMatchObject({
        status: 'degraded',
        cluster: { registry: 'unreachable' },
      });
      const g = new FakeTwilio(`${lone.url.replace('http:', 'ws:')}/media/twilio`);
      gateways.push(g);
      await g.start();
      const said = await post(`${lone.url}/calls/${g.callSid}/say`, { text: 'Alone for now.', wait: true });
      expect(said.body).toMatchObject({ status: 'played' });
      await later.start();
      await until(
        () => get(`${lone.url}/healthz`),
        (h) => h.body['status'] === 'ok',
        5000,
        'the instance to see Redis',
      );
      await g.close();
    } finally {
      await lone.kill('SIGTERM');
      await later.stop();
    }
  });

  it('drops a stopped instance from every view at once, and a killed one within 15 s', async () => {
    const onC = await call('c');
    expect((await listed('a')).find((c) => c.id === onC.callSid)?.instance).toBe('c');
    await instances.get('c')!.kill('SIGTERM');
    expect((await listed('a')).some((c) => c.id === onC.callSid)).toBe(false);
    expect((await get(`${at('a')}/calls/${onC.callSid}`)).status).toBe(404);

    const onA = await call('a');
    expect((await get(`${at('b')}/calls/${onA.callSid}`)).instance).toBe('a');
    await instances.get('a')!.kill('SIGKILL');
    const t0 = performance.now();
    const answer = await get(`${at('b')}/calls/${onA.callSid}`);
    expect([404, 503]).toContain(answer.status);
    expect(performance.now() - t0).toBeLessThan(2000);
    if (answer.status === 503)
      expect(answer.body).toMatchObject({ error: 'owner_unreachable', instance: 'a' });
    // Until it expires, a list names it as unreachable rather than hiding that something is missing.
    const list = await get(`${at('b')}/calls`);
    expect((list.body['calls'] as Array<{ id: string }>).some((c) => c.id === onA.callSid)).toBe(false);
    if (answer.status === 503) expect(list.body['cluster']).toMatchObject({ unreachable_instances: ['a'] });
    const gone = await until(
      () => get(`${at('b')}/calls/${onA.callSid}`),
      (r) => r.status === 404,
      15_000,
      "the killed instance's call to expire",
    );
    expect(gone.ms).toBeLessThan(15_000);
    expect((await listed('b')).some((c) => c.id === onA.callSid)).toBe(false);
    const health = await get(`${at('b')}/healthz`);
    expect(health.body['cluster']).toMatchObject({ instances: 1 });
  }, 30_000);
});
