import type { WireFormat } from '../audio/framer.js';

/** One frame of exactly `frameMs` of audio in the sink's wire format. */
export interface SinkFrame {
  readonly payload: Uint8Array;
  /** The speaker's epoch when the frame was made; a barge-in bumps it, and older frames are dropped. */
  readonly epoch: number;
  /** Id of the utterance it belongs to. */
  readonly utteranceId: string;
}

/**
 * The port every adapter implements: where frames go (a phone gateway's media stream, a Discord
 * player). Positions are milliseconds of audio on the sink's own timeline: everything written so far,
 * less what `clear()` dropped.
 */
export interface AudioSink {
  readonly format: WireFormat;
  /** Duration of every frame; 20 for every gateway and for Discord. */
  readonly frameMs: number;
  /**
   * Audio the speaker keeps ahead of real time (ms): ~200 for phone gateways, which buffer what they
   * get; 0 for a sink that paces itself (Discord's player pulls one frame per 20 ms).
   */
  readonly leadMs: number;
  /** True when the sink pulls frames at its own rate: the speaker then relies on `write()`'s backpressure. */
  readonly selfPaced: boolean;
  /**
   * Frames the speaker releases at once (the pacer's burst), for a sink that sends them as one message:
   * fewer socket writes and wake-ups per call, within the lead. Default 1.
   */
  readonly burstFrames?: number;
  /** Takes one frame; resolves when the sink can take another (never queue without bound). */
  write(frame: SinkFrame): Promise<void>;
  /** Drops all audio not yet played, at the far end too (gateway clear, player stop). */
  clear(): void;
  /**
   * The end of an utterance's audio: a sink that batches frames into bigger messages (Exotel's 100 ms,
   * Asterisk's `optimal_frame_size`) sends what it holds, padded with silence. Optional.
   */
  flush?(): void;
  /** Milliseconds of audio written (and not cleared) so far: the timeline's end. */
  writtenMs(): number;
  /** Milliseconds of the timeline the listener has heard, from the far end's acknowledgements or a playout clock. */
  playedMs(): number;
  /** Resolves once `playedMs() >= positionMs`, or once a clear means it never will be. */
  whenPlayed(positionMs: number, signal?: AbortSignal): Promise<void>;
}
