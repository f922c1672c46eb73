import { describe, expect, it } from 'vitest';
import { FRAME_MS, Framer, frameBytes, silenceFrame, type WireFormat } from '../../../src/audio/framer.js';
import { encodeAlaw, encodeMulaw } from '../../../src/audio/g711.js';
import { seeded } from '../../../testkit/random.js';

const MULAW_8K: WireFormat = { encoding: 'mulaw', sampleRate: 8000, channels: 1 };
const ALAW_8K: WireFormat = { encoding: 'alaw', sampleRate: 8000, channels: 1 };
const S16_16K: WireFormat = { encoding: 's16le', sampleRate: 16_000, channels: 1 };
const S16_24K: WireFormat = { encoding: 's16le', sampleRate: 24_000, channels: 1 };
const S16_48K_STEREO: WireFormat = { encoding: 's16le', sampleRate: 48_000, channels: 2 };
const ALL_FORMATS = [MULAW_8K, ALAW_8K, S16_16K, S16_24K, S16_48K_STEREO];

const name = (f: WireFormat): string =>
  `${f.encoding} ${f.sampleRate / 1000} kHz ${f.channels === 2 ? 'stereo' : 'mono'}`;

/** A test signal that uses the whole int16 range, so every byte of every sample matters. */
function signal(length: number, seed = 1): Int16Array {
  const random = seeded(seed);
  return Int16Array.from({ length }, () => Math.floor(random() * 65536) - 32768);
}

/** The wire bytes of `samples`, computed independently of the framer (s16le byte by byte). */
function wireBytes(format: WireFormat, samples: Int16Array): number[] {
  switch (format.encoding) {
    case 'mulaw':
      return Array.from(encodeMulaw(samples));
    case 'alaw':
      return Array.from(encodeAlaw(samples));
    case 's16le':
      return Array.from(samples).flatMap((s) => [s & 0xff, (s >> 8) & 0xff]);
  }
}

function concat(frames: readonly Uint8Array[]): number[] {
  const out: number[] = [];
  for (const f of frames) for (const b of f) out.push(b);
  return out;
}

describe('frameBytes and silenceFrame', () => {
  it('gives the exact byte count of a frame', () => {
    expect(frameBytes(MULAW_8K, 20)).toBe(160);
    expect(frameBytes(ALAW_8K, 20)).toBe(160);
    expect(frameBytes(S16_16K, 20)).toBe(640);
    expect(frameBytes(S16_24K, 20)).toBe(960);
    expect(frameBytes(S16_48K_STEREO, 20)).toBe(3840);
    expect(frameBytes(MULAW_8K, 10)).toBe(80);
    expect(frameBytes({ encoding: 's16le', sampleRate: 22_050, channels: 1 }, 20)).toBe(882);
  });

  it('rejects frames that would not hold a whole number of samples, and nonsense formats', () => {
    expect(() => frameBytes({ encoding: 's16le', sampleRate: 22_050, channels: 1 }, 10)).toThrow(RangeError);
    expect(() => frameBytes({ ...MULAW_8K, sampleRate: 0 }, 20)).toThrow(RangeError);
    expect(() => frameBytes(MULAW_8K, 0)).toThrow(RangeError);
    expect(() => frameBytes(MULAW_8K, -20)).toThrow(RangeError);
    expect(() => new Framer({ ...MULAW_8K, channels: 3 as 1 })).toThrow(RangeError);
    expect(() => new Framer({ ...MULAW_8K, encoding: 'opus' as 'mulaw' })).toThrow(RangeError);
  });

  it('fills a silence frame with the encoding’s silence byte', () => {
    expect(Array.from(new Set(silenceFrame(MULAW_8K, 20)))).toEqual([0xff]);
    expect(Array.from(new Set(silenceFrame(ALAW_8K, 20)))).toEqual([0xd5]);
    expect(Array.from(new Set(silenceFrame(S16_48K_STEREO, 20)))).toEqual([0]);
    expect(silenceFrame(MULAW_8K, 20).length).toBe(160);
    expect(silenceFrame(S16_48K_STEREO, 20).length).toBe(3840);
  });
});

describe('Framer', () => {
  it('defaults to 20 ms frames', () => {
    const framer = new Framer(MULAW_8K);
    expect(FRAME_MS).toBe(20);
    expect(framer.frameMs).toBe(20);
    expect(framer.frameBytes).toBe(160);
  });

  for (const format of ALL_FORMATS) {
    it(`${name(format)}: frames of exactly frameBytes holding the samples in order`, () => {
      const framer = new Framer(format);
      const perFrame = (format.sampleRate / 50) * format.channels;
      const samples = signal(perFrame * 7 + 3);
      const frames = framer.push(samples);
      expect(frames).toHaveLength(7);
      for (const f of frames) expect(f.byteLength).toBe(frameBytes(format, 20));
      expect(framer.pendingSamples).toBe(3);
      expect(concat(frames)).toEqual(wireBytes(format, samples.subarray(0, perFrame * 7)));
    });
  }

  for (const format of ALL_FORMATS) {
    it(`${name(format)}: the same frames however the samples are split into pushes`, () => {
      const samples = signal(format.sampleRate / 2 + 77, 3); // 0.5 s plus a partial frame
      const whole = new Framer(format);
      const expected = [...whole.push(samples), ...whole.flush()];
      const random = seeded(11);
      for (let round = 0; round < 10; round++) {
        const framer = new Framer(format);
        const frames: Uint8Array[] = [];
        // Chunks of 0 to ~3 frames, odd sizes included (stereo pushes then end between channels).
        const maxChunk = 3 * (format.sampleRate / 50) * format.channels;
        for (let at = 0; at < samples.length;) {
          const size = Math.min(samples.length - at, Math.floor(random() ** 3 * maxChunk));
          frames.push(...framer.push(samples.subarray(at, at + size)));
          at += size;
        }
        frames.push(...framer.flush());
        expect(frames.map((f) => f.byteLength)).toEqual(expected.map((f) => f.byteLength));
        expect(Buffer.concat(frames).equals(Buffer.concat(expected))).toBe(true);
      }
    });
  }

  it('pads the final partial frame with mu-law silence (0xff) after the real codes', () => {
    const framer = new Framer(MULAW_8K);
    const samples = signal(100);
    expect(framer.push(samples)).toEqual([]);
    expect(framer.pendingSamples).toBe(100);
    const [last, ...rest] = framer.flush();
    expect(rest).toEqual([]);
    expect(last!.length).toBe(160);
    expect(Array.from(last!.subarray(0, 100))).toEqual(wireBytes(MULAW_8K, samples));
    expect(Array.from(last!.subarray(100))).toEqual(new Array<number>(60).fill(0xff));
    expect(framer.pendingSamples).toBe(0);
  });

  it('pads with A-law silence (0xd5) after the partial frame that follows whole frames', () => {
    const framer = new Framer(ALAW_8K);
    const samples = signal(160 * 2 + 41);
    expect(framer.push(samples)).toHaveLength(2);
    const [last] = framer.flush();
    expect(Array.from(last!.subarray(0, 41))).toEqual(wireBytes(ALAW_8K, samples.subarray(320)));
    expect(Array.from(last!.subarray(41))).toEqual(new Array<number>(119).fill(0xd5));
  });

  it('pads s16le stereo with zero bytes, even when the stream ends between the two channels', () => {
    const framer = new Framer(S16_48K_STEREO);
    const samples = signal(1001); // 500 stereo samples and a lone left channel
    framer.push(samples);
    const [last] = framer.flush();
    expect(last!.length).toBe(3840);
    expect(Array.from(last!.subarray(0, 2002))).toEqual(wireBytes(S16_48K_STEREO, samples));
    expect(last!.subarray(2002).every((b) => b === 0)).toBe(true);
  });

  it('pads 24 kHz s16le mono with zero samples', () => {
    const framer = new Framer(S16_24K);
    const samples = signal(480 + 1);
    expect(framer.push(samples)).toHaveLength(1);
    const [last] = framer.flush();
    expect(Array.from(last!.subarray(0, 2))).toEqual(wireBytes(S16_24K, samples.subarray(480)));
    expect(last!.subarray(2).every((b) => b === 0)).toBe(true);
  });

  it('returns [] from flush when nothing is pending: fresh, after whole frames, after a flush', () => {
    const framer = new Framer(MULAW_8K);
    expect(framer.flush()).toEqual([]);
    expect(framer.push(signal(320))).toHaveLength(2);
    expect(framer.flush()).toEqual([]);
    framer.push(signal(5));
    expect(framer.flush()).toHaveLength(1);
    expect(framer.flush()).toEqual([]);
    expect(framer.push(new Int16Array(0))).toEqual([]);
  });

  it('reset drops the pending samples: the next frame starts with the next push', () => {
    const framer = new Framer(S16_16K);
    framer.push(signal(200, 5));
    expect(framer.pendingSamples).toBe(200);
    framer.reset();
    expect(framer.pendingSamples).toBe(0);
    expect(framer.flush()).toEqual([]);
    const after = signal(320, 6);
    const frames = framer.push(after);
    expect(frames).toHaveLength(1);
    expect(concat(frames)).toEqual(wireBytes(S16_16K, after));
  });

  it('hands out fresh frames the caller may keep: own memory, unaffected by later input or pushes', () => {
    const framer = new Framer(S16_16K);
    const input = signal(320 * 2 + 10, 8);
    const expected = wireBytes(S16_16K, input.subarray(0, 640));
    const frames = framer.push(input);
    input.fill(1234);
    framer.push(signal(320 * 3, 9)); // reuses the partial-frame buffer
    expect(concat(frames)).toEqual(expected);
    for (const f of frames) {
      expect(f.byteOffset).toBe(0);
      expect(f.buffer.byteLength).toBe(640);
    }
    expect(frames[0]!.buffer).not.toBe(frames[1]!.buffer);
  });

  it('reads a subarray view of a larger buffer without touching its neighbours', () => {
    const backing = signal(500, 10);
    const view = backing.subarray(37, 37 + 160);
    const [frame] = new Framer(MULAW_8K).push(view);
    expect(Array.from(frame!)).toEqual(wireBytes(MULAW_8K, backing.slice(37, 197)));
  });
});
