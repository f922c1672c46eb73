/**
 * A bounded single-producer, single-consumer queue: the producer waits while it is full, so reading the
 * HTTP body pauses (and TCP backpressure reaches the service) instead of audio piling up in memory.
 */
export class FrameQueue<T> {
  private items: T[] = [];
  private closed = false;
  private wakeConsumer: (() => void) | undefined;
  private wakeProducer: (() => void) | undefined;

  constructor(readonly capacity: number) {
    if (capacity < 1) throw new RangeError('capacity must be at least 1');
  }

  get length(): number {
    return this.items.length;
  }

  async push(item: T, signal: AbortSignal): Promise<void> {
    while (this.items.length >= this.capacity) {
      signal.throwIfAborted();
      await this.wait('producer', signal);
    }
    signal.throwIfAborted();
    this.items.push(item);
    this.wake('consumer');
  }

  /** The next item; undefined once the queue is closed and empty. */
  async shift(signal: AbortSignal): Promise<T | undefined> {
    for (;;) {
      signal.throwIfAborted();
      const item = this.items.shift();
      if (item !== undefined) {
        this.wake('producer');
        return item;
      }
      if (this.closed) return undefined;
      await this.wait('consumer', signal);
    }
  }

  /** True when a consumer would have to wait. */
  get empty(): boolean {
    return this.items.length === 0 && !this.closed;
  }

  /** No more items will come. */
  close(): void {
    this.closed = true;
    this.wake('consumer');
  }

  /** Drops everything queued (barge-in). */
  clear(): void {
    this.items = [];
    this.wake('producer');
  }

  private wait(who: 'producer' | 'consumer', signal: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = (): void => {
        signal.removeEventListener('abort', done);
        resolve();
      };
      signal.addEventListener('abort', done, { once: true });
      if (who === 'producer') this.wakeProducer = done;
      else this.wakeConsumer = done;
    });
  }

  private wake(who: 'producer' | 'consumer'): void {
    const w = who === 'producer' ? this.wakeProducer : this.wakeConsumer;
    if (who === 'producer') this.wakeProducer = undefined;
    else this.wakeConsumer = undefined;
    w?.();
  }
}
