import { describe, expect, it } from 'vitest';
import { fliteText, fliteTokens } from '../../../src/service/engine/flite/text.js';
import {
  alignWords,
  parseSegments,
  tokenRunInput,
  type Segment,
} from '../../../src/service/engine/flite/word-timing.js';

/** Segments from `name:endSeconds` pairs, as Flite prints them. */
const segments = (line: string): Segment[] => parseSegments(line)[0]!;

describe('Flite text', () => {
  it('is ASCII: typographic quotes, dashes and ellipses become look-alikes, accents go, the rest is a space', () => {
    expect(fliteText('“Don’t” – naïve…')).toBe('"Don\'t" - naive...');
    expect(fliteText('a😀b\tc\u00a0d')).toBe('a b c d');
  });

  it("is tokenized on the caller's text: each token's span runs from its first letter or digit to its last", () => {
    const text = '“Hi,” 😀 said Zoë — $5.50!';
    expect(fliteTokens(text)).toEqual([
      { text: '"Hi,"', start: 1, end: 3 },
      { text: 'said', start: 8, end: 12 },
      { text: 'Zoe', start: 13, end: 16 },
      { text: '$5.50!', start: 20, end: 24 },
    ]);
    expect(tokenRunInput(fliteTokens('a b'))).toBe('a\n\nb\n\n');
  });
});

describe('alignWords', () => {
  const tokens = fliteTokens('the cat sat');

  it("times each token from its first phone's start to its last phone's end, pauses left out", () => {
    const real = segments(
      'pau:0.100 dh:0.150 ax:0.200 k:0.260 ae:0.350 t:0.400 pau:0.600 s:0.700 ae:0.800 t:0.850 pau:1.000',
    );
    const phones = parseSegments(
      'pau:0.1 dh:0.2 ax:0.3 pau:0.4\npau:0.1 k:0.2 ae:0.3 t:0.4 pau:0.5\npau:0.1 s:0.2 ae:0.3 t:0.4 pau:0.5\n',
    );
    expect(alignWords(tokens, phones, real)).toEqual([
      { start: 0, end: 3, startMs: 100, endMs: 200 },
      { start: 4, end: 7, startMs: 200, endMs: 400 },
      { start: 8, end: 11, startMs: 600, endMs: 850 },
    ]);
  });

  it('absorbs what context changed: another vowel, a phone more or less', () => {
    // "the" before a vowel is "dh iy"; the real run drops the "t" of "cat".
    const real = segments('pau:0.1 dh:0.15 iy:0.2 k:0.26 ae:0.35 s:0.45 ae:0.55 t:0.6 pau:0.8');
    const phones = parseSegments(
      'pau:0.1 dh:0.2 ax:0.3 pau:0.4\npau:0.1 k:0.2 ae:0.3 t:0.4 pau:0.5\npau:0.1 s:0.2 ae:0.3 t:0.4 pau:0.5\n',
    );
    expect(alignWords(tokens, phones, real).map((w) => [w.startMs, w.endMs])).toEqual([
      [100, 200],
      [200, 350],
      [350, 600],
    ]);
  });

  it('gives up (no words: the characters are spread instead) when the token run did not answer a line per token', () => {
    const real = segments('pau:0.1 dh:0.15 ax:0.2 pau:0.3');
    expect(alignWords(tokens, parseSegments('pau:0.1 dh:0.2 ax:0.3 pau:0.4\n'), real)).toEqual([]);
  });
});
