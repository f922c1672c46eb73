import type { Clock } from '../../src/speaker/clock.js';

/** Keys pressed and not yet read, at most: a caller mashing keys cannot grow it without bound. */
const MAX_PENDING_DIGITS = 64;

/** The keys a caller pressed, read in order by one reader at a time (the call's flow). */
export class DigitQueue {
  private readonly pending: string[] = [];
  private waiter: ((digit: string) => void) | undefined;

  constructor(private readonly clock: Clock) {}

  push(digit: string): void {
    if (this.waiter) {
      const wake = this.waiter;
      this.waiter = undefined;
      wake(digit);
    } else if (this.pending.length < MAX_PENDING_DIGITS) this.pending.push(digit);
  }

  /** The next key (keys pressed earlier first), or undefined after `timeoutMs` with none. */
  async next(timeoutMs: number, signal: AbortSignal): Promise<string | undefined> {
    signal.throwIfAborted();
    const queued = this.pending.shift();
    if (queued !== undefined) return queued;
    const timeout = new AbortController();
    return new Promise<string | undefined>((resolve, reject) => {
      this.waiter = (digit) => {
        timeout.abort();
        resolve(digit);
      };
      this.clock.sleepUntil(this.clock.now() + timeoutMs, AbortSignal.any([signal, timeout.signal])).then(
        () => {
          this.waiter = undefined;
          resolve(undefined);
        },
        () => {
          if (!signal.aborted) return; // woken by a key
          this.waiter = undefined;
          reject(signal.reason as Error);
        },
      );
    });
  }
}
