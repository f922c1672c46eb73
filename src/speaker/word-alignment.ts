/**
 * Word timings of a segment's audio, found after the fact by forced alignment (a recogniser that knows
 * the text: `Aligner`), turned into the ledger's character timings. Every character of a word ends when
 * the word ends, so the heard text is cut at whole words: a word counts as heard once all of it played.
 * The characters between words (spaces, punctuation) end with the word before them.
 */
import type { CharacterAlignment } from '../speech/alignment.js';

/** One word of the text, where it is in the text (UTF-16 offsets) and in the audio (ms). */
export interface AlignedWordSpan {
  readonly charStart: number;
  readonly charEnd: number;
  readonly startMs: number;
  readonly endMs: number;
}

/**
 * Times the words of `text` in its audio (s16le mono at `sampleRate`), off the event loop; rejects when
 * it cannot (the text is not in the audio, the recogniser is busy) or `signal` aborts.
 */
export type Aligner = (
  text: string,
  samples: Int16Array,
  sampleRate: number,
  signal: AbortSignal,
) => Promise<readonly AlignedWordSpan[]>;

/** The end of a character never heard inside its segment (it counts once the segment has played whole). */
const UNHEARD_MS = Number.MAX_SAFE_INTEGER;

/**
 * Character timings of `text` from its words' (one entry per code point, as the service's). Characters
 * before the first aligned word end at 0 ms; spaces and punctuation end with the word before them; a
 * word the aligner missed ends when the next one it found begins (or never, inside the segment).
 */
export function characterTimings(text: string, words: readonly AlignedWordSpan[]): CharacterAlignment {
  const sorted = [...words]
    .filter((w) => w.charEnd > w.charStart && w.charStart >= 0 && w.charEnd <= text.length)
    .sort((a, b) => a.charStart - b.charStart);
  const characters: string[] = [];
  const startMs: number[] = [];
  const endMs: number[] = [];
  let w = 0;
  let lastEnd = 0;
  for (let i = 0; i < text.length;) {
    const cp = text.codePointAt(i)!;
    const width = cp > 0xffff ? 2 : 1;
    while (w < sorted.length && sorted[w]!.charEnd <= i) lastEnd = Math.max(lastEnd, sorted[w++]!.endMs);
    const word = sorted[w];
    if (word && i >= word.charStart) {
      characters.push(String.fromCodePoint(cp));
      startMs.push(word.startMs);
      endMs.push(word.endMs);
    } else if (/[\p{L}\p{N}]/u.test(String.fromCodePoint(cp))) {
      // A word the aligner did not find: heard once the next word it found begins (never, at the end).
      const next = word?.startMs ?? UNHEARD_MS;
      characters.push(String.fromCodePoint(cp));
      startMs.push(lastEnd);
      endMs.push(Math.max(lastEnd, next));
    } else {
      // Between words: ends with the word before it (a space or a comma is heard with that word).
      characters.push(String.fromCodePoint(cp));
      startMs.push(lastEnd);
      endMs.push(lastEnd);
    }
    // Never earlier than the character before it: the ledger counts characters heard from the start.
    const at = endMs.length - 1;
    if (at > 0 && endMs[at]! < endMs[at - 1]!) endMs[at] = endMs[at - 1]!;
    i += width;
  }
  return { characters, startMs, endMs };
}
