/**
 * The speaker's pipeline from 24 kHz PCM chunks to a sink's frames: independent of how the (aligned)
 * chunks are cut, correct for chunks at odd byte offsets (Node's pooled Buffers), and loud about a
 * chunk that splits a sample (the speech client aligns the body; nothing may misalign it after).
 */
import { describe, expect, it } from 'vitest';
import { FRAME_MS, type WireFormat } from '../../../src/audio/framer.js';
import { concatInt16 } from '../../../src/audio/pcm.js';
import { resampleWhole } from '../../../src/audio/resampler.js';
import { FramePipeline } from '../../../src/speaker/frame-pipeline.js';

const MULAW_8K: WireFormat = { encoding: 'mulaw', sampleRate: 8000, channels: 1 };
const S16_24K: WireFormat = { encoding: 's16le', sampleRate: 24_000, channels: 1 };
const S16_8K: WireFormat = { encoding: 's16le', sampleRate: 8000, channels: 1 };

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

  it('resamples each segment on its own, and plays a recorded rendition as the segment itself', () => {
    // Two segments whose lengths are not whole 8 kHz samples, nor whole frames.
    const a = tone24k(1010).subarray(0, 2 * 24_241);
    const b = tone24k(730);
    const live = new FramePipeline(24_000, S16_8K, FRAME_MS);
    live.recordSegment(1 << 20);
    const frames = [...cut(a).flatMap((c) => live.push(c)), ...live.endSegment()];
    const renditionA = live.takeRendition()!;
    expect(live.takeRendition()).toBeUndefined();
    live.recordSegment(1 << 20);
    frames.push(...cut(b).flatMap((c) => live.push(c)), ...live.endSegment(), ...live.finish());
    const renditionB = live.takeRendition()!;
    // Each segment's audio is its own resampling, silence before and after it: nothing lost at the join.
    const pcmOf = (x: Uint8Array): Int16Array =>
      resampleWhole(new Int16Array(x.slice().buffer), 24_000, 8000);
    expect(renditionA).toEqual(pcmOf(a));
    expect(renditionB).toEqual(pcmOf(b));
    // A copy: a small Buffer is a slice of Node's pool, at an offset into its ArrayBuffer.
    const all = new Int16Array(new Uint8Array(Buffer.concat(frames)).buffer);
    expect(all.subarray(0, renditionA.length + renditionB.length)).toEqual(
      concatInt16([renditionA, renditionB]),
    );
    // The renditions, pieces of any size, make the same frames with no resampling.
    const replay = new FramePipeline(24_000, S16_8K, FRAME_MS);
    const replayed = [
      ...replay.pushRendered(renditionA.subarray(0, 1234)),
      ...replay.pushRendered(renditionA.subarray(1234)),
      ...replay.pushRendered(renditionB),
      ...replay.finish(),
    ];
    expect(replayed).toEqual(frames);
  });

  it('gives up a rendition that outgrows its bound, and records none where it would not be smaller', () => {
    const pcm = tone24k(200);
    const small = new FramePipeline(24_000, MULAW_8K, FRAME_MS);
    small.recordSegment(3200 - 1); // 200 ms at 8 kHz is 3200 bytes
    small.push(pcm);
    small.endSegment();
    expect(small.takeRendition()).toBeUndefined();
    small.recordSegment(3200);
    small.push(pcm);
    small.endSegment();
    expect(small.takeRendition()).toHaveLength(1600);
    const same = new FramePipeline(24_000, S16_24K, FRAME_MS);
    expect(same.renditionFormat).toBeUndefined();
    same.recordSegment(1 << 20);
    same.push(pcm);
    same.endSegment();
    expect(same.takeRendition()).toBeUndefined();
    expect(small.renditionFormat).toBe('8000/1');
    // Discord's 48 kHz stereo would be four times the service's bytes: resampled live each time.
    const discord = new FramePipeline(
      24_000,
      { encoding: 's16le', sampleRate: 48_000, channels: 2 },
      FRAME_MS,
    );
    expect(discord.renditionFormat).toBeUndefined();
    discord.recordSegment(1 << 20);
    expect(discord.push(pcm)).toHaveLength(9);
    discord.endSegment();
    expect(discord.takeRendition()).toBeUndefined();
  });

  it('refuses a chunk that splits a sample', () => {
    const pipeline = new FramePipeline(24_000, MULAW_8K, FRAME_MS);
    expect(() => pipeline.push(new Uint8Array(3))).toThrow(RangeError);
  });
});
