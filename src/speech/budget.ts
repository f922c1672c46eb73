/**
 * What one speech request may cost, from its text alone: the most audio the text can turn into, and
 * the longest a service may take to send it. Everything a with-timestamps answer or an audio body
 * carries is bounded by these, so a broken or hostile service costs one request, never the process.
 */
import { FORMAT_INFO, type OutputFormat } from './formats.js';

/**
 * A generous slow speaking rate. Conversational speech runs 12–16 characters a second, `speed: 0.7`
 * about 10; digits read one by one, spelled-out abbreviations and SSML breaks run slower, which the
 * multiples below leave room for.
 */
export const SLOW_SPEECH_CHARS_PER_SECOND = 4;
/** The most audio a text may make: its slow-rate length times this (2: 500 ms a character). */
export const AUDIO_BUDGET_MULTIPLE = 2;
/** …and never less than this, so a one-word text with a long pause around it is not refused. */
export const MIN_AUDIO_BUDGET_MS = 30_000;
/** Bytes besides the samples a body may carry: a WAV's header and chunks, an MP3's ID3 tag. */
export const CONTAINER_SLACK_BYTES = 64 * 1024;
/**
 * The shortest deadline of a response's body: a cold engine's or a loaded remote's first sentence,
 * whatever the text.
 */
export const DEFAULT_DEADLINE_FLOOR_MS = 30_000;
/** A response's body may take its text's slow-rate length times this (2: 500 ms a character). */
export const DEFAULT_DEADLINE_REALTIME_MULTIPLE = 2;

/** How long `chars` characters take at the slow rate. */
export function slowSpeechMs(chars: number): number {
  return (chars / SLOW_SPEECH_CHARS_PER_SECOND) * 1000;
}

/** The most audio (ms) a text of `chars` characters may turn into. */
export function maxAudioMs(chars: number): number {
  return Math.max(MIN_AUDIO_BUDGET_MS, slowSpeechMs(chars) * AUDIO_BUDGET_MULTIPLE);
}

/** The most bytes of `format` audio a text of `chars` characters may turn into, container included. */
export function maxAudioBytes(format: OutputFormat, chars: number): number {
  return Math.ceil((maxAudioMs(chars) / 1000) * FORMAT_INFO[format].bytesPerSecond) + CONTAINER_SLACK_BYTES;
}

/** How the body deadline is computed (`SpeechClientOptions`). */
export interface DeadlinePolicy {
  readonly floorMs: number;
  readonly realtimeMultiple: number;
}

/** The time a response's body for `chars` characters may take: max(floor, slow-rate length × multiple). */
export function bodyDeadlineMs(policy: DeadlinePolicy, chars: number): number {
  return Math.max(policy.floorMs, slowSpeechMs(chars) * policy.realtimeMultiple);
}
