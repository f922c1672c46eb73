/**
 * Audio files to mono float PCM: WAV (`wav.ts`) or MP3 (mpg123's decoder in WebAssembly), the container
 * recognised from the bytes, never from a name or a declared type. Shared by the local service's voice
 * uploads and the relay's `play`.
 */
import { MPEGDecoder } from 'mpg123-decoder';
import { parseWav, WavFormatError } from './wav.js';

export interface DecodedAudio {
  sampleRate: number;
  /** Mono (channels averaged), nominally -1..1. */
  samples: Float32Array;
}

/** Audio that is not WAV or MP3, or that could not be decoded. */
export class AudioDecodeError extends Error {
  override readonly name = 'AudioDecodeError';
}

export type AudioContainer = 'wav' | 'mp3';

/** Bitrates in kbit/s by [MPEG-1 ? 0 : 1][layer 1..3 → 0..2][index]. */
const MPEG_BITRATES: readonly (readonly (readonly number[])[])[] = [
  [
    [0, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448],
    [0, 32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384],
    [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320],
  ],
  [
    [0, 32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256],
    [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160],
    [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160],
  ],
];
const MPEG1_SAMPLE_RATES = [44_100, 48_000, 32_000];

/**
 * Length in bytes of the MPEG audio frame whose header starts at `i`, or 0 if there is no valid
 * header there (sync, version, layer, bitrate and sample-rate fields all checked; free format refused).
 */
function mpegFrameLength(b: Uint8Array, i: number): number {
  if (i + 4 > b.length) return 0;
  const b1 = b[i + 1]!;
  const b2 = b[i + 2]!;
  if (b[i] !== 0xff || (b1 & 0xe0) !== 0xe0) return 0;
  const version = (b1 >> 3) & 3; // 0: MPEG-2.5, 1: reserved, 2: MPEG-2, 3: MPEG-1
  const layerBits = (b1 >> 1) & 3; // 1: layer III, 2: layer II, 3: layer I, 0: reserved (AAC/ADTS)
  const bitrateIndex = b2 >> 4;
  const rateIndex = (b2 >> 2) & 3;
  if (version === 1 || layerBits === 0 || bitrateIndex === 0 || bitrateIndex === 15 || rateIndex === 3)
    return 0;
  const layer = 4 - layerBits;
  const kbps = MPEG_BITRATES[version === 3 ? 0 : 1]![layer - 1]![bitrateIndex]!;
  const sampleRate = MPEG1_SAMPLE_RATES[rateIndex]! / (version === 3 ? 1 : version === 2 ? 2 : 4);
  const padding = (b2 >> 1) & 1;
  if (layer === 1) return (Math.floor((12 * kbps * 1000) / sampleRate) + padding) * 4;
  const samplesPerFrame = layer === 3 && version !== 3 ? 576 : 1152;
  return Math.floor((samplesPerFrame / 8) * ((kbps * 1000) / sampleRate)) + padding;
}

/** Offset of the first byte after an ID3v2 tag at `i` (or `i` itself when there is none). */
function skipId3v2(b: Uint8Array, i: number): number {
  if (i + 10 > b.length || b[i] !== 0x49 || b[i + 1] !== 0x44 || b[i + 2] !== 0x33) return i; // "ID3"
  // Syncsafe size: 4 × 7 bits, excluding the 10-byte header; a footer adds 10 more.
  const size =
    ((b[i + 6]! & 0x7f) << 21) | ((b[i + 7]! & 0x7f) << 14) | ((b[i + 8]! & 0x7f) << 7) | (b[i + 9]! & 0x7f);
  const footer = b[i + 5]! & 0x10 ? 10 : 0;
  return i + 10 + size + footer;
}

/** How many bytes after the ID3 tag a first frame may start (some taggers leave zero padding). */
const MAX_SYNC_SEARCH_BYTES = 4096;

function looksLikeMp3(b: Uint8Array): boolean {
  let start = skipId3v2(b, 0);
  const hadTag = start > 0;
  const searchEnd = Math.min(b.length, start + (hadTag ? MAX_SYNC_SEARCH_BYTES : 1));
  for (; start < searchEnd; start++) {
    const length = mpegFrameLength(b, start);
    if (length === 0) continue;
    // One header can be chance; a second one exactly a frame later is not. A file holding a single
    // frame (or cut right after it) is accepted on the tag or on the first header alone.
    const next = start + length;
    if (next + 4 > b.length || mpegFrameLength(b, next) > 0) return true;
  }
  return false;
}

/** The container of `b`, from its bytes. */
export function sniffContainer(b: Uint8Array): AudioContainer | undefined {
  const ascii = (from: number, to: number): string => String.fromCharCode(...b.subarray(from, to));
  if (b.length >= 12 && (ascii(0, 4) === 'RIFF' || ascii(0, 4) === 'RF64') && ascii(8, 12) === 'WAVE')
    return 'wav';
  if (looksLikeMp3(b)) return 'mp3';
  return undefined;
}

/** MP3 is fed to the decoder this much at a time, so decoding can stop once enough audio is out. */
const MP3_FEED_BYTES = 64 * 1024;

/**
 * Decodes up to `maxSeconds` of an MP3 (all of it when unset). A small MP3 can hold hours of audio
 * (11 MiB at 32 kbit/s is 45 minutes, 1 GB of float samples), so the bound is on the output.
 */
export async function decodeMp3(data: Uint8Array, maxSeconds: number | undefined): Promise<DecodedAudio> {
  const decoder = new MPEGDecoder();
  await decoder.ready;
  try {
    const parts: Float32Array[] = [];
    let total = 0;
    let sampleRate = 0;
    for (let offset = 0; offset < data.length; offset += MP3_FEED_BYTES) {
      const out = decoder.decode(data.subarray(offset, offset + MP3_FEED_BYTES));
      const n = out.samplesDecoded;
      if (n === 0) continue;
      sampleRate = out.sampleRate;
      const mono = new Float32Array(n);
      const channels = out.channelData.length;
      for (const channel of out.channelData) {
        for (let i = 0; i < n; i++) mono[i]! += channel[i]! / channels;
      }
      parts.push(mono);
      total += n;
      if (maxSeconds !== undefined && total >= maxSeconds * sampleRate) break;
    }
    const samples = new Float32Array(total);
    let at = 0;
    for (const p of parts) {
      samples.set(p, at);
      at += p.length;
    }
    return { sampleRate, samples };
  } finally {
    decoder.free();
  }
}

/**
 * Decodes a WAV or an MP3 (of an MP3, up to about `maxSeconds`).
 * @throws AudioDecodeError for anything else, a WAV it cannot read, an MP3 with no audio.
 */
export async function decodeAudio(data: Uint8Array, maxSeconds?: number): Promise<DecodedAudio> {
  const container = sniffContainer(data);
  if (!container) throw new AudioDecodeError('not WAV or MP3 audio');
  if (container === 'wav') {
    try {
      return parseWav(data);
    } catch (error) {
      if (error instanceof WavFormatError) throw new AudioDecodeError(error.message, { cause: error });
      throw error;
    }
  }
  const decoded = await decodeMp3(data, maxSeconds);
  if (decoded.samples.length === 0) throw new AudioDecodeError('no MP3 audio could be decoded from it');
  return decoded;
}
