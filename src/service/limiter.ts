/** Speech requests in flight per key; past the limit a request is refused at once, never queued. */
export class ConcurrencyLimiter {
  private readonly active = new Map<string, number>();
  constructor(private readonly limit: number) {}

  /** A release function, or undefined when `key` is at its limit (its own, or the default). */
  tryAcquire(key: string, limit: number = this.limit): (() => void) | undefined {
    const n = this.active.get(key) ?? 0;
    if (n >= limit) return undefined;
    this.active.set(key, n + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.active.get(key) ?? 1) - 1;
      if (left <= 0) this.active.delete(key);
      else this.active.set(key, left);
    };
  }

  inFlight(key: string): number {
    return this.active.get(key) ?? 0;
  }
}
