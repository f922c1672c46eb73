import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { flowsSchema } from '../flows/schema.js';
import { SCOPES } from '../service/auth.js';
import { isLoopbackHost } from '../http/web-guard.js';
import { PROJECT_ROOT } from '../paths.js';
import { CONFIGURABLE_OUTBOUND, GATEWAYS } from '../protocols/types.js';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

const keySchema = z.strictObject({
  id: z.string().min(1),
  keyEnv: z.string().regex(/^[A-Z_][A-Z0-9_]*$/, 'must name an environment variable'),
  scopes: z.array(z.enum(SCOPES)).min(1),
});

/** An outbound codec where the gateway leaves it to the deployment (Telnyx, Plivo, jambonz, …). */
const wireFormatSchema = z.strictObject({
  encoding: z.enum(['mulaw', 'alaw', 's16le']),
  sampleRate: z.union([z.literal(8000), z.literal(16_000), z.literal(24_000)]),
  /** Telnyx L16 only: RTP payloads are big-endian (RFC 3551) unless the account says otherwise. */
  l16ByteOrder: z.enum(['big', 'little']).optional(),
});

const castMemberSchema = z.strictObject({
  voiceId: z.string().min(1),
  voiceSettings: z
    .strictObject({
      stability: z.number().min(0).max(1).optional(),
      similarityBoost: z.number().min(0).max(1).optional(),
      style: z.number().min(0).max(1).optional(),
      useSpeakerBoost: z.boolean().optional(),
      speed: z.number().min(0.7).max(1.2).optional(),
    })
    .optional(),
});

const snowflake = z.string().regex(/^\d{1,25}$/, 'must be a Discord id (snowflake)');

const discordSchema = z.strictObject({
  /** Default voice of /say and of every guild. */
  voiceId: z.string().min(1),
  /** Register the slash commands in these guilds only (instant); empty: globally. */
  commandGuildIds: z.array(snowflake),
  /**
   * DISCORD_SHARDS: null runs the bot in this process (one shard). A count, or `auto` (what Discord
   * recommends), runs each shard as a process of its own (discord.js's ShardingManager); needs a cluster.
   */
  shards: z.union([z.literal('auto'), z.number().int().min(1).max(10_000)]).nullable(),
  /** DISCORD_SHARD_IDS: the shards this machine runs (the others run elsewhere); null: all of them. */
  shardIds: z.array(z.number().int().min(0)).min(1).nullable(),
  /** Between two shard processes' starts: Discord lets a bot identify once per 5 s (per max_concurrency bucket). */
  shardSpawnDelayMs: z.number().int().min(0).max(60_000),
  /** DISCORD_API_URL: Discord's REST API root (`https://discord.com/api`) or a proxy in front of it; null: Discord's. */
  apiUrl: z.url({ protocol: /^https?$/ }).nullable(),
  bargeIn: z.strictObject({
    enabled: z.boolean(),
    minSpeechMs: z.number().int().min(20).max(5000),
    maxGapMs: z.number().int().min(0).max(1000),
    minLevelDbfs: z.number().min(-96).max(0),
  }),
  /** Per-guild overrides by guild id, e.g. barge-in off for a noisy table. */
  guilds: z.record(snowflake, z.strictObject({ bargeIn: z.boolean().optional() })),
  joinTimeoutMs: z.number().int().min(1000).max(120_000),
  reconnect: z.strictObject({
    maxAttempts: z.number().int().min(0).max(100),
    baseDelayMs: z.number().int().min(0),
    maxDelayMs: z.number().int().min(0),
    settleMs: z.number().int().min(0),
    readyTimeoutMs: z.number().int().min(1000),
  }),
  narration: z
    .strictObject({
      /** Who speaks untagged text. */
      narrator: z.string().min(1),
      /** Character → voice. */
      cast: z.record(z.string().min(1).max(40), castMemberSchema),
    })
    .refine((n) => Object.keys(n.cast).some((name) => name.toLowerCase() === n.narrator.toLowerCase()), {
      message: 'the narrator must be in the cast',
    }),
});

export const configSchema = z.strictObject({
  server: z.strictObject({
    host: z.string().min(1),
    port: z.coerce.number().int().min(0).max(65_535),
    /** On SIGTERM/SIGINT, how long speech under way may go on before it is cut (ms). */
    shutdownGraceMs: z.number().int().min(0).max(120_000),
    /** Host names answered besides loopback names and IP literals (src/http/web-guard.ts). */
    allowedHosts: z.array(
      z
        .string()
        .regex(/^(\*|\.?[a-z0-9]([a-z0-9.-]*[a-z0-9])?)$/i, 'must be a host name, .domain, or *')
        .max(253),
    ),
    /** Open connections at once (HTTP and WebSocket); past it new ones get 503 and are closed. */
    maxConnections: z.number().int().min(16).max(1_000_000),
    /** A connection must send its request headers within this long (slow-loris), ms. */
    headersTimeoutMs: z.number().int().min(1000).max(300_000),
    /** A request (headers and body) must arrive within this long, ms; upgrades and responses are not bound. */
    requestTimeoutMs: z.number().int().min(1000).max(3_600_000),
    /** An idle keep-alive connection is closed after this long, ms. */
    keepAliveTimeoutMs: z.number().int().min(100).max(600_000),
  }),
  dataDir: z.string().min(1),
  logLevel: z.enum(LOG_LEVELS),
  speech: z.strictObject({
    /**
     * A remote speech service; null mounts the embedded one. `user:password@` in it is sent as
     * `Authorization: Basic` (besides the key header) and shown as `[redacted]` in logs.
     */
    baseUrl: z.url({ protocol: /^https?$/ }).nullable(),
    pathPrefix: z.string().regex(/^(\/[^/]+)*$/, 'must be empty or start with / and not end with /'),
    authHeader: z.enum(['ServicePlatform-APIKey', 'xi-api-key']),
    modelId: z.string().min(1),
    firstByteTimeoutMs: z.number().int().positive(),
    idleTimeoutMs: z.number().int().positive(),
    maxRetries: z.number().int().min(0).max(10),
    retryBaseDelayMs: z.number().int().min(0),
    retryMaxDelayMs: z.number().int().min(0),
  }),
  service: z.strictObject({
    workers: z.number().int().min(0).max(64),
    /** Speech requests each key of `keys` may have in flight. */
    maxConcurrentPerKey: z.number().int().positive(),
    /**
     * Speech requests voxbridge's own speaking (calls, Discord; an internal key) may have in flight; null:
     * the larger of maxConcurrentPerKey and 2 × calls.maxCalls (a segment playing and the next prefetching
     * per call).
     */
    internalMaxConcurrent: z.number().int().positive().nullable(),
    keys: z.array(keySchema),
    voices: z.strictObject({
      maxFiles: z.number().int().positive(),
      maxFileBytes: z.number().int().positive(),
      maxTotalBytes: z.number().int().positive(),
      /** Voice uploads being received or analysed at once, all keys together; more get 429. */
      maxConcurrentUploads: z.number().int().positive(),
      /** Bytes of samples the voice store may hold (uploads in progress count); past it, 507. */
      maxStoreBytes: z.number().int().positive(),
    }),
  }),
  calls: z.strictObject({
    /** Voice of every call unless a flow node or a say request names another. */
    voiceId: z.string().min(1),
    gateways: z.array(z.enum(GATEWAYS)).min(1),
    maxCalls: z.number().int().positive(),
    /** Media connections that have not sent their start message yet, counted apart from maxCalls. */
    maxPendingSockets: z.number().int().positive(),
    /** A media connection without a start message this long after it opened is closed. */
    startTimeoutMs: z.number().int().min(100).max(60_000),
    maxPayloadBytes: z.number().int().min(1024),
    maxMessagesPerSecond: z.number().int().positive(),
    leadMs: z.number().int().min(20).max(2000),
    markIntervalMs: z.number().int().min(20).max(5000),
    /** Audio of repeated prompts kept in memory (bytes of 24 kHz PCM), shared by all calls. */
    phraseCacheBytes: z.number().int().min(0),
    /** Outbound codec per gateway where the gateway does not say it in its start message. */
    formats: z.partialRecord(z.enum(GATEWAYS), wireFormatSchema).superRefine((formats, ctx) => {
      for (const gateway of Object.keys(formats))
        if (!(CONFIGURABLE_OUTBOUND as readonly string[]).includes(gateway))
          ctx.addIssue({
            code: 'custom',
            path: [gateway],
            message: `${gateway} plays what its start message or protocol fixes; only ${CONFIGURABLE_OUTBOUND.join(', ')} take an outbound format`,
          });
    }),
    bargeIn: z.strictObject({
      enabled: z.boolean(),
      minSpeechMs: z.number().int().min(20).max(5000),
      /** While the bot is audible its own echo must not barge in: longer speech is required. */
      minSpeechWhileAudibleMs: z.number().int().min(20).max(5000),
    }),
    /** The flow a call runs when its parameters name none; null: none (driven by the control API). */
    defaultFlow: z.string().nullable(),
  }),
  flows: flowsSchema,
  discord: discordSchema,
  cluster: z
    .strictObject({
      /** REDIS_URL: null runs one instance, as without a cluster. */
      redisUrl: z.url({ protocol: /^rediss?$/ }).nullable(),
      /** INSTANCE_ID; null: `<hostname>-<pid>`. */
      instanceId: z
        .string()
        .regex(/^[A-Za-z0-9._-]{1,64}$/, 'letters, digits, ".", "_" and "-", at most 64')
        .nullable(),
      /** INSTANCE_URL, the URL other instances reach this one at; null: the address it listens on. */
      instanceUrl: z.url({ protocol: /^https?$/ }).nullable(),
      keyPrefix: z.string().regex(/^[A-Za-z0-9:._-]{0,64}$/, 'letters, digits, ":", ".", "_" and "-"'),
      heartbeatMs: z.number().int().min(100).max(60_000),
      ttlMs: z.number().int().min(300).max(300_000),
      /** Connecting to another instance: past this it counts as unreachable (503). */
      connectTimeoutMs: z.number().int().min(50).max(30_000),
      phraseCache: z.strictObject({
        enabled: z.boolean(),
        maxEntryBytes: z
          .number()
          .int()
          .min(1024)
          .max(64 * 1024 * 1024),
        ttlSeconds: z
          .number()
          .int()
          .min(1)
          .max(30 * 86_400),
        /** A lookup slower than this counts as a miss (the speech service is asked). */
        timeoutMs: z.number().int().min(1).max(5000),
      }),
    })
    .superRefine((c, ctx) => {
      if (c.ttlMs < 2 * c.heartbeatMs)
        ctx.addIssue({ code: 'custom', path: ['ttlMs'], message: 'must be at least twice heartbeatMs' });
    }),
});

export type Config = z.infer<typeof configSchema>;

/** Secrets live beside the config, never in it, so a config dump cannot leak them. */
export interface Secrets {
  /** The key the client sends; in embedded mode the local service accepts it with every scope. */
  speechApiKey: string | undefined;
  /** Extra service keys by id, read from the variables the config names. */
  serviceKeys: ReadonlyMap<string, string>;
  /** Validates `X-Twilio-Signature` on Twilio's upgrade when set. */
  twilioAuthToken: string | undefined;
  /** Shared token every gateway's connection must carry (header, Basic auth or path segment). */
  mediaStreamToken: string | undefined;
  /** Bearer token of the control API. */
  controlToken: string | undefined;
  /** The Discord bot's token: the bot runs when it is set. */
  discordToken: string | undefined;
  /** What instances of one cluster prove to each other on a forwarded request (CLUSTER_TOKEN, else the control token). */
  clusterToken: string | undefined;
}

/**
 * On an address other machines can reach, the media endpoints and the control API must be protected:
 * refuse to start otherwise, saying what to set.
 */
function checkExposure(config: Config, secrets: Secrets): void {
  if (isLoopbackHost(config.server.host)) return;
  const missing: string[] = [];
  if (!secrets.controlToken) missing.push('CONTROL_TOKEN (bearer token of the control API)');
  const unprotected = config.calls.gateways.filter(
    (g) => !secrets.mediaStreamToken && !(g === 'twilio' && secrets.twilioAuthToken),
  );
  if (unprotected.length > 0)
    missing.push(
      `MEDIA_STREAM_TOKEN (shared token of the media endpoints; ${unprotected.join(', ')} would be open)` +
        (unprotected.includes('twilio')
          ? ' or, for Twilio alone, TWILIO_AUTH_TOKEN with calls.gateways: [twilio]'
          : ''),
    );
  if (config.cluster.redisUrl !== null && !secrets.clusterToken)
    missing.push(
      'CLUSTER_TOKEN (or CONTROL_TOKEN: the secret instances forward requests to each other with)',
    );
  if (missing.length > 0)
    throw new ConfigError(
      `refusing to listen on ${config.server.host} (not loopback) without: ${missing.join('; ')}. ` +
        'Set them in the environment, or listen on 127.0.0.1.',
    );
}

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

const DEFAULT_CONFIG_PATH = join(PROJECT_ROOT, 'config', 'default.yaml');

type Env = Readonly<Record<string, string | undefined>>;

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Deep merge: objects merge key by key, everything else (arrays included) is replaced. */
export function mergeConfig(base: unknown, over: unknown): unknown {
  if (!isPlainObject(base) || !isPlainObject(over)) return over === undefined ? base : over;
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(over)) out[k] = mergeConfig(base[k], v);
  return out;
}

function readYaml(path: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (cause) {
    throw new ConfigError(`cannot read config file ${path}: ${(cause as Error).message}`, { cause });
  }
  try {
    return parseYaml(text) ?? {};
  } catch (cause) {
    throw new ConfigError(`config file ${path} is not valid YAML: ${(cause as Error).message}`, { cause });
  }
}

function envOverrides(env: Env): Record<string, unknown> {
  const o: Record<string, unknown> = {};
  const server: Record<string, unknown> = {};
  if (env['HOST']) server['host'] = env['HOST'];
  if (env['PORT']) server['port'] = env['PORT'];
  if (env['ALLOWED_HOSTS'])
    server['allowedHosts'] = env['ALLOWED_HOSTS']
      .split(',')
      .map((h) => h.trim())
      .filter(Boolean);
  if (Object.keys(server).length) o['server'] = server;
  if (env['SPEECH_BASE_URL']) o['speech'] = { baseUrl: env['SPEECH_BASE_URL'].replace(/\/+$/, '') };
  if (env['DATA_DIR']) o['dataDir'] = env['DATA_DIR'];
  if (env['LOG_LEVEL']) o['logLevel'] = env['LOG_LEVEL'];
  const cluster: Record<string, unknown> = {};
  if (env['REDIS_URL']) cluster['redisUrl'] = env['REDIS_URL'];
  if (env['INSTANCE_ID']) cluster['instanceId'] = env['INSTANCE_ID'];
  if (env['INSTANCE_URL']) cluster['instanceUrl'] = env['INSTANCE_URL'].replace(/\/+$/, '');
  if (Object.keys(cluster).length) o['cluster'] = cluster;
  const discord: Record<string, unknown> = {};
  if (env['DISCORD_API_URL']) discord['apiUrl'] = env['DISCORD_API_URL'].replace(/\/+$/, '');
  if (env['DISCORD_SHARDS'])
    discord['shards'] = env['DISCORD_SHARDS'] === 'auto' ? 'auto' : Number(env['DISCORD_SHARDS']);
  if (env['DISCORD_SHARD_IDS'])
    discord['shardIds'] = env['DISCORD_SHARD_IDS'].split(',').map((id) => Number(id.trim()));
  if (Object.keys(discord).length) o['discord'] = discord;
  return o;
}

function describeIssues(error: z.ZodError, source: string): string {
  const lines = error.issues.map((issue) => {
    const key = issue.path.length ? issue.path.join('.') : '(root)';
    return `  ${key}: ${issue.message}`;
  });
  return `invalid configuration (${source}):\n${lines.join('\n')}`;
}

export interface LoadedConfig {
  config: Config;
  secrets: Secrets;
  /** Set when this process is one shard of a sharded bot (started by discord.js's ShardingManager). */
  shard?: { readonly id: number; readonly count: number } | undefined;
}

/** default.yaml, then the file named by VOXBRIDGE_CONFIG, then the environment; validated once. */
export function loadConfig(env: Env = process.env, defaultPath: string = DEFAULT_CONFIG_PATH): LoadedConfig {
  let merged = readYaml(defaultPath);
  const sources = [defaultPath];
  const overlay = env['VOXBRIDGE_CONFIG'];
  if (overlay) {
    merged = mergeConfig(merged, readYaml(overlay));
    sources.push(overlay);
  }
  merged = mergeConfig(merged, envOverrides(env));
  sources.push('environment');
  const parsed = configSchema.safeParse(merged);
  if (!parsed.success) throw new ConfigError(describeIssues(parsed.error, sources.join(' + ')));
  const config = parsed.data;

  const serviceKeys = new Map<string, string>();
  for (const k of config.service.keys) {
    const value = env[k.keyEnv];
    if (!value)
      throw new ConfigError(
        `invalid configuration: service.keys ${k.id}: environment variable ${k.keyEnv} is not set`,
      );
    serviceKeys.set(k.id, value);
  }
  const defaultFlow = config.calls.defaultFlow;
  if (defaultFlow !== null && !(defaultFlow in config.flows))
    throw new ConfigError(`invalid configuration: calls.defaultFlow: no flow named "${defaultFlow}"`);
  const secrets: Secrets = {
    speechApiKey: env['SPEECH_API_KEY'] || undefined,
    serviceKeys,
    twilioAuthToken: env['TWILIO_AUTH_TOKEN'] || undefined,
    mediaStreamToken: env['MEDIA_STREAM_TOKEN'] || undefined,
    controlToken: env['CONTROL_TOKEN'] || undefined,
    discordToken: env['DISCORD_TOKEN'] || undefined,
    clusterToken: env['CLUSTER_TOKEN'] || env['CONTROL_TOKEN'] || undefined,
  };
  checkExposure(config, secrets);
  const { shards, shardIds } = config.discord;
  if (shards !== null && config.cluster.redisUrl === null)
    throw new ConfigError(
      'invalid configuration: discord.shards needs a cluster (REDIS_URL): each shard is a process of its own, ' +
        'and the control API reaches a guild on its shard through the cluster',
    );
  if (typeof shards === 'number' && shardIds?.some((id) => id >= shards))
    throw new ConfigError(
      `invalid configuration: discord.shardIds: every id must be below discord.shards (${shards})`,
    );
  // discord.js's ShardingManager starts each shard with these set.
  const shard = env['SHARDING_MANAGER']
    ? { id: Number(env['SHARDS']), count: Number(env['SHARD_COUNT']) }
    : undefined;
  if (shard && !(Number.isInteger(shard.id) && Number.isInteger(shard.count) && shard.id < shard.count))
    throw new ConfigError(`invalid shard: SHARDS=${env['SHARDS']} SHARD_COUNT=${env['SHARD_COUNT']}`);
  return { config, secrets, shard };
}
