/**
 * A sharded Discord bot in a cluster, with no Discord account: instance M runs the bot as two shard
 * processes (discord.js's ShardingManager) against a fake Discord (REST, gateway and voice server on
 * loopback, the real protocols); instance B runs no bot. Through B, a guild of each shard is joined,
 * listed, spoken to and left: each request reaches the shard process that owns the guild.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeDiscord, shardOf } from '../../testkit/discord/gateway.js';
import { testTls } from '../../testkit/discord/voice-server.js';
import { startInstance, type Instance } from '../../testkit/instance.js';
import { TestRedis } from '../../testkit/redis.js';

const CONTROL_TOKEN = randomBytes(18).toString('base64url');
const BOT_TOKEN = `fake.${randomBytes(12).toString('hex')}`;
const SPEECH_KEY = randomBytes(18).toString('base64url');
const HEADERS = { authorization: `Bearer ${CONTROL_TOKEN}`, 'content-type': 'application/json' };
/** Guild ids on shard k of 2. */
const guildOnShard = (k: number): string => String(((300_000_000_000n + BigInt(k)) << 22n) | 7n);
const GUILDS = [guildOnShard(0), guildOnShard(1)];
const VOICE = ['830000000000000010', '830000000000000011'];

let redis: TestRedis;
let discord: FakeDiscord;
let m: Instance;
let b: Instance;

async function json(
  url: string,
  method = 'GET',
  body?: unknown,
): Promise<{ status: number; body: Record<string, unknown>; instance: string | null }> {
  const res = await fetch(url, {
    method,
    headers: HEADERS,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return {
    status: res.status,
    body: text ? (JSON.parse(text) as Record<string, unknown>) : {},
    instance: res.headers.get('x-voxbridge-instance'),
  };
}

beforeAll(async () => {
  expect(GUILDS.map((g) => shardOf(g, 2))).toEqual([0, 1]);
  redis = await TestRedis.start();
  discord = await FakeDiscord.start({
    token: BOT_TOKEN,
    recommendedShards: 2,
    guilds: GUILDS.map((id, k) => ({
      id,
      name: `Guild ${k}`,
      channels: [
        { id: `84000000000000001${k}`, name: 'general', type: 0 as const },
        { id: VOICE[k]!, name: 'Voice', type: 2 as const },
      ],
    })),
    voice: testTls(),
  });
  const common = {
    REDIS_URL: redis.url,
    CONTROL_TOKEN,
    NODE_EXTRA_CA_CERTS: process.env['NODE_EXTRA_CA_CERTS'] ?? '',
    // One VAD worker per process, the shards' too (not one per core): each costs about 2 s of CPU.
    VAD_WORKERS: '1',
  };
  m = await startInstance(
    'm',
    {
      ...common,
      SPEECH_API_KEY: SPEECH_KEY,
      DISCORD_TOKEN: BOT_TOKEN,
      DISCORD_API_URL: `${discord.url}/api`,
      DISCORD_SHARDS: 'auto',
    },
    { discord: { shardSpawnDelayMs: 0, commandGuildIds: GUILDS }, service: { workers: 1 } },
  );
  b = await startInstance('b', { ...common, SPEECH_BASE_URL: m.url, SPEECH_API_KEY: SPEECH_KEY });
  // Both shard processes joined the cluster, and logged in to the gateway (which may come after: a
  // loaded CI machine once saw one identify when the cluster already counted four).
  const deadline = Date.now() + 30_000;
  for (;;) {
    const health = await json(`${b.url}/healthz`);
    const instances = (health.body['cluster'] as { instances?: number } | undefined)?.instances;
    if (instances === 4 && discord.identifies.length >= 2) break;
    if (Date.now() > deadline) throw new Error(`the shards did not join the cluster:\n${m.output()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}, 90_000);

afterAll(async () => {
  await b?.kill('SIGTERM');
  await m?.kill('SIGTERM');
  await discord?.close();
  await redis?.stop();
});

describe('a sharded bot in a cluster', () => {
  it('starts one process per shard, each logged in as its shard', () => {
    expect(discord.identifies.map((i) => i.shard).sort()).toEqual([
      [0, 2],
      [1, 2],
    ]);
  });

  it('joins, lists, speaks in, stops and leaves a guild of each shard through an instance with no bot', async () => {
    for (const [k, guild] of GUILDS.entries()) {
      const joined = await json(`${b.url}/discord/guilds/${guild}/join`, 'POST', { channel_id: VOICE[k] });
      expect(joined.status).toBe(200);
      expect(joined.instance).toBe(`m-shard-${k}`);
    }
    const listed = await json(`${b.url}/discord/guilds`);
    const guilds = listed.body['guilds'] as Array<{ guild_id: string; instance: string }>;
    expect(guilds.map((g) => [g.guild_id, g.instance]).sort()).toEqual(
      GUILDS.map((g, k) => [g, `m-shard-${k}`]).sort(),
    );
    const voice = discord.voice!;
    // Each shard's guild is end-to-end encrypted (DAVE): a listening member is in its group.
    for (const guild of GUILDS)
      await voice.waitFor(() => voice.earOf(guild)?.ready === true, 10_000, `the DAVE group of ${guild}`);
    const packets = voice.packets.length;
    const said = await json(`${b.url}/discord/guilds/${GUILDS[1]}/say`, 'POST', {
      text: 'Spoken by the second shard, asked through another instance.',
      wait: true,
    });
    expect(said.status).toBe(200);
    expect(said.body['utterances']).toEqual([expect.objectContaining({ status: 'played' })]);
    expect(said.instance).toBe('m-shard-1');
    expect(voice.packets.length - packets).toBeGreaterThan(50);
    const speech = voice.packets.slice(packets).filter((p) => !p.silence);
    expect(speech.every((p) => p.e2ee && p.heard === 'decrypted')).toBe(true);
    // Stopped through B while it speaks (the first shard this time).
    const long = await json(`${b.url}/discord/guilds/${GUILDS[0]}/say`, 'POST', {
      text: 'A long story that goes on and on, so that there is time to stop it from another instance. '.repeat(
        2,
      ),
      wait: false,
    });
    expect(long.status).toBe(202);
    await voice.waitFor(
      () => voice.received(voice.ssrcOf(GUILDS[0]!)).length > 30,
      10_000,
      'speech in guild 0',
    );
    const stopped = await json(`${b.url}/discord/guilds/${GUILDS[0]}/stop`, 'POST', {});
    expect(stopped).toMatchObject({ status: 200, instance: 'm-shard-0' });
    expect(stopped.body['stopped']).toBeTruthy();
    const described = await json(`${b.url}/discord/guilds/${GUILDS[0]}`);
    expect(described.body).toMatchObject({ guild_id: GUILDS[0], speaking: null, queued: 0 });
    for (const guild of GUILDS) {
      const left = await fetch(`${b.url}/discord/guilds/${guild}`, { method: 'DELETE', headers: HEADERS });
      expect(left.status).toBe(204);
    }
    const after = await json(`${b.url}/discord/guilds`);
    expect(after.body['guilds']).toEqual([]);
  });
});
