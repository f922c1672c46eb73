import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { PROJECT_ROOT } from './paths.js';

export const SCOPES = ['speech', 'voices:read', 'voices:write'] as const;
export type Scope = (typeof SCOPES)[number];

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

const keySchema = z.strictObject({
  id: z.string().min(1),
  keyEnv: z.string().regex(/^[A-Z_][A-Z0-9_]*$/, 'must name an environment variable'),
  scopes: z.array(z.enum(SCOPES)).min(1),
});

export const configSchema = z.strictObject({
  server: z.strictObject({
    host: z.string().min(1),
    port: z.coerce.number().int().min(0).max(65_535),
  }),
  dataDir: z.string().min(1),
  logLevel: z.enum(LOG_LEVELS),
  speech: z.strictObject({
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
    maxConcurrentPerKey: z.number().int().positive(),
    keys: z.array(keySchema),
    voices: z.strictObject({
      maxFiles: z.number().int().positive(),
      maxFileBytes: z.number().int().positive(),
      maxTotalBytes: z.number().int().positive(),
    }),
  }),
});

export type Config = z.infer<typeof configSchema>;

/** Secrets live beside the config, never in it, so a config dump cannot leak them. */
export interface Secrets {
  /** The key the client sends; in embedded mode the local service accepts it with every scope. */
  speechApiKey: string | undefined;
  /** Extra service keys by id, read from the variables the config names. */
  serviceKeys: ReadonlyMap<string, string>;
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
  if (Object.keys(server).length) o['server'] = server;
  if (env['SPEECH_BASE_URL']) o['speech'] = { baseUrl: env['SPEECH_BASE_URL'].replace(/\/+$/, '') };
  if (env['DATA_DIR']) o['dataDir'] = env['DATA_DIR'];
  if (env['LOG_LEVEL']) o['logLevel'] = env['LOG_LEVEL'];
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
  return { config, secrets: { speechApiKey: env['SPEECH_API_KEY'] || undefined, serviceKeys } };
}
