/**
 * A relay app's `play`: a WAV or MP3 fetched from one of the hosts the relay allows, bounded in bytes,
 * time and length (its first `MAX_PLAY_SECONDS` are kept), turned into the speaker's own audio (s16le
 * mono 24 kHz), which the speaker loops without copying it (`AudioInput.repeat`). Nothing but the URL
 * goes to the host: no credential, no redirect followed (a redirect is an error: it could lead
 * anywhere).
 */
import { decodeAudio } from '../audio/decode.js';
import { int16ToBytes } from '../audio/pcm.js';
import { resampleWhole } from '../audio/resampler.js';
import { BodyTooLargeError, readBodyCapped } from '../http/fetch-body.js';

export interface PlayLimits {
  /** Hosts (`host[:port]`, as in the URL) the app may play from. */
  hosts: readonly string[];
  /** The file's size, at most. */
  maxBytes: number;
  /** The whole fetch, at most (ms). */
  timeoutMs: number;
}

/** What one file may hold (s): the most of it decoded, and kept, however often it loops. */
export const MAX_PLAY_SECONDS = 120;
/** `loop: 0` (Twilio: repeat until the call ends) plays this many times at most. */
export const LOOP_FOREVER = 1000;
const OUTPUT_RATE = 24_000;

/** A play refused or failed; its message goes to the app as an `error`. */
export class PlayError extends Error {
  override readonly name = 'PlayError';
}

/** The source as a URL the relay may fetch, or a `PlayError` saying why not. */
export function playUrl(source: string, limits: PlayLimits | undefined): URL {
  let url: URL;
  try {
    url = new URL(source);
  } catch {
    throw new PlayError(`play: ${JSON.stringify(source.slice(0, 200))} is not a URL`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new PlayError(`play: only http and https sources are played (${url.protocol})`);
  if (!limits?.hosts.includes(url.host))
    throw new PlayError(`play: ${url.host} is not among the hosts this relay may play from (play.hosts)`);
  return url;
}

/** Fetches `url` and makes it the speaker's audio (which loops it: `AudioInput.repeat`). */
export async function fetchPlay(url: URL, limits: PlayLimits, signal: AbortSignal): Promise<Uint8Array> {
  const deadline = AbortSignal.any([signal, AbortSignal.timeout(limits.timeoutMs)]);
  let res: Response;
  try {
    res = await fetch(url, { redirect: 'error', signal: deadline });
  } catch (error) {
    throw new PlayError(`play: ${url.host} could not be fetched (${(error as Error).message})`, {
      cause: error,
    });
  }
  if (!res.ok) {
    await res.body?.cancel();
    throw new PlayError(`play: ${url.host} answered ${res.status}`);
  }
  let bytes: Uint8Array;
  try {
    bytes = await readBodyCapped(res, limits.maxBytes);
  } catch (error) {
    if (error instanceof BodyTooLargeError)
      throw new PlayError(
        error.declared === undefined
          ? `play: the file is over ${error.maxBytes} bytes`
          : `play: the file is ${error.declared} bytes; at most ${error.maxBytes}`,
      );
    throw new PlayError(`play: reading from ${url.host} failed (${(error as Error).message})`, {
      cause: error,
    });
  }
  let decoded;
  try {
    decoded = await decodeAudio(bytes, MAX_PLAY_SECONDS);
  } catch (error) {
    throw new PlayError(`play: ${(error as Error).message}`, { cause: error });
  }
  const n = Math.min(decoded.samples.length, MAX_PLAY_SECONDS * decoded.sampleRate);
  const int16 = new Int16Array(n);
  for (let i = 0; i < n; i++)
    int16[i] = Math.max(-32768, Math.min(32767, Math.round(decoded.samples[i]! * 32768)));
  const audio = int16ToBytes(resampleWhole(int16, decoded.sampleRate, OUTPUT_RATE));
  if (audio.byteLength === 0) throw new PlayError('play: the file holds no audio');
  return audio;
}
