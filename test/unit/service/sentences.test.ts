import { describe, expect, it } from 'vitest';
import {
  FIRST_PIECE_MAX_CHARS,
  PIECE_MAX_CHARS,
  splitForEngine,
} from '../../../src/service/engine/sentences.js';

describe('splitForEngine', () => {
  it('keeps every word, in order', () => {
    const text = 'First one. Second, with a clause; and more! Third? Fourth… fifth.';
    expect(splitForEngine(text).join(' ').split(/\s+/)).toEqual(text.split(/\s+/));
  });

  it('flushes the first sentence alone so first audio comes early', () => {
    expect(splitForEngine('Hello there. How are you today? I am fine.')[0]).toBe('Hello there.');
  });

  it('bounds every piece, the first one tighter, whatever the text', () => {
    const noPunct = 'word '.repeat(1000);
    const longWords = 'x'.repeat(1200);
    const sentences = 'This is a sentence that goes on for a while, as sentences do. '.repeat(80);
    for (const text of [noPunct, longWords, sentences]) {
      const pieces = splitForEngine(text);
      expect(pieces[0]!.length).toBeLessThanOrEqual(FIRST_PIECE_MAX_CHARS);
      for (const p of pieces) expect(p.length).toBeLessThanOrEqual(PIECE_MAX_CHARS);
      expect(pieces.join('').replace(/\s/g, '')).toBe(text.replace(/\s/g, ''));
    }
  });

  it('groups short sentences after the first into fuller pieces', () => {
    const pieces = splitForEngine('One. Two. Three. Four. Five. Six.');
    expect(pieces).toEqual(['One.', 'Two. Three. Four. Five. Six.']);
  });
});
