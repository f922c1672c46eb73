/**
 * When this process's event loop stalled. A test whose fake peers share the process with the app (a
 * gateway and an echoing caller on timers) sees a stall as a line no real gateway makes: the caller's
 * audio arrives in a burst and the gateway's playout pauses, all at once. Such a test can tell what
 * happened on a realistic line from what happened just after a stall.
 */
export class StallWatch {
  /** Each stall: when it ended (performance.now()) and how long the loop was held (ms). */
  readonly stalls: Array<{ at: number; ms: number }> = [];
  private last = performance.now();
  private readonly timer: NodeJS.Timeout;

  /** A tick every `tickMs`; a tick later than it by more than `thresholdMs` is a stall. */
  constructor(
    private readonly thresholdMs = 80,
    tickMs = 10,
  ) {
    this.timer = setInterval(() => {
      const now = performance.now();
      const late = now - this.last - tickMs;
      if (late > this.thresholdMs) this.stalls.push({ at: now, ms: late });
      this.last = now;
    }, tickMs);
    this.timer.unref();
  }

  /** A stall ended within `windowMs` before `at` (or during it). */
  stalledBefore(at: number, windowMs: number): boolean {
    return this.stalls.some((s) => s.at <= at && at - s.at <= windowMs);
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
