/**
 * The fake Discord (testkit/discord/gateway.ts) against the real discord.js `Client`: it logs in
 * through the fake's REST API and gateway, receives its guilds (per shard, by Discord's formula), joins
 * voice through the real `@discordjs/voice` connection to the fake voice server, registers commands,
 * posts messages, resumes after op 7, and fails to log in with a wrong token.
 */
import { once } from 'node:events';
import { entersState, joinVoiceChannel, VoiceConnectionStatus, type VoiceConnection } from '@discordjs/voice';
import {
  ChannelType,
  Client,
  DiscordAPIError,
  Events,
  GatewayIntentBits,
  PermissionFlagsBits,
  type ClientOptions,
} from 'discord.js';
import { WebSocket } from 'ws';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeDiscord, type FakeDiscordOptions } from '../../testkit/discord/gateway.js';
import { FakeVoiceServer, testTls } from '../../testkit/discord/voice-server.js';
import { tavern } from '../helpers/discord/tavern.js';

const TOKEN = 'fake-bot-token.0123456789abcdef';
/** Guild ids whose shard of 2 is k % 2 ((id >> 22) % 2). */
const guildId = (k: number): string => String(((300_000_000_000n + BigInt(k)) << 22n) | 5n);
const GUILD = guildId(0);
const TEXT = '820000000000000001';
const VOICE = '820000000000000002';
const MEMBER = '840000000000000001';

const cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const free of cleanup.splice(0).reverse()) await free();
});

async function startFake(options: Partial<FakeDiscordOptions> = {}): Promise<FakeDiscord> {
  const fake = await FakeDiscord.start({
    token: TOKEN,
    guilds: [tavern({ guild: GUILD, text: TEXT, voice: VOICE, member: MEMBER })],
    ...options,
  });
  cleanup.push(() => fake.close());
  return fake;
}

function newClient(fake: FakeDiscord, options: Partial<ClientOptions> = {}): Client {
  const client = new Client({
    intents: [GatewayIntentBits.Guilds, GatewayIntentBits.GuildVoiceStates],
    rest: { api: `${fake.url}/api` },
    ...options,
  });
  cleanup.push(() => client.destroy());
  return client;
}

async function login(fake: FakeDiscord, options: Partial<ClientOptions> = {}): Promise<Client<true>> {
  const client = newClient(fake, options);
  const ready = once(client, Events.ClientReady);
  await client.login(TOKEN);
  await ready;
  if (!client.isReady()) throw new Error('the client is not ready');
  return client;
}

describe('a real discord.js Client against the fake Discord', () => {
  it('logs in, and sees its guilds with their channels, its own member and the voice states', async () => {
    const fake = await startFake();
    const client = await login(fake);
    expect(client.user.id).toBe(fake.user.id);
    expect(client.user.bot).toBe(true);
    expect(client.application.id).toBe(fake.applicationId);
    expect([...client.guilds.cache.keys()]).toEqual([GUILD]);
    const guild = client.guilds.cache.get(GUILD)!;
    expect(guild.available).toBe(true);
    expect(guild.name).toBe('The Tavern');
    expect(guild.members.me?.id).toBe(fake.user.id);
    const voice = guild.channels.cache.get(VOICE);
    expect(voice?.type).toBe(ChannelType.GuildVoice);
    expect(guild.channels.cache.get(TEXT)?.type).toBe(ChannelType.GuildText);
    // What the bot checks before joining: the @everyone role grants these.
    const permissions = voice!.permissionsFor(guild.members.me!);
    for (const flag of [
      PermissionFlagsBits.ViewChannel,
      PermissionFlagsBits.Connect,
      PermissionFlagsBits.Speak,
    ])
      expect(permissions.has(flag)).toBe(true);
    expect(permissions.has(PermissionFlagsBits.MoveMembers)).toBe(false);
    // A member already in voice, as /join looks them up.
    expect(guild.voiceStates.cache.get(MEMBER)?.channelId).toBe(VOICE);
    expect(fake.identifies).toEqual([
      {
        shard: [0, 1],
        intents: GatewayIntentBits.Guilds | GatewayIntentBits.GuildVoiceStates,
        sessionId: expect.any(String) as unknown,
      },
    ]);
    expect(fake.gatewayUrls).toEqual(['/?v=10&encoding=json']);
    expect(fake.unknownRoutes).toEqual([]);
  });

  it('two clients as shards 0 and 1 of 2 each get exactly their guilds; one client takes both when told', async () => {
    const ids = [0, 1, 2, 3, 4].map(guildId);
    const fake = await startFake({ guilds: ids.map((id) => ({ id })), recommendedShards: 2 });
    const [first, second] = await Promise.all([
      login(fake, { shards: [0], shardCount: 2 }),
      login(fake, { shards: [1], shardCount: 2 }),
    ]);
    const ofShard = (n: bigint): string[] => ids.filter((id) => (BigInt(id) >> 22n) % 2n === n).sort();
    expect(ofShard(0n)).toHaveLength(3);
    expect([...first.guilds.cache.keys()].sort()).toEqual(ofShard(0n));
    expect([...second.guilds.cache.keys()].sort()).toEqual(ofShard(1n));
    expect(first.guilds.cache.every((g) => g.shardId === 0 && g.members.me !== null)).toBe(true);
    expect(second.guilds.cache.every((g) => g.shardId === 1 && g.members.me !== null)).toBe(true);
    expect(fake.connectedShards.map((s) => s.join('/')).sort()).toEqual(['0/2', '1/2']);

    // shards 'auto': the recommended count from GET /gateway/bot, both shards in one client.
    const both = await login(fake, { shards: 'auto' });
    expect(both.ws.shards.size).toBe(2);
    expect([...both.guilds.cache.keys()].sort()).toEqual([...ids].sort());
    for (const guild of both.guilds.cache.values())
      expect(guild.shardId).toBe(Number((BigInt(guild.id) >> 22n) % 2n));
  });

  it('joins voice through the gateway (op 4) to the fake voice server, and leaves', async () => {
    const server = await FakeVoiceServer.start(testTls());
    cleanup.push(() => server.close());
    const fake = await startFake({ voice: server });
    const client = await login(fake);
    const guild = client.guilds.cache.get(GUILD)!;
    const connection: VoiceConnection = joinVoiceChannel({
      channelId: VOICE,
      guildId: GUILD,
      adapterCreator: guild.voiceAdapterCreator,
      selfDeaf: false,
    });
    cleanup.push(async () => {
      if (connection.state.status !== VoiceConnectionStatus.Destroyed) connection.destroy();
    });
    connection.on('error', () => undefined);
    await entersState(connection, VoiceConnectionStatus.Ready, 10_000);
    expect(fake.voiceStatePayloads).toEqual([
      {
        guild_id: GUILD,
        channel_id: VOICE,
        self_mute: false,
        self_deaf: false,
        sessionId: fake.identifies[0]!.sessionId,
        shard: [0, 1],
      },
    ]);
    // The voice server was reached with the main gateway's session and the bot's id.
    expect(server.identifies).toEqual([
      expect.objectContaining({
        server_id: GUILD,
        user_id: fake.user.id,
        session_id: fake.identifies[0]!.sessionId,
      }),
    ]);
    expect(guild.members.me?.voice.channelId).toBe(VOICE);

    connection.destroy();
    await fake.waitFor(() => fake.voiceStatePayloads.length === 2, 5000, 'the leave');
    expect(fake.voiceStatePayloads[1]).toMatchObject({ guild_id: GUILD, channel_id: null });
    await fake.waitFor(() => guild.members.me?.voice.channelId === null, 5000, 'the voice state update');
  });

  it('a wrong token: login rejects as with Discord (401), and the gateway closes 4004 on Identify', async () => {
    const fake = await startFake();
    const client = newClient(fake);
    await expect(client.login('not-the-token')).rejects.toMatchObject({ code: 'TokenInvalid' });
    expect(fake.identifies).toEqual([]);

    const ws = new WebSocket(`${fake.gatewayUrl}?v=10&encoding=json`);
    const [hello] = (await once(ws, 'message')) as [Buffer];
    expect(JSON.parse(hello.toString())).toMatchObject({ op: 10, d: { heartbeat_interval: 41_250 } });
    ws.send(JSON.stringify({ op: 2, d: { token: 'not-the-token', intents: 0, properties: {} } }));
    const [code] = (await once(ws, 'close')) as [number];
    expect(code).toBe(4004);
  });

  it('records command overwrites and messages; an unknown route is 404 in Discord shape and logged', async () => {
    const fake = await startFake();
    const client = await login(fake);
    const set = await client.application.commands.set([{ name: 'ping', description: 'Ping.' }], GUILD);
    expect([...set.values()].map((c) => [c.name, c.guildId])).toEqual([['ping', GUILD]]);
    await client.application.commands.set([{ name: 'join', description: 'Join.' }]);
    expect(fake.commandSets).toEqual([
      { guildId: GUILD, commands: [expect.objectContaining({ name: 'ping', description: 'Ping.' })] },
      { guildId: null, commands: [expect.objectContaining({ name: 'join', description: 'Join.' })] },
    ]);

    const text = client.channels.cache.get(TEXT);
    if (!text?.isSendable()) throw new Error('the text channel is not sendable');
    const message = await text.send('I lost the voice connection.');
    expect(message.content).toBe('I lost the voice connection.');
    expect(message.author.id).toBe(fake.user.id);
    expect(fake.messages).toEqual([
      {
        channelId: TEXT,
        body: expect.objectContaining({ content: 'I lost the voice connection.' }) as unknown,
      },
    ]);

    const missing = await client.rest.get(`/guilds/${GUILD}/roles`).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(DiscordAPIError);
    expect(missing).toMatchObject({ status: 404, code: 0, message: '404: Not Found' });
    expect(fake.unknownRoutes).toEqual([`GET /api/v10/guilds/${GUILD}/roles`]);
  });

  it('op 7 Reconnect: the client resumes its session on resume_gateway_url', async () => {
    const fake = await startFake();
    const client = await login(fake);
    const resumed = once(client, Events.ShardResume);
    fake.reconnect();
    await resumed;
    expect(fake.resumes).toBe(1);
    expect(fake.identifies).toHaveLength(1);
    expect(fake.connectedShards).toEqual([[0, 1]]);
    expect(client.guilds.cache.get(GUILD)?.available).toBe(true);
  });
});
