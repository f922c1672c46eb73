import type { Clock } from '../../src/speaker/clock.js';

interface Sleeper {
  readonly wakeMs: number;
  readonly seq: number;
  resolve(): void;
}

/** Lets every promise continuation (and anything they schedule in turn) run. */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * A clock that moves only when a test says so. `advance()` wakes sleepers one at a time in deadline
 * order (ties in the order they went to sleep), setting `now()` to each one's wake time and letting its
 * continuation run before the next, so a loop that sleeps again is woken at the right time too.
 */
export class FakeClock implements Clock {
  private nowMs: number;
  private sleepers: Sleeper[] = [];
  private seq = 0;

  /**
   * @param startMs the initial `now()`.
   * @param wakeLateMs extra delay for each sleeper, as a late timer would have (jitter); default none.
   */
  constructor(
    startMs = 0,
    private readonly wakeLateMs: () => number = () => 0,
  ) {
    this.nowMs = startMs;
  }

  now(): number {
    return this.nowMs;
  }

  sleepUntil(atMs: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason as Error);
    if (atMs <= this.nowMs) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const onAbort = (): void => {
        this.sleepers = this.sleepers.filter((s) => s !== sleeper);
        reject(signal?.reason as Error);
      };
      const sleeper: Sleeper = {
        wakeMs: atMs + this.wakeLateMs(),
        seq: this.seq++,
        resolve: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.sleepers.push(sleeper);
      this.sleepers.sort((a, b) => a.wakeMs - b.wakeMs || a.seq - b.seq);
    });
  }

  /** Sleepers not yet woken. */
  get pending(): number {
    return this.sleepers.length;
  }

  /** Moves time forward by `ms`, waking every sleeper due by then, in order. */
  async advance(ms: number): Promise<void> {
    await this.advanceTo(this.nowMs + ms);
  }

  async advanceTo(targetMs: number): Promise<void> {
    for (;;) {
      await settle();
      const first = this.sleepers[0];
      if (!first || first.wakeMs > targetMs) break;
      this.sleepers.shift();
      this.nowMs = Math.max(this.nowMs, first.wakeMs);
      first.resolve();
    }
    this.nowMs = Math.max(this.nowMs, targetMs);
    await settle();
  }
}
