/**
 * The confidence of a recognition (src/recognition/confidence.ts), on made-up evidence: it rises with
 * the path's fit and its margin over the rival answer, falls with unexplained speech and with carrier
 * words around a short answer, and the margin's clamp bounds it, which is what lets the recogniser skip
 * the second pass when the first already decides.
 */
import { describe, expect, it } from 'vitest';
import {
  carrierShare,
  confidence,
  MARGIN_MAX,
  MARGIN_MIN,
  type PathFit,
} from '../../../src/recognition/confidence.js';

/** A good fit of a clean answer, and one of speech forced onto the grammar (bench/menus.ts's ranges). */
const GOOD: PathFit = { perFrame: -25, unexplained: 0, worstWord: -30 };
const POOR: PathFit = { perFrame: -55, unexplained: 0.2, worstWord: -75 };

describe('confidence', () => {
  it('tells a good fit from a poor one, and nothing from no path', () => {
    expect(confidence(GOOD, 2, 0)).toBeGreaterThan(0.9);
    expect(confidence(POOR, 2, 0)).toBeLessThan(0.1);
    expect(confidence(undefined, MARGIN_MAX, 0)).toBe(0);
  });

  it('rises with the margin up to its clamp, and falls with unexplained speech and carriers', () => {
    const fit: PathFit = { perFrame: -40, unexplained: 0, worstWord: -50 };
    const at = (margin: number, share = 0.3): number => confidence(fit, margin, share);
    expect(at(-1)).toBeLessThan(at(0));
    expect(at(0)).toBeLessThan(at(2));
    expect(at(MARGIN_MAX + 10)).toBe(at(MARGIN_MAX));
    expect(at(MARGIN_MIN - 10)).toBe(at(MARGIN_MIN));
    expect(at(1, 0.8)).toBeLessThan(at(1, 0.2));
    expect(confidence({ ...fit, unexplained: 0.3 }, 1, 0.3)).toBeLessThan(at(1));
    for (const margin of [-20, -5, -1, 0, 1, 3, 20]) {
      expect(at(margin)).toBeGreaterThanOrEqual(at(MARGIN_MIN));
      expect(at(margin)).toBeLessThanOrEqual(at(MARGIN_MAX));
    }
  });
});

describe('carrierShare', () => {
  it("is the carriers' share of the words' time", () => {
    const words = [
      { startMs: 300, endMs: 400 }, // i'd
      { startMs: 400, endMs: 500 }, // like
      { startMs: 500, endMs: 900 }, // billing
      { startMs: 950, endMs: 1150 }, // please
    ];
    expect(carrierShare(words, { before: 2, after: 1 })).toBeCloseTo(400 / 800, 6);
    expect(carrierShare(words, { before: 0, after: 0 })).toBe(0);
    expect(carrierShare(words, undefined)).toBe(0);
    expect(carrierShare([], { before: 0, after: 0 })).toBe(0);
  });
});
