/**
 * One client's link to an ElevenLabs-compatible service: the base URL split into where to connect and
 * the credentials to send, the keep-alive pool, the auth headers, and the `Transport` that attempts and
 * retries. Both clients are built on it: `SpeechClient` (client.ts) and `SttClient` (stt.ts).
 */
import { Pool } from 'undici';
import { parseBaseUrl, redactUrl } from './base-url.js';
import { SpeechServiceError } from './errors.js';
import {
  DEFAULT_MAX_RETRIES,
  DEFAULT_MAX_RETRY_AFTER_MS,
  DEFAULT_RETRY_BASE_DELAY_MS,
  DEFAULT_RETRY_MAX_DELAY_MS,
} from './retry.js';
import { Transport, type CallSpec, type OpenResponse } from './transport.js';

/** The header that carries the API key: the speech-service platform's, or ElevenLabs'. */
export type AuthHeader = 'ServicePlatform-APIKey' | 'xi-api-key';

/** What a user configures; each client's options extend it with its own defaults. */
export interface ConnectionSettings {
  /**
   * e.g. `http://127.0.0.1:8080` (a path, if any, is kept in front of the prefix). `user:password@`
   * in it is sent as `Authorization: Basic` (for a proxy in front of the service), besides the key in
   * `authHeader`, and scrubbed from error messages; log it only through `redactUrl`.
   */
  baseUrl: string;
  pathPrefix?: string;
  /** Sent as is in `authHeader`; never logged, scrubbed from error messages. Empty: no header. */
  apiKey: string;
  authHeader?: AuthHeader;
  /** Request start → first body byte, per attempt (a timed-out attempt is retried). */
  firstByteTimeoutMs?: number;
  /** Longest silence between two chunks of a body once it flows (not retried). */
  idleTimeoutMs?: number;
  /** Default 2. */
  maxRetries?: number;
  /** Default 250 ms. */
  retryBaseDelayMs?: number;
  /** Cap of our own backoff. Default 4 s. */
  retryMaxDelayMs?: number;
  /** The longest `Retry-After` honoured; a longer one fails the call at once. Default 30 s. */
  maxRetryAfterMs?: number;
  /** Keep-alive pool size. */
  connections?: number;
}

type NumericSetting =
  | 'firstByteTimeoutMs'
  | 'idleTimeoutMs'
  | 'maxRetries'
  | 'retryBaseDelayMs'
  | 'retryMaxDelayMs'
  | 'maxRetryAfterMs'
  | 'connections';

/** What the client using the connection chooses when the user does not. */
export interface ConnectionDefaults {
  /** Names the client in option errors (`SttClient: …`) and, unless `closedName` does, in `client_closed`. */
  readonly owner: string;
  /** The client as `client_closed` names it (`the speech client was closed`). Default `owner`. */
  readonly closedName?: string;
  /**
   * Accept any `authHeader` and send the key under that name, unchecked. Only for `SpeechClient`, which
   * has always done so and whose callers may rely on it; a new client leaves it off.
   */
  readonly anyAuthHeader?: boolean;
  readonly userAgent: string;
  readonly pathPrefix: string;
  readonly authHeader: AuthHeader;
  readonly firstByteTimeoutMs: number;
  readonly idleTimeoutMs: number;
  readonly connections: number;
}

/** A numeric option, or its default; a negative, infinite or (unless allowed) zero value throws. */
export function numberOption(
  owner: string,
  name: string,
  value: number | undefined,
  fallback: number,
  allowZero = false,
): number {
  if (value === undefined) return fallback;
  if (!Number.isFinite(value) || value < 0 || (!allowZero && value === 0))
    throw new TypeError(`${owner}: ${name} must be a ${allowZero ? 'non-negative' : 'positive'} number`);
  return value;
}

/** `'api/speech/'` → `'/api/speech'`; `''` and `'/'` → `''`. */
export function normalizePrefix(prefix: string): string {
  const trimmed = prefix.replace(/\/+$/, '');
  if (trimmed === '') return '';
  return trimmed.startsWith('/') ? trimmed : `/${trimmed}`;
}

export class ServiceConnection {
  /** The base URL as given, its `user:password@` replaced by `[redacted]`: the form to log. */
  readonly redactedBaseUrl: string;
  /** The key and the URL's credentials: scrubbed from every message built from what a server wrote. */
  readonly secrets: readonly string[];
  /** As resolved from the settings and defaults. */
  readonly firstByteTimeoutMs: number;
  readonly idleTimeoutMs: number;
  readonly #closedName: string;
  readonly #userAgent: string;
  readonly #pool: Pool;
  readonly #transport: Transport;
  readonly #apiKey: string;
  readonly #authHeader: AuthHeader;
  readonly #basicAuth: string | undefined;
  #closed = false;

  constructor(settings: ConnectionSettings, defaults: ConnectionDefaults) {
    const { owner } = defaults;
    const base = parseBaseUrl(settings.baseUrl);
    this.redactedBaseUrl = redactUrl(settings.baseUrl);
    if (typeof settings.apiKey !== 'string') throw new TypeError(`${owner}: apiKey must be a string`);
    const authHeader = settings.authHeader ?? defaults.authHeader;
    if (
      defaults.anyAuthHeader !== true &&
      authHeader !== 'ServicePlatform-APIKey' &&
      authHeader !== 'xi-api-key'
    )
      throw new TypeError(`${owner}: authHeader must be ServicePlatform-APIKey or xi-api-key`);
    this.#closedName = defaults.closedName ?? owner;
    this.#userAgent = defaults.userAgent;
    this.#apiKey = settings.apiKey;
    this.#authHeader = authHeader;
    this.#basicAuth = base.authorization;
    this.secrets = [...(settings.apiKey === '' ? [] : [settings.apiKey]), ...base.secrets];
    const num = (name: NumericSetting, fallback: number, allowZero = false): number =>
      numberOption(owner, name, settings[name], fallback, allowZero);
    this.#pool = new Pool(base.origin, {
      connections: Math.floor(num('connections', defaults.connections)),
    });
    this.firstByteTimeoutMs = num('firstByteTimeoutMs', defaults.firstByteTimeoutMs);
    this.idleTimeoutMs = num('idleTimeoutMs', defaults.idleTimeoutMs);
    this.#transport = new Transport({
      pool: this.#pool,
      basePath: base.path + normalizePrefix(settings.pathPrefix ?? defaults.pathPrefix),
      firstByteTimeoutMs: this.firstByteTimeoutMs,
      idleTimeoutMs: this.idleTimeoutMs,
      retry: {
        maxRetries: Math.floor(num('maxRetries', DEFAULT_MAX_RETRIES, true)),
        baseDelayMs: num('retryBaseDelayMs', DEFAULT_RETRY_BASE_DELAY_MS, true),
        maxDelayMs: num('retryMaxDelayMs', DEFAULT_RETRY_MAX_DELAY_MS, true),
        maxRetryAfterMs: num('maxRetryAfterMs', DEFAULT_MAX_RETRY_AFTER_MS, true),
      },
      secrets: this.secrets,
    });
  }

  /** The headers of every request: accept, user agent, the key, Basic auth from the URL. */
  headers(accept: string, contentType?: string): Record<string, string> {
    const headers: Record<string, string> = { accept, 'user-agent': this.#userAgent };
    if (contentType !== undefined) headers['content-type'] = contentType;
    if (this.#apiKey !== '') headers[this.#authHeader] = this.#apiKey;
    // A header of its own: the key headers are never `Authorization`, so both can be sent.
    if (this.#basicAuth !== undefined) headers['authorization'] = this.#basicAuth;
    return headers;
  }

  /**
   * `Transport.open`, timed from `startedAt` (default now: a caller that tried another request first
   * passes when it began, so the first byte is timed from the call); refused with `client_closed` once
   * `close()` was called.
   */
  async open(
    spec: CallSpec,
    signal: AbortSignal | undefined,
    startedAt = performance.now(),
  ): Promise<OpenResponse> {
    if (this.#closed)
      throw new SpeechServiceError({
        code: 'client_closed',
        message: `the ${this.#closedName} was closed`,
        retryable: false,
      });
    return this.#transport.open(spec, signal, { startedAt });
  }

  /** Closes the pool once running exchanges finish. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#pool.close();
  }
}
