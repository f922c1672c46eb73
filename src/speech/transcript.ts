/**
 * The answer of `POST /v1/speech-to-text` (ElevenLabs' shape: `{language_code, language_probability,
 * text, words: [{text, start, end, type}]}`, times in seconds), checked and mapped to camelCase with
 * times in milliseconds. The rule (docs/speech-to-text.md):
 *
 * - A wrong shape refuses the whole answer with `invalid_response`, naming the field: not an object,
 *   `text` not a string, `language_code` or `language_probability` of the wrong type, `words` not an
 *   array, a word that is not an object, a word's `text` or `type` not a string. A peer that gets these
 *   wrong is not speaking this API, and nothing it says can be trusted.
 * - A bad number drops only that value: a word whose `start`/`end` is missing, not a finite number,
 *   negative, ends before it starts, or ends more than `WORD_END_SLACK_MS` past the audio we sent is
 *   left out of `words` (and counted in `droppedWords`); `text` keeps every word, so the caller's turn is
 *   never lost to a timing. A `language_probability` outside 0–1 becomes `undefined`.
 * - What is out of proportion to the audio is cut, not refused (the turn is kept), and said in
 *   `warnings`: a `language_code` that is not a language tag (BCP-47-like, ≤ 35 characters) becomes
 *   `undefined`; `text` past `maxTextChars(audioMs)` is truncated; words past `maxWords(audioMs)` are
 *   left out (counted in `droppedWords`, their shapes unread), as is a word whose text is longer than the
 *   whole transcript may be.
 */
import { SpeechServiceError } from './errors.js';

export interface TranscriptWord {
  text: string;
  /** From the start of the audio sent. */
  startMs: number;
  endMs: number;
  /** ElevenLabs says `word`, `spacing` or `audio_event`; another service's types pass through. */
  type: string;
}

/** What the answer says, checked. */
export interface TranscriptBody {
  text: string;
  /** As the service names it (ElevenLabs: ISO 639-3, e.g. `eng`); `undefined` when it did not say. */
  languageCode: string | undefined;
  /** 0–1. */
  languageProbability: number | undefined;
  words: TranscriptWord[];
  /** Words left out of `words` for a bad timing, an overlong text, or past `maxWords`. */
  droppedWords: number;
  /** What was dropped or cut from the answer, one sentence each (at most three); empty when nothing. */
  warnings: string[];
}

/**
 * How far past the end of the audio a word may claim to end (recognisers round a last word's end up)
 * before it is dropped; a word within it is clamped to the end.
 */
export const WORD_END_SLACK_MS = 500;
/**
 * A ceiling on speech's density: fast talkers say ~20 characters a second, spaces included. `text`
 * longer than this many per second of audio is cut there…
 */
export const TEXT_MAX_CHARS_PER_SECOND = 40;
/** …but a short turn may always have this much… */
export const TEXT_MIN_CHARS = 400;
/** …and no turn more than this (the absolute cap, whatever `maxAudioMs` allows). */
export const TEXT_MAX_CHARS = 10_000;
/** Entries of `words` (spacing and audio events included: ~8 a second of fast speech) per second… */
export const WORDS_MAX_PER_SECOND = 20;
/** …at least this many… */
export const WORDS_MIN = 100;
/** …and at most this many. */
export const WORDS_MAX = 5_000;
/** BCP-47-like: ISO 639-1/639-3 and subtags (`en`, `eng`, `pt-BR`, `zh-Hant-TW`). */
const LANGUAGE_TAG = /^[A-Za-z]{2,3}(?:-[A-Za-z0-9]{1,8})*$/;
const HIGH_SURROGATE_MIN = 0xd800;
const HIGH_SURROGATE_MAX = 0xdbff;
/** BCP 47's own recommended buffer for a tag. */
export const LANGUAGE_TAG_MAX_CHARS = 35;

/** Whether `code` is a language tag this client passes on. */
export function isLanguageTag(code: string): boolean {
  return code.length <= LANGUAGE_TAG_MAX_CHARS && LANGUAGE_TAG.test(code);
}

function perSecond(audioMs: number, rate: number, min: number, max: number): number {
  return Math.min(max, Math.max(min, Math.ceil((audioMs / 1000) * rate)));
}

/** The longest `text` (UTF-16 units) kept for `audioMs` of audio. */
export function maxTextChars(audioMs: number): number {
  return perSecond(audioMs, TEXT_MAX_CHARS_PER_SECOND, TEXT_MIN_CHARS, TEXT_MAX_CHARS);
}

/** The most `words` entries read for `audioMs` of audio. */
export function maxWords(audioMs: number): number {
  return perSecond(audioMs, WORDS_MAX_PER_SECOND, WORDS_MIN, WORDS_MAX);
}

/** `text` cut to `max` UTF-16 units, never between the two halves of a surrogate pair. */
function truncate(text: string, max: number): string {
  const last = text.charCodeAt(max - 1);
  return text.slice(0, last >= HIGH_SURROGATE_MIN && last <= HIGH_SURROGATE_MAX ? max - 1 : max);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function invalid(what: string, requestId: string | undefined): SpeechServiceError {
  return new SpeechServiceError({
    code: 'invalid_response',
    message:
      `the speech-to-text answer is invalid: ${what}` + (requestId ? ` (request-id ${requestId})` : ''),
    requestId,
    retryable: false,
  });
}

/** `start`/`end` in seconds → milliseconds within the audio, or `undefined` when they are not usable. */
function timing(
  start: unknown,
  end: unknown,
  audioMs: number,
): { startMs: number; endMs: number } | undefined {
  if (typeof start !== 'number' || typeof end !== 'number') return undefined;
  if (!Number.isFinite(start) || !Number.isFinite(end) || start < 0 || end < start) return undefined;
  if (end * 1000 > audioMs + WORD_END_SLACK_MS) return undefined;
  const limitMs = Math.round(audioMs);
  const endMs = Math.min(Math.round(end * 1000), limitMs);
  return { startMs: Math.min(Math.round(start * 1000), endMs), endMs };
}

/** Checks `json` (see the rule above) for audio of `audioMs` milliseconds. */
export function toTranscript(json: unknown, audioMs: number, requestId: string | undefined): TranscriptBody {
  if (!isRecord(json)) throw invalid('it is not a JSON object', requestId);
  const rawText = json['text'];
  if (typeof rawText !== 'string') throw invalid('text must be a string', requestId);
  const warnings: string[] = [];
  const textMax = maxTextChars(audioMs);
  let text = rawText;
  if (rawText.length > textMax) {
    text = truncate(rawText, textMax);
    warnings.push(
      `text cut from ${rawText.length} to ${text.length} characters: more than ${Math.round(audioMs)} ms of audio can hold`,
    );
  }

  const code = json['language_code'];
  if (code !== undefined && code !== null && typeof code !== 'string')
    throw invalid('language_code must be a string', requestId);
  const probability = json['language_probability'];
  if (probability !== undefined && probability !== null && typeof probability !== 'number')
    throw invalid('language_probability must be a number', requestId);

  let languageCode = typeof code === 'string' && code !== '' ? code : undefined;
  if (languageCode !== undefined && !isLanguageTag(languageCode)) {
    warnings.push(`language_code dropped: ${languageCode.length} characters that are not a language tag`);
    languageCode = undefined;
  }

  const rawWords = json['words'] ?? [];
  if (!Array.isArray(rawWords)) throw invalid('words must be an array', requestId);
  const words: TranscriptWord[] = [];
  const wordsMax = maxWords(audioMs);
  const read = Math.min(rawWords.length, wordsMax);
  let droppedWords = rawWords.length - read;
  if (droppedWords > 0)
    warnings.push(
      `${droppedWords} words past the first ${wordsMax} left out: more than ${Math.round(audioMs)} ms of audio holds`,
    );
  for (let i = 0; i < read; i++) {
    const raw: unknown = rawWords[i];
    if (!isRecord(raw)) throw invalid(`words[${i}] must be an object`, requestId);
    const wordText = raw['text'];
    if (typeof wordText !== 'string') throw invalid(`words[${i}].text must be a string`, requestId);
    const type = raw['type'] ?? 'word';
    if (typeof type !== 'string') throw invalid(`words[${i}].type must be a string`, requestId);
    const at = timing(raw['start'], raw['end'], audioMs);
    if (at === undefined || wordText.length > textMax) droppedWords++;
    else words.push({ text: wordText, startMs: at.startMs, endMs: at.endMs, type });
  }

  return {
    text,
    languageCode,
    languageProbability:
      typeof probability === 'number' && probability >= 0 && probability <= 1 ? probability : undefined,
    words,
    droppedWords,
    warnings,
  };
}
