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
  /** Words left out of `words` for a bad timing. */
  droppedWords: number;
}

/**
 * How far past the end of the audio a word may claim to end (recognisers round a last word's end up)
 * before it is dropped; a word within it is clamped to the end.
 */
export const WORD_END_SLACK_MS = 500;

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
  const text = json['text'];
  if (typeof text !== 'string') throw invalid('text must be a string', requestId);

  const code = json['language_code'];
  if (code !== undefined && code !== null && typeof code !== 'string')
    throw invalid('language_code must be a string', requestId);
  const probability = json['language_probability'];
  if (probability !== undefined && probability !== null && typeof probability !== 'number')
    throw invalid('language_probability must be a number', requestId);

  const rawWords = json['words'] ?? [];
  if (!Array.isArray(rawWords)) throw invalid('words must be an array', requestId);
  const words: TranscriptWord[] = [];
  let droppedWords = 0;
  rawWords.forEach((raw: unknown, i) => {
    if (!isRecord(raw)) throw invalid(`words[${i}] must be an object`, requestId);
    const wordText = raw['text'];
    if (typeof wordText !== 'string') throw invalid(`words[${i}].text must be a string`, requestId);
    const type = raw['type'] ?? 'word';
    if (typeof type !== 'string') throw invalid(`words[${i}].type must be a string`, requestId);
    const at = timing(raw['start'], raw['end'], audioMs);
    if (at === undefined) droppedWords++;
    else words.push({ text: wordText, startMs: at.startMs, endMs: at.endMs, type });
  });

  return {
    text,
    languageCode: typeof code === 'string' && code !== '' ? code : undefined,
    languageProbability:
      typeof probability === 'number' && probability >= 0 && probability <= 1 ? probability : undefined,
    words,
    droppedWords,
  };
}
