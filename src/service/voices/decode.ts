/**
 * Uploaded voice samples to mono float PCM. The container is recognised from its bytes, never from
 * the file name or the client's MIME type: browsers label WAV as `audio/x-wav`, `audio/wave` or
 * `application/octet-stream`, and people rename files.
 */
import { decodeMp3, sniffContainer, type DecodedAudio } from '../../audio/decode.js';
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

export type DecodedSample = DecodedAudio;

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
  const container = sniffContainer(buf);
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
