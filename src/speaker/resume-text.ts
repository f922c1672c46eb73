/**
 * Where speech cut by a barge-in goes on when the barge-in is taken back (a cough, an "uh-huh"): from
 * the first word the listener did not hear whole. A call's plain texts (adapters/media-stream's
 * false-barge-in.ts) and a relay app's talk cycles (src/relay) resume by it.
 */

/** A letter or digit: what makes a word more than punctuation. */
const WORD_CHARACTER = /[\p{L}\p{N}]/u;
const SPACE = /\s/;

/**
 * Where in `text` the rest begins once `heardText` (a prefix of it, cut at any character; or found in
 * it) was heard: the start of the first word not heard whole. Words are runs of non-space; one counts
 * as heard once its last letter or digit was (a comma after it need not be). The index may point at
 * spaces before that word. Undefined when `heardText` is not part of `text`.
 */
export function resumeIndex(text: string, heardText: string): number | undefined {
  const base = text.startsWith(heardText) ? 0 : text.indexOf(heardText);
  if (base < 0) return undefined;
  const cut = base + heardText.length;
  let end = cut;
  while (end < text.length && !SPACE.test(text[end]!)) end++;
  let start = end;
  if (WORD_CHARACTER.test(text.slice(cut, end))) {
    // Cut inside a word: the whole word again, never half of it.
    start = cut;
    while (start > 0 && !SPACE.test(text[start - 1]!)) start--;
  }
  return start;
}

/** The rest of `text` once `heardText` was heard (`resumeIndex`), trimmed; undefined as there. */
export function resumeFrom(text: string, heardText: string): string | undefined {
  const start = resumeIndex(text, heardText);
  return start === undefined ? undefined : text.slice(start).trim();
}
