/**
 * The caller's audio as the line carried it (μ-law bytes as the gateway sent them, or PCM), kept a
 * few seconds back with each chunk's inbound time: when a turn opens, a realtime speech-to-text session
 * is sent the turn from a pre-roll before the caller's speech began (the detector confirms speech up to
 * seconds after it began), byte for byte, then the rest as it arrives. The turn recorder keeps the same
 * audio decoded, for batch.
 * Bounded by bytes as well as by time, as the turn recorder is (`TimedChunks`).
 */
import { TimedChunks } from './timed-chunks.js';
import { DEFAULT_LOOK_BACK_MS } from './turn-recorder.js';

export interface LineAudioOptions {
  /** Bytes of one millisecond of the line's audio (μ-law 8 kHz: 8; 16-bit PCM at 16 kHz: 32). */
  bytesPerMs: number;
  /** Bytes of one sample frame: a chunk is cut at a multiple of it. */
  frameBytes: number;
  /** How far back audio is kept (ms). Default `DEFAULT_LOOK_BACK_MS`, the turn recorder's. */
  lookBackMs?: number;
}

export class LineAudio {
  private readonly kept: TimedChunks<Uint8Array>;
  private readonly lookBackMs: number;

  constructor(private readonly options: LineAudioOptions) {
    this.lookBackMs = options.lookBackMs ?? DEFAULT_LOOK_BACK_MS;
    this.kept = new TimedChunks(options.bytesPerMs);
  }

  /** The line's next chunk, with the inbound time of its first sample. Kept as given (not copied). */
  push(bytes: Uint8Array, atMs: number): void {
    if (bytes.length === 0) return;
    this.kept.push(bytes, atMs, this.lookBackMs);
  }

  /** The audio kept from `fromMs` on (or from the oldest kept), in order: views, cut at a sample frame. */
  since(fromMs: number): Uint8Array[] {
    const { bytesPerMs, frameBytes } = this.options;
    const out: Uint8Array[] = [];
    for (const { atMs, data: bytes } of this.kept.chunks) {
      const end = atMs + bytes.length / bytesPerMs;
      if (end <= fromMs) continue;
      const skip = Math.max(0, Math.floor(((fromMs - atMs) * bytesPerMs) / frameBytes) * frameBytes);
      out.push(skip > 0 ? bytes.subarray(skip) : bytes);
    }
    return out;
  }
}
