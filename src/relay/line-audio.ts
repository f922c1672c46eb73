/**
 * The caller's audio as the line carried it (μ-law bytes as the gateway sent them, or PCM), kept a
 * few seconds back with each chunk's inbound time: when a turn opens, a realtime speech-to-text session
 * is sent the turn from a pre-roll before the caller's speech began (the detector confirms speech up to
 * seconds after it began), byte for byte, then the rest as it arrives. The turn recorder keeps the same
 * audio decoded, for batch.
 *
 * Bounded by bytes as well as by time, as the turn recorder is: a gateway's timestamps are the peer's
 * to send, and a chunk that claims a time before the end of the last one is placed right after it.
 */
import { DEFAULT_LOOK_BACK_MS } from './turn-recorder.js';

interface Chunk {
  readonly atMs: number;
  readonly bytes: Uint8Array;
}

export interface LineAudioOptions {
  /** Bytes of one millisecond of the line's audio (μ-law 8 kHz: 8; 16-bit PCM at 16 kHz: 32). */
  bytesPerMs: number;
  /** Bytes of one sample frame: a chunk is cut at a multiple of it. */
  frameBytes: number;
  /** How far back audio is kept (ms). Default `DEFAULT_LOOK_BACK_MS`, the turn recorder's. */
  lookBackMs?: number;
}

export class LineAudio {
  private readonly chunks: Chunk[] = [];
  private held = 0;
  private endMs: number | undefined;
  private readonly keepBytes: number;
  private readonly lookBackMs: number;

  constructor(private readonly options: LineAudioOptions) {
    this.lookBackMs = options.lookBackMs ?? DEFAULT_LOOK_BACK_MS;
    this.keepBytes = Math.ceil(this.lookBackMs * options.bytesPerMs);
  }

  /** The line's next chunk, with the inbound time of its first sample. Kept as given (not copied). */
  push(bytes: Uint8Array, atMs: number): void {
    if (bytes.length === 0) return;
    const at = this.endMs === undefined || !(atMs < this.endMs) ? atMs : this.endMs;
    if (!Number.isFinite(at)) return;
    this.chunks.push({ atMs: at, bytes });
    this.held += bytes.length;
    this.endMs = at + bytes.length / this.options.bytesPerMs;
    const oldest = this.endMs - this.lookBackMs;
    while (
      this.chunks.length > 1 &&
      (this.chunks[1]!.atMs <= oldest || this.held - this.chunks[0]!.bytes.length >= this.keepBytes)
    )
      this.held -= this.chunks.shift()!.bytes.length;
  }

  /** The audio kept from `fromMs` on (or from the oldest kept), in order: views, cut at a sample frame. */
  since(fromMs: number): Uint8Array[] {
    const { bytesPerMs, frameBytes } = this.options;
    const out: Uint8Array[] = [];
    for (const { atMs, bytes } of this.chunks) {
      const end = atMs + bytes.length / bytesPerMs;
      if (end <= fromMs) continue;
      const skip = Math.max(0, Math.floor(((fromMs - atMs) * bytesPerMs) / frameBytes) * frameBytes);
      out.push(skip > 0 ? bytes.subarray(skip) : bytes);
    }
    return out;
  }
}
