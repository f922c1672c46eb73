/**
 * RIFF/WAVE: the header the service streams in front of PCM, a whole 16-bit file (a caller's turn sent
 * to speech-to-text), and a tolerant reader for uploaded samples (what phones, recorders, sox, ffmpeg
 * and browsers actually write).
 */
import { int16ToBytes } from './pcm.js';

export const WAV_HEADER_BYTES = 44;

/**
 * Size written in the RIFF and data chunks of a WAV whose length is unknown when the header goes out
 * (a streamed response). Readers that honour it read to the end of the stream; ffmpeg and sox do.
 */
export const WAV_UNKNOWN_SIZE = 0xffffffff;

const WAVE_FORMAT_PCM = 0x0001;
const WAVE_FORMAT_IEEE_FLOAT = 0x0003;
const WAVE_FORMAT_EXTENSIBLE = 0xfffe;
/** RIFF sizes are 32-bit: the largest data chunk that still leaves room for the 36 header bytes it counts. */
const MAX_DATA_BYTES = 0xffffffff - (WAV_HEADER_BYTES - 8);

export interface WavHeaderOptions {
  sampleRate: number;
  channels: number;
  bitsPerSample: 16;
  /** Bytes of PCM that will follow; leave it out when streaming and the length is not known yet. */
  dataBytes?: number;
}

/** A canonical 44-byte PCM WAV header. */
export function wavHeader(options: WavHeaderOptions): Buffer {
  const { sampleRate, channels, bitsPerSample, dataBytes } = options;
  if (!Number.isInteger(sampleRate) || sampleRate <= 0)
    throw new RangeError(`wavHeader: bad sampleRate ${sampleRate}`);
  if (!Number.isInteger(channels) || channels < 1 || channels > 0xffff)
    throw new RangeError(`wavHeader: bad channels ${channels}`);
  if (
    dataBytes !== undefined &&
    (!Number.isInteger(dataBytes) || dataBytes < 0 || dataBytes > MAX_DATA_BYTES)
  )
    throw new RangeError(`wavHeader: bad dataBytes ${dataBytes}`);
  const blockAlign = channels * (bitsPerSample / 8);
  const h = Buffer.alloc(WAV_HEADER_BYTES);
  h.write('RIFF', 0, 'latin1');
  h.writeUInt32LE(dataBytes === undefined ? WAV_UNKNOWN_SIZE : WAV_HEADER_BYTES - 8 + dataBytes, 4);
  h.write('WAVE', 8, 'latin1');
  h.write('fmt ', 12, 'latin1');
  h.writeUInt32LE(16, 16);
  h.writeUInt16LE(WAVE_FORMAT_PCM, 20);
  h.writeUInt16LE(channels, 22);
  h.writeUInt32LE(sampleRate, 24);
  h.writeUInt32LE(sampleRate * blockAlign, 28);
  h.writeUInt16LE(blockAlign, 32);
  h.writeUInt16LE(bitsPerSample, 34);
  h.write('data', 36, 'latin1');
  h.writeUInt32LE(dataBytes ?? WAV_UNKNOWN_SIZE, 40);
  return h;
}

/**
 * A complete 16-bit PCM WAV file of `samples` (interleaved when `channels` > 1), its header carrying the
 * real sizes.
 */
export function wavFile(samples: Int16Array, sampleRate: number, channels = 1): Buffer {
  if (samples.length % channels !== 0)
    throw new RangeError(`wavFile: ${samples.length} samples do not make whole ${channels}-channel frames`);
  const data = int16ToBytes(samples);
  return Buffer.concat([
    wavHeader({ sampleRate, channels, bitsPerSample: 16, dataBytes: data.byteLength }),
    data,
  ]);
}

/** The bytes are not a WAV file, or one in an encoding this reader does not decode (ADPCM, A-law…). */
export class WavFormatError extends Error {
  override readonly name = 'WavFormatError';
}

export interface ParsedWav {
  sampleRate: number;
  /** Channels in the file; `samples` is already mixed down to mono. */
  channels: number;
  /** Bits of each sample in the file (8, 16, 24, 32 or 64). */
  bitsPerSample: number;
  /** Mono mixdown (mean of the channels), nominally -1..1. */
  samples: Float32Array;
}

export type WavSampleEncoding = 'int' | 'float';

/** What a WAV file holds, read from its chunks without decoding a sample. */
export interface WavInfo {
  encoding: WavSampleEncoding;
  sampleRate: number;
  channels: number;
  bitsPerSample: number;
  /** Where the first sample starts in the file. */
  dataOffset: number;
  /** Bytes of whole frames present: `frames` × channels × bytes per sample. */
  dataBytes: number;
  /** Whole frames present (a frame is one sample of every channel). */
  frames: number;
  durationMs: number;
}

interface WavFormat {
  encoding: WavSampleEncoding;
  channels: number;
  sampleRate: number;
  /** Bytes each sample occupies in the file (the container, not the valid bits). */
  bytesPerSample: number;
  blockAlign: number;
}

function fourCC(view: DataView, offset: number): string {
  return String.fromCharCode(
    view.getUint8(offset),
    view.getUint8(offset + 1),
    view.getUint8(offset + 2),
    view.getUint8(offset + 3),
  );
}

function readFormat(view: DataView, offset: number, size: number): WavFormat {
  if (size < 16) throw new WavFormatError(`WAV fmt chunk is ${size} bytes; expected at least 16`);
  let tag = view.getUint16(offset, true);
  const channels = view.getUint16(offset + 2, true);
  const sampleRate = view.getUint32(offset + 4, true);
  const declaredBlockAlign = view.getUint16(offset + 12, true);
  const bits = view.getUint16(offset + 14, true);
  if (tag === WAVE_FORMAT_EXTENSIBLE) {
    // cbSize, wValidBitsPerSample, dwChannelMask, then the SubFormat GUID whose first two bytes are the tag.
    if (size < 40) throw new WavFormatError(`WAVE_FORMAT_EXTENSIBLE fmt chunk is ${size} bytes; expected 40`);
    tag = view.getUint16(offset + 24, true);
  }
  let encoding: WavSampleEncoding;
  if (tag === WAVE_FORMAT_PCM && (bits === 8 || bits === 16 || bits === 24 || bits === 32)) encoding = 'int';
  else if (tag === WAVE_FORMAT_IEEE_FLOAT && (bits === 32 || bits === 64)) encoding = 'float';
  else
    throw new WavFormatError(
      `WAV encoding 0x${tag.toString(16).padStart(4, '0')} with ${bits}-bit samples is not supported ` +
        '(PCM 8/16/24/32-bit and IEEE float 32/64-bit are)',
    );
  if (channels === 0) throw new WavFormatError('WAV declares 0 channels');
  if (sampleRate === 0) throw new WavFormatError('WAV declares a sample rate of 0 Hz');
  const bytesPerSample = bits / 8;
  // Some writers get blockAlign wrong; the frame is what the samples occupy.
  const blockAlign = channels * bytesPerSample;
  if (declaredBlockAlign !== 0 && declaredBlockAlign !== blockAlign)
    throw new WavFormatError(
      `WAV blockAlign ${declaredBlockAlign} does not match ${channels} × ${bits}-bit samples`,
    );
  return { encoding, channels, sampleRate, bytesPerSample, blockAlign };
}

/** Reads one sample of the given encoding at `offset`, scaled to -1..1. */
function sampleReader(
  encoding: WavSampleEncoding,
  bytesPerSample: number,
): (view: DataView, offset: number) => number {
  if (encoding === 'float') {
    return bytesPerSample === 4 ? (v, o) => v.getFloat32(o, true) : (v, o) => v.getFloat64(o, true);
  }
  switch (bytesPerSample) {
    case 1:
      return (v, o) => (v.getUint8(o) - 128) / 128;
    case 2:
      return (v, o) => v.getInt16(o, true) / 32768;
    case 3:
      return (v, o) => (v.getUint8(o) | (v.getUint8(o + 1) << 8) | (v.getInt8(o + 2) << 16)) / 8388608;
    default:
      return (v, o) => v.getInt32(o, true) / 2147483648;
  }
}

function decodeFrames(view: DataView, offset: number, frames: number, fmt: WavFormat): Float32Array {
  const read = sampleReader(fmt.encoding, fmt.bytesPerSample);
  const out = new Float32Array(frames);
  const { channels, bytesPerSample, blockAlign } = fmt;
  const scale = 1 / channels;
  for (let f = 0, o = offset; f < frames; f++, o += blockAlign) {
    let sum = 0;
    for (let c = 0; c < channels; c++) sum += read(view, o + c * bytesPerSample);
    out[f] = sum * scale;
  }
  return out;
}

interface LocatedData {
  fmt: WavFormat;
  /** Where the first sample starts in the file. */
  offset: number;
  frames: number;
}

/**
 * Finds the format and the samples. Chunks other than `fmt ` and `data` (LIST, fact, cue…) are
 * skipped with their pad byte; a data size that is the streaming placeholder (0xFFFFFFFF) or runs past
 * the end of the buffer (a recording cut short) means "to the end", rounded down to whole frames. RF64
 * files are read through their `ds64` chunk.
 */
function locateData(view: DataView): LocatedData {
  if (view.byteLength < 12) throw new WavFormatError('not a WAV file: shorter than a RIFF header');
  const riff = fourCC(view, 0);
  if ((riff !== 'RIFF' && riff !== 'RF64') || fourCC(view, 8) !== 'WAVE')
    throw new WavFormatError('not a WAV file: no RIFF/WAVE header');
  let fmt: WavFormat | undefined;
  let ds64DataBytes: number | undefined;
  let offset = 12;
  while (offset + 8 <= view.byteLength) {
    const id = fourCC(view, offset);
    const size = view.getUint32(offset + 4, true);
    const body = offset + 8;
    const available = view.byteLength - body;
    if (id === 'data') {
      if (!fmt) throw new WavFormatError('WAV data chunk comes before its fmt chunk');
      let dataBytes = size;
      if (riff === 'RF64' && size === WAV_UNKNOWN_SIZE && ds64DataBytes !== undefined)
        dataBytes = ds64DataBytes;
      if (dataBytes > available) dataBytes = available;
      return { fmt, offset: body, frames: Math.floor(dataBytes / fmt.blockAlign) };
    }
    if (size > available) break;
    if (id === 'fmt ') fmt = readFormat(view, body, size);
    else if (id === 'ds64' && size >= 16) {
      // riffSize (8 bytes), then dataSize (8 bytes, little-endian).
      ds64DataBytes = Number(view.getBigUint64(body + 8, true));
    }
    offset = body + size + (size & 1);
  }
  throw new WavFormatError(fmt ? 'WAV file has no data chunk' : 'WAV file has no fmt chunk');
}

function viewOf(buf: Uint8Array): DataView {
  return new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
}

/** A WAV file's format and extent, read as `parseWav` reads it but decoding no sample. */
export function readWavInfo(buf: Uint8Array): WavInfo {
  const { fmt, offset, frames } = locateData(viewOf(buf));
  return {
    encoding: fmt.encoding,
    sampleRate: fmt.sampleRate,
    channels: fmt.channels,
    bitsPerSample: fmt.bytesPerSample * 8,
    dataOffset: offset,
    dataBytes: frames * fmt.blockAlign,
    frames,
    durationMs: (frames / fmt.sampleRate) * 1000,
  };
}

/**
 * Decodes a WAV file to mono float samples (see `locateData` for the files it accepts and how it
 * reads a damaged or streamed one).
 */
export function parseWav(buf: Uint8Array): ParsedWav {
  const view = viewOf(buf);
  const { fmt, offset, frames } = locateData(view);
  return {
    sampleRate: fmt.sampleRate,
    channels: fmt.channels,
    bitsPerSample: fmt.bytesPerSample * 8,
    samples: decodeFrames(view, offset, frames, fmt),
  };
}
