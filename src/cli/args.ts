/**
 * What every command shares: the two kinds of failure (a usage error exits 2, anything else 1),
 * `util.parseArgs` with its errors turned into one-line messages, the global options, and the
 * checks of option values.
 */
import { redactUrl } from '../speech/base-url.js';
import { parseArgs, type ParseArgsConfig } from 'node:util';

/** The command line is wrong: exit code 2, with a message saying what is wrong. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
  /** The command whose `--help` explains it (`say`, `voices add`, …), or none for the top level. */
  readonly command: string | undefined;
  constructor(message: string, command?: string) {
    super(message);
    this.command = command;
  }
}

/** Something went wrong doing what was asked (no service, a refused key, …): exit code 1. */
export class CliError extends Error {
  override readonly name = 'CliError';
  /** 1, or 130 for an interruption (Ctrl-C), as shells report it. */
  readonly exitCode: number;
  constructor(message: string, exitCode = 1) {
    super(message);
    this.exitCode = exitCode;
  }
}

export type Env = Readonly<Record<string, string | undefined>>;

/** A command line understood: either a request for the command's help, or what to do. */
export type Parsed<T> = { help: true } | { help: false; plan: T };

type OptionsConfig = NonNullable<ParseArgsConfig['options']>;

/** What `parseArgs` makes of a command's arguments: typed `values`, and the positionals. */
export type ParsedCommand<O extends OptionsConfig> = ReturnType<
  typeof parseArgs<{ args: readonly string[]; options: O; allowPositionals: true; strict: true }>
>;

/** Accepted by every command (before the command name too). */
export const GLOBAL_OPTIONS = {
  url: { type: 'string' },
  key: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const satisfies OptionsConfig;

export const GLOBAL_HELP = `Global options:
  --url URL      the speech service (default: $SPEECH_BASE_URL, else http://127.0.0.1:$PORT/api/speech
                 with PORT defaulting to 8080); a URL without a path gets /api/speech appended
  --key KEY      its API key (default: $SPEECH_API_KEY); prefer the variable: arguments show in ps
  -h, --help     this help`;

/** Node's message without its advice about `--` (we give our own), lower-cased like ours. */
function shortParseMessage(error: Error): string {
  const first = error.message.split(/\.\s/)[0] ?? error.message;
  const trimmed = first.replace(/\.$/, '');
  return trimmed.charAt(0).toLowerCase() + trimmed.slice(1);
}

/**
 * `util.parseArgs`, strict, positionals allowed; its errors (unknown option, missing value, a value
 * given to a flag) become a `UsageError` naming the command.
 */
export function parseCommand<const O extends OptionsConfig>(
  command: string,
  args: readonly string[],
  options: O,
): ParsedCommand<O> {
  try {
    return parseArgs({ args, options, allowPositionals: true, strict: true });
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS'))
      throw new UsageError(shortParseMessage(error as Error), command);
    throw error;
  }
}

/** A whole number within bounds, given as digits only (`--hangup-after-ms 5000`). */
export function integerOption(
  name: string,
  value: string,
  command: string,
  { min = 0, max = Number.MAX_SAFE_INTEGER }: { min?: number; max?: number } = {},
): number {
  const n = /^\d+$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max)
    throw new UsageError(`--${name} must be a whole number from ${min} to ${max}, got "${value}"`, command);
  return n;
}

/** Repeated `--name key=value` options as a record. */
export function keyValueOptions(
  name: string,
  values: readonly string[],
  command: string,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const item of values) {
    const eq = item.indexOf('=');
    if (eq <= 0) throw new UsageError(`--${name} must look like key=value, got "${item}"`, command);
    out[item.slice(0, eq)] = item.slice(eq + 1);
  }
  return out;
}

export interface ServiceTarget {
  /** The speech service's base, prefix included (`http://127.0.0.1:8080/api/speech`), no trailing slash. */
  baseUrl: string;
  /** Empty when none was given: no auth header is sent. */
  apiKey: string;
}

export const DEFAULT_PATH_PREFIX = '/api/speech';

/**
 * Where the speech service is and its key: `--url`/`--key`, else the environment the app itself
 * reads (`SPEECH_BASE_URL`, `SPEECH_API_KEY`), else this machine's `npm start`. A URL without a path
 * is a server's base, as SPEECH_BASE_URL is: the service's prefix is appended.
 */
export function serviceTarget(
  values: { url?: string | undefined; key?: string | undefined },
  env: Env,
  command: string,
): ServiceTarget {
  const given = values.url ?? (env['SPEECH_BASE_URL'] || undefined);
  const port = env['PORT'] || '8080';
  const raw = given ?? `http://127.0.0.1:${port}${DEFAULT_PATH_PREFIX}`;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UsageError(
      `${values.url !== undefined ? '--url' : 'SPEECH_BASE_URL'} is not a URL: "${redactUrl(raw)}"`,
      command,
    );
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new UsageError(`the speech service's URL must be http(s), got "${redactUrl(raw)}"`, command);
  if (url.search !== '' || url.hash !== '')
    throw new UsageError(
      `the speech service's URL must have no query or fragment, got "${redactUrl(raw)}"`,
      command,
    );
  let path = url.pathname.replace(/\/+$/, '');
  if (path === '') path = DEFAULT_PATH_PREFIX;
  // Credentials in the URL stay in it: the client sends them as Basic auth and never shows them.
  const credentials = url.username || url.password ? `${url.username}:${url.password}@` : '';
  const base = `${url.protocol}//${credentials}${url.host}${path}`;
  return { baseUrl: base, apiKey: values.key ?? env['SPEECH_API_KEY'] ?? '' };
}

/** A command that takes no arguments besides its options. */
export function noPositionals(positionals: readonly string[], command: string): void {
  if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"`, command);
}
