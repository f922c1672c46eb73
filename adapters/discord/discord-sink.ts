/**
 * The speaker's sink for one guild: 20 ms frames of 48 kHz stereo s16le into an `@discordjs/voice`
 * audio player, one resource per run of speech (`StreamType.Raw`, so prism's Opus encoder turns each
 * 3840-byte frame into one packet).
 *
 * The player pulls one packet every 20 ms and has no jitter buffer of its own, so the sink holds a
 * small pre-buffer before `play()`; after that `write()` waits for the player to take frames (its
 * backpressure is the only pacing: `selfPaced`). The speaker pads every utterance to whole frames, so
 * prism's encoder, which drops a partial last frame, never cuts an ending. `clear()` is `player.stop()`
 * (not `stop(true)`, which leaves a prepared packet to leak into the next utterance).
 */
import { PassThrough } from 'node:stream';
import { once } from 'node:events';
import { createAudioResource, StreamType, type AudioResource } from '@discordjs/voice';
import type { AudioSink, SinkFrame, WireFormat } from '../../src/speaker/sink.js';

/** What the sink needs of an `AudioPlayer`. */
export interface DiscordPlayer {
  play(resource: AudioResource): void;
  stop(force?: boolean): boolean;
}

export interface DiscordSinkOptions {
  /** Frames buffered before playback starts (default 5 = 100 ms). */
  prebufferFrames?: number;
  /** Frames queued for the player at most before `write()` waits (default 10 = 200 ms). */
  maxQueuedFrames?: number;
}

const FRAME_MS = 20;
const FRAME_BYTES = 3840;
const FORMAT: WireFormat = { encoding: 's16le', sampleRate: 48_000, channels: 2 };

interface Run {
  readonly stream: PassThrough;
  readonly resource: AudioResource;
  /** Timeline position where this run's first frame sits. */
  readonly startMs: number;
  frames: number;
  started: boolean;
}

export class DiscordSink implements AudioSink {
  readonly format = FORMAT;
  readonly frameMs = FRAME_MS;
  readonly leadMs = 0;
  readonly selfPaced = true;

  private readonly prebufferFrames: number;
  private readonly maxQueuedFrames: number;
  private run: Run | undefined;
  /** A flushed run still playing out. */
  private draining: Run | undefined;
  /** Timeline: audio written and not cleared; audio of runs that have finished playing. */
  private written = 0;
  private settledMs = 0;
  private readonly waiters = new Set<() => void>();

  constructor(
    private readonly player: DiscordPlayer,
    options: DiscordSinkOptions = {},
  ) {
    this.prebufferFrames = options.prebufferFrames ?? 5;
    this.maxQueuedFrames = options.maxQueuedFrames ?? 10;
  }

  async write(frame: SinkFrame): Promise<void> {
    if (frame.payload.byteLength !== FRAME_BYTES)
      throw new RangeError(`a Discord frame is ${FRAME_BYTES} bytes, got ${frame.payload.byteLength}`);
    const run = this.run ?? this.open();
    const accepted = run.stream.write(frame.payload);
    run.frames++;
    this.written += FRAME_MS;
    if (!run.started && run.frames >= this.prebufferFrames) this.start(run);
    if (!accepted && run.started) await once(run.stream, 'drain').catch(() => undefined);
  }

  /** The end of an utterance: what is buffered plays out, and the run ends with it. */
  flush(): void {
    const run = this.run;
    if (!run) return;
    if (!run.started) this.start(run);
    run.stream.end();
    this.draining = run;
    this.run = undefined;
  }

  clear(): void {
    const run = this.run;
    this.run = undefined;
    this.draining = undefined;
    this.player.stop();
    if (run) run.stream.destroy();
    this.written = this.playedMs();
    this.settledMs = this.written;
    this.wake();
  }

  writtenMs(): number {
    return this.written;
  }

  playedMs(): number {
    const run = this.run ?? this.draining;
    const playing = run?.started ? Math.min(run.resource.playbackDuration, run.frames * FRAME_MS) : 0;
    return Math.min(this.written, Math.max(this.settledMs, (run?.startMs ?? this.settledMs) + playing));
  }

  async whenPlayed(positionMs: number, signal?: AbortSignal): Promise<void> {
    while (this.playedMs() < positionMs && positionMs <= this.written) {
      signal?.throwIfAborted();
      await new Promise<void>((resolve) => {
        const done = (): void => {
          clearTimeout(timer);
          this.waiters.delete(done);
          resolve();
        };
        const timer = setTimeout(done, FRAME_MS);
        this.waiters.add(done);
      });
    }
  }

  private open(): Run {
    const stream = new PassThrough({ highWaterMark: this.maxQueuedFrames * FRAME_BYTES });
    const resource = createAudioResource(stream, { inputType: StreamType.Raw });
    const run: Run = { stream, resource, startMs: this.written, frames: 0, started: false };
    // A run that played to its end is settled on the timeline.
    resource.playStream.once('end', () => {
      this.settledMs = Math.max(this.settledMs, run.startMs + run.frames * FRAME_MS);
      if (this.draining === run) this.draining = undefined;
      this.wake();
    });
    this.run = run;
    return run;
  }

  private start(run: Run): void {
    run.started = true;
    this.player.play(run.resource);
  }

  private wake(): void {
    for (const w of [...this.waiters]) w();
  }
}
