// Over 450 lines: one fake of Discord's gateway and the REST routes a bot uses, sharing one session.
/**
 * A fake of Discord's main gateway (API v10, JSON, no compression) and of the REST routes a bot uses,
 * on loopback, so a real discord.js `Client` logs in with no Discord account: `new Client({ rest: {
 * api: `${fake.url}/api` } })`. The gateway URL is what `GET /api/v10/gateway/bot` answers.
 *
 * Gateway: Hello; Heartbeat → ACK; Identify → READY, then one GUILD_CREATE per guild of the shard
 * (`(guildId >> 22) % shardCount === shardId`); Resume → RESUMED (or Invalid Session, false); Voice
 * State Update (op 4) → VOICE_STATE_UPDATE for the bot and, when joining, VOICE_SERVER_UPDATE pointing
 * at a `FakeVoiceServer`; `reconnect()` sends op 7. Closes 4004 on a wrong token, 4010 on a bad shard,
 * 4003 on a payload before Identify, 4005 on a second Identify, 4002 on compression or a payload that
 * is not JSON. Many shards, and clients in many processes, may be connected at once.
 * REST: gateway/bot, users/@me, applications/@me, global and guild command overwrites, channel
 * messages; `Bot <token>` or 401. Anything else answers 404 (Discord's error shape) and is logged.
 *
 * (Over 400 lines on purpose: one protocol peer, REST and gateway sharing its guilds and sessions, with
 * the guild, member and message objects discord.js reads written out in full.)
 *
 * Not implemented: compression (zlib-stream, identify `compress`), ETF, rate limits, events replayed
 * on resume, presences, members joining or talking, interactions, every other route.
 */
import { rawText } from '../../src/http/ws-data.js';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import { FakeVoiceServer, type FakeVoiceServerOptions } from './voice-server.js';

/** VIEW_CHANNEL | SEND_MESSAGES | CONNECT | SPEAK. */
const EVERYONE_PERMISSIONS = (1n << 10n) | (1n << 11n) | (1n << 20n) | (1n << 21n);
const DISCORD_EPOCH = 1_420_070_400_000n;
let increment = 0n;

/** A fresh snowflake (timestamp, then a counter). */
export function snowflake(): string {
  increment = (increment + 1n) & 0xfffn;
  return String(((BigInt(Date.now()) - DISCORD_EPOCH) << 22n) | increment);
}

/** The shard a guild belongs to, by Discord's formula. */
export function shardOf(guildId: string, shardCount: number): number {
  return Number((BigInt(guildId) >> 22n) % BigInt(shardCount));
}

export interface FakeChannel {
  id: string;
  name: string;
  /** 0 text, 2 voice. */
  type: 0 | 2;
}

export interface FakeGuildOptions {
  id: string;
  name?: string;
  /** Default: a text channel 'general' and a voice channel 'Voice', with fresh ids. */
  channels?: FakeChannel[];
  /** Members (not the bot) already in a voice channel when the guild is sent. */
  voiceStates?: Array<{ userId: string; channelId: string }>;
  /** The @everyone role's permissions (default VIEW_CHANNEL, SEND_MESSAGES, CONNECT, SPEAK). */
  permissions?: bigint;
}

export interface FakeGuild {
  readonly id: string;
  readonly name: string;
  readonly channels: readonly FakeChannel[];
  /** Who is in which voice channel (the bot too, once it joined), by user id. */
  readonly voiceChannels: Map<string, string>;
  readonly permissions: bigint;
}

export interface FakeDiscordOptions {
  /** The bot token the client must present (REST `Bot <token>`, gateway Identify). */
  token: string;
  guilds: FakeGuildOptions[];
  botId?: string;
  botName?: string;
  /** Default: the bot's id, as for Discord's bots. */
  applicationId?: string;
  /** What `GET /gateway/bot` recommends (default 1). */
  recommendedShards?: number;
  /** session_start_limit.max_concurrency (default 16: shards of one client identify together). */
  maxConcurrency?: number;
  heartbeatIntervalMs?: number;
  /** Where voice joins are sent: a running server (the caller closes it) or options to start one here. */
  voice?: FakeVoiceServer | FakeVoiceServerOptions;
}

/** The `d` of an op 4 the bot sent, with the session it came on. */
export interface VoiceStatePayload {
  guild_id: string;
  channel_id: string | null;
  self_mute: boolean;
  self_deaf: boolean;
  sessionId: string;
  shard: [number, number];
}

interface Session {
  readonly id: string;
  readonly shard: [number, number];
  readonly guildIds: readonly string[];
  seq: number;
  ws: WebSocket | undefined;
}

type Json = Record<string, unknown>;

export class FakeDiscord {
  /** The bot's user, as Discord sends it. */
  readonly user: Json & { id: string; username: string };
  readonly applicationId: string;
  readonly guilds: readonly FakeGuild[];
  /** The voice server joins are sent to (replace it to move the bot to another region on its next join). */
  voice: FakeVoiceServer | undefined;
  /** Every op 4 received. */
  readonly voiceStatePayloads: VoiceStatePayload[] = [];
  /** Every Identify: its shard and intents. */
  readonly identifies: Array<{ shard: [number, number]; intents: number; sessionId: string }> = [];
  /** Command overwrites: `guildId` null for the global ones. */
  readonly commandSets: Array<{ guildId: string | null; commands: Json[] }> = [];
  readonly messages: Array<{ channelId: string; body: Json }> = [];
  /** `METHOD /path` of every REST request that matched no route. */
  readonly unknownRoutes: string[] = [];
  /** Gateway request URLs (path and query). */
  readonly gatewayUrls: string[] = [];
  /** Resumes accepted. */
  resumes = 0;
  private readonly sessions = new Map<string, Session>();
  private readonly sockets = new Set<WebSocket>();

  private constructor(
    private readonly options: FakeDiscordOptions,
    private readonly http: Server,
    private readonly wss: WebSocketServer,
    private readonly ownsVoice: boolean,
  ) {
    const id = options.botId ?? snowflake();
    const username = options.botName ?? 'voxbridge-fake';
    this.user = { id, username, discriminator: '0', bot: true, ...nulls('global_name', 'avatar') };
    this.applicationId = options.applicationId ?? id;
    this.guilds = options.guilds.map((g) => ({
      id: g.id,
      name: g.name ?? `guild ${g.id}`,
      channels: g.channels ?? [
        { id: snowflake(), name: 'general', type: 0 },
        { id: snowflake(), name: 'Voice', type: 2 },
      ],
      voiceChannels: new Map((g.voiceStates ?? []).map((v) => [v.userId, v.channelId])),
      permissions: g.permissions ?? EVERYONE_PERMISSIONS,
    }));
    http.on('request', (req, res) => this.onRequest(req, res));
    wss.on('connection', (ws, req) => this.onConnection(ws, req.url ?? ''));
  }

  static async start(options: FakeDiscordOptions): Promise<FakeDiscord> {
    const http = createServer();
    const wss = new WebSocketServer({ server: http });
    http.listen(0, '127.0.0.1');
    await once(http, 'listening');
    const owns = options.voice !== undefined && !(options.voice instanceof FakeVoiceServer);
    const fake = new FakeDiscord(options, http, wss, owns);
    if (options.voice instanceof FakeVoiceServer) fake.voice = options.voice;
    else if (options.voice) fake.voice = await FakeVoiceServer.start(options.voice);
    return fake;
  }

  /** The HTTP root: give discord.js `rest: { api: `${url}/api` }`. */
  get url(): string {
    return `http://127.0.0.1:${(this.http.address() as AddressInfo).port}`;
  }

  get gatewayUrl(): string {
    return `ws://127.0.0.1:${(this.http.address() as AddressInfo).port}`;
  }

  /** Identified shards with an open socket. */
  get connectedShards(): Array<[number, number]> {
    return [...this.sessions.values()].filter((s) => s.ws).map((s) => s.shard);
  }

  async waitFor(predicate: () => boolean, timeoutMs: number, what = 'condition'): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    while (!predicate()) {
      if (performance.now() > deadline) throw new Error(`fake Discord: no ${what} within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 5));
    }
  }

  /** Op 7 on every socket: the clients reconnect to resume_gateway_url and resume. */
  reconnect(): void {
    for (const ws of this.sockets) send(ws, { op: 7, d: null });
  }

  async close(): Promise<void> {
    for (const ws of this.sockets) ws.terminate();
    this.sockets.clear();
    this.wss.close();
    this.http.closeAllConnections();
    await new Promise<void>((r) => this.http.close(() => r()));
    if (this.ownsVoice) await this.voice?.close();
  }

  // --- gateway ---

  private onConnection(ws: WebSocket, url: string): void {
    this.gatewayUrls.push(url);
    this.sockets.add(ws);
    let session: Session | undefined;
    ws.on('error', () => undefined);
    ws.on('close', () => {
      this.sockets.delete(ws);
      if (session?.ws === ws) session.ws = undefined;
    });
    const query = new URL(url, 'ws://x').searchParams;
    if ((query.get('encoding') ?? 'json') !== 'json' || query.has('compress')) {
      ws.close(4002, 'the fake speaks JSON without compression only');
      return;
    }
    ws.on('message', (data: RawData) => {
      let packet: { op: number; d: unknown };
      try {
        packet = JSON.parse(rawText(data)) as { op: number; d: unknown };
      } catch {
        ws.close(4002, 'Error while decoding payload.');
        return;
      }
      const d = (packet.d ?? {}) as Json;
      if (packet.op === 1) send(ws, { op: 11, d: null });
      else if (packet.op === 2 && session) ws.close(4005, 'Already authenticated.');
      else if (packet.op === 2) session = this.identify(ws, d);
      else if (packet.op === 6) session = this.resume(ws, d);
      else if (!session) ws.close(4003, 'Not authenticated.');
      else if (packet.op === 4) this.voiceState(session, d);
    });
    send(ws, { op: 10, d: { heartbeat_interval: this.options.heartbeatIntervalMs ?? 41_250 } });
  }

  private identify(ws: WebSocket, d: Json): Session | undefined {
    if (d['token'] !== this.options.token) {
      ws.close(4004, 'Authentication failed.');
      return undefined;
    }
    const [shardId, shardCount] = (d['shard'] as [number, number] | undefined) ?? [0, 1];
    if (!(shardCount >= 1 && shardId >= 0 && shardId < shardCount)) {
      ws.close(4010, 'Invalid shard.');
      return undefined;
    }
    const guilds = this.guilds.filter((g) => shardOf(g.id, shardCount) === shardId);
    const id = randomBytes(16).toString('hex');
    const session: Session = {
      id,
      shard: [shardId, shardCount],
      guildIds: guilds.map((g) => g.id),
      seq: 0,
      ws,
    };
    this.sessions.set(session.id, session);
    this.identifies.push({ shard: session.shard, intents: Number(d['intents']), sessionId: session.id });
    this.dispatch(session, 'READY', {
      v: 10,
      user: { ...this.user, flags: 0, verified: true },
      guilds: guilds.map((g) => ({ id: g.id, unavailable: true })),
      session_id: session.id,
      resume_gateway_url: this.gatewayUrl,
      shard: session.shard,
      application: { id: this.applicationId, flags: 0 },
      ...empties('private_channels', 'presences'),
    });
    for (const g of guilds) this.dispatch(session, 'GUILD_CREATE', this.guildPayload(g, session.id));
    return session;
  }

  private resume(ws: WebSocket, d: Json): Session | undefined {
    const session = this.sessions.get(String(d['session_id']));
    if (!session || d['token'] !== this.options.token) {
      send(ws, { op: 9, d: false });
      return undefined;
    }
    if (session.ws && session.ws !== ws) session.ws.close(4009, 'Session timed out.');
    session.ws = ws;
    this.resumes++;
    this.dispatch(session, 'RESUMED', {});
    return session;
  }

  private voiceState(session: Session, d: Json): void {
    const guildId = String(d['guild_id']);
    const channelId = typeof d['channel_id'] === 'string' ? d['channel_id'] : null;
    this.voiceStatePayloads.push({
      guild_id: guildId,
      channel_id: channelId,
      self_mute: Boolean(d['self_mute']),
      self_deaf: Boolean(d['self_deaf']),
      sessionId: session.id,
      shard: session.shard,
    });
    const guild = this.guilds.find((g) => g.id === guildId);
    if (!guild || !session.guildIds.includes(guildId)) return; // not this shard's: Discord ignores it
    if (channelId === null) guild.voiceChannels.delete(this.user.id);
    else guild.voiceChannels.set(this.user.id, channelId);
    this.dispatch(session, 'VOICE_STATE_UPDATE', {
      ...this.voiceStatePayload(this.user.id, channelId, session.id, d),
      guild_id: guildId,
      member: this.member(this.user),
    });
    if (channelId !== null) {
      // The voice server learns which channel (which DAVE group) this voice session is for.
      this.voice?.place(session.id, channelId);
      this.dispatch(session, 'VOICE_SERVER_UPDATE', {
        token: randomBytes(8).toString('hex'),
        guild_id: guildId,
        endpoint: this.voice?.endpoint ?? null,
      });
    }
  }

  private dispatch(session: Session, t: string, d: unknown): void {
    session.seq++;
    if (session.ws) send(session.ws, { op: 0, t, s: session.seq, d });
  }

  private voiceStatePayload(userId: string, channelId: string | null, sessionId: string, d: Json = {}): Json {
    const self = { self_deaf: Boolean(d['self_deaf']), self_mute: Boolean(d['self_mute']) };
    const flags = falses('deaf', 'mute', 'self_video', 'suppress');
    const state = { user_id: userId, channel_id: channelId, session_id: sessionId };
    return { ...state, ...flags, ...self, request_to_speak_timestamp: null };
  }

  private member(user: Json): Json {
    const joined_at = new Date(0).toISOString();
    const empty = nulls('nick', 'avatar', 'premium_since', 'communication_disabled_until');
    return { user, roles: [], joined_at, ...empty, ...falses('deaf', 'mute', 'pending'), flags: 0 };
  }

  /** A guild as GUILD_CREATE carries it; the fields discord.js reads are there, empty where they may be. */
  private guildPayload(g: FakeGuild, sessionId: string): Json {
    const humans = [...g.voiceChannels.keys()].filter((id) => id !== this.user.id);
    const human = (id: string): Json => ({
      id,
      username: `member-${id}`,
      discriminator: '0',
      global_name: null,
    });
    const members = [this.member(this.user), ...humans.map((id) => this.member(human(id)))];
    const everyone = {
      id: g.id,
      name: '@everyone',
      permissions: String(g.permissions),
      color: 0,
      position: 0,
    };
    return {
      id: g.id,
      name: g.name,
      owner_id: humans[0] ?? '1',
      ...nulls('icon', 'splash', 'discovery_splash', 'banner', 'description', 'afk_channel_id'),
      ...nulls('system_channel_id', 'rules_channel_id', 'public_updates_channel_id', 'vanity_url_code'),
      ...nulls('safety_alerts_channel_id', 'application_id'),
      ...zeros('verification_level', 'default_message_notifications', 'explicit_content_filter', 'mfa_level'),
      ...zeros('nsfw_level', 'premium_tier', 'premium_subscription_count', 'system_channel_flags'),
      ...falses('premium_progress_bar_enabled', 'widget_enabled', 'large', 'unavailable'),
      afk_timeout: 300,
      preferred_locale: 'en-US',
      max_members: 500_000,
      max_video_channel_users: 25,
      max_stage_video_channel_users: 50,
      roles: [{ ...everyone, ...falses('hoist', 'managed', 'mentionable'), icon: null, unicode_emoji: null }],
      channels: g.channels.map((c, position) => ({
        ...{ id: c.id, type: c.type, guild_id: g.id, name: c.name, position, parent_id: null, nsfw: false },
        ...{ permission_overwrites: [], rate_limit_per_user: 0 },
        ...(c.type === 2
          ? { bitrate: 64_000, user_limit: 0, rtc_region: null, video_quality_mode: 1 }
          : { topic: null, last_message_id: null }),
      })),
      members,
      member_count: members.length,
      voice_states: [...g.voiceChannels].map(([userId, channelId]) =>
        this.voiceStatePayload(userId, channelId, userId === this.user.id ? sessionId : snowflake()),
      ),
      joined_at: new Date(0).toISOString(),
      ...empties('features', 'emojis', 'stickers', 'presences', 'threads', 'stage_instances'),
      ...empties('guild_scheduled_events', 'soundboard_sounds'),
    };
  }

  // --- REST ---

  private onRequest(req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let body: unknown;
      try {
        body = raw && (req.headers['content-type'] ?? '').includes('json') ? JSON.parse(raw) : raw;
      } catch {
        body = raw;
      }
      const [status, answer] = this.route(req, body);
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(status === 204 ? undefined : JSON.stringify(answer));
    });
  }

  private route(req: IncomingMessage, body: unknown): [number, unknown] {
    const method = req.method ?? 'GET';
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const match = /^\/api\/v\d+(\/.*)$/.exec(path);
    const route = match?.[1] ?? '';
    if (match && req.headers.authorization !== `Bot ${this.options.token}`)
      return [401, { message: '401: Unauthorized', code: 0 }];
    const at = (pattern: RegExp, verb: string): string[] | undefined => {
      const m = method === verb ? pattern.exec(route) : null;
      return m ? m.slice(1) : undefined;
    };
    let m: string[] | undefined;
    if (at(/^\/gateway\/bot$/, 'GET')) {
      const limit = { total: 1000, remaining: 1000, reset_after: 86_400_000 };
      const max_concurrency = this.options.maxConcurrency ?? 16;
      const shards = this.options.recommendedShards ?? 1;
      return [200, { url: this.gatewayUrl, shards, session_start_limit: { ...limit, max_concurrency } }];
    }
    if (at(/^\/users\/@me$/, 'GET')) return [200, { ...this.user, flags: 0, verified: true }];
    if (at(/^\/applications\/@me$/, 'GET'))
      return [200, { id: this.applicationId, name: this.user.username, flags: 0, bot_public: true }];
    if ((m = at(/^\/applications\/(\d+)\/commands$/, 'PUT'))) return this.setCommands(m[0]!, null, body);
    if ((m = at(/^\/applications\/(\d+)\/guilds\/(\d+)\/commands$/, 'PUT')))
      return this.setCommands(m[0]!, m[1]!, body);
    if ((m = at(/^\/channels\/(\d+)\/messages$/, 'POST'))) return this.postMessage(m[0]!, body);
    this.unknownRoutes.push(`${method} ${path}`);
    return [404, { message: '404: Not Found', code: 0 }];
  }

  private setCommands(appId: string, guildId: string | null, body: unknown): [number, unknown] {
    if (appId !== this.applicationId) return [404, { message: 'Unknown Application', code: 10002 }];
    if (guildId !== null && !this.guilds.some((g) => g.id === guildId))
      return [403, { message: 'Missing Access', code: 50001 }];
    const commands = Array.isArray(body) ? (body as Json[]) : [];
    this.commandSets.push({ guildId, commands });
    const scope = guildId === null ? {} : { guild_id: guildId };
    const made = { application_id: appId, ...scope, type: 1, options: [], default_member_permissions: null };
    return [200, commands.map((c) => ({ id: snowflake(), version: snowflake(), ...made, ...c }))];
  }

  private postMessage(channelId: string, body: unknown): [number, unknown] {
    const guild = this.guilds.find((g) => g.channels.some((c) => c.id === channelId));
    if (!guild) return [404, { message: 'Unknown Channel', code: 10003 }];
    const message = (typeof body === 'object' && body !== null ? body : {}) as Json;
    this.messages.push({ channelId, body: message });
    const content = typeof message['content'] === 'string' ? message['content'] : '';
    const ids = { id: snowflake(), channel_id: channelId, guild_id: guild.id };
    return [
      200,
      {
        ...{ ...ids, type: 0, author: this.user, content, timestamp: new Date().toISOString(), flags: 0 },
        ...{ edited_timestamp: null, ...falses('tts', 'mention_everyone', 'pinned') },
        ...empties('mentions', 'mention_roles', 'attachments', 'embeds', 'components'),
      },
    ];
  }
}

const fill =
  (value: () => unknown) =>
  (...keys: string[]): Json =>
    Object.fromEntries(keys.map((k) => [k, value()]));
const nulls = fill(() => null);
const zeros = fill(() => 0);
const falses = fill(() => false);
const empties = fill(() => []);

function send(ws: WebSocket, packet: { op: number; d: unknown; t?: string; s?: number }): void {
  if (ws.readyState === ws.OPEN) ws.send(JSON.stringify({ t: null, s: null, ...packet }));
}
