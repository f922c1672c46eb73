import { Waiters } from '../async/waiters.js';
import type { Clock } from './clock.js';
import { LeastDelay } from './least-delay.js';

/** Returned marks are judged by the least delay over two blocks of this long (ms). */
const ACK_BLOCK_MS = 1000;

/**
 * What a listener has heard, for sinks whose far end does not acknowledge playout: audio plays at real
 * time from the moment it is written into an idle sink, and a sink that ran dry starts again when the
 * next frame arrives. Positions are ms on the sink's timeline (written minus cleared).
 */
export class PlayoutClock {
  private written = 0;
  /** Timeline position and clock time at which the current run of continuous playout began. */
  private anchorPos = 0;
  private anchorAt = 0;
  /** `whenPlayed()` calls, woken when an ack or a clear moves the estimate. */
  private readonly waiters = new Waiters();
  /** (clock time − position) of the marks returned in this run: the least is the far end's playout. */
  private readonly ackDelay = new LeastDelay(ACK_BLOCK_MS);

  constructor(private readonly clock: Clock) {}

  writtenMs(): number {
    return this.written;
  }

  playedMs(): number {
    return Math.min(this.written, this.anchorPos + (this.clock.now() - this.anchorAt));
  }

  /** Adds `ms` of audio to the end of the timeline. */
  onWrite(ms: number): void {
    if (this.playedMs() >= this.written) {
      // The far end had nothing left to play: playout restarts now.
      this.anchorPos = this.written;
      this.anchorAt = this.clock.now();
      this.ackDelay.reset();
    }
    this.written += ms;
  }

  /**
   * The far end says it has played up to `positionMs` (a returned mark): the estimate runs from there,
   * which corrects for the gateway's own buffering and network delay. A mark only ever comes back late
   * (the network, the gateway's timers, our own busy event loop), so the estimate takes the mark that
   * came back soonest after its position played, over the last second or two of this run: one late
   * mark does not set the playout back (the echo reference and the resume position would move with
   * it), and the estimate never falls behind a returned position.
   */
  onAck(positionMs: number): void {
    const now = this.clock.now();
    const position = Math.min(positionMs, this.written);
    this.anchorPos = now - this.ackDelay.add(now - position, now);
    this.anchorAt = now;
    this.waiters.wakeAll();
  }

  /** Drops what has not played: the timeline ends where the listener is. */
  onClear(): void {
    const played = this.playedMs();
    this.written = played;
    this.anchorPos = played;
    this.anchorAt = this.clock.now();
    this.ackDelay.reset();
    this.waiters.wakeAll();
  }

  async whenPlayed(positionMs: number, signal?: AbortSignal): Promise<void> {
    for (;;) {
      signal?.throwIfAborted();
      const played = this.playedMs();
      if (played >= positionMs || positionMs > this.written) return;
      // An ack or a clear wakes the wait early (and cancels its timer), so nothing outlives the answer.
      const until = this.clock.now() + (positionMs - played);
      await this.waiters.waitOr((woken) => this.clock.sleepUntil(until, woken), signal);
    }
  }
}
