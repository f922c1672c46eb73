/**
 * Uploaded voice samples to mono float PCM. The container is recognised from its bytes, never from
 * the file name or the client's MIME type: browsers label WAV as `audio/x-wav`, `audio/wave` or
 * `application/octet-stream`, and people rename files.
 */
import { MPEGDecoder } from 'mpg123-decoder';
import { parseWav, WavFormatError } from '../../audio/wav.js';

/** Less than this is not enough speech to measure a pitch or a pace from. */
export const MIN_SAMPLE_SECONDS = 0.5;
/** Below ~8 kHz the upper part of the pitch range (400 Hz) and the syllable band are lost. */
export const MIN_SAMPLE_RATE = 8000;
export const MAX_SAMPLE_RATE = 192_000;
/** Peak below which a sample is taken as digital silence (-80 dBFS). */
const SILENCE_PEAK = 1e-4;
const MAX_NAME_IN_MESSAGE = 80;

/**
 * A sample the service cannot use. The message is written for the person who uploaded it and is
 * returned to them as is (HTTP 400, `invalid_audio`).
 */
export class UnsupportedSampleError extends Error {
  override readonly name = 'UnsupportedSampleError';
}

export interface DecodedSample {
  sampleRate: number;
  /** Mono (channels averaged), nominally -1..1. */
  samples: Float32Array;
}

type Container = 'wav' | 'mp3';

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

function sniff(b: Uint8Array): Container | undefined {
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
async function decodeMp3(data: Uint8Array, maxSeconds: number | undefined): Promise<DecodedSample> {
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

function displayName(filename: string): string {
  const name =
    filename.length > MAX_NAME_IN_MESSAGE ? `${filename.slice(0, MAX_NAME_IN_MESSAGE)}…` : filename;
  return JSON.stringify(name || 'unnamed');
}

/**
 * Decodes one uploaded sample (WAV or MP3) to mono float PCM at its own sample rate.
 * @param mimeType as the client declared it; only quoted in messages, the bytes decide.
 * @param maxSeconds decode no more than about this much of an MP3 (a WAV's samples are all in `buf`).
 * @throws UnsupportedSampleError for anything else, and for audio too short or silent to learn from.
 */
export async function decodeSample(
  buf: Uint8Array,
  filename: string,
  mimeType: string,
  maxSeconds?: number,
): Promise<DecodedSample> {
  const file = `file ${displayName(filename)}`;
  const container = sniff(buf);
  if (!container) {
    const declared = mimeType ? ` (sent as ${mimeType})` : '';
    throw new UnsupportedSampleError(`${file}${declared}: unsupported audio type; send WAV or MP3`);
  }
  let decoded: DecodedSample;
  if (container === 'wav') {
    try {
      decoded = parseWav(buf);
    } catch (error) {
      if (!(error instanceof WavFormatError)) throw error;
      throw new UnsupportedSampleError(`${file}: ${error.message}; send 16-bit PCM WAV or MP3`, {
        cause: error,
      });
    }
  } else {
    decoded = await decodeMp3(buf, maxSeconds);
    if (decoded.samples.length === 0)
      throw new UnsupportedSampleError(`${file}: no MP3 audio could be decoded from it; send WAV or MP3`);
  }
  const { sampleRate, samples } = decoded;
  if (sampleRate < MIN_SAMPLE_RATE || sampleRate > MAX_SAMPLE_RATE)
    throw new UnsupportedSampleError(
      `${file}: a sample rate of ${sampleRate} Hz is not supported; use ${MIN_SAMPLE_RATE}–${MAX_SAMPLE_RATE} Hz`,
    );
  const seconds = samples.length / sampleRate;
  if (seconds < MIN_SAMPLE_SECONDS)
    throw new UnsupportedSampleError(
      `${file}: ${seconds.toFixed(2)} s of audio is too short; each sample needs at least ${MIN_SAMPLE_SECONDS} s of speech`,
    );
  let peak = 0;
  for (let i = 0; i < samples.length; i++) peak = Math.max(peak, Math.abs(samples[i]!));
  if (!Number.isFinite(peak))
    throw new UnsupportedSampleError(`${file}: the audio holds invalid (NaN or infinite) samples`);
  if (peak < SILENCE_PEAK)
    throw new UnsupportedSampleError(`${file}: the audio is silent; record some speech`);
  return decoded;
}
