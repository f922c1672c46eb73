/**
 * Cuts a stream of samples into frames of exactly `frameMs` in a sink's wire encoding. Gateways and
 * Discord play whole frames on a fixed clock: a short frame is a gap, so every frame is full and the
 * last one is padded with silence rather than dropped.
 */
import { ALAW_SILENCE, MULAW_SILENCE, encodeAlaw, encodeMulaw } from './g711.js';
import { int16ToBytes } from './pcm.js';

export type WireEncoding = 's16le' | 'mulaw' | 'alaw';

export interface WireFormat {
  readonly encoding: WireEncoding;
  readonly sampleRate: number;
  readonly channels: 1 | 2;
}

/** Every phone gateway and Discord play 20 ms frames. */
export const FRAME_MS = 20;

/** G.711 μ-law at 8 kHz, mono: the telephone's own format, which every phone gateway carries. */
export const MULAW_8K: WireFormat = { encoding: 'mulaw', sampleRate: 8000, channels: 1 };

const MS_PER_SECOND = 1000;

const BYTES_PER_SAMPLE: Readonly<Record<WireEncoding, number>> = { s16le: 2, mulaw: 1, alaw: 1 };
/** The byte a silent sample is made of: s16le zero is two zero bytes. */
const SILENCE_BYTE: Readonly<Record<WireEncoding, number>> = {
  s16le: 0,
  mulaw: MULAW_SILENCE,
  alaw: ALAW_SILENCE,
};

/** Int16 values in one frame (both channels counted); throws unless the frame holds whole samples. */
function frameSamples(format: WireFormat, frameMs: number): number {
  const { sampleRate, channels } = format;
  if (!Number.isInteger(sampleRate) || sampleRate <= 0) {
    throw new RangeError(`sampleRate must be a positive integer, got ${sampleRate}`);
  }
  if (channels !== 1 && channels !== 2)
    throw new RangeError(`channels must be 1 or 2, got ${String(channels)}`);
  if (!(BYTES_PER_SAMPLE[format.encoding] > 0))
    throw new RangeError(`unknown encoding ${String(format.encoding)}`);
  const perChannel = (sampleRate * frameMs) / MS_PER_SECOND;
  if (!(frameMs > 0) || !Number.isInteger(perChannel)) {
    throw new RangeError(`${frameMs} ms at ${sampleRate} Hz is not a whole number of samples`);
  }
  return perChannel * channels;
}

/** Bytes in one frame: mu-law 8 kHz 20 ms is 160, s16le 48 kHz stereo 20 ms is 3840. */
export function frameBytes(format: WireFormat, frameMs: number): number {
  return frameSamples(format, frameMs) * BYTES_PER_SAMPLE[format.encoding];
}

/** A frame of silence: 0xff bytes in mu-law, 0xd5 in A-law, zeros in s16le. */
export function silenceFrame(format: WireFormat, frameMs: number): Uint8Array {
  return new Uint8Array(frameBytes(format, frameMs)).fill(SILENCE_BYTE[format.encoding]);
}

/** Writes `samples` in the wire encoding into the front of `out` (which has room for them). */
type FrameWriter = (samples: Int16Array, out: Uint8Array) => void;

const WRITERS: Readonly<Record<WireEncoding, FrameWriter>> = {
  // Typed arrays use the host's byte order, little-endian on every platform Node 20 runs on (see pcm.ts).
  s16le: (samples, out) => out.set(int16ToBytes(samples)),
  mulaw: (samples, out) => {
    encodeMulaw(samples, out);
  },
  alaw: (samples, out) => {
    encodeAlaw(samples, out);
  },
};

/**
 * Turns samples at the wire's rate into frames of exactly `frameMs`. Whole frames are encoded straight
 * from the input; only the remainder of a push is copied, into one preallocated partial-frame buffer.
 * Frames depend only on the sample stream, never on how it was split into pushes.
 */
export class Framer {
  readonly format: WireFormat;
  readonly frameMs: number;
  /** Bytes in every frame this framer returns. */
  readonly frameBytes: number;
  /** Int16 values per frame (interleaved: both channels counted). */
  private readonly frameSamples: number;
  private readonly write: FrameWriter;
  private readonly silenceByte: number;
  /** The start of the next frame, waiting for the rest of its samples. */
  private readonly partial: Int16Array;
  private partialCount = 0;

  constructor(format: WireFormat, frameMs = FRAME_MS) {
    this.frameSamples = frameSamples(format, frameMs);
    this.format = format;
    this.frameMs = frameMs;
    this.frameBytes = this.frameSamples * BYTES_PER_SAMPLE[format.encoding];
    this.write = WRITERS[format.encoding];
    this.silenceByte = SILENCE_BYTE[format.encoding];
    this.partial = new Int16Array(this.frameSamples);
  }

  /**
   * Int16 values held back for the next frame, counted as pushed (two per stereo sample). A stereo
   * push may end between the channels of a sample; the next push continues it.
   */
  get pendingSamples(): number {
    return this.partialCount;
  }

  /**
   * Samples already at `format.sampleRate`, interleaved when stereo. Returns the frames completed, each
   * a fresh Uint8Array of exactly `frameBytes` that the caller may keep.
   */
  push(samples: Int16Array): Uint8Array[] {
    const frames: Uint8Array[] = [];
    const size = this.frameSamples;
    let at = 0;
    if (this.partialCount > 0) {
      at = Math.min(size - this.partialCount, samples.length);
      this.partial.set(samples.subarray(0, at), this.partialCount);
      this.partialCount += at;
      if (this.partialCount < size) return frames;
      frames.push(this.encode(this.partial));
      this.partialCount = 0;
    }
    for (; samples.length - at >= size; at += size) frames.push(this.encode(samples.subarray(at, at + size)));
    if (at < samples.length) {
      this.partial.set(samples.subarray(at));
      this.partialCount = samples.length - at;
    }
    return frames;
  }

  /** The last partial frame, padded with the encoding's silence (never dropped); [] when nothing is pending. */
  flush(): Uint8Array[] {
    if (this.partialCount === 0) return [];
    const frame = new Uint8Array(this.frameBytes);
    const pending = this.partial.subarray(0, this.partialCount);
    this.write(pending, frame);
    frame.fill(this.silenceByte, this.partialCount * BYTES_PER_SAMPLE[this.format.encoding]);
    this.partialCount = 0;
    return [frame];
  }

  /** Drops the pending samples: after a barge-in, the next utterance starts on a fresh frame. */
  reset(): void {
    this.partialCount = 0;
  }

  private encode(samples: Int16Array): Uint8Array {
    const frame = new Uint8Array(this.frameBytes);
    this.write(samples, frame);
    return frame;
  }
}
