/**
 * A token bucket: a peer may send `perSecond` messages a second on average, and a burst of up to
 * `burst` at once (after a pause, or when the event loop was busy and its messages arrived together).
 * Each message takes a token; a message with none left is over the rate. No timer: tokens are worked
 * out from the time between takes, on the clock the owner passes (monotonic milliseconds).
 */
export class RateLimit {
  private tokens: number;
  private lastMs: number | undefined;

  constructor(
    readonly perSecond: number,
    readonly burst: number,
  ) {
    if (!(perSecond > 0) || !(burst >= 1))
      throw new RangeError(`a rate needs perSecond > 0 and burst >= 1, got ${perSecond}, ${burst}`);
    this.tokens = burst;
  }

  /** Takes a token at `nowMs`: false when the peer is over its rate (no token is taken then). */
  take(nowMs: number): boolean {
    if (this.lastMs !== undefined && nowMs > this.lastMs)
      this.tokens = Math.min(this.burst, this.tokens + ((nowMs - this.lastMs) * this.perSecond) / 1000);
    this.lastMs = Math.max(this.lastMs ?? nowMs, nowMs);
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}
