/**
 * Splits text into the pieces the engine synthesizes one at a time. Small pieces keep the first audio
 * early whatever the text's length; the first piece is kept especially short for that reason.
 */
export const FIRST_PIECE_MAX_CHARS = 160;
export const PIECE_MAX_CHARS = 400;

/** Where a sentence ends: its closing punctuation and quotes, then space. */
export const SENTENCE_END = /[.!?…。！？]+["'”’)\]]*\s+/g;
/** Where a clause ends. */
export const CLAUSE_END = /[,;:—–]\s+/g;

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}

/** Code points of `text.slice(from, to)`, counted as `for…of` counts them (a lone surrogate is one). */
function codePointsBetween(text: string, from: number, to: number): number {
  let n = 0;
  for (let i = from; i < to; i++, n++) {
    const code = text.charCodeAt(i);
    if (code >= 0xd800 && code <= 0xdbff && i + 1 < to && isLowSurrogate(text.charCodeAt(i + 1))) i++;
  }
  return n;
}

/** `text` cut after each match of `pattern` (a global expression); nothing is lost. */
export function splitAt(text: string, pattern: RegExp): string[] {
  const out: string[] = [];
  let start = 0;
  for (const m of text.matchAll(pattern)) {
    const end = m.index + m[0].length;
    out.push(text.slice(start, end));
    start = end;
  }
  if (start < text.length) out.push(text.slice(start));
  return out;
}

/** Cuts an over-long piece at clauses, then at words, then (no spaces at all) hard. */
function cut(piece: string, maxChars: number): string[] {
  if (piece.length <= maxChars) return [piece];
  const out: string[] = [];
  for (const clause of splitAt(piece, CLAUSE_END)) {
    if (clause.length <= maxChars) {
      out.push(clause);
      continue;
    }
    let current = '';
    for (const word of clause.split(/(?<=\s)/)) {
      if (current.length + word.length > maxChars && current) {
        out.push(current);
        current = '';
      }
      if (word.length > maxChars) {
        for (let i = 0; i < word.length;) {
          let end = Math.min(word.length, i + maxChars);
          // Never between the two halves of a surrogate pair: each piece stays whole code points.
          if (end < word.length && end - 1 > i && isLowSurrogate(word.charCodeAt(end))) end--;
          out.push(word.slice(i, end));
          i = end;
        }
      } else current += word;
    }
    if (current) out.push(current);
  }
  return out;
}

/** Groups sentences into pieces of at most `PIECE_MAX_CHARS` (the first at most `FIRST_PIECE_MAX_CHARS`). */
export function splitForEngine(text: string): string[] {
  const pieces: string[] = [];
  let current = '';
  const limit = (): number => (pieces.length === 0 ? FIRST_PIECE_MAX_CHARS : PIECE_MAX_CHARS);
  for (const sentence of splitAt(text, SENTENCE_END)) {
    for (const part of cut(sentence, limit())) {
      if (current && current.length + part.length > limit()) {
        pieces.push(current);
        current = '';
      }
      // The first piece is flushed at its first sentence end, so the first audio comes quickly.
      current += part;
      if (pieces.length === 0 && /[.!?…]\W*\s*$/.test(current)) {
        pieces.push(current);
        current = '';
      }
    }
  }
  if (current) pieces.push(current);
  return pieces.map((p) => p.trim()).filter((p) => p.length > 0);
}

/**
 * Where each piece of `splitForEngine(text)` starts in `text`, in code points: the way back from a
 * position in a piece to the caller's text. The pieces are the text's consecutive parts, trimmed, so
 * each is found at or after the end of the one before it.
 */
export function pieceOffsets(text: string, pieces: readonly string[]): number[] {
  const offsets: number[] = [];
  let from = 0;
  let codePoints = 0;
  for (const piece of pieces) {
    const at = text.indexOf(piece, from);
    if (at < 0) throw new Error('a piece is not part of the text it was split from');
    codePoints += codePointsBetween(text, from, at);
    offsets.push(codePoints);
    codePoints += codePointsBetween(text, at, at + piece.length);
    from = at + piece.length;
  }
  return offsets;
}
