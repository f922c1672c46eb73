import { Waiters } from './waiters.js';

/**
 * A bounded FIFO between producers and consumers that run at different speeds: a consumer waits for
 * the next item, a producer waits while the queue is full (backpressure reaches whatever feeds it: an
 * HTTP body, a socket). There is no unbounded mode: a producer that cannot wait uses `tryPush()` and
 * decides what a full queue means for it (drop the item, fail the job).
 *
 * Every wait takes an optional `AbortSignal` and rejects with its reason; nothing polls and nothing
 * keeps a timer. `close()` ends the queue: consumers get what is queued, then `undefined` (or the
 * error it was closed with); producers stop waiting.
 *
 * `undefined` means "closed and empty", so it cannot be an item.
 */
export class AsyncQueue<T extends NonNullable<unknown>> {
  private readonly items: T[] = [];
  private ended: { readonly error: Error | undefined } | undefined;
  private readonly arrivals = new Waiters();
  private readonly departures = new Waiters();

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1)
      throw new RangeError(`capacity must be a whole number of at least 1, got ${capacity}`);
  }

  /** Items queued and not yet taken. */
  get size(): number {
    return this.items.length;
  }

  /** True once `close()` was called (items queued before it can still be taken). */
  get closed(): boolean {
    return this.ended !== undefined;
  }

  /** Queues `item` if there is room: false, and the item not queued, when the queue is full or closed. */
  tryPush(item: T): boolean {
    if (this.ended || this.size >= this.capacity) return false;
    this.items.push(item);
    this.arrivals.wakeAll();
    return true;
  }

  /**
   * Queues `item`, waiting while the queue is full. Resolves true once it is queued, false if the queue
   * is (or while waiting becomes) closed: nobody will take it. Rejects with `signal.reason` on abort.
   */
  async push(item: T, signal?: AbortSignal): Promise<boolean> {
    for (;;) {
      signal?.throwIfAborted();
      if (this.ended) return false;
      if (this.tryPush(item)) return true;
      await this.departures.wait(signal);
    }
  }

  /**
   * The oldest item, waiting for one if the queue is empty; `undefined` once it is closed and empty,
   * or the error it was closed with. Rejects with `signal.reason` on abort (no item is lost to it).
   */
  async shift(signal?: AbortSignal): Promise<T | undefined> {
    for (;;) {
      signal?.throwIfAborted();
      const item = this.take();
      if (item !== undefined) return item;
      if (this.ended) {
        if (this.ended.error !== undefined) throw this.ended.error;
        return undefined;
      }
      await this.arrivals.wait(signal);
    }
  }

  /** The items as they come, until the queue is closed (then throws its error, if any). */
  async *values(signal?: AbortSignal): AsyncGenerator<T, void, undefined> {
    for (;;) {
      const item = await this.shift(signal);
      if (item === undefined) return;
      yield item;
    }
  }

  [Symbol.asyncIterator](): AsyncGenerator<T, void, undefined> {
    return this.values();
  }

  /**
   * No more items: waiting producers resolve false, consumers take what is queued and then get
   * `undefined`, or `error` if given. Only the first call counts.
   */
  close(error?: Error): void {
    if (this.ended) return;
    this.ended = { error };
    this.arrivals.wakeAll();
    this.departures.wakeAll();
  }

  private take(): T | undefined {
    const item = this.items.shift();
    if (item !== undefined) this.departures.wakeAll();
    return item;
  }
}
