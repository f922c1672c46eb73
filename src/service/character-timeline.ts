/**
 * Character timings of one response (ElevenLabs' `alignment`), built from the engine's word timings as
 * they come. One entry per code point of the request's text (ElevenLabs counts Python `str`
 * characters, which are code points), times from the response's first sample; the entries tile the
 * audio with no gap and no overlap, so they are monotonic (docs/speech-service.md, "Character timings"):
 *
 * - a word's characters share its sound evenly, from its first phoneme to its last sound;
 * - the characters between two words (spaces, punctuation, what the engine did not speak) share the
 *   time from the first word's last sound to the next word's first phoneme, a pause included; when the
 *   words run together that is no time at all, and they all sit at the boundary;
 * - characters before the first word start at 0, those after the last word end with the audio.
 */
import type { WordTiming } from './engine/engine.js';

/** ElevenLabs' alignment, as it is sent: seconds, to the millisecond. */
export interface AlignmentJson {
  readonly characters: string[];
  readonly character_start_times_seconds: number[];
  readonly character_end_times_seconds: number[];
}

export class CharacterTimeline {
  readonly #characters: string[];
  /** Times of the characters timed so far (the first `#startMs.length`), in ms, unrounded. */
  readonly #startMs: number[] = [];
  readonly #endMs: number[] = [];
  /** Where the next character's time begins: the end of the last one timed. */
  #cursorMs = 0;
  /** Characters already handed out. */
  #sent = 0;

  constructor(text: string) {
    this.#characters = Array.from(text);
  }

  /**
   * A word, in the order spoken. The characters before it that no word took are timed with it. A word
   * that reaches back over characters already timed keeps only the rest; one with nothing left is
   * ignored; times never go back.
   */
  addWord(word: WordTiming): void {
    const start = Math.max(word.start, this.#startMs.length);
    const end = Math.min(word.end, this.#characters.length);
    if (end <= start) return;
    const startMs = Math.max(word.startMs, this.#cursorMs);
    this.#spread(start, startMs);
    this.#spread(end, Math.max(word.endMs, startMs));
  }

  /**
   * The timed characters not handed out yet whose sound ends within the first `audioMs` of the audio
   * (what has been sent), or undefined when there are none.
   */
  take(audioMs: number): AlignmentJson | undefined {
    const limit = Math.floor(audioMs);
    let until = this.#sent;
    while (until < this.#endMs.length && Math.round(this.#endMs[until]!) <= limit) until++;
    return this.#emit(until, limit);
  }

  /**
   * The audio is complete and lasts `durationMs`: the characters after the last word take the rest of
   * it, and everything not handed out yet is, every time within the audio.
   */
  finish(durationMs: number): AlignmentJson {
    this.#spread(this.#characters.length, Math.max(durationMs, this.#cursorMs));
    return this.#emit(this.#characters.length, Math.floor(durationMs)) ?? emptyAlignment();
  }

  /** Times characters up to `until` (exclusive) evenly from the cursor to `toMs`. */
  #spread(until: number, toMs: number): void {
    const from = this.#startMs.length;
    const count = until - from;
    if (count <= 0) return;
    const fromMs = this.#cursorMs;
    const stepMs = (toMs - fromMs) / count;
    for (let i = 0; i < count; i++) {
      this.#startMs.push(fromMs + stepMs * i);
      this.#endMs.push(i === count - 1 ? toMs : fromMs + stepMs * (i + 1));
    }
    this.#cursorMs = toMs;
  }

  /** Characters from `#sent` to `until`, each time rounded to the ms and at most `limitMs`. */
  #emit(until: number, limitMs: number): AlignmentJson | undefined {
    if (until <= this.#sent) return undefined;
    const out = emptyAlignment();
    const seconds = (ms: number): number => Math.min(Math.round(ms), limitMs) / 1000;
    for (let i = this.#sent; i < until; i++) {
      out.characters.push(this.#characters[i]!);
      out.character_start_times_seconds.push(seconds(this.#startMs[i]!));
      out.character_end_times_seconds.push(seconds(this.#endMs[i]!));
    }
    this.#sent = until;
    return out;
  }
}

export function emptyAlignment(): AlignmentJson {
  return { characters: [], character_start_times_seconds: [], character_end_times_seconds: [] };
}
