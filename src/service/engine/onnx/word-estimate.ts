/**
 * Word timings for a VITS model, which gives none: an estimate. A sentence's words share its sound,
 * from its first audible sample to its last, in proportion to their letters (plus one each, for the
 * joins), back to back. Good to a word or so on ordinary sentences; a long pause inside a sentence (at
 * a comma) is given to the words around it. Sent ahead of each sentence's audio, they let a client that
 * reads the response in order (the speaker, cutting what was heard at a barge-in) know what it has
 * played; with no words at all the service would time every character only at the response's end.
 */
import type { WordTiming } from '../engine.js';
import type { Sentence } from './sentences.js';

/** Quieter than this (about −40 dBFS) is not yet, or no longer, speech. */
const AUDIBLE = 328;
const WORD = /[\p{L}\p{N}]+(?:['’][\p{L}\p{N}]+)*/gu;

/**
 * The words of `sentence` (positions in the piece, code points) timed within its `audio`, which
 * starts `offsetMs` into the piece.
 */
export function estimateWords(
  sentence: Sentence,
  audio: Int16Array,
  sampleRate: number,
  offsetMs: number,
): WordTiming[] {
  const words: Array<{ start: number; end: number; weight: number }> = [];
  for (const m of sentence.text.matchAll(WORD)) {
    const start = sentence.start + [...sentence.text.slice(0, m.index)].length;
    const length = [...m[0]].length;
    words.push({ start, end: start + length, weight: length + 1 });
  }
  if (words.length === 0) return [];
  let first = 0;
  while (first < audio.length && Math.abs(audio[first]!) < AUDIBLE) first++;
  let last = audio.length;
  while (last > first && Math.abs(audio[last - 1]!) < AUDIBLE) last--;
  if (last <= first) {
    first = 0;
    last = audio.length;
  }
  const total = words.reduce((sum, w) => sum + w.weight, 0);
  const msPerWeight = ((last - first) * 1000) / sampleRate / total;
  let at = offsetMs + (first * 1000) / sampleRate;
  return words.map((w) => {
    const startMs = at;
    at += w.weight * msPerWeight;
    return { start: w.start, end: w.end, startMs, endMs: at };
  });
}
