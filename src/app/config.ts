import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { z } from 'zod';
import { CREDENTIAL_VARIABLES, OPTIONAL_VARIABLES } from '../call-control/index.js';
import { buildFlowGrammars, FlowGrammarError, type FlowGrammars } from '../flows/grammars.js';
import { isLoopbackHost } from '../http/web-guard.js';
import { PROJECT_ROOT } from '../paths.js';
import { configSchema, type Config } from './config-schema.js';

export { configSchema, type Config } from './config-schema.js';

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
  /** STT_API_KEY: the speech-to-text service's key. */
  sttApiKey: string | undefined;
  /** Each relay's upgrade headers, `env:NAME` values read from the environment. */
  relayHeaders: ReadonlyMap<string, Readonly<Record<string, string>>>;
  /**
   * The gateways' call-control credentials (TWILIO_ACCOUNT_SID, TELNYX_API_KEY, …: every variable
   * src/call-control reads), as the environment has them; nothing else of the environment.
   */
  callControl: Readonly<Record<string, string | undefined>>;
}

/** Every variable the call-control ports read, set or not. */
function callControlEnv(env: Env): Record<string, string | undefined> {
  const names = [...Object.values(CREDENTIAL_VARIABLES), ...Object.values(OPTIONAL_VARIABLES)].flat();
  return Object.fromEntries(names.map((name) => [name, env[name]]));
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
  if (env['PUBLIC_URL']) server['publicUrl'] = env['PUBLIC_URL'].replace(/\/+$/, '');
  if (env['ALLOWED_HOSTS'])
    server['allowedHosts'] = env['ALLOWED_HOSTS']
      .split(',')
      .map((h) => h.trim())
      .filter(Boolean);
  if (Object.keys(server).length) o['server'] = server;
  if (env['SPEECH_BASE_URL']) o['speech'] = { baseUrl: env['SPEECH_BASE_URL'].replace(/\/+$/, '') };
  const stt: Record<string, unknown> = {};
  if (env['STT_BASE_URL']) stt['baseUrl'] = env['STT_BASE_URL'].replace(/\/+$/, '');
  if (env['STT_MODE']) stt['mode'] = env['STT_MODE'];
  if (env['STT_REALTIME_BASE_URL'])
    stt['realtime'] = { baseUrl: env['STT_REALTIME_BASE_URL'].replace(/\/+$/, '') };
  if (Object.keys(stt).length) o['stt'] = stt;
  if (env['DATA_DIR']) o['dataDir'] = env['DATA_DIR'];
  if (env['LOG_LEVEL']) o['logLevel'] = env['LOG_LEVEL'];
  if (env['VAD_WORKERS'])
    o['calls'] = {
      bargeIn: { workers: env['VAD_WORKERS'] === 'auto' ? 'auto' : Number(env['VAD_WORKERS']) },
    };
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
  /** The grammar of every gather that listens for speech, built once here (by flow, then node). */
  grammars: FlowGrammars;
}

/** Every speech gather's grammar; a word the recogniser does not know is a config error, named. */
function flowGrammars(config: Config): FlowGrammars {
  try {
    return buildFlowGrammars(config.flows);
  } catch (error) {
    if (error instanceof FlowGrammarError)
      throw new ConfigError(`invalid configuration: ${error.message}`, { cause: error });
    throw error;
  }
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
  for (const [flowName, flow] of Object.entries(config.flows))
    for (const [nodeName, node] of Object.entries(flow.nodes))
      if (node.type === 'relay' && !(node.relay in config.relays))
        throw new ConfigError(
          `invalid configuration: flows.${flowName}.nodes.${nodeName}.relay: no relay named "${node.relay}" under relays`,
        );
  // Relay headers may name a secret in the environment rather than hold it.
  const relayHeaders = new Map<string, Record<string, string>>();
  for (const [name, relay] of Object.entries(config.relays)) {
    const headers: Record<string, string> = {};
    for (const [header, value] of Object.entries(relay.headers)) {
      const fromEnv = /^env:([A-Za-z_][A-Za-z0-9_]*)$/.exec(value)?.[1];
      const resolved = fromEnv === undefined ? value : env[fromEnv];
      if (resolved === undefined || resolved === '')
        throw new ConfigError(
          `invalid configuration: relays.${name}.headers.${header}: ${fromEnv} is not set`,
        );
      headers[header] = resolved;
    }
    relayHeaders.set(name, headers);
  }
  const grammars = flowGrammars(config);
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
    sttApiKey: env['STT_API_KEY'] || undefined,
    relayHeaders,
    callControl: callControlEnv(env),
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
  return { config, secrets, shard, grammars };
}
