import { AsyncQueue } from '../async/queue.js';

/**
 * The speaker's frames between producer and sender: bounded, so while it is full the producer waits,
 * reading the HTTP body pauses (and TCP backpressure reaches the service) instead of audio piling up
 * in memory. A barge-in aborts both sides; the queue is dropped with the utterance.
 */
export class FrameQueue<T extends NonNullable<unknown>> extends AsyncQueue<T> {
  /** True when the sender would have to wait: nothing queued and more to come. */
  get empty(): boolean {
    return this.size === 0 && !this.closed;
  }
}
