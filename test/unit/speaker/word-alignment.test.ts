import { describe, expect, it } from 'vitest';
import { characterTimings } from '../../../src/speaker/word-alignment.js';

describe('characterTimings', () => {
  it('gives every character of a word its end, and the spaces and punctuation after it the same', () => {
    const text = 'Hi, you.';
    const t = characterTimings(text, [
      { charStart: 0, charEnd: 2, startMs: 100, endMs: 300 },
      { charStart: 4, charEnd: 7, startMs: 400, endMs: 700 },
    ]);
    expect(t.characters.join('')).toBe(text);
    expect(t.endMs).toEqual([300, 300, 300, 300, 700, 700, 700, 700]);
    expect(t.startMs).toEqual([100, 100, 300, 300, 400, 400, 400, 700]);
  });

  it('counts a word the aligner missed as heard only once the next word it found begins, or never', () => {
    const text = 'one two three four';
    const t = characterTimings(text, [
      { charStart: 0, charEnd: 3, startMs: 0, endMs: 200 },
      { charStart: 8, charEnd: 13, startMs: 500, endMs: 800 },
    ]);
    // "two" (4..7) ends when "three" begins; "four" (14..18) never inside the segment.
    expect(t.endMs.slice(4, 7)).toEqual([500, 500, 500]);
    expect(t.endMs[7]).toBe(500); // the space after it
    expect(t.endMs.slice(14).every((ms) => ms > 1e12)).toBe(true);
    // Monotonic, as the ledger reads it.
    for (let i = 1; i < t.endMs.length; i++) expect(t.endMs[i]).toBeGreaterThanOrEqual(t.endMs[i - 1]!);
  });

  it('counts code points as the service does, and ignores spans outside the text', () => {
    const t = characterTimings('😀 ok', [
      { charStart: 3, charEnd: 5, startMs: 10, endMs: 20 },
      { charStart: 4, charEnd: 99, startMs: 0, endMs: 1 },
    ]);
    expect(t.characters).toEqual(['😀', ' ', 'o', 'k']);
    // The emoji and the space before the first word count from the start (no word to wait for).
    expect(t.endMs).toEqual([0, 0, 20, 20]);
  });
});
