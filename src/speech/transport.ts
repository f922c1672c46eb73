/**
 * One HTTP exchange with the speech service, attempted until its first body byte: the part of a call
 * where a retry is still safe. What it hands back (`OpenResponse`) is a body already flowing, read on
 * demand under an idle timeout and never retried.
 */
import type { FormData, Pool } from 'undici';
import { SpeechServiceError } from './errors.js';
import {
  acceptsContentType,
  acceptsTimestampsContentType,
  FORMAT_INFO,
  TIMESTAMPS_MEDIA_TYPES,
  type OutputFormat,
} from './formats.js';
import {
  errorFromResponse,
  errorFromTransport,
  headerValue,
  requestIdOf,
  streamInterrupted,
  unexpectedContentType,
} from './http-errors.js';
import { retryDelayMs, sleep, type RetryPolicy } from './retry.js';

/** Error bodies are short JSON; more than this is a misbehaving proxy and is cut off. */
const ERROR_BODY_MAX_BYTES = 64 * 1024;

type Headers = Readonly<Record<string, string | string[] | undefined>>;

export interface TransportOptions {
  readonly pool: Pool;
  /** Path of the base URL plus the prefix, without a trailing slash. */
  readonly basePath: string;
  readonly firstByteTimeoutMs: number;
  readonly idleTimeoutMs: number;
  readonly retry: RetryPolicy;
  /** Scrubbed from every message built from what a server wrote. */
  readonly secrets: readonly string[];
}

export interface CallSpec {
  readonly method: 'GET' | 'POST';
  /** Below the prefix, query included. */
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: string | FormData;
  /**
   * False when a repeated request could act twice (creating a voice): then only answers that prove
   * nothing happened (429, a refused connection) are retried.
   */
  readonly idempotent: boolean;
  /** The error code of a 2xx answer without a body. */
  readonly emptyCode: string;
  /**
   * The audio asked for: a 2xx declaring another Content-Type fails with `unexpected_content_type`
   * before any of its body is read (see `acceptsContentType`).
   */
  readonly audioFormat?: OutputFormat;
  /** A with-timestamps request: a 2xx must declare JSON (or nothing), checked the same way. */
  readonly timestamps?: boolean;
  /**
   * The most time the body may take once its first byte is in, counted only while the client waits for
   * the peer (see `OpenResponse`); past it the exchange fails with `deadline_exceeded`. Default: none.
   */
  readonly bodyDeadlineMs?: number;
}

export interface Attempted {
  /** `performance.now()` when the call began: time to first byte counts retries and backoff too. */
  readonly startedAt: number;
}

function isFirstByteTimeout(reason: unknown): reason is SpeechServiceError {
  return reason instanceof SpeechServiceError && reason.code === 'first_byte_timeout';
}

/** What the answer should have declared, when its Content-Type does not fit the call. */
function unexpectedBody(spec: CallSpec, contentType: string | undefined): string | undefined {
  if (spec.timestamps) {
    if (acceptsTimestampsContentType(contentType)) return undefined;
    return `a JSON timestamps stream (${TIMESTAMPS_MEDIA_TYPES.join(', ')})`;
  }
  const format = spec.audioFormat;
  if (format === undefined || acceptsContentType(format, contentType)) return undefined;
  return `${format} audio (${FORMAT_INFO[format].mediaTypes.join(', ')})`;
}

function transportCode(error: SpeechServiceError): string | undefined {
  const cause = error.cause as { code?: unknown } | undefined;
  return typeof cause?.code === 'string' ? cause.code : undefined;
}

function mayRetry(spec: CallSpec, error: SpeechServiceError): boolean {
  return spec.idempotent || error.status === 429 || transportCode(error) === 'ECONNREFUSED';
}

/**
 * undici hands a kept-alive socket back to its pool one event-loop turn after the body ended (it
 * waits for servers that close despite keep-alive). Waiting that turn before telling the caller means
 * the caller's next request reuses the warm socket instead of opening another.
 */
function socketReleased(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

async function readCapped(body: AsyncIterable<Buffer>, maxBytes: number): Promise<string> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const room = maxBytes - size;
    parts.push(chunk.byteLength > room ? chunk.subarray(0, room) : chunk);
    size += Math.min(chunk.byteLength, room);
    if (size >= maxBytes) return Buffer.concat(parts, size).toString('utf8');
  }
  await socketReleased();
  return Buffer.concat(parts, size).toString('utf8');
}

export class Transport {
  readonly #o: TransportOptions;

  constructor(options: TransportOptions) {
    this.#o = options;
  }

  /**
   * Sends `spec` until an attempt yields a 2xx with a first non-empty body chunk, retrying what may be
   * retried. Throws a `SpeechServiceError`, or the signal's reason when `signal` aborts.
   */
  async open(spec: CallSpec, signal: AbortSignal | undefined, call: Attempted): Promise<OpenResponse> {
    for (let attempt = 1; ; attempt++) {
      if (signal?.aborted) throw signal.reason;
      const attemptCtl = new AbortController();
      const requestSignal = signal ? AbortSignal.any([signal, attemptCtl.signal]) : attemptCtl.signal;
      const timer = setTimeout(() => {
        attemptCtl.abort(
          new SpeechServiceError({
            code: 'first_byte_timeout',
            message: `no audio within ${this.#o.firstByteTimeoutMs} ms of sending the request`,
            retryable: true,
          }),
        );
      }, this.#o.firstByteTimeoutMs);
      let error: SpeechServiceError;
      try {
        const res = await this.#o.pool.request({
          method: spec.method,
          path: this.#o.basePath + spec.path,
          headers: spec.headers,
          body: spec.body ?? null,
          signal: requestSignal,
          idempotent: spec.idempotent,
        });
        if (res.statusCode < 200 || res.statusCode > 299) {
          const bodyText = await readCapped(res.body, ERROR_BODY_MAX_BYTES);
          throw errorFromResponse(
            { status: res.statusCode, headers: res.headers, bodyText },
            this.#o.secrets,
          );
        }
        const expected = unexpectedBody(spec, headerValue(res.headers, 'content-type'));
        if (expected !== undefined)
          throw unexpectedContentType(
            { status: res.statusCode, headers: res.headers },
            expected,
            this.#o.secrets,
          );
        const iterator = res.body[Symbol.asyncIterator]() as AsyncIterator<Buffer, undefined>;
        for (;;) {
          const step = await iterator.next();
          if (step.done) {
            await socketReleased();
            throw new SpeechServiceError({
              code: spec.emptyCode,
              message: `speech service answered ${res.statusCode} with an empty body`,
              status: res.statusCode,
              requestId: requestIdOf(res.headers),
              retryable: false,
            });
          }
          if (step.value.byteLength === 0) continue;
          clearTimeout(timer);
          return new OpenResponse({
            status: res.statusCode,
            headers: res.headers,
            attempts: attempt,
            firstByteMs: performance.now() - call.startedAt,
            first: step.value,
            iterator,
            attemptCtl,
            signal,
            idleTimeoutMs: this.#o.idleTimeoutMs,
            bodyDeadlineMs: spec.bodyDeadlineMs ?? Infinity,
          });
        }
      } catch (e) {
        clearTimeout(timer);
        const timedOut: unknown = attemptCtl.signal.aborted ? attemptCtl.signal.reason : undefined;
        // Frees the socket when the body was left unread; a no-op when the exchange completed.
        attemptCtl.abort(new DOMException('attempt abandoned', 'AbortError'));
        if (signal?.aborted) throw signal.reason;
        error = isFirstByteTimeout(timedOut) ? timedOut : errorFromTransport(e, this.#o.secrets);
      }
      const delayMs = mayRetry(spec, error) ? retryDelayMs(this.#o.retry, error, attempt) : undefined;
      if (delayMs === undefined) throw error;
      await sleep(delayMs, signal);
    }
  }
}

interface OpenResponseInit {
  readonly status: number;
  readonly headers: Headers;
  readonly attempts: number;
  readonly firstByteMs: number;
  readonly first: Buffer;
  readonly iterator: AsyncIterator<Buffer, undefined>;
  readonly attemptCtl: AbortController;
  readonly signal: AbortSignal | undefined;
  readonly idleTimeoutMs: number;
  /** `CallSpec.bodyDeadlineMs`; `Infinity` for none. */
  readonly bodyDeadlineMs: number;
}

/**
 * A 2xx body whose first chunk has arrived. Chunks are pulled one at a time (undici pauses the socket
 * while nobody pulls), each wait bounded by the idle timeout, and all the waits together by the body's
 * deadline: a peer that drips a byte now and then, under the idle timeout, still ends. The deadline
 * counts only the time spent waiting for the peer, not the time the consumer holds the body unread (a
 * prefetched sentence waiting for the one before it to play, playback paced at real time): that time
 * is not the peer's, and a consumer may legitimately take long. Any failure is final: past the first
 * byte a retry would repeat audio.
 */
export class OpenResponse {
  readonly status: number;
  readonly headers: Headers;
  readonly requestId: string | undefined;
  readonly attempts: number;
  readonly firstByteMs: number;
  readonly #init: OpenResponseInit;
  #first: Buffer | undefined;
  /** What is left of the body's deadline: ms the client may still wait for the peer. */
  #deadlineLeftMs: number;
  /** Set once: a clean end, or the failure (cancellation included) every later `next()` repeats. */
  #outcome: { readonly ended: true } | { readonly ended: false; readonly error: unknown } | undefined;

  constructor(init: OpenResponseInit) {
    this.#init = init;
    this.status = init.status;
    this.headers = init.headers;
    this.requestId = requestIdOf(init.headers);
    this.attempts = init.attempts;
    this.firstByteMs = init.firstByteMs;
    this.#first = init.first;
    this.#deadlineLeftMs = init.bodyDeadlineMs;
  }

  /** The next non-empty chunk, or `undefined` at the body's clean end. */
  async next(): Promise<Buffer | undefined> {
    const outcome = this.#outcome;
    if (outcome !== undefined) return outcome.ended ? undefined : rethrow(outcome.error);
    const { signal } = this.#init;
    if (signal?.aborted) {
      this.cancel(signal.reason);
      return rethrow(signal.reason);
    }
    const first = this.#first;
    if (first !== undefined) {
      this.#first = undefined;
      return first;
    }
    const { attemptCtl, idleTimeoutMs, iterator } = this.#init;
    if (this.#deadlineLeftMs <= 0) {
      const error = this.#deadlineExceeded();
      this.cancel(error);
      return rethrow(error);
    }
    const deadlineFirst = this.#deadlineLeftMs <= idleTimeoutMs;
    const waitedFrom = performance.now();
    const timer = setTimeout(
      () => {
        attemptCtl.abort(deadlineFirst ? this.#deadlineExceeded() : this.#idleTimeout());
      },
      Math.max(0, deadlineFirst ? this.#deadlineLeftMs : idleTimeoutMs),
    );
    try {
      for (;;) {
        const step = await iterator.next();
        if (step.done) {
          this.#outcome = { ended: true };
          clearTimeout(timer);
          await socketReleased();
          return undefined;
        }
        if (step.value.byteLength > 0) return step.value;
      }
    } catch (e) {
      const error = this.#failure(e);
      this.#outcome = { ended: false, error };
      return rethrow(error);
    } finally {
      clearTimeout(timer);
      this.#deadlineLeftMs -= performance.now() - waitedFrom;
    }
  }

  /** Stops the exchange: the connection is destroyed at once (the server sees it close). */
  cancel(reason: unknown = new DOMException('the speech response was cancelled', 'AbortError')): void {
    this.#first = undefined;
    if (this.#outcome !== undefined) return;
    this.#outcome = { ended: false, error: reason };
    this.#init.attemptCtl.abort(reason);
  }

  #idleTimeout(): SpeechServiceError {
    return new SpeechServiceError({
      code: 'idle_timeout',
      message: `no audio for ${this.#init.idleTimeoutMs} ms in the middle of the stream`,
      requestId: this.requestId,
      retryable: false,
    });
  }

  #deadlineExceeded(): SpeechServiceError {
    return new SpeechServiceError({
      code: 'deadline_exceeded',
      message: `the response took more than its deadline (${Math.round(this.#init.bodyDeadlineMs)} ms of waiting after its first byte)`,
      requestId: this.requestId,
      retryable: false,
    });
  }

  #failure(error: unknown): unknown {
    const { signal, attemptCtl } = this.#init;
    if (signal?.aborted) return signal.reason;
    if (this.#outcome !== undefined && !this.#outcome.ended) return this.#outcome.error;
    const reason: unknown = attemptCtl.signal.aborted ? attemptCtl.signal.reason : undefined;
    if (reason instanceof SpeechServiceError) return reason;
    return streamInterrupted(error, this.requestId);
  }
}

/** Abort reasons are thrown as given (like `signal.throwIfAborted()`), whatever their type. */
function rethrow(reason: unknown): never {
  throw reason;
}
