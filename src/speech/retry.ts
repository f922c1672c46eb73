/**
 * When and how long to wait before another attempt. Retries happen only before the first audio byte
 * (the caller enforces that): after it, another attempt would repeat speech the listener already heard.
 */
import type { SpeechServiceError } from './errors.js';

export interface RetryPolicy {
  /** Attempts after the first one. */
  readonly maxRetries: number;
  readonly baseDelayMs: number;
  /** Cap of our own backoff. */
  readonly maxDelayMs: number;
  /**
   * The longest `Retry-After` we honour. A server asking for more is answered with the error (its
   * `retryAfterMs` says how long it wanted): waiting less than asked would only be refused again.
   */
  readonly maxRetryAfterMs: number;
}

export const DEFAULT_MAX_RETRIES = 2;
export const DEFAULT_RETRY_BASE_DELAY_MS = 250;
export const DEFAULT_RETRY_MAX_DELAY_MS = 4_000;
export const DEFAULT_MAX_RETRY_AFTER_MS = 30_000;

/**
 * Exponential backoff with "equal jitter": half the step is fixed, half random, so concurrent callers
 * spread out while none of them retries almost at once. `retry` counts from 1.
 */
export function backoffDelayMs(
  policy: RetryPolicy,
  retry: number,
  random: () => number = Math.random,
): number {
  const step = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (retry - 1));
  return Math.round(step / 2 + random() * (step / 2));
}

/**
 * The delay before retry number `retry` after `error`, or `undefined` when this error must not be
 * retried (not retryable, retries used up, or the server wants a longer pause than we are willing to take).
 */
export function retryDelayMs(
  policy: RetryPolicy,
  error: SpeechServiceError,
  retry: number,
  random?: () => number,
): number | undefined {
  if (!error.retryable || retry > policy.maxRetries) return undefined;
  if (error.retryAfterMs !== undefined) {
    if (error.retryAfterMs > policy.maxRetryAfterMs) return undefined;
    return error.retryAfterMs;
  }
  return backoffDelayMs(policy, retry, random);
}

/** `Retry-After` as milliseconds: delta-seconds or an HTTP date (RFC 9110 §10.2.3). */
export function parseRetryAfterMs(value: string | undefined, nowMs: number = Date.now()): number | undefined {
  if (value === undefined) return undefined;
  const trimmed = value.trim();
  if (trimmed === '') return undefined;
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.round(Number(trimmed) * 1000);
  const at = Date.parse(trimmed);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - nowMs);
}

/** Waits `ms`, rejecting with the signal's own reason (not a wrapper) when it aborts first. */
export function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason as Error);
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason as Error);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
