/**
 * The speaker's sink for one guild: 20 ms frames of 48 kHz stereo s16le, each encoded into one Opus
 * packet by the guild's own encoder, into an `@discordjs/voice` audio player, one resource per run of
 * speech (`StreamType.Opus`: the packets go to the player as they are, nothing is transcoded).
 *
 * The player pulls one packet every 20 ms and has no jitter buffer of its own, so the sink holds a
 * small pre-buffer before `play()`; after that `write()` waits for the player to take frames (its
 * backpressure is the only pacing: `selfPaced`). The speaker pads every utterance to whole frames, so
 * no ending is cut. `clear()` is `player.stop()`
 * (not `stop(true)`, which leaves a prepared packet to leak into the next utterance).
 *
 * Utterances that follow each other share one run: `flush()` does not end the stream, it ends it only
 * once the player has taken every frame and nothing new came for `holdMs`. A queued next utterance
 * (the next line of a narration) so continues the same resource with no gap, where a new resource
 * would replace the old one mid-play (`play()` cuts what is still buffered) or start after 5 frames of
 * silence padding and a fresh pre-buffer.
 */
import { once } from 'node:events';
import { PassThrough } from 'node:stream';
import { createAudioResource, StreamType, type AudioResource } from '@discordjs/voice';
import { Waiters } from '../../src/async/waiters.js';
import { FRAME_MS, frameBytes, type WireFormat } from '../../src/audio/framer.js';
import type { AudioSink, SinkFrame } from '../../src/speaker/sink.js';
import { createOpusEncoder, type OpusEncoder } from './opus.js';

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
  /** After an utterance's last frame has been taken, how long the run waits for the next one (default 40 ms). */
  holdMs?: number;
  /** The guild's Opus encoder (default: a new one). */
  encoder?: OpusEncoder;
}

const FORMAT: WireFormat = { encoding: 's16le', sampleRate: 48_000, channels: 2 };
/** 20 ms of 48 kHz stereo s16le: 3840 bytes. */
const FRAME_BYTES = frameBytes(FORMAT, FRAME_MS);

/**
 * A run's packets, handed to `createAudioResource()` as they are: with `StreamType.Opus` this stream is
 * the resource's `playStream`, and the player takes each packet with `read()`. That call is the moment
 * `playedMs()` moves, so it is reported; listening for 'data' instead would switch the stream into
 * flowing mode and drain packets past the player.
 */
class PacketStream extends PassThrough {
  constructor(
    highWaterMark: number,
    private readonly onTaken: () => void,
  ) {
    super({ objectMode: true, highWaterMark });
  }

  override read(size?: number): unknown {
    const packet: unknown = super.read(size);
    if (packet !== null) this.onTaken();
    return packet;
  }
}

interface Run {
  readonly stream: PassThrough;
  readonly resource: AudioResource;
  /** Timeline position where this run's first frame sits. */
  readonly startMs: number;
  frames: number;
  started: boolean;
  /** The last utterance written has ended; the run ends too unless another follows within `holdMs`. */
  flushed: boolean;
}

/** Resolves when the stream takes more, or is gone. */
function drained(stream: PassThrough): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      stream.off('drain', done);
      stream.off('close', done);
      resolve();
    };
    stream.on('drain', done);
    stream.on('close', done);
  });
}

export class DiscordSink implements AudioSink {
  readonly format = FORMAT;
  readonly frameMs = FRAME_MS;
  /** What the player has queued at most: a producer later than this leaves the player without audio. */
  readonly leadMs: number;
  readonly selfPaced = true;

  private readonly prebufferFrames: number;
  private readonly maxQueuedFrames: number;
  private readonly holdMs: number;
  private readonly encoder: OpusEncoder;
  /** The run being written or playing out. */
  private run: Run | undefined;
  private endTimer: NodeJS.Timeout | undefined;
  /** Timeline: audio written and not cleared; audio of runs that have finished playing. */
  private written = 0;
  private settledMs = 0;
  /** `whenPlayed()` calls, woken whenever the player takes a packet or a run ends or is cleared. */
  private readonly waiters = new Waiters();

  constructor(
    private readonly player: DiscordPlayer,
    options: DiscordSinkOptions = {},
  ) {
    this.prebufferFrames = options.prebufferFrames ?? 5;
    this.maxQueuedFrames = options.maxQueuedFrames ?? 10;
    this.holdMs = options.holdMs ?? 40;
    this.encoder = options.encoder ?? createOpusEncoder();
    this.leadMs = this.maxQueuedFrames * FRAME_MS;
  }

  async write(frame: SinkFrame): Promise<void> {
    if (frame.payload.byteLength !== FRAME_BYTES)
      throw new RangeError(`a Discord frame is ${FRAME_BYTES} bytes, got ${frame.payload.byteLength}`);
    let run = this.run;
    if (!run || run.stream.writableEnded || run.stream.destroyed) run = this.open();
    run.flushed = false;
    this.cancelEnd();
    const accepted = run.stream.write(this.encoder.encode(frame.payload));
    run.frames++;
    this.written += FRAME_MS;
    if (!run.started && run.frames >= this.prebufferFrames) this.start(run);
    if (!accepted && run.started) await drained(run.stream);
  }

  /** The end of an utterance: what is buffered plays out; the run ends unless more follows. */
  flush(): void {
    const run = this.run;
    if (!run || run.stream.writableEnded) return;
    if (!run.started) this.start(run);
    run.flushed = true;
    this.scheduleEnd(run);
  }

  clear(): void {
    const played = this.playedMs();
    const run = this.run;
    this.run = undefined;
    this.cancelEnd();
    this.player.stop();
    if (run) {
      run.stream.destroy();
      run.resource.playStream.destroy(); // encoded packets still queued go too
    }
    this.written = played;
    this.settledMs = played;
    this.waiters.wakeAll();
  }

  /** Stops playback and frees the run (the guild is leaving). */
  close(): void {
    this.clear();
  }

  writtenMs(): number {
    return this.written;
  }

  playedMs(): number {
    const run = this.run;
    const playing = run?.started ? Math.min(run.resource.playbackDuration, run.frames * FRAME_MS) : 0;
    return Math.min(this.written, Math.max(this.settledMs, (run?.startMs ?? this.settledMs) + playing));
  }

  async whenPlayed(positionMs: number, signal?: AbortSignal): Promise<void> {
    while (this.playedMs() < positionMs && positionMs <= this.written) await this.waiters.wait(signal);
  }

  private open(): Run {
    // One Opus packet per object; a new run starts a new Opus stream.
    const stream = new PacketStream(this.maxQueuedFrames, () => this.waiters.wakeAll());
    const resource = createAudioResource(stream, { inputType: StreamType.Opus });
    this.encoder.reset();
    const run: Run = { stream, resource, startMs: this.written, frames: 0, started: false, flushed: false };
    // A run that played to its end is settled on the timeline.
    resource.playStream.once('end', () => {
      this.settledMs = Math.max(this.settledMs, run.startMs + run.frames * FRAME_MS);
      if (this.run === run) this.run = undefined;
      this.waiters.wakeAll();
    });
    this.run = run;
    return run;
  }

  private start(run: Run): void {
    run.started = true;
    this.player.play(run.resource);
  }

  /** Ends a flushed run once the player has taken its last frame and `holdMs` brought nothing new. */
  private scheduleEnd(run: Run): void {
    const check = (): void => {
      if (this.run !== run || !run.flushed) return;
      const left = run.frames * FRAME_MS - run.resource.playbackDuration;
      this.endTimer =
        left > 0
          ? setTimeout(check, left)
          : setTimeout(() => {
              if (this.run === run && run.flushed) run.stream.end();
            }, this.holdMs);
    };
    this.cancelEnd();
    check();
  }

  private cancelEnd(): void {
    clearTimeout(this.endTimer);
    this.endTimer = undefined;
  }
}

/**
 * The first `createAudioResource()` in a process and the first Opus encoder take 70–200 ms to load:
 * done at start, not in a guild's first utterance. Resolves with the time it took (ms).
 */
export async function warmDiscordAudio(): Promise<number> {
  const started = performance.now();
  const stream = new PassThrough({ objectMode: true });
  const resource = createAudioResource(stream, { inputType: StreamType.Opus });
  stream.end(createOpusEncoder().encode(new Uint8Array(FRAME_BYTES)));
  if (resource.playStream.readableLength === 0) await once(resource.playStream, 'readable');
  resource.read();
  resource.playStream.destroy();
  return performance.now() - started;
}
