/**
 * Free text as the words a recogniser says: runs of letters, digits and inner apostrophes, lower-cased
 * (the dictionary's spelling: `i'd`, `that's`), everything else a separator. Each word keeps where it
 * was in the text, so a result can point back into what was given (an alignment's character offsets).
 */

export interface TextWord {
  /** As the dictionary spells it: lower case, a typographic apostrophe made plain. */
  readonly word: string;
  /** UTF-16 offsets into the text: [start, end). */
  readonly start: number;
  readonly end: number;
}

const WORD = /[\p{L}\p{N}'’]+/gu;
const EDGE_APOSTROPHES = /^['’]+|['’]+$/g;

export function textWords(text: string): TextWord[] {
  const out: TextWord[] = [];
  for (const m of text.matchAll(WORD)) {
    const raw = m[0];
    const lead = raw.length - raw.replace(/^['’]+/, '').length;
    const core = raw.replace(EDGE_APOSTROPHES, '');
    if (core === '') continue;
    const start = m.index + lead;
    out.push({ word: core.replace(/’/g, "'").toLowerCase(), start, end: start + core.length });
  }
  return out;
}
