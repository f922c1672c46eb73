/**
 * s16le PCM alignment. Byte streams (HTTP bodies, sockets) split audio anywhere, odd offsets included,
 * and Node hands out Buffers that are slices of a shared pool at any byteOffset. These helpers turn such
 * bytes into whole 16-bit samples without losing or doubling a byte.
 *
 * Samples are read and written in the host's byte order through typed arrays; every platform Node 20
 * supports (x64, arm64) is little-endian, which is what s16le needs, so no byte swapping is done.
 */

/** An Int16Array element is two bytes: views onto a buffer must start at an even byte offset. */
const BYTES_PER_SAMPLE = Int16Array.BYTES_PER_ELEMENT;

/**
 * Splits a stream of byte chunks of any length into whole s16le samples, carrying a stray byte from one
 * chunk over to the next.
 */
export class PcmAligner {
  /** The first byte of a sample whose second byte has not arrived yet. */
  private carry = 0;
  private hasCarry = false;

  /** 0 or 1: a byte held back until its sample's other half arrives. */
  get pendingBytes(): number {
    return this.hasCarry ? 1 : 0;
  }

  /**
   * The samples that `chunk` completes. When nothing is pending and the chunk starts on an even byte
   * offset, the result is a view onto the chunk's memory (no copy); otherwise it is a fresh array.
   */
  push(chunk: Uint8Array): Int16Array {
    if (!this.hasCarry) {
      const whole = chunk.length & ~1;
      if (whole !== chunk.length) {
        this.carry = chunk[whole]!;
        this.hasCarry = true;
      }
      return bytesToInt16(chunk.subarray(0, whole));
    }
    if (chunk.length === 0) return new Int16Array(0);
    const total = chunk.length + 1;
    const whole = total & ~1;
    const samples = new Int16Array(whole / BYTES_PER_SAMPLE);
    const bytes = new Uint8Array(samples.buffer);
    bytes[0] = this.carry;
    bytes.set(chunk.subarray(0, whole - 1), 1);
    this.hasCarry = whole !== total;
    if (this.hasCarry) this.carry = chunk[chunk.length - 1]!;
    return samples;
  }

  /** Drops a pending byte (a new stream starts). */
  reset(): void {
    this.hasCarry = false;
    this.carry = 0;
  }
}

/** Arrays of samples, as the audio code keeps them. */
type SampleArray = Int16Array | Float32Array | Float64Array;

/** The samples of `parts` one after another, in a new array made by `of` (`Float32Array`, …). */
export function concatSamples<T extends SampleArray>(parts: readonly T[], of: new (length: number) => T): T {
  const out = new of(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** The samples of `parts` one after another, in a new array. */
export function concatInt16(parts: readonly Int16Array[]): Int16Array {
  return concatSamples(parts, Int16Array);
}

/** The bytes of `samples` (s16le), as a view onto the same memory. */
export function int16ToBytes(samples: Int16Array): Uint8Array {
  return new Uint8Array(samples.buffer, samples.byteOffset, samples.byteLength);
}

/**
 * The samples in `bytes` (s16le, even length): a view onto the same memory when the bytes start on an
 * even offset, a copy when they do not (an Int16Array cannot start at an odd byte offset).
 */
export function bytesToInt16(bytes: Uint8Array): Int16Array {
  if (bytes.length % BYTES_PER_SAMPLE !== 0) {
    throw new RangeError(`s16le data must have an even number of bytes, got ${bytes.length}`);
  }
  const count = bytes.length / BYTES_PER_SAMPLE;
  if (bytes.byteOffset % BYTES_PER_SAMPLE === 0) return new Int16Array(bytes.buffer, bytes.byteOffset, count);
  const samples = new Int16Array(count);
  new Uint8Array(samples.buffer).set(bytes);
  return samples;
}
