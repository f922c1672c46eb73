import { AsyncQueue } from '../../src/async/queue.js';
import type { Clock } from '../../src/speaker/clock.js';

/** Keys pressed and not yet read, at most: a caller mashing keys cannot grow it without bound. */
const MAX_PENDING_DIGITS = 64;
/** The reason a wait for a key ended with none. */
const TIMED_OUT = Symbol('timed out');

/** The keys a caller pressed, read in order by one reader at a time (the call's flow). */
export class DigitQueue {
  private readonly pending = new AsyncQueue<string>(MAX_PENDING_DIGITS);

  constructor(private readonly clock: Clock) {}

  /** A key beyond the unread limit is dropped. */
  push(digit: string): void {
    this.pending.tryPush(digit);
  }

  /** The next key (keys pressed earlier first), or undefined after `timeoutMs` with none. */
  async next(timeoutMs: number, signal: AbortSignal): Promise<string | undefined> {
    signal.throwIfAborted();
    if (this.pending.size > 0) return this.pending.shift(signal);
    // Ends the wait: the caller's abort, or the timeout on the injected clock; a key that comes first
    // aborts it in turn, which cancels the timer.
    const wait = new AbortController();
    const onAbort = (): void => wait.abort(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    void this.clock.sleepUntil(this.clock.now() + timeoutMs, wait.signal).then(
      () => wait.abort(TIMED_OUT),
      () => undefined,
    );
    try {
      return await this.pending.shift(wait.signal);
    } catch (error) {
      if (wait.signal.reason === TIMED_OUT) return undefined;
      throw error;
    } finally {
      signal.removeEventListener('abort', onAbort);
      wait.abort();
    }
  }
}
