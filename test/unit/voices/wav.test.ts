import { describe, expect, it } from 'vitest';
import {
  parseWav,
  readWavInfo,
  WAV_HEADER_BYTES,
  WAV_UNKNOWN_SIZE,
  wavFile,
  wavHeader,
  WavFormatError,
} from '../../../src/audio/wav.js';

const PCM = 1;
const FLOAT = 3;
const ALAW = 6;
const EXTENSIBLE = 0xfffe;

/** A RIFF chunk, with its pad byte when the body is odd. */
function chunk(id: string, body: Uint8Array, declaredSize = body.length): Buffer {
  const head = Buffer.alloc(8);
  head.write(id, 0, 'latin1');
  head.writeUInt32LE(declaredSize, 4);
  return Buffer.concat([head, body, body.length % 2 === 1 ? Buffer.alloc(1) : Buffer.alloc(0)]);
}

function riff(chunks: Buffer[], form = 'RIFF'): Buffer {
  const body = Buffer.concat(chunks);
  const head = Buffer.alloc(12);
  head.write(form, 0, 'latin1');
  head.writeUInt32LE(4 + body.length, 4);
  head.write('WAVE', 8, 'latin1');
  return Buffer.concat([head, body]);
}

interface Fmt {
  tag: number;
  channels: number;
  sampleRate: number;
  bits: number;
  /** For WAVE_FORMAT_EXTENSIBLE: the tag in the SubFormat GUID. */
  subFormat?: number;
}

function fmtChunk({ tag, channels, sampleRate, bits, subFormat }: Fmt): Buffer {
  const body = Buffer.alloc(tag === EXTENSIBLE ? 40 : 16);
  const blockAlign = (channels * bits) / 8;
  body.writeUInt16LE(tag, 0);
  body.writeUInt16LE(channels, 2);
  body.writeUInt32LE(sampleRate, 4);
  body.writeUInt32LE(sampleRate * blockAlign, 8);
  body.writeUInt16LE(blockAlign, 12);
  body.writeUInt16LE(bits, 14);
  if (tag === EXTENSIBLE) {
    body.writeUInt16LE(22, 16); // cbSize
    body.writeUInt16LE(bits, 18); // valid bits
    body.writeUInt32LE(channels === 2 ? 0x3 : 0x4, 20); // channel mask
    body.writeUInt16LE(subFormat ?? PCM, 24);
    // The rest of KSDATAFORMAT_SUBTYPE_*: 0000-0010-8000-00aa00389b71.
    Buffer.from([0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xaa, 0x00, 0x38, 0x9b, 0x71]).copy(
      body,
      26,
    );
  }
  return chunk('fmt ', body);
}

/** Interleaved frames encoded at `bits` (integer PCM) or as float. */
function encode(frames: number[][], bits: number, float = false): Buffer {
  const bytes = bits / 8;
  const channels = frames[0]!.length;
  const out = Buffer.alloc(frames.length * channels * bytes);
  let o = 0;
  for (const frame of frames) {
    for (const v of frame) {
      if (float && bits === 32) out.writeFloatLE(v, o);
      else if (float) out.writeDoubleLE(v, o);
      else if (bits === 8) out.writeUInt8(Math.round(v * 128) + 128, o);
      else if (bits === 16) out.writeInt16LE(Math.round(v * 32768), o);
      else if (bits === 24) out.writeIntLE(Math.round(v * 8388608), o, 3);
      else out.writeInt32LE(Math.round(v * 2147483648), o);
      o += bytes;
    }
  }
  return out;
}

const MONO = [[0], [0.5], [-0.5], [0.25], [-1], [0.75]];

describe('wavHeader', () => {
  it('writes a canonical 44-byte PCM header with the sizes of the data that follows', () => {
    const h = wavHeader({ sampleRate: 24_000, channels: 1, bitsPerSample: 16, dataBytes: 4800 });
    expect(h.length).toBe(WAV_HEADER_BYTES);
    expect(h.toString('latin1', 0, 4)).toBe('RIFF');
    expect(h.readUInt32LE(4)).toBe(36 + 4800);
    expect(h.toString('latin1', 8, 16)).toBe('WAVEfmt ');
    expect(h.readUInt32LE(16)).toBe(16);
    expect(h.readUInt16LE(20)).toBe(PCM);
    expect(h.readUInt16LE(22)).toBe(1);
    expect(h.readUInt32LE(24)).toBe(24_000);
    expect(h.readUInt32LE(28)).toBe(48_000);
    expect(h.readUInt16LE(32)).toBe(2);
    expect(h.readUInt16LE(34)).toBe(16);
    expect(h.toString('latin1', 36, 40)).toBe('data');
    expect(h.readUInt32LE(40)).toBe(4800);
  });

  it('writes placeholder sizes for a streamed WAV whose length is unknown', () => {
    const h = wavHeader({ sampleRate: 48_000, channels: 2, bitsPerSample: 16 });
    expect(h.readUInt32LE(4)).toBe(WAV_UNKNOWN_SIZE);
    expect(h.readUInt32LE(40)).toBe(WAV_UNKNOWN_SIZE);
    expect(h.readUInt16LE(32)).toBe(4);
    expect(h.readUInt32LE(28)).toBe(192_000);
  });

  it('refuses sizes a RIFF header cannot hold', () => {
    expect(() => wavHeader({ sampleRate: 8000, channels: 1, bitsPerSample: 16, dataBytes: 2 ** 32 })).toThrow(
      RangeError,
    );
    expect(() => wavHeader({ sampleRate: 0, channels: 1, bitsPerSample: 16 })).toThrow(RangeError);
    expect(() => wavHeader({ sampleRate: 8000, channels: 0, bitsPerSample: 16 })).toThrow(RangeError);
  });
});

describe('parseWav', () => {
  it('round-trips 16-bit PCM written behind wavHeader', () => {
    const pcm = new Int16Array([0, 1000, -1000, 32767, -32768, 12345]);
    const data = Buffer.from(pcm.buffer);
    const wav = parseWav(
      Buffer.concat([
        wavHeader({ sampleRate: 22_050, channels: 1, bitsPerSample: 16, dataBytes: data.length }),
        data,
      ]),
    );
    expect(wav.sampleRate).toBe(22_050);
    expect(wav.channels).toBe(1);
    expect(Array.from(wav.samples)).toEqual(Array.from(pcm, (v) => Math.fround(v / 32768)));
  });

  it('reads a streamed WAV (placeholder sizes) to the end, dropping a partial last frame', () => {
    const data = Buffer.concat([encode(MONO, 16), Buffer.from([0x7f])]);
    const wav = parseWav(
      Buffer.concat([wavHeader({ sampleRate: 24_000, channels: 1, bitsPerSample: 16 }), data]),
    );
    expect(Array.from(wav.samples)).toEqual(MONO.map(([v]) => v));
  });

  it('reads a file cut short (data size past the end of the buffer) up to where it stops', () => {
    const data = encode(MONO, 16);
    const file = riff([
      fmtChunk({ tag: PCM, channels: 1, sampleRate: 16_000, bits: 16 }),
      chunk('data', data, 1_000_000),
    ]);
    expect(parseWav(file.subarray(0, file.length - 4)).samples.length).toBe(MONO.length - 2);
  });

  it.each([
    ['8-bit unsigned', 8],
    ['24-bit', 24],
    ['32-bit', 32],
  ])('decodes %s PCM', (_name, bits) => {
    const file = riff([
      fmtChunk({ tag: PCM, channels: 1, sampleRate: 8000, bits }),
      chunk('data', encode(MONO, bits)),
    ]);
    const wav = parseWav(file);
    expect(wav.sampleRate).toBe(8000);
    for (const [i, [v]] of MONO.entries()) expect(wav.samples[i]).toBeCloseTo(v!, 2);
  });

  it('decodes 24-bit exactly, including negative values', () => {
    const values = [[0], [1 / 8388608], [-1 / 8388608], [-1], [8388607 / 8388608], [-0.123456]];
    const file = riff([
      fmtChunk({ tag: PCM, channels: 1, sampleRate: 48_000, bits: 24 }),
      chunk('data', encode(values, 24)),
    ]);
    const expected = values.map(([v]) => Math.fround(Math.round(v! * 8388608) / 8388608));
    expect(Array.from(parseWav(file).samples)).toEqual(expected);
  });

  it.each([32, 64])('decodes IEEE float %i-bit', (bits) => {
    const file = riff([
      fmtChunk({ tag: FLOAT, channels: 1, sampleRate: 44_100, bits }),
      chunk('data', encode(MONO, bits, true)),
    ]);
    expect(Array.from(parseWav(file).samples)).toEqual(MONO.map(([v]) => v));
  });

  it('mixes stereo down to the mean of the channels', () => {
    const frames = [
      [0.5, -0.5],
      [0.5, 0.25],
      [-0.5, -0.25],
    ];
    const file = riff([
      fmtChunk({ tag: PCM, channels: 2, sampleRate: 44_100, bits: 16 }),
      chunk('data', encode(frames, 16)),
    ]);
    const wav = parseWav(file);
    expect(wav.channels).toBe(2);
    expect(Array.from(wav.samples)).toEqual([0, 0.375, -0.375]);
  });

  it('reads WAVE_FORMAT_EXTENSIBLE with a PCM or a float sub-format', () => {
    const pcm = riff([
      fmtChunk({ tag: EXTENSIBLE, channels: 2, sampleRate: 48_000, bits: 24, subFormat: PCM }),
      chunk(
        'data',
        encode(
          MONO.map(([v]) => [v!, v!]),
          24,
        ),
      ),
    ]);
    const wav = parseWav(pcm);
    expect(wav).toMatchObject({ sampleRate: 48_000, channels: 2 });
    for (const [i, [v]] of MONO.entries()) expect(wav.samples[i]).toBeCloseTo(v!, 6);
    const float = riff([
      fmtChunk({ tag: EXTENSIBLE, channels: 1, sampleRate: 16_000, bits: 32, subFormat: FLOAT }),
      chunk('data', encode(MONO, 32, true)),
    ]);
    expect(Array.from(parseWav(float).samples)).toEqual(MONO.map(([v]) => v));
  });

  it('skips other chunks, odd-sized ones with their pad byte', () => {
    const file = riff([
      chunk('JUNK', Buffer.alloc(28)),
      fmtChunk({ tag: PCM, channels: 1, sampleRate: 16_000, bits: 16 }),
      chunk('LIST', Buffer.from('INFOISFT\x05\x00\x00\x00Lavf\x00', 'latin1')), // 17 bytes: padded
      chunk('fact', Buffer.from([6, 0, 0, 0])),
      chunk('data', encode(MONO, 16)),
      chunk('id3 ', Buffer.from('trailing tag')),
    ]);
    expect(Array.from(parseWav(file).samples)).toEqual(MONO.map(([v]) => v));
  });

  it('reads an RF64 file through its ds64 chunk', () => {
    const data = encode(MONO, 16);
    const ds64 = Buffer.alloc(28);
    ds64.writeBigUInt64LE(BigInt(36 + 36 + data.length), 0);
    ds64.writeBigUInt64LE(BigInt(data.length), 8);
    const file = riff(
      [
        chunk('ds64', ds64),
        fmtChunk({ tag: PCM, channels: 1, sampleRate: 8000, bits: 16 }),
        chunk('data', data, WAV_UNKNOWN_SIZE),
      ],
      'RF64',
    );
    expect(Array.from(parseWav(file).samples)).toEqual(MONO.map(([v]) => v));
  });

  it.each([
    [
      'not RIFF at all',
      Buffer.from('ID3\x04\x00\x00\x00\x00\x00\x00 and then some mp3', 'latin1'),
      /not a WAV file/,
    ],
    ['empty', Buffer.alloc(0), /not a WAV file/],
    ['RIFF but not WAVE', Buffer.from('RIFF\x04\x00\x00\x00AVI LIST', 'latin1'), /not a WAV file/],
    [
      'A-law',
      riff([
        fmtChunk({ tag: ALAW, channels: 1, sampleRate: 8000, bits: 8 }),
        chunk('data', Buffer.alloc(100)),
      ]),
      /0x0006 with 8-bit samples is not supported/,
    ],
    [
      '12-bit PCM',
      riff([
        fmtChunk({ tag: PCM, channels: 1, sampleRate: 8000, bits: 12 }),
        chunk('data', Buffer.alloc(100)),
      ]),
      /not supported/,
    ],
    [
      'no data chunk',
      riff([fmtChunk({ tag: PCM, channels: 1, sampleRate: 8000, bits: 16 })]),
      /no data chunk/,
    ],
    ['no fmt chunk', riff([chunk('data', Buffer.alloc(10))]), /before its fmt chunk/],
    ['a truncated fmt chunk', riff([chunk('fmt ', Buffer.alloc(8))]), /fmt chunk is 8 bytes/],
  ])('throws a WavFormatError for %s', (_name, buf, message) => {
    expect(() => parseWav(buf)).toThrow(WavFormatError);
    expect(() => parseWav(buf)).toThrow(message);
  });

  it('keeps the byte offset of a view into a larger buffer', () => {
    const data = encode(MONO, 16);
    const file = Buffer.concat([
      wavHeader({ sampleRate: 8000, channels: 1, bitsPerSample: 16, dataBytes: data.length }),
      data,
    ]);
    const big = new Uint8Array(file.length + 11);
    big.set(file, 7);
    expect(Array.from(parseWav(big.subarray(7, 7 + file.length)).samples)).toEqual(MONO.map(([v]) => v));
  });
});

describe('wavFile', () => {
  it('writes a whole 16-bit file, sizes included, that parseWav reads back sample for sample', () => {
    const samples = Int16Array.from([0, 16384, -16384, 8192, -32768, 24576]);
    const file = wavFile(samples, 16_000);
    expect(file.length).toBe(WAV_HEADER_BYTES + 12);
    expect(file.readUInt32LE(4)).toBe(36 + 12);
    expect(file.readUInt32LE(40)).toBe(12);
    const wav = parseWav(file);
    expect(wav).toMatchObject({ sampleRate: 16_000, channels: 1, bitsPerSample: 16 });
    expect(Array.from(wav.samples)).toEqual(MONO.map(([v]) => v));
  });

  it('interleaves channels and refuses samples that do not make whole frames', () => {
    const stereo = wavFile(Int16Array.from([16384, -16384, 8192, 8192]), 8000, 2);
    expect(parseWav(stereo)).toMatchObject({ channels: 2, samples: Float32Array.from([0, 0.25]) });
    expect(() => wavFile(Int16Array.from([1, 2, 3]), 8000, 2)).toThrow(RangeError);
  });
});

describe('readWavInfo', () => {
  it('reports the format, where the samples are and how long they last, decoding none', () => {
    const file = riff([
      fmtChunk({ tag: PCM, channels: 2, sampleRate: 8000, bits: 24 }),
      chunk('LIST', Buffer.alloc(10)),
      chunk(
        'data',
        encode(
          [
            [0, 0],
            [0.5, -0.5],
            [0.25, 0.25],
            [1 - 2 ** -23, 0],
          ],
          24,
        ),
      ),
    ]);
    expect(readWavInfo(file)).toEqual({
      encoding: 'int',
      sampleRate: 8000,
      channels: 2,
      bitsPerSample: 24,
      dataOffset: 12 + 24 + 18 + 8,
      dataBytes: 24,
      frames: 4,
      durationMs: 0.5,
    });
  });

  it('counts only the whole frames present when the data chunk is cut short or streamed', () => {
    const samples = new Int16Array(800);
    const cut = wavFile(samples, 16_000).subarray(0, WAV_HEADER_BYTES + 1001);
    expect(readWavInfo(cut)).toMatchObject({ frames: 500, dataBytes: 1000, durationMs: 31.25 });
    const streamed = Buffer.concat([
      wavHeader({ sampleRate: 16_000, channels: 1, bitsPerSample: 16 }),
      Buffer.alloc(320),
    ]);
    expect(readWavInfo(streamed)).toMatchObject({ frames: 160, durationMs: 10 });
    expect(() => readWavInfo(Buffer.from('RIFF\0\0\0\0WAVE'))).toThrow(WavFormatError);
  });
});
