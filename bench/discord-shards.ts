/**
 * Discord guilds speaking at once: the bot in one process against the same bot as two shard processes
 * (discord.js's ShardingManager, in a cluster on Redis), each a real instance as `npm start` runs it,
 * logged in to a fake Discord (REST, gateway and voice server on loopback, the real protocols). Every
 * guild is joined and spoken to through the control API of the instance the user runs; the voice
 * server (in this process, the same for both) counts silence holes inside each guild's speech.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeDiscord } from '../testkit/discord/gateway.js';
import { makeTestCertificate } from '../testkit/discord/tls.js';
import { speechRun } from '../testkit/discord/voice-server.js';
import { startInstance, type Instance } from '../testkit/instance.js';
import { TestRedis } from '../testkit/redis.js';
import { fmt, percentile, printTable } from './stats.js';

const CONTROL = randomBytes(18).toString('base64url');
const BOT = `bench.${randomBytes(12).toString('hex')}`;
const HEADERS = { authorization: `Bearer ${CONTROL}`, 'content-type': 'application/json' };
const PROMPT =
  'Welcome back, adventurers. Last time, you had just entered the goblin caves, torches in hand, ' +
  'and the smell of smoke was growing stronger with every step.';
/** Guild i's id; consecutive ids fall on alternate shards of 2 ((id >> 22) % 2). */
const guildId = (i: number): string => String(((400_000_000_000n + BigInt(i)) << 22n) | 3n);
const voiceChannel = (i: number): string => String(900_000_000_000_000_000n + BigInt(i));

async function call(url: string, method: string, body?: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(url, {
    method,
    headers: HEADERS,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${url}: ${res.status} ${text}`);
  return text ? (JSON.parse(text) as Record<string, unknown>) : {};
}

/** In batches, so that joins do not all land in one instant. */
async function inBatches<T>(n: number, size: number, f: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = [];
  for (let i = 0; i < n; i += size)
    out.push(...(await Promise.all(Array.from({ length: Math.min(size, n - i) }, (_, k) => f(i + k)))));
  return out;
}

interface Row {
  holes: number;
  underruns: number;
  lateness: number[];
  failed: number;
}

async function speakInEvery(instance: Instance, discord: FakeDiscord, n: number): Promise<Row> {
  const voice = discord.voice!;
  const starts = Array.from({ length: n }, (_, i) => voice.received(voice.ssrcOf(guildId(i))).length);
  const answers = await Promise.all(
    Array.from({ length: n }, (_, i) =>
      call(`${instance.url}/discord/guilds/${guildId(i)}/say`, 'POST', { text: PROMPT, wait: true }),
    ),
  );
  await new Promise((r) => setTimeout(r, 300));
  const row: Row = { holes: 0, underruns: 0, lateness: [], failed: 0 };
  for (let i = 0; i < n; i++) {
    const run = speechRun(voice.received(voice.ssrcOf(guildId(i))).slice(starts[i]));
    if (!run) continue;
    row.holes += run.holes;
    row.lateness.push(...run.drift);
  }
  for (const a of answers)
    for (const u of a['utterances'] as Array<{ status: string; underruns: number }>) {
      row.underruns += u.underruns;
      if (u.status !== 'played') row.failed++;
    }
  return row;
}

const joinSeconds: string[] = [];

async function deployment(
  label: string,
  env: Record<string, string>,
  discord: FakeDiscord,
  counts: readonly number[],
  rows: string[][],
): Promise<void> {
  const instance = await startInstance(
    label === 'one process' ? 'one' : 'sharded',
    {
      CONTROL_TOKEN: CONTROL,
      DISCORD_TOKEN: BOT,
      DISCORD_API_URL: `${discord.url}/api`,
      LOG_LEVEL: 'warn',
      ...env,
    },
    { discord: { shardSpawnDelayMs: 0, joinTimeoutMs: 120_000 } },
  );
  try {
    const max = Math.max(...counts);
    const join = (i: number): Promise<Record<string, unknown>> =>
      call(`${instance.url}/discord/guilds/${guildId(i)}/join`, 'POST', { channel_id: voiceChannel(i) });
    // Ready when guilds 0 and 1 (on shards 0 and 1 of 2) can be joined: the bot, or both shards, logged in.
    const deadline = Date.now() + 60_000;
    for (const i of [0, 1])
      for (;;) {
        try {
          await join(i);
          break;
        } catch (error) {
          if (Date.now() > deadline) throw error;
          await new Promise((r) => setTimeout(r, 500));
        }
      }
    // Discord lets a shard send 120 gateway events a minute (discord.js queues the rest): joining N
    // guilds takes N / 2 seconds on one shard, half that on two.
    const t0 = performance.now();
    await inBatches(max - 2, 20, (i) => join(i + 2));
    joinSeconds.push(`${label}: ${fmt((performance.now() - t0) / 1000, 0)} s`);
    await call(`${instance.url}/discord/guilds/${guildId(0)}/say`, 'POST', { text: PROMPT, wait: true }); // warm the cache
    for (const n of counts) {
      const r = await speakInEvery(instance, discord, n);
      rows.push([
        label,
        String(n),
        String(r.holes),
        String(r.underruns),
        fmt(percentile(r.lateness, 50), 1),
        fmt(percentile(r.lateness, 99), 1),
        String(r.failed),
      ]);
    }
  } finally {
    await inBatches(Math.max(...counts), 50, (i) =>
      fetch(`${instance.url}/discord/guilds/${guildId(i)}`, { method: 'DELETE', headers: HEADERS }),
    ).catch(() => undefined);
    await instance.kill('SIGTERM');
  }
}

export async function benchDiscordShards(counts: readonly number[] = [100, 200]): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'voxbridge-bench-shards-'));
  const tls = makeTestCertificate(dir);
  const max = Math.max(...counts);
  const discord = await FakeDiscord.start({
    token: BOT,
    recommendedShards: 2,
    guilds: Array.from({ length: max }, (_, i) => ({
      id: guildId(i),
      channels: [{ id: voiceChannel(i), name: 'Voice', type: 2 as const }],
    })),
    // Decrypts every packet (to find silence), decodes none: the server's cost is the same for both.
    voice: { cert: readFileSync(tls.cert, 'utf8'), key: readFileSync(tls.key, 'utf8'), decode: false },
  });
  const redis = await TestRedis.start();
  const rows: string[][] = [];
  try {
    const trust = { NODE_EXTRA_CA_CERTS: tls.bundle };
    await deployment('one process', trust, discord, counts, rows);
    console.log('  one process done');
    await deployment(
      '2 shard processes',
      { ...trust, REDIS_URL: redis.url, DISCORD_SHARDS: '2' },
      discord,
      counts,
      rows,
    );
    console.log('  2 shard processes done');
  } finally {
    await redis.stop();
    await discord.close();
    await rm(dir, { recursive: true, force: true });
  }
  printTable(
    'Discord: guilds speaking a cached prompt at once, one bot process vs two shard processes (each guild joined and spoken to through the control API; the fake voice server runs in the benchmark process; drift = arrival − (first packet + k × 20 ms))',
    [
      'bot',
      'guilds',
      'silence holes in speech',
      'speaker underruns',
      'drift p50 ms',
      'drift p99 ms',
      'failed',
    ],
    rows,
  );
  console.log(
    `Joining ${Math.max(...counts)} guilds (Discord's gateway rate limit): ${joinSeconds.join(', ')}`,
  );
}
