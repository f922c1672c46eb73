/**
 * The cluster registry and the shared phrase store on a real Redis: claims, lookups, expiry of a dead
 * instance, a graceful leave, a Redis that restarts empty, and a Redis that is away.
 */
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { RedisPhraseStore } from '../../src/cluster/phrase-store.js';
import { ClusterUnavailableError, RedisConnection } from '../../src/cluster/redis.js';
import { ClusterRegistry } from '../../src/cluster/registry.js';
import { PhraseCache } from '../../src/speaker/phrase-cache.js';
import { TestRedis } from '../../testkit/redis.js';

const logger = pino({ level: 'silent' });
const HEARTBEAT_MS = 100;
const TTL_MS = 300;

let redis: TestRedis;
let prefixes = 0;
const cleanup: Array<() => Promise<void> | void> = [];

beforeAll(async () => {
  redis = await TestRedis.start();
});
afterAll(async () => {
  await redis.stop();
});
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
  await redis.start(); // a test that stopped it leaves it running for the next
});

async function until(
  predicate: () => boolean | Promise<boolean>,
  timeoutMs = 5000,
  what = 'condition',
): Promise<number> {
  const t0 = performance.now();
  while (!(await predicate())) {
    if (performance.now() - t0 > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
  return performance.now() - t0;
}

async function connection(): Promise<RedisConnection> {
  const c = new RedisConnection(redis.url, logger, 500);
  c.start();
  cleanup.push(() => c.close());
  await until(() => c.up, 5000, 'redis connection');
  return c;
}

/** One instance's registry on a connection of its own, under a key prefix of this test's own. */
async function started(
  id: string,
  prefix: string,
  ttlMs = TTL_MS,
): Promise<{ registry: ClusterRegistry; connection: RedisConnection }> {
  const c = await connection();
  const registry = new ClusterRegistry({
    redis: c,
    self: { id, url: `http://127.0.0.1:1/${id}`, startedAt: new Date().toISOString() },
    keyPrefix: prefix,
    heartbeatMs: HEARTBEAT_MS,
    ttlMs,
    maxInstances: 256,
    loopbackOnly: false,
    logger,
  });
  registry.start();
  cleanup.push(() => registry.stop());
  await until(() => registry.instances().length >= 1 && registry.available, 5000, 'registration');
  await registry.heartbeat();
  return { registry, connection: c };
}

async function instance(id: string, prefix: string): Promise<ClusterRegistry> {
  return (await started(id, prefix)).registry;
}

function newPrefix(): string {
  return `t${++prefixes}:`;
}

describe('the cluster registry', () => {
  it('finds the instance holding a call from another instance, and forgets it once released', async () => {
    const p = newPrefix();
    const a = await instance('a', p);
    const b = await instance('b', p);
    await until(async () => {
      await b.heartbeat();
      return b.instances().some((i) => i.id === 'a');
    });
    expect(await a.claim('calls', 'CA1')).toEqual({ ok: true });
    expect((await b.locate('calls', 'CA1'))?.id).toBe('a');
    expect((await a.locate('calls', 'CA1'))?.id).toBe('a');
    expect(await b.locate('calls', 'CA-unknown')).toBeUndefined();
    // Calls and guilds are separate names.
    expect(await b.locate('guilds', 'CA1')).toBeUndefined();
    await a.release('calls', 'CA1');
    expect(await b.locate('calls', 'CA1')).toBeUndefined();
  });

  it('gives a call id to its first live holder: a second claim is refused and names the holder', async () => {
    const p = newPrefix();
    const a = await instance('a', p);
    const b = await instance('b', p);
    expect(await a.claim('calls', 'CA2')).toEqual({ ok: true });
    const second = await b.claim('calls', 'CA2');
    expect(second.ok).toBe(false);
    expect(!second.ok && second.owner.id).toBe('a');
    // The refused claim leaves nothing behind: B's release does not remove A's holding.
    await b.release('calls', 'CA2');
    expect((await b.locate('calls', 'CA2'))?.id).toBe('a');
  });

  it('forgets a killed instance within ttl + heartbeat, and lets its calls be taken over', async () => {
    const p = newPrefix();
    const { registry: a, connection: doomed } = await started('a', p);
    expect(await a.claim('calls', 'CA3')).toEqual({ ok: true });
    const b = await instance('b', p);
    expect((await b.locate('calls', 'CA3'))?.id).toBe('a');
    // "Killed": it stops renewing and never says goodbye.
    doomed.close();
    const gone = await until(
      async () => (await b.locate('calls', 'CA3')) === undefined,
      5000,
      'the dead holder to expire',
    );
    expect(gone).toBeLessThan(TTL_MS + 3 * HEARTBEAT_MS + 500);
    await until(() => !b.instances().some((i) => i.id === 'a'), 2000, 'the dead instance to leave the list');
    expect(await b.claim('calls', 'CA3')).toEqual({ ok: true });
    expect((await b.locate('calls', 'CA3'))?.id).toBe('b');
  });

  it('drops at start what a killed predecessor under the same id held', async () => {
    const p = newPrefix();
    const { registry: old, connection: first } = await started('shard-1', p, 60_000);
    expect(await old.claim('guilds', '100000000000000009')).toEqual({ ok: true });
    first.close(); // killed: nothing released, and its entry has not expired yet
    const b = await instance('b', p);
    expect((await b.locate('guilds', '100000000000000009'))?.id).toBe('shard-1');
    // Started again under the same id: it holds nothing yet.
    await instance('shard-1', p);
    expect(await b.locate('guilds', '100000000000000009')).toBeUndefined();
  });

  it('leaves at once on a graceful stop', async () => {
    const p = newPrefix();
    const a = await instance('a', p);
    const b = await instance('b', p);
    await a.claim('calls', 'CA4');
    await a.claim('guilds', '100000000000000004');
    expect((await b.locate('guilds', '100000000000000004'))?.id).toBe('a');
    await a.stop();
    expect(await b.locate('calls', 'CA4')).toBeUndefined();
    expect(await b.locate('guilds', '100000000000000004')).toBeUndefined();
    await b.heartbeat();
    expect(b.instances().map((i) => i.id)).toEqual(['b']);
  });

  it('says the registry is unreachable while Redis is down, and repopulates a restarted Redis within a heartbeat', async () => {
    const p = newPrefix();
    const a = await instance('a', p);
    const b = await instance('b', p);
    await a.claim('calls', 'CA5');
    await redis.stop();
    await until(() => !a.available && !b.available, 5000, 'both to see Redis gone');
    await expect(b.locate('calls', 'CA5')).rejects.toBeInstanceOf(ClusterUnavailableError);
    // A call that starts while Redis is away is held locally and written once Redis is back.
    expect(await a.claim('calls', 'CA6')).toEqual({ ok: true });
    await redis.start();
    const back = await until(
      async () => {
        try {
          return (await b.locate('calls', 'CA5'))?.id === 'a' && (await b.locate('calls', 'CA6'))?.id === 'a';
        } catch {
          return false;
        }
      },
      8000,
      'the holdings to be written again',
    );
    // Reconnecting takes up to a second (the back-off's cap), then one heartbeat.
    expect(back).toBeLessThan(1000 + 2 * HEARTBEAT_MS + 1000);
  });
});

describe('the shared phrase store', () => {
  const key = { voiceId: 'v', modelId: 'm', text: 'Please hold.', outputFormat: 'pcm_24000' };

  it('serves a phrase one instance recorded to another, in whole samples', async () => {
    const p = newPrefix();
    const store = (c: RedisConnection): RedisPhraseStore =>
      new RedisPhraseStore({
        redis: c,
        keyPrefix: p,
        maxEntryBytes: 64_000,
        ttlSeconds: 60,
        timeoutMs: 200,
        logger,
      });
    const storeA = store(await connection());
    const storeB = store(await connection());
    const a = new PhraseCache({ maxBytes: 1_000_000, shared: storeA });
    const b = new PhraseCache({ maxBytes: 1_000_000, shared: storeB });
    const audio = Uint8Array.from({ length: 10_000 }, (_, i) => i % 251);
    const recording = a.record(key);
    recording.add(audio.subarray(0, 3000));
    recording.add(audio.subarray(3000));
    const alignment = { characters: ['h', 'i'], startMs: [0, 100], endMs: [100, 200] };
    recording.commit(alignment);
    await until(() => storeA.stats.stored === 1, 2000, 'the write');
    const found = await b.lookup(key);
    expect(found?.alignment).toEqual(alignment);
    const chunks = found?.chunks;
    expect(Buffer.concat(chunks!.map((c) => Buffer.from(c)))).toEqual(Buffer.from(audio));
    expect(chunks!.every((c) => c.byteLength % 2 === 0)).toBe(true);
    expect(b.stats.sharedHits).toBe(1);
    // Now in B's memory: the next lookup does not ask Redis.
    await b.lookup(key);
    expect(storeB.stats.hits).toBe(1);
    expect(b.stats.hits).toBe(1);
  });

  it('is a miss (never an error, never a wait) while Redis is away, and stores nothing over its entry limit', async () => {
    const p = newPrefix();
    const c = await connection();
    const store = new RedisPhraseStore({
      redis: c,
      keyPrefix: p,
      maxEntryBytes: 2048,
      ttlSeconds: 60,
      timeoutMs: 200,
      logger,
    });
    const cache = new PhraseCache({ maxBytes: 1_000_000, shared: store });
    const big = cache.record({ ...key, text: 'long' });
    big.add(new Uint8Array(4096));
    big.commit();
    await new Promise((r) => setTimeout(r, 100));
    expect(store.stats.stored).toBe(0);
    await redis.stop();
    await until(() => !c.up, 5000, 'the connection to notice');
    const t0 = performance.now();
    expect(await new PhraseCache({ maxBytes: 1000, shared: store }).lookup(key)).toBeUndefined();
    expect(performance.now() - t0).toBeLessThan(100);
    expect(store.stats.errors).toBeGreaterThan(0);
  });
});
