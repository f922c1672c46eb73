import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ALAW_SILENCE,
  MULAW_SILENCE,
  decodeAlaw,
  decodeMulaw,
  encodeAlaw,
  encodeMulaw,
} from '../../../src/audio/g711.js';

const run = promisify(execFile);

// ---------------------------------------------------------------------------------------------------
// Reference 1: the classic Sun Microsystems g711.c (public domain), transcribed line by line.
// ---------------------------------------------------------------------------------------------------
const SEG_END = [0xff, 0x1ff, 0x3ff, 0x7ff, 0xfff, 0x1fff, 0x3fff, 0x7fff];
const BIAS = 0x84;

function search(val: number): number {
  for (let i = 0; i < SEG_END.length; i++) if (val <= SEG_END[i]!) return i;
  return SEG_END.length;
}

function sunLinear2alaw(pcmVal: number): number {
  let mask: number;
  if (pcmVal >= 0) {
    mask = 0xd5;
  } else {
    mask = 0x55;
    pcmVal = -pcmVal - 8;
  }
  const seg = search(pcmVal);
  if (seg >= 8) return 0x7f ^ mask;
  let aval = seg << 4;
  if (seg < 2) aval |= (pcmVal >> 4) & 0xf;
  else aval |= (pcmVal >> (seg + 3)) & 0xf;
  return (aval ^ mask) & 0xff; // unsigned char
}

function sunAlaw2linear(aVal: number): number {
  aVal ^= 0x55;
  let t = (aVal & 0xf) << 4;
  const seg = (aVal & 0x70) >> 4;
  switch (seg) {
    case 0:
      t += 8;
      break;
    case 1:
      t += 0x108;
      break;
    default:
      t += 0x108;
      t <<= seg - 1;
  }
  return aVal & 0x80 ? t : -t;
}

function sunLinear2ulaw(pcmVal: number): number {
  let mask: number;
  if (pcmVal < 0) {
    pcmVal = BIAS - pcmVal;
    mask = 0x7f;
  } else {
    pcmVal += BIAS;
    mask = 0xff;
  }
  const seg = search(pcmVal);
  if (seg >= 8) return 0x7f ^ mask;
  const uval = (seg << 4) | ((pcmVal >> (seg + 3)) & 0xf);
  return (uval ^ mask) & 0xff;
}

function sunUlaw2linear(uVal: number): number {
  uVal = ~uVal & 0xff;
  let t = ((uVal & 0xf) << 3) + BIAS;
  t <<= (uVal & 0x70) >> 4;
  return uVal & 0x80 ? BIAS - t : t - BIAS;
}

// ---------------------------------------------------------------------------------------------------
// Reference 2: the ITU-T G.191 Software Tool Library's g711.c (alaw_compress, ulaw_compress), the
// ITU's own reference software for G.711, transcribed line by line. Inputs are int16 values.
// ---------------------------------------------------------------------------------------------------
function g191AlawCompress(lin: number): number {
  let ix = lin < 0 ? ~lin >> 4 : lin >> 4; // 1's complement for negative values
  if (ix > 15) {
    let iexp = 1;
    while (ix > 16 + 15) {
      ix >>= 1;
      iexp++;
    }
    ix -= 16;
    ix += iexp << 4;
  }
  if (lin >= 0) ix |= 0x0080;
  return ix ^ 0x0055;
}

function g191UlawCompress(lin: number): number {
  let absno = lin < 0 ? (~lin >> 2) + 33 : (lin >> 2) + 33;
  if (absno > 0x1fff) absno = 0x1fff;
  let i = absno >> 6;
  let segno = 1;
  while (i !== 0) {
    segno++;
    i >>= 1;
  }
  const highNibble = 0x0008 - segno;
  let lowNibble = (absno >> segno) & 0x000f;
  lowNibble = 0x000f - lowNibble;
  let log = (highNibble << 4) | lowNibble;
  if (lin >= 0) log |= 0x0080;
  return log;
}

// ---------------------------------------------------------------------------------------------------

const ALL_CODES = Uint8Array.from({ length: 256 }, (_, c) => c);
/** Every int16 value, from -32768 up. */
const ALL_SAMPLES = Int16Array.from({ length: 65536 }, (_, i) => i - 32768);

/** Sorted distinct reconstruction levels of a decoder (mu-law's two zeros count once). */
function levelsOf(decode: (c: number) => number): Map<number, number> {
  const levels = [...new Set(Array.from({ length: 256 }, (_, c) => decode(c)))].sort((x, y) => x - y);
  return new Map(levels.map((level, rank) => [level, rank]));
}
const MULAW_LEVELS = levelsOf(sunUlaw2linear);
const ALAW_LEVELS = levelsOf(sunAlaw2linear);

/** Whether two codes decode to the same or to neighbouring quantization levels. */
function adjacentLevels(decode: (c: number) => number, a: number, b: number): boolean {
  const levels = decode === sunUlaw2linear ? MULAW_LEVELS : ALAW_LEVELS;
  return Math.abs(levels.get(decode(a))! - levels.get(decode(b))!) <= 1;
}

let dir = '';
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'voxbridge-g711-'));
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** Runs Debian's ffmpeg on raw bytes written to a file and returns what it prints. */
async function ffmpeg(input: Uint8Array, inFormat: string[], outFormat: string[]): Promise<Buffer> {
  const path = join(dir, `in-${inFormat.join('')}-${outFormat.join('')}.raw`);
  await writeFile(path, input);
  const { stdout } = await run('ffmpeg', ['-v', 'error', ...inFormat, '-i', path, ...outFormat, '-'], {
    encoding: 'buffer',
    maxBuffer: 1 << 22,
  });
  return stdout;
}

function s16leOf(bytes: Buffer): number[] {
  const out: number[] = [];
  for (let i = 0; i + 1 < bytes.length; i += 2) out.push(bytes.readInt16LE(i));
  return out;
}

describe('G.711 decoding', () => {
  it('decodes all 256 mu-law and A-law codes exactly as the Sun reference does', () => {
    expect(Array.from(decodeMulaw(ALL_CODES))).toEqual(Array.from(ALL_CODES, sunUlaw2linear));
    expect(Array.from(decodeAlaw(ALL_CODES))).toEqual(Array.from(ALL_CODES, sunAlaw2linear));
  });

  it('decodes all 256 mu-law codes exactly as Debian ffmpeg does', async () => {
    const decoded = await ffmpeg(ALL_CODES, ['-f', 'mulaw', '-ar', '8000', '-ac', '1'], ['-f', 's16le']);
    expect(s16leOf(decoded)).toEqual(Array.from(decodeMulaw(ALL_CODES)));
  });

  it('decodes all 256 A-law codes exactly as Debian ffmpeg does', async () => {
    const decoded = await ffmpeg(ALL_CODES, ['-f', 'alaw', '-ar', '8000', '-ac', '1'], ['-f', 's16le']);
    expect(s16leOf(decoded)).toEqual(Array.from(decodeAlaw(ALL_CODES)));
  });

  it('maps silence codes to 0 and the extremes to the full-scale levels', () => {
    expect(decodeMulaw(Uint8Array.of(MULAW_SILENCE, 0x7f, 0x80, 0x00))).toEqual(
      Int16Array.of(0, 0, 32124, -32124),
    );
    expect(decodeAlaw(Uint8Array.of(ALAW_SILENCE, 0x55, 0xaa, 0x2a))).toEqual(
      Int16Array.of(8, -8, 32256, -32256),
    );
  });
});

describe('G.711 encoding', () => {
  it('round-trips every code, except mu-law negative zero (0x7f), which re-encodes as 0xff', () => {
    const mu = encodeMulaw(decodeMulaw(ALL_CODES));
    const a = encodeAlaw(decodeAlaw(ALL_CODES));
    for (let c = 0; c < 256; c++) {
      expect(mu[c], `mu-law 0x${c.toString(16)}`).toBe(c === 0x7f ? 0xff : c);
      expect(a[c], `A-law 0x${c.toString(16)}`).toBe(c);
    }
  });

  it('encodes all 65536 inputs exactly as the ITU-T G.191 reference (so the 14-bit table is exact)', () => {
    const mu = encodeMulaw(ALL_SAMPLES);
    const a = encodeAlaw(ALL_SAMPLES);
    const muMismatch: number[] = [];
    const aMismatch: number[] = [];
    for (let i = 0; i < ALL_SAMPLES.length; i++) {
      const x = ALL_SAMPLES[i]!;
      if (mu[i] !== g191UlawCompress(x)) muMismatch.push(x);
      if (a[i] !== g191AlawCompress(x)) aMismatch.push(x);
    }
    expect(muMismatch).toEqual([]);
    expect(aMismatch).toEqual([]);
  });

  it('differs from the classic Sun encoder only in how it reads negative samples', () => {
    // G.191 reads a negative x as the magnitude -x - 1 (ones' complement on 16 bits). Sun's linear2ulaw
    // reads it as -x (sign-magnitude) and its linear2alaw as -x - 8 (ones' complement on the 13-bit
    // grid that A-law is defined on). So for x < 0 ours(x) is Sun's code for the sample whose Sun
    // magnitude is -x - 1: mu-law sun(x + 1), A-law sun(x - 7). Positive samples agree outright.
    const mu = encodeMulaw(ALL_SAMPLES);
    const a = encodeAlaw(ALL_SAMPLES);
    let muDiffer = 0;
    let aDiffer = 0;
    const unexplained: string[] = [];
    const aDefect: number[] = [];
    for (let i = 0; i < ALL_SAMPLES.length; i++) {
      const x = ALL_SAMPLES[i]!;
      const ourMu = mu[i]!;
      const ourA = a[i]!;
      const sunMu = sunLinear2ulaw(x);
      const sunA = sunLinear2alaw(x);
      // -1 is ones'-complement zero: mu-law's negative zero 0x7f, where Sun's sun(0) is positive zero.
      const expectedMu = x >= 0 ? sunMu : x === -1 ? 0x7f : sunLinear2ulaw(x + 1);
      const expectedA = x >= 0 ? sunA : sunLinear2alaw(x - 7);
      if (ourMu !== expectedMu) unexplained.push(`mu-law ${x}`);
      if (ourA !== expectedA) unexplained.push(`A-law ${x}`);
      if (ourMu !== sunMu) {
        muDiffer++;
        // Both codes are neighbouring levels (x sits on the decision level between them).
        if (!adjacentLevels(sunUlaw2linear, ourMu, sunMu)) unexplained.push(`mu-law ${x} not adjacent`);
      }
      if (ourA !== sunA) {
        aDiffer++;
        if (x % 8 === 0) unexplained.push(`A-law ${x} on its own 13-bit grid`);
        if (!adjacentLevels(sunAlaw2linear, ourA, sunA)) aDefect.push(x);
      }
    }
    expect(unexplained).toEqual([]);
    // Sun's linear2alaw makes -pcm_val - 8 negative for -7..-1 and returns 0x5a (-248) for them: a
    // known slip in that code, not a convention. Everywhere else the two pick neighbouring levels.
    expect(aDefect).toEqual([-7, -6, -5, -4, -3, -2, -1]);
    for (const x of aDefect) expect(sunLinear2alaw(x)).toBe(0x5a);
    console.log(
      `G.711 encode vs Sun g711.c: mu-law differs on ${muDiffer}/65536 inputs, A-law on ${aDiffer}/65536 (all negative)`,
    );
  });

  it('picks the same or a neighbouring level as Debian ffmpeg for all 65536 inputs', async () => {
    const pcm = new Uint8Array(ALL_SAMPLES.buffer, ALL_SAMPLES.byteOffset, ALL_SAMPLES.byteLength);
    const input = ['-f', 's16le', '-ar', '8000', '-ac', '1'];
    const ffMu = await ffmpeg(pcm, input, ['-f', 'mulaw']);
    const ffA = await ffmpeg(pcm, input, ['-f', 'alaw']);
    expect(ffMu.length).toBe(65536);
    expect(ffA.length).toBe(65536);
    const mu = encodeMulaw(ALL_SAMPLES);
    const a = encodeAlaw(ALL_SAMPLES);
    let muDiffer = 0;
    let aDiffer = 0;
    for (let i = 0; i < 65536; i++) {
      const x = ALL_SAMPLES[i]!;
      if (mu[i] !== ffMu[i]) {
        muDiffer++;
        const [lo, hi] = [sunUlaw2linear(mu[i]!), sunUlaw2linear(ffMu[i]!)].sort((p, q) => p - q);
        if (!adjacentLevels(sunUlaw2linear, mu[i]!, ffMu[i]!) || x < lo! || x > hi!)
          throw new Error(`mu-law ${x}: ours 0x${mu[i]!.toString(16)}, ffmpeg 0x${ffMu[i]!.toString(16)}`);
      }
      if (a[i] !== ffA[i]) {
        aDiffer++;
        const [lo, hi] = [sunAlaw2linear(a[i]!), sunAlaw2linear(ffA[i]!)].sort((p, q) => p - q);
        if (!adjacentLevels(sunAlaw2linear, a[i]!, ffA[i]!) || x < lo! || x > hi!)
          throw new Error(`A-law ${x}: ours 0x${a[i]!.toString(16)}, ffmpeg 0x${ffA[i]!.toString(16)}`);
      }
    }
    console.log(
      `G.711 encode vs ffmpeg (rounds to the nearest level): mu-law differs on ${muDiffer}/65536 inputs, A-law on ${aDiffer}/65536`,
    );
  });

  it('encodes silence as the silence codes', () => {
    expect(encodeMulaw(new Int16Array(3))).toEqual(new Uint8Array(3).fill(MULAW_SILENCE));
    expect(encodeAlaw(new Int16Array(3))).toEqual(new Uint8Array(3).fill(ALAW_SILENCE));
  });
});

describe('G.711 output buffers', () => {
  const samples = Int16Array.of(0, 1000, -1000, 32767, -32768);

  it('writes into an output of the same length and returns that very array', () => {
    const codes = new Uint8Array(samples.length);
    expect(encodeMulaw(samples, codes)).toBe(codes);
    expect(encodeAlaw(samples, codes)).toBe(codes);
    const back = new Int16Array(samples.length);
    expect(decodeAlaw(codes, back)).toBe(back);
    expect(decodeMulaw(codes, back)).toBe(back);
  });

  it('fills the front of a longer output and returns a view of it; rejects a shorter one', () => {
    const codes = new Uint8Array(samples.length + 3).fill(0x11);
    const view = encodeMulaw(samples, codes);
    expect(view.length).toBe(samples.length);
    expect(view.buffer).toBe(codes.buffer);
    expect(Array.from(codes.subarray(samples.length))).toEqual([0x11, 0x11, 0x11]);
    expect(view).toEqual(encodeMulaw(samples));
    expect(() => encodeAlaw(samples, new Uint8Array(2))).toThrow(RangeError);
    expect(() => decodeMulaw(view, new Int16Array(2))).toThrow(RangeError);
  });

  it('reads a view at an offset inside a larger buffer without touching its neighbours', () => {
    const backing = Int16Array.of(-20000, ...samples, 20000);
    const inner = backing.subarray(1, 1 + samples.length);
    expect(encodeAlaw(inner)).toEqual(encodeAlaw(samples));
  });
});

describe('G.711 speed', () => {
  it('encodes and decodes in a few ns per sample', () => {
    const n = 48_000 * 10;
    const samples = new Int16Array(n);
    for (let i = 0; i < n; i++)
      samples[i] = Math.round(12000 * Math.sin(i * 0.0517) + 3000 * Math.sin(i * 0.31));
    const codes = new Uint8Array(n);
    const back = new Int16Array(n);
    const time = (fn: () => void): number => {
      for (let i = 0; i < 3; i++) fn(); // warm up (JIT)
      let best = Infinity;
      for (let i = 0; i < 5; i++) {
        const t0 = process.hrtime.bigint();
        fn();
        best = Math.min(best, Number(process.hrtime.bigint() - t0) / n);
      }
      return best;
    };
    const muEnc = time(() => encodeMulaw(samples, codes));
    const muDec = time(() => decodeMulaw(codes, back));
    const aEnc = time(() => encodeAlaw(samples, codes));
    const aDec = time(() => decodeAlaw(codes, back));
    console.log(
      `G.711 ns/sample: mu-law encode ${muEnc.toFixed(2)}, decode ${muDec.toFixed(2)}; A-law encode ${aEnc.toFixed(2)}, decode ${aDec.toFixed(2)}`,
    );
    for (const t of [muEnc, muDec, aEnc, aDec]) expect(t).toBeLessThan(100);
  });
});
