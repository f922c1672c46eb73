/**
 * The offset between two clocks, seen through a path that only ever delays: each sample is (when we
 * saw it − when it happened on the other clock), and queues, the network and a busy event loop can
 * only make that larger. The least sample over the last two blocks of `blockMs` is the estimate, so
 * a late sample never moves it, and a real change is taken within two blocks.
 *
 * Used for the caller's audio against the wall clock (echo reference) and for returned marks against
 * the playout clock.
 */
export class LeastDelay {
  private blockStartMs = Number.NEGATIVE_INFINITY;
  private blockMin = Number.POSITIVE_INFINITY;
  private previousMin = Number.POSITIVE_INFINITY;

  constructor(private readonly blockMs: number) {
    if (!(Number.isFinite(blockMs) && blockMs > 0))
      throw new RangeError(`blockMs must be > 0, got ${blockMs}`);
  }

  /** Adds a sample seen at `nowMs`; returns the estimate (the least over this block and the last). */
  add(sampleMs: number, nowMs: number): number {
    if (nowMs - this.blockStartMs >= this.blockMs) {
      this.previousMin = this.blockMin;
      this.blockMin = Number.POSITIVE_INFINITY;
      this.blockStartMs = nowMs;
    }
    this.blockMin = Math.min(this.blockMin, sampleMs);
    return Math.min(this.blockMin, this.previousMin);
  }

  /** Forgets every sample (the path changed: a new run of playout). */
  reset(): void {
    this.blockStartMs = Number.NEGATIVE_INFINITY;
    this.blockMin = Number.POSITIVE_INFINITY;
    this.previousMin = Number.POSITIVE_INFINITY;
  }
}
