/**
 * Tasks waiting for some state to change, and the one call that tells them it did. A waiter learns
 * nothing but "look again": it re-checks its own condition and waits again if it still does not hold,
 * so one wake serves waiters with different conditions (a position reached, a buffer drained, a
 * pause lifted) and a spurious wake is harmless.
 *
 * Waiting is abortable with the caller's `AbortSignal`, every listener it adds is removed when the wait
 * ends, and there is no timer: a wait bounded in time runs the caller's own sleep (an injected clock's)
 * through `waitOr()`, which a wake cuts short.
 */
export class Waiters {
  private readonly pending = new Set<() => void>();

  /** Tasks waiting now. */
  get size(): number {
    return this.pending.size;
  }

  /** Resolves at the next `wakeAll()`; rejects with `signal.reason` if the signal aborts first. */
  wait(signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason as Error);
    return new Promise<void>((resolve, reject) => {
      const wake = (): void => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      const onAbort = (): void => {
        this.pending.delete(wake);
        reject(signal?.reason as Error);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.pending.add(wake);
    });
  }

  /**
   * Runs `run` (typically `clock.sleepUntil(deadline, s)`) with a signal that aborts at the next
   * `wakeAll()` or when `signal` does. Resolves true when a wake cut it short, false when `run` ended by
   * itself; rejects with `signal.reason` on abort, and with `run`'s own error otherwise.
   */
  async waitOr(run: (signal: AbortSignal) => Promise<unknown>, signal?: AbortSignal): Promise<boolean> {
    signal?.throwIfAborted();
    const controller = new AbortController();
    let woken = false;
    const wake = (): void => {
      woken = true;
      controller.abort(new DOMException('woken', 'AbortError'));
    };
    const onAbort = (): void => controller.abort(signal?.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    this.pending.add(wake);
    try {
      await run(controller.signal);
      return woken;
    } catch (error) {
      signal?.throwIfAborted();
      if (woken) return true;
      throw error;
    } finally {
      this.pending.delete(wake);
      signal?.removeEventListener('abort', onAbort);
    }
  }

  /** Wakes every task waiting now; tasks that start waiting during the wake wait for the next one. */
  wakeAll(): void {
    if (this.pending.size === 0) return;
    const woken = [...this.pending];
    this.pending.clear();
    for (const wake of woken) wake();
  }
}
