/**
 * The speaker's pipeline from 24 kHz PCM chunks to a sink's frames: independent of how the (aligned)
 * chunks are cut, correct for chunks at odd byte offsets (Node's pooled Buffers), and loud about a
 * chunk that splits a sample (the speech client aligns the body; nothing may misalign it after).
 */
import { describe, expect, it } from 'vitest';
import { FRAME_MS, type WireFormat } from '../../../src/audio/framer.js';
import { FramePipeline } from '../../../src/speaker/frame-pipeline.js';

const MULAW_8K: WireFormat = { encoding: 'mulaw', sampleRate: 8000, channels: 1 };
const S16_24K: WireFormat = { encoding: 's16le', sampleRate: 24_000, channels: 1 };

/** `ms` of a 440 Hz tone, s16le 24 kHz. */
function tone24k(ms: number): Uint8Array {
  const samples = new Int16Array((24_000 * ms) / 1000);
  for (let i = 0; i < samples.length; i++)
    samples[i] = Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / 24_000));
  return new Uint8Array(samples.buffer);
}

function run(format: WireFormat, chunks: Uint8Array[]): Uint8Array[] {
  const pipeline = new FramePipeline(24_000, format, FRAME_MS);
  return [...chunks.flatMap((c) => pipeline.push(c)), ...pipeline.finish()];
}

/** `pcm` cut into pieces of whole samples, of uneven sizes. */
function cut(pcm: Uint8Array): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let o = 0, k = 0; o < pcm.length; k++) {
    const size = 2 * (1 + ((k * 37) % 311));
    out.push(pcm.subarray(o, o + size));
    o += size;
  }
  return out;
}

describe('FramePipeline', () => {
  it('makes the same frames however the whole-sample chunks are cut', () => {
    const pcm = tone24k(1010);
    const whole = run(MULAW_8K, [pcm]);
    expect(whole).toHaveLength(51);
    expect(run(MULAW_8K, cut(pcm))).toEqual(whole);
  });

  it('reads a chunk at an odd byte offset exactly (copied, not misread)', () => {
    const pcm = tone24k(100);
    const shifted = new Uint8Array(pcm.length + 1);
    shifted.set(pcm, 1);
    const odd = shifted.subarray(1);
    expect(odd.byteOffset % 2).toBe(1);
    const frames = run(S16_24K, [odd]);
    expect(frames).toHaveLength(5);
    expect(Buffer.concat(frames)).toEqual(Buffer.from(pcm));
  });

  it('refuses a chunk that splits a sample', () => {
    const pipeline = new FramePipeline(24_000, MULAW_8K, FRAME_MS);
    expect(() => pipeline.push(new Uint8Array(3))).toThrow(RangeError);
  });
});
