/**
 * A known text as the words a forced alignment decodes, and the alignment's word times back as spans
 * of that text. A word the dictionary lacks (a name, a number, a word in another script) is aligned as
 * `UNKNOWN_WORD`, the model's spoken-noise phone, which stretches over whatever it was said as: the
 * words around it keep their places, and it keeps its span of the text.
 */
import { inDictionary } from './dictionary.js';
import { UNKNOWN_WORD, type DecodedWord } from './protocol.js';
import { textWords, type TextWord } from './words.js';

export interface RecognizedWord {
  readonly word: string;
  readonly startMs: number;
  readonly endMs: number;
}

/** A word of an aligned text: its times, and where it is in the text (UTF-16 offsets, end exclusive). */
export interface AlignedWord extends RecognizedWord {
  readonly charStart: number;
  readonly charEnd: number;
}

export interface AlignmentPlan {
  /** The text's words as it was split. */
  readonly tokens: readonly TextWord[];
  /** What the decoder aligns, one per token. */
  readonly spoken: readonly string[];
}

export function alignmentPlan(text: string): AlignmentPlan {
  const tokens = textWords(text);
  return { tokens, spoken: tokens.map((t) => (inDictionary(t.word) ? t.word : UNKNOWN_WORD)) };
}

/** The decoder's words (one per token, in order) as words of the text. */
export function alignedWords(
  text: string,
  plan: AlignmentPlan,
  decoded: readonly DecodedWord[],
): AlignedWord[] {
  return plan.tokens.map((token, i) => {
    const d = decoded[i]!;
    return {
      word: text.slice(token.start, token.end),
      startMs: d.startMs,
      endMs: d.endMs,
      charStart: token.start,
      charEnd: token.end,
    };
  });
}
