import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Monotonic time, injected wherever something waits on the wall clock, so tests drive it with a fake
 * one. One clock per speaker; never a module-level singleton that tests would have to patch.
 */
export interface Clock {
  /** Milliseconds on a monotonic scale (never goes back). */
  now(): number;
  /** Resolves once `now() >= atMs` (at once if that is already so); rejects with `signal.reason` on abort. */
  sleepUntil(atMs: number, signal?: AbortSignal): Promise<void>;
}

/** `performance.now()` and timers. */
export const systemClock: Clock = {
  now: () => performance.now(),
  async sleepUntil(atMs, signal) {
    signal?.throwIfAborted();
    const delayMs = atMs - performance.now();
    if (delayMs <= 0) return;
    await sleep(delayMs, undefined, signal ? { signal } : undefined);
  },
};
