/**
 * Word timings from Flite's segment timings. Flite prints each segment (phone or pause) of an
 * utterance with the time it ends (`-psdur`), but not which word it belongs to. So a second, cheap run
 * reads the piece's tokens one per utterance (each on its own paragraph of standard input, nearly no
 * duration, no audio kept): each line it prints is one token's phones. Those phones, in order, are
 * aligned with the phones of the real run by edit distance (the two readings differ only where
 * context changes a pronunciation: "the" before a vowel, a symbol read in isolation), and each token is
 * timed from the start of its first aligned phone to the end of its last: a word's sound, without the
 * pauses around it (docs/speech-service.md, "Character timings").
 */
import type { WordTiming } from '../engine.js';
import type { FliteToken } from './text.js';

export interface Segment {
  readonly name: string;
  readonly startMs: number;
  readonly endMs: number;
}

export const PAUSE = 'pau';

/** Phones aligned at most (tokens' × the piece's), a bound on the alignment's table (16 MB of bytes). */
const MAX_ALIGNMENT_CELLS = 16 << 20;

/**
 * Each utterance's segments from `-psdur` output (one line per utterance: `name:end …`, ends in
 * seconds from the utterance's start). Unparsable entries are skipped.
 */
export function parseSegments(stdout: string): Segment[][] {
  const utterances: Segment[][] = [];
  for (const line of stdout.split('\n')) {
    const entries = line.trim().split(/\s+/).filter(Boolean);
    if (entries.length === 0) continue;
    const segments: Segment[] = [];
    let startMs = 0;
    for (const entry of entries) {
      const colon = entry.lastIndexOf(':');
      const endMs = Number(entry.slice(colon + 1)) * 1000;
      if (colon <= 0 || !Number.isFinite(endMs) || endMs < startMs) continue;
      segments.push({ name: entry.slice(0, colon), startMs, endMs });
      startMs = endMs;
    }
    utterances.push(segments);
  }
  return utterances;
}

/** The standard input of the token run: one paragraph per token, so each is an utterance. */
export function tokenRunInput(tokens: readonly FliteToken[]): string {
  return `${tokens.map((t) => t.text).join('\n\n')}\n\n`;
}

/**
 * Word timings of `tokens` in the real run's `segments` (one utterance), given each token's phones
 * from the token run (`tokenPhones[i]`: the segments of its utterance). Empty when the token run did
 * not answer one line per token (then the characters are spread over the piece's audio instead).
 */
export function alignWords(
  tokens: readonly FliteToken[],
  tokenPhones: readonly (readonly Segment[])[],
  segments: readonly Segment[],
): WordTiming[] {
  if (tokenPhones.length !== tokens.length) return [];
  const wanted: string[] = [];
  const owner: number[] = [];
  tokenPhones.forEach((phones, token) => {
    for (const p of phones)
      if (p.name !== PAUSE) {
        wanted.push(p.name);
        owner.push(token);
      }
  });
  const spoken = segments.filter((s) => s.name !== PAUSE);
  const m = wanted.length;
  const n = spoken.length;
  if (m === 0 || n === 0 || (m + 1) * (n + 1) > MAX_ALIGNMENT_CELLS) return [];

  // Levenshtein over phone names; `move` remembers the step into each cell for the way back.
  const DIAGONAL = 0;
  const UP = 1; // a token phone the real run did not say
  const LEFT = 2; // a real phone no token had
  const width = n + 1;
  const move = new Uint8Array((m + 1) * width);
  let previous = new Uint32Array(width);
  let current = new Uint32Array(width);
  for (let j = 0; j <= n; j++) {
    previous[j] = j;
    move[j] = LEFT;
  }
  for (let i = 1; i <= m; i++) {
    current[0] = i;
    move[i * width] = UP;
    for (let j = 1; j <= n; j++) {
      const diagonal = previous[j - 1]! + (wanted[i - 1] === spoken[j - 1]!.name ? 0 : 1);
      const up = previous[j]! + 1;
      const left = current[j - 1]! + 1;
      // On a tie, a real phone is left out rather than a match made later: read back from the end,
      // a token's phones then match the earliest sounds that fit, and what the token run did not
      // say ("&" read as "ampersand" in context) falls between words, where its character is.
      let best = left;
      let step = LEFT;
      if (diagonal < best) {
        best = diagonal;
        step = DIAGONAL;
      }
      if (up < best) {
        best = up;
        step = UP;
      }
      current[j] = best;
      move[i * width + j] = step;
    }
    [previous, current] = [current, previous];
  }

  const first = new Int32Array(tokens.length).fill(-1);
  const last = new Int32Array(tokens.length).fill(-1);
  for (let i = m, j = n; i > 0 && j > 0;) {
    const step = move[i * width + j];
    if (step === DIAGONAL) {
      const token = owner[i - 1]!;
      first[token] = j - 1;
      if (last[token]! < 0) last[token] = j - 1;
      i--;
      j--;
    } else if (step === UP) i--;
    else j--;
  }
  const words: WordTiming[] = [];
  tokens.forEach((token, k) => {
    if (first[k]! < 0) return;
    words.push({
      start: token.start,
      end: token.end,
      startMs: spoken[first[k]!]!.startMs,
      endMs: spoken[last[k]!]!.endMs,
    });
  });
  return words;
}
