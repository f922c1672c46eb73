import { describe, expect, it } from 'vitest';
import { PcmAligner, bytesToInt16, int16ToBytes } from '../../../src/audio/pcm.js';
import { seeded } from '../../../testkit/random.js';

/** s16le bytes of `samples`, built byte by byte (independent of the code under test). */
function leBytes(samples: readonly number[]): number[] {
  return samples.flatMap((s) => [s & 0xff, (s >> 8) & 0xff]);
}

function concat(parts: readonly Int16Array[]): number[] {
  const out: number[] = [];
  for (const p of parts) for (const s of p) out.push(s);
  return out;
}

describe('PcmAligner', () => {
  const reference = Array.from({ length: 2001 }, (_, i) => ((i * 7919) % 65536) - 32768);
  const stream = leBytes(reference);

  it('reassembles samples split at random odd and even byte boundaries, zero-length chunks included', () => {
    const random = seeded(42);
    for (let round = 0; round < 20; round++) {
      const aligner = new PcmAligner();
      const parts: Int16Array[] = [];
      for (let at = 0; at < stream.length;) {
        const size = Math.min(stream.length - at, Math.floor(random() * 9));
        parts.push(aligner.push(Uint8Array.from(stream.slice(at, at + size))));
        at += size;
      }
      expect(concat(parts)).toEqual(reference);
      expect(aligner.pendingBytes).toBe(0);
    }
  });

  it('reads pooled Buffers only within their byteOffset/byteLength, at odd and even offsets', () => {
    // A shared backing store full of 0xEE: any byte read outside the chunk would show up as 0xEEEE.
    const backing = new Uint8Array(stream.length + 64).fill(0xee);
    const random = seeded(7);
    for (let round = 0; round < 20; round++) {
      const aligner = new PcmAligner();
      const parts: Int16Array[] = [];
      for (let at = 0; at < stream.length;) {
        const size = Math.min(stream.length - at, 1 + Math.floor(random() * 301));
        const offset = Math.floor(random() * 32); // odd half the time
        backing.fill(0xee);
        backing.set(stream.slice(at, at + size), offset);
        const chunk = Buffer.from(backing.buffer, offset, size);
        parts.push(aligner.push(chunk).slice()); // the next round overwrites the backing store
        at += size;
      }
      expect(concat(parts)).toEqual(reference);
    }
  });

  it('handles small Buffers from Node’s allocation pool (non-zero byteOffset)', () => {
    const aligner = new PcmAligner();
    const a = Buffer.from([0x01, 0x02, 0x03]);
    const b = Buffer.from([0x04, 0x05]);
    expect(a.byteOffset + b.byteOffset).toBeGreaterThan(0);
    expect(Array.from(aligner.push(a))).toEqual([0x0201]);
    expect(aligner.pendingBytes).toBe(1);
    expect(Array.from(aligner.push(b))).toEqual([0x0403]);
    expect(aligner.pendingBytes).toBe(1);
    expect(Array.from(aligner.push(Buffer.from([0x06])))).toEqual([0x0605]);
    expect(aligner.pendingBytes).toBe(0);
  });

  it('carries one stray byte across a run of one-byte chunks', () => {
    const aligner = new PcmAligner();
    expect(aligner.push(Uint8Array.of(0xff)).length).toBe(0);
    expect(aligner.pendingBytes).toBe(1);
    expect(aligner.push(new Uint8Array(0)).length).toBe(0);
    expect(aligner.pendingBytes).toBe(1);
    expect(Array.from(aligner.push(Uint8Array.of(0x7f)))).toEqual([0x7fff]);
    expect(Array.from(aligner.push(Uint8Array.of(0x00, 0x80)))).toEqual([-32768]);
  });

  it('reset() drops a pending byte', () => {
    const aligner = new PcmAligner();
    aligner.push(Uint8Array.of(0x11, 0x22, 0x33));
    expect(aligner.pendingBytes).toBe(1);
    aligner.reset();
    expect(aligner.pendingBytes).toBe(0);
    expect(Array.from(aligner.push(Uint8Array.of(0x44, 0x55)))).toEqual([0x5544]);
  });

  it('returns a view without copying when nothing is pending and the chunk is aligned', () => {
    const aligner = new PcmAligner();
    const chunk = new Uint8Array(new ArrayBuffer(16), 4, 8);
    const samples = aligner.push(chunk);
    expect(samples.buffer).toBe(chunk.buffer);
    expect(samples.byteOffset).toBe(4);
    expect(samples.length).toBe(4);
  });
});

describe('int16ToBytes', () => {
  it('views exactly the samples of a subarray, little-endian', () => {
    const all = Int16Array.from([1, 2, 0x1234, -2, 0x7fff, 9]);
    const bytes = int16ToBytes(all.subarray(2, 5));
    expect(bytes.byteOffset).toBe(4);
    expect(Array.from(bytes)).toEqual([0x34, 0x12, 0xfe, 0xff, 0xff, 0x7f]);
  });
});

describe('bytesToInt16', () => {
  it('reads little-endian samples, as a view when aligned', () => {
    const bytes = new Uint8Array(new ArrayBuffer(8), 2, 4);
    bytes.set([0x34, 0x12, 0x00, 0x80]);
    const samples = bytesToInt16(bytes);
    expect(Array.from(samples)).toEqual([0x1234, -32768]);
    expect(samples.buffer).toBe(bytes.buffer);
  });

  it('copies when the bytes start at an odd offset', () => {
    const bytes = new Uint8Array(new ArrayBuffer(8), 3, 4);
    bytes.set([0x34, 0x12, 0xff, 0x7f]);
    const samples = bytesToInt16(bytes);
    expect(Array.from(samples)).toEqual([0x1234, 0x7fff]);
    expect(samples.buffer).not.toBe(bytes.buffer);
  });

  it('rejects an odd number of bytes', () => {
    expect(() => bytesToInt16(new Uint8Array(3))).toThrow(RangeError);
  });

  it('round-trips with int16ToBytes', () => {
    const samples = Int16Array.from([0, 1, -1, 32767, -32768, 12345]);
    expect(Array.from(bytesToInt16(int16ToBytes(samples)))).toEqual(Array.from(samples));
  });
});
