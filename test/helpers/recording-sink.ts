import { frameBytes, type WireFormat } from '../../src/audio/framer.js';
import type { Clock } from '../../src/speaker/clock.js';
import { PlayoutClock } from '../../src/speaker/playout-clock.js';
import type { AudioSink, SinkFrame } from '../../src/speaker/sink.js';

export interface RecordedFrame extends SinkFrame {
  /** Clock time at which the sink got it. */
  readonly at: number;
}

/**
 * A sink that keeps every frame with its arrival time and plays out on a local clock, as a gateway
 * without acknowledgements would. `clears` records when clear() was called and how many frames had
 * arrived by then.
 */
export class RecordingSink implements AudioSink {
  readonly frames: RecordedFrame[] = [];
  readonly clears: Array<{ at: number; framesBefore: number }> = [];
  private readonly playout: PlayoutClock;

  constructor(
    readonly format: WireFormat,
    private readonly clock: Clock,
    readonly leadMs = 200,
    readonly selfPaced = false,
    readonly frameMs = 20,
  ) {
    this.playout = new PlayoutClock(clock);
  }

  async write(frame: SinkFrame): Promise<void> {
    if (frame.payload.byteLength !== frameBytes(this.format, this.frameMs))
      throw new Error(`frame of ${frame.payload.byteLength} bytes`);
    this.frames.push({ ...frame, at: this.clock.now() });
    this.playout.onWrite(this.frameMs);
  }

  clear(): void {
    this.clears.push({ at: this.clock.now(), framesBefore: this.frames.length });
    this.playout.onClear();
  }

  writtenMs(): number {
    return this.playout.writtenMs();
  }

  /** With `instant`, the far end plays whatever it gets at once (a file writer): for long texts in tests. */
  instant = false;

  playedMs(): number {
    return this.instant ? this.playout.writtenMs() : this.playout.playedMs();
  }

  whenPlayed(positionMs: number, signal?: AbortSignal): Promise<void> {
    return this.instant ? Promise.resolve() : this.playout.whenPlayed(positionMs, signal);
  }

  framesOf(utteranceId: string): RecordedFrame[] {
    return this.frames.filter((f) => f.utteranceId === utteranceId);
  }
}
