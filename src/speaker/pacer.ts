import type { Clock } from './clock.js';

export interface PacerOptions {
  frameMs: number;
  /** audio kept ahead of real time; 0 = sink paces itself */
  leadMs: number;
  /** lateness beyond which the pacer re-anchors instead of bursting; default 2 frames */
  maxLateMs?: number;
  /**
   * Frames released together: frames k·n … k·n+n−1 share frame k·n's deadline, so a sink can send them
   * as one message and the sender wakes once per n frames (the far end's buffer, the lead, holds up to
   * n−1 frames more for it). Default 1.
   */
  burstFrames?: number;
}

export interface PaceResult {
  /** How late this frame goes out against its deadline (ms, ≥ 0). */
  lateMs: number;
  /** True when this frame was so late that the pacer re-anchored on it. */
  reanchored: boolean;
}

/**
 * The one place that paces frames on the wall clock. Frame k of an anchor is due at
 * `origin + k·frameMs − leadMs`, never before the anchor itself: the first `leadMs` of audio goes at
 * once (so the far end has a buffer to ride out jitter), then one frame per `frameMs`. Deadlines are
 * computed from the anchor, never by adding up sleeps, so a timer that fires late does not push every
 * later frame back (no drift).
 *
 * When a frame goes out later than `maxLateMs` (the producer stalled, or the event loop did), bursting
 * every missed frame would leave the far end with more audio queued than the lead, and after a long
 * stall with seconds of it: added latency that never goes away. Instead the pacer re-anchors on that
 * frame. The far end's playout is modelled as continuous from the anchor, so audio still queued there
 * is kept on the timeline: only the part of the lead that was lost is sent at once, never more than
 * `leadMs` plus one frame.
 *
 * One caller at a time: `next()` is awaited before the next call.
 */
export class Pacer {
  private readonly frameMs: number;
  private readonly leadMs: number;
  private readonly maxLateMs: number;
  private readonly burstFrames: number;
  /** When the current anchor was taken (no deadline precedes it); undefined: not anchored. */
  private anchorMs: number | undefined;
  /** Where frame 0 of this anchor starts playing at the far end: the anchor, or later when audio was still queued. */
  private originMs = 0;
  private frames = 0;
  /** Bumped by `reset()`, so a wait that spans a reset re-anchors when it wakes. */
  private generation = 0;

  constructor(
    private readonly clock: Clock,
    options: PacerOptions,
  ) {
    const { frameMs, leadMs } = options;
    const maxLateMs = options.maxLateMs ?? 2 * frameMs;
    const burstFrames = options.burstFrames ?? 1;
    if (!(Number.isFinite(frameMs) && frameMs > 0))
      throw new RangeError(`frameMs must be > 0, got ${frameMs}`);
    if (!(Number.isFinite(leadMs) && leadMs >= 0)) throw new RangeError(`leadMs must be ≥ 0, got ${leadMs}`);
    if (!(Number.isFinite(maxLateMs) && maxLateMs >= 0))
      throw new RangeError(`maxLateMs must be ≥ 0, got ${maxLateMs}`);
    if (!(Number.isInteger(burstFrames) && burstFrames >= 1))
      throw new RangeError(`burstFrames must be a whole number ≥ 1, got ${burstFrames}`);
    this.frameMs = frameMs;
    this.leadMs = leadMs;
    this.maxLateMs = maxLateMs;
    this.burstFrames = burstFrames;
  }

  /**
   * Waits until the next frame may go out. The first call after construction or `reset()` anchors at
   * now. Rejects with `signal.reason` on abort; an aborted wait does not count as a frame.
   */
  async next(signal?: AbortSignal): Promise<PaceResult> {
    for (;;) {
      signal?.throwIfAborted();
      let now = this.clock.now();
      if (this.anchorMs === undefined) this.anchor(now, now);
      const deadline = this.deadline(this.frames);
      if (deadline > now) {
        const generation = this.generation;
        await this.clock.sleepUntil(deadline, signal);
        signal?.throwIfAborted();
        if (generation !== this.generation) continue; // reset() while waiting: this frame anchors afresh
        now = this.clock.now();
      }
      const lateMs = Math.max(0, now - deadline);
      const reanchored = lateMs > this.maxLateMs;
      if (reanchored) {
        // Audio the far end still holds (it has played since the origin without a gap) stays on the
        // timeline; once it has run dry, the timeline restarts now and the lead builds up again.
        const queuedMs = Math.max(0, this.originMs + this.frames * this.frameMs - now);
        this.anchor(now, now + queuedMs);
      }
      this.frames++;
      return { lateMs, reanchored };
    }
  }

  /** Forget the anchor (after barge-in, or when the speaker goes idle): the next frame anchors again. */
  reset(): void {
    this.anchorMs = undefined;
    this.originMs = 0;
    this.frames = 0;
    this.generation++;
  }

  private anchor(atMs: number, originMs: number): void {
    this.anchorMs = atMs;
    this.originMs = originMs;
    this.frames = 0;
  }

  private deadline(frame: number): number {
    const first = frame - (frame % this.burstFrames);
    return Math.max(this.anchorMs ?? 0, this.originMs + first * this.frameMs - this.leadMs);
  }
}
