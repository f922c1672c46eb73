/**
 * A piece cut into what sherpa-onnx is asked for one call at a time: sentences, and the clauses of a
 * long one, so that the first audio of a piece waits for a short run of the model only. And what each
 * is made into before sherpa-onnx sees it: text that yields no token at all crashes sherpa-onnx 1.13.8
 * (a segmentation fault, the whole process), so such text is never sent.
 */
import { CLAUSE_END, SENTENCE_END, splitAt } from '../sentences.js';
import type { OnnxFrontend } from './model-dir.js';

export interface Sentence {
  readonly text: string;
  /** Where it starts in the piece, in code points. */
  readonly start: number;
}

/** A sentence longer than this is cut at its clauses (about 3 s of speech). */
export const SENTENCE_MAX_CHARS = 60;
/** A clause is not split off shorter than this: a run of tiny ones would sound choppy. */
const CLAUSE_MIN_CHARS = 20;

/** A long sentence's clauses, short ones joined to the next. */
function clauses(sentence: string): string[] {
  if (sentence.length <= SENTENCE_MAX_CHARS) return [sentence];
  const out: string[] = [];
  let current = '';
  for (const clause of splitAt(sentence, CLAUSE_END)) {
    current += clause;
    if (current.trim().length >= CLAUSE_MIN_CHARS) {
      out.push(current);
      current = '';
    }
  }
  if (current) {
    if (out.length > 0 && current.trim().length < CLAUSE_MIN_CHARS) out[out.length - 1] += current;
    else out.push(current);
  }
  return out;
}

/** The piece's sentences (and clauses of long ones), trimmed, each with where it starts. */
export function sentencesOf(piece: string): Sentence[] {
  const out: Sentence[] = [];
  let codePoints = 0;
  for (const sentence of splitAt(piece, SENTENCE_END))
    for (const part of clauses(sentence)) {
      const lead = part.length - part.trimStart().length;
      const text = part.trim();
      if (text) out.push({ text, start: codePoints + [...part.slice(0, lead)].length });
      codePoints += [...part].length;
    }
  return out;
}

const WORD = /[\p{L}\p{N}]+(?:['’][\p{L}\p{N}]+)*/gu;
const SENTENCE_MARK = /[.!?;:]$/;

/**
 * The text to give sherpa-onnx for `sentence`, or undefined when it would yield no token:
 *
 * - eSpeak's front end (Piper) phonemizes any letter or digit, and frames every sentence with its start
 *   and end tokens: a sentence with one is safe;
 * - a lexicon's front end speaks only words it has, and ends a sentence at its mark with a blank: a
 *   sentence is sent only with a word of the lexicon, and always ends with a mark (" ." is added to
 *   one cut at a clause), so that even a word it reads differently leaves the blank.
 */
export function speakable(
  sentence: string,
  frontend: OnnxFrontend,
  lexicon: ReadonlySet<string> | undefined,
): string | undefined {
  const words = sentence.match(WORD) ?? [];
  if (words.length === 0) return undefined;
  if (frontend !== 'lexicon') return sentence;
  if (!words.some((w) => lexicon?.has(w.toLowerCase()))) return undefined;
  return SENTENCE_MARK.test(sentence) ? sentence : `${sentence} .`;
}
