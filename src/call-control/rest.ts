/**
 * One REST exchange with a gateway's API, the way every gateway module makes it: undici's `request`
 * on the port's own connection pool, a deadline over the whole exchange (connecting, the headers, the
 * body), the answer read within a byte bound before anything parses it, and every failure turned into
 * a `CallControlError` with the gateway's own code and reason, scrubbed of the port's secrets. Nothing
 * is retried: a transfer or an outbound call sent twice could happen twice.
 *
 * What is logged (debug: the method, the path, the status and the time taken; trace: the request's
 * fields) is scrubbed of the same secrets, which include the account ids that appear in paths.
 */
import { Agent, request } from 'undici';
import type { Logger } from 'pino';
import { BodyTooLargeError, readStreamCapped } from '../http/fetch-body.js';
import { redact } from '../http/redact.js';
import { CallControlError, type CallControlErrorCode } from './errors.js';
import type { CallControlGateway } from './port.js';

/** Longest a request may take, connecting to the last byte of its answer. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 10_000;
/** Largest answer read: a call resource is a few kilobytes; more is a misbehaving peer. */
export const DEFAULT_MAX_ANSWER_BYTES = 256 * 1024;
/** How much of a gateway's explanation makes it into a message. */
const REASON_MAX_CHARS = 300;

/** What a gateway's error body says, in its own terms. */
export interface ProviderError {
  readonly code?: string | undefined;
  readonly reason?: string | undefined;
}

export interface RestClientOptions {
  readonly gateway: CallControlGateway;
  /** Where the API is: scheme, host and any path before the API's own (`http://pbx:8088/ari`). */
  readonly baseUrl: string;
  /** The `Authorization` header's value, asked for on every request (a Vonage JWT expires). */
  readonly authorization: () => string;
  readonly timeoutMs: number;
  readonly maxAnswerBytes: number;
  /** Scrubbed from every message and log line: keys, tokens, passwords, and the account ids in paths. */
  readonly secrets: readonly string[];
  readonly logger?: Logger | undefined;
  /** Reads the gateway's error body (parsed JSON, or undefined) into its code and reason. */
  readonly providerError: (body: unknown, text: string) => ProviderError;
  /**
   * The gateway's own reading of an error where its status alone misleads (Telnyx answers 422 with
   * code 90018 for a call that has ended): a code, or undefined for the status's.
   */
  readonly classify?: (status: number, providerCode: string | undefined) => CallControlErrorCode | undefined;
}

export type FormFields = Readonly<Record<string, string | readonly string[] | undefined>>;

export interface RestCall {
  /** `hang_up`, `transfer`, `originate`: names the operation in errors and logs. */
  readonly operation: string;
  readonly method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** Below the base URL, each id segment already encoded (`restPath`). */
  readonly path: string;
  readonly query?: FormFields;
  /** Sent as `application/x-www-form-urlencoded`, an array as the key repeated. */
  readonly form?: FormFields;
  /** Sent as `application/json`. */
  readonly json?: unknown;
  readonly signal?: AbortSignal | undefined;
  /**
   * Error answers the caller takes as an outcome rather than a failure (a hang-up of a call that has
   * already ended): when this says so for the error's code, the answer is returned instead of thrown.
   */
  readonly accept?: (code: CallControlErrorCode) => boolean;
}

export interface RestAnswer {
  readonly status: number;
  /** The body parsed as JSON; undefined when empty or not JSON. */
  readonly body: unknown;
  /** For an accepted error: what it was. */
  readonly error?: CallControlError;
}

/** A path from segments, each percent-encoded: an id can never add a segment or a query of its own. */
export function restPath(...segments: string[]): string {
  return segments.map((s) => `/${encodeURIComponent(s)}`).join('');
}

function statusCode(status: number): CallControlErrorCode {
  if (status === 401 || status === 403) return 'unauthorized';
  if (status === 404 || status === 410) return 'call_not_found';
  if (status === 429) return 'rate_limited';
  if (status >= 500) return 'provider_error';
  return 'rejected';
}

function oneLine(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > REASON_MAX_CHARS ? `${flat.slice(0, REASON_MAX_CHARS)}…` : flat;
}

function encodeFields(fields: FormFields): URLSearchParams {
  const out = new URLSearchParams();
  for (const [key, value] of Object.entries(fields)) {
    if (value === undefined) continue;
    if (typeof value === 'string') out.append(key, value);
    else for (const v of value) out.append(key, v);
  }
  return out;
}

function transportCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' ? code : undefined;
}

export class RestClient {
  readonly #o: RestClientOptions;
  readonly #agent: Agent;
  readonly #base: URL;

  constructor(options: RestClientOptions) {
    this.#o = options;
    let base: URL;
    try {
      base = new URL(options.baseUrl);
    } catch {
      throw new TypeError(`${options.gateway} call control: apiBaseUrl is not a URL`);
    }
    if (base.protocol !== 'https:' && base.protocol !== 'http:')
      throw new TypeError(`${options.gateway} call control: apiBaseUrl must be http(s)`);
    if (base.username !== '' || base.password !== '')
      throw new TypeError(`${options.gateway} call control: apiBaseUrl must not carry credentials`);
    this.#base = base;
    this.#agent = new Agent({ connections: 8 });
  }

  #scrub(text: string): string {
    return redact(text, this.#o.secrets);
  }

  #error(
    call: RestCall,
    code: CallControlErrorCode,
    message: string,
    extra: { status?: number; providerCode?: string; reason?: string; cause?: unknown } = {},
  ): CallControlError {
    return new CallControlError({
      code,
      gateway: this.#o.gateway,
      operation: call.operation,
      message: this.#scrub(`${this.#o.gateway} ${call.operation}: ${message}`),
      ...extra,
    });
  }

  #url(call: RestCall): URL {
    const url = new URL(this.#base.href);
    url.pathname = url.pathname.replace(/\/+$/, '') + call.path;
    if (call.query) url.search = encodeFields(call.query).toString();
    return url;
  }

  /** Sends `call`; its answer, or a `CallControlError` (the caller's own abort: the signal's reason). */
  async send(call: RestCall): Promise<RestAnswer> {
    const { gateway, logger } = this.#o;
    if (call.signal?.aborted) throw call.signal.reason;
    const url = this.#url(call);
    const headers: Record<string, string> = {
      accept: 'application/json',
      authorization: this.#o.authorization(),
    };
    let body: string | undefined;
    if (call.form) {
      headers['content-type'] = 'application/x-www-form-urlencoded';
      body = encodeFields(call.form).toString();
    } else if (call.json !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(call.json);
    }
    const logged = {
      gateway,
      operation: call.operation,
      method: call.method,
      path: this.#scrub(url.pathname),
    };
    if (body !== undefined) logger?.trace({ ...logged, body: this.#scrub(body) }, 'call control request');
    const deadline = AbortSignal.timeout(this.#o.timeoutMs);
    const signal = call.signal ? AbortSignal.any([call.signal, deadline]) : deadline;
    const started = performance.now();
    try {
      const answer = await this.#exchange(call, url, headers, body, signal);
      logger?.debug(
        { ...logged, status: answer.status, ms: Math.round(performance.now() - started) },
        'call control answer',
      );
      return answer;
    } catch (error) {
      if (call.signal?.aborted) throw call.signal.reason;
      const failure =
        error instanceof CallControlError
          ? error
          : deadline.aborted
            ? this.#error(call, 'timeout', `no answer within ${this.#o.timeoutMs} ms`, { cause: error })
            : this.#error(
                call,
                'connection_failed',
                `the request failed${transportCode(error) ? ` (${transportCode(error)})` : ''}: ${
                  error instanceof Error ? error.message : String(error)
                }`,
                { cause: error },
              );
      logger?.warn(
        {
          ...logged,
          code: failure.code,
          status: failure.status,
          reason: failure.reason,
          ms: Math.round(performance.now() - started),
        },
        'call control request failed',
      );
      throw failure;
    }
  }

  async #exchange(
    call: RestCall,
    url: URL,
    headers: Record<string, string>,
    body: string | undefined,
    signal: AbortSignal,
  ): Promise<RestAnswer> {
    const res = await request(url, {
      method: call.method,
      headers,
      body: body ?? null,
      signal,
      dispatcher: this.#agent,
    });
    const declared = Number(res.headers['content-length']);
    let bytes: Uint8Array;
    try {
      bytes = await readStreamCapped(
        res.body as AsyncIterable<Uint8Array>,
        this.#o.maxAnswerBytes,
        Number.isFinite(declared) ? declared : undefined,
        () => res.body.destroy(),
      );
    } catch (error) {
      if (!(error instanceof BodyTooLargeError)) throw error;
      if (res.statusCode >= 200 && res.statusCode < 300)
        throw this.#error(
          call,
          'answer_too_large',
          `the answer is larger than ${this.#o.maxAnswerBytes} bytes`,
          {
            status: res.statusCode,
          },
        );
      bytes = new Uint8Array(0);
    }
    const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
    let parsed: unknown;
    try {
      parsed = text.trim() === '' ? undefined : JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    if (res.statusCode >= 200 && res.statusCode < 300) return { status: res.statusCode, body: parsed };
    const provider = this.#o.providerError(parsed, text);
    const reason = provider.reason ?? (parsed === undefined && text.trim() !== '' ? text : undefined);
    const providerCode = provider.code;
    const code = this.#o.classify?.(res.statusCode, providerCode) ?? statusCode(res.statusCode);
    const scrubbed = reason === undefined ? undefined : this.#scrub(oneLine(reason));
    const error = this.#error(
      call,
      code,
      `the gateway answered ${res.statusCode}` +
        (providerCode === undefined ? '' : ` (${providerCode})`) +
        (scrubbed ? `: ${scrubbed}` : ''),
      {
        status: res.statusCode,
        ...(providerCode === undefined ? {} : { providerCode }),
        ...(scrubbed === undefined ? {} : { reason: scrubbed }),
      },
    );
    if (call.accept?.(code)) return { status: res.statusCode, body: parsed, error };
    throw error;
  }

  /** `invalid_answer` for a 2xx that lacks what the API documents. */
  invalidAnswer(operation: string, what: string): CallControlError {
    return this.#error({ operation, method: 'GET', path: '' }, 'invalid_answer', `the answer has no ${what}`);
  }

  /** Closes the pool once running exchanges finish. */
  async close(): Promise<void> {
    await this.#agent.close();
  }
}

/** The string at `path` in a parsed JSON answer, if it is a non-empty string (or a number). */
export function stringIn(value: unknown, ...path: string[]): string | undefined {
  let at: unknown = value;
  for (const key of path) {
    if (typeof at !== 'object' || at === null || Array.isArray(at)) return undefined;
    at = (at as Record<string, unknown>)[key];
  }
  if (typeof at === 'number' && Number.isFinite(at)) return String(at);
  return typeof at === 'string' && at !== '' ? at : undefined;
}
