/**
 * What Flite is given to read. Its front end is US English on bytes: typographic quotes, dashes and
 * ellipses, accented letters and anything beyond ASCII would be spelled out byte by byte or dropped
 * mid-word ("don’t" read as "don" and "t"). They become their ASCII look-alikes; what has none
 * (emoji, other scripts) becomes a space. Positions in the caller's text are kept by tokenizing that
 * text itself (`fliteTokens`), not Flite's.
 */

const LOOK_ALIKES: ReadonlyMap<string, string> = new Map([
  ['‘', "'"],
  ['’', "'"],
  ['‚', "'"],
  ['‛', "'"],
  ['′', "'"],
  ['“', '"'],
  ['”', '"'],
  ['„', '"'],
  ['″', '"'],
  ['«', '"'],
  ['»', '"'],
  ['‐', '-'],
  ['‑', '-'],
  ['‒', '-'],
  ['–', '-'],
  ['—', '-'],
  ['―', '-'],
  ['−', '-'],
  ['…', '...'],
]);

const COMBINING_MARKS = /\p{M}/gu;

/** One code point as Flite should read it. */
function asciiFor(c: string): string {
  const code = c.codePointAt(0)!;
  if (code < 0x80) return code < 0x20 || code === 0x7f ? ' ' : c;
  const known = LOOK_ALIKES.get(c);
  if (known !== undefined) return known;
  if (/\s/u.test(c)) return ' ';
  // é → e, ñ → n: the letter without its accent is the nearest thing Flite can say.
  const stripped = c.normalize('NFD').replace(COMBINING_MARKS, '');
  return /^[\x20-\x7e]+$/.test(stripped) ? stripped : ' ';
}

/** `text` in the ASCII Flite reads well. */
export function fliteText(text: string): string {
  let out = '';
  for (const c of text) out += asciiFor(c);
  return out;
}

/** A whitespace-separated token of the caller's text. */
export interface FliteToken {
  /** What Flite is given for it (ASCII). */
  readonly text: string;
  /**
   * The code points of the caller's text the token's sound is timed to: from its first letter or digit
   * to its last (quotes and punctuation around it are left to the time between words).
   */
  readonly start: number;
  readonly end: number;
}

const WORD_CHARACTER = /[\p{L}\p{N}]/u;

/** The tokens of `text` that have a letter or digit, in order. */
export function fliteTokens(text: string): FliteToken[] {
  const tokens: FliteToken[] = [];
  const chars = Array.from(text);
  let i = 0;
  while (i < chars.length) {
    while (i < chars.length && /\s/u.test(chars[i]!)) i++;
    const from = i;
    while (i < chars.length && !/\s/u.test(chars[i]!)) i++;
    if (i === from) break;
    let start = from;
    let end = i;
    while (start < end && !WORD_CHARACTER.test(chars[start]!)) start++;
    while (end > start && !WORD_CHARACTER.test(chars[end - 1]!)) end--;
    if (start === end) continue;
    const ascii = fliteText(chars.slice(from, i).join('')).trim();
    if (ascii !== '') tokens.push({ text: ascii, start, end });
  }
  return tokens;
}
