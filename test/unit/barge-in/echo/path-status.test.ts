/** What is known of the path alone: an echo absent, a clean line, a path that settled before. */
import { describe, expect, it } from 'vitest';
import { BANDS } from '../../../../src/barge-in/echo/cells.js';
import { PathStatus } from '../../../../src/barge-in/echo/path-status.js';
import { ReferenceHistory } from '../../../../src/barge-in/echo/reference-history.js';

/** The bot's reference, each band usually at `BOT_POWER`. */
const BOT_POWER = 1e6;
const history = new ReferenceHistory();
for (let i = 0; i < 2000; i++) history.push(new Float64Array(BANDS).fill(BOT_POWER), BOT_POWER * BANDS);
/** A line's noise (the line a caller must stand over, with its bias, summed over bands) `db` against the bot's usual level. */
const noiseAt = (db: number): number => BANDS * BOT_POWER * 10 ** (db / 10);
const QUIET = noiseAt(-60);
const gainDb = (status: PathStatus, found: boolean, noise = QUIET): number =>
  10 * Math.log10(status.unknownGain(found, history, noise));

/** `cells` cells of the bot talking, the caller's line `overDb` over its noise. */
function hear(status: PathStatus, overDb: number, cells: number): void {
  for (let i = 0; i < cells; i++) status.hear(10 ** (overDb / 10), 1);
}

describe('path status', () => {
  it('finds the echo absent once the bot talked 2 s and the line stayed near its floor', () => {
    const status = new PathStatus();
    hear(status, 1, 249);
    expect(status.absent(false)).toBe(false);
    hear(status, 1, 1);
    expect(status.absent(false)).toBe(true);
    expect(status.absent(true)).toBe(false);
    // Found absent, it stays so while no delay is found.
    hear(status, 20, 200);
    expect(status.absent(false)).toBe(true);
  });

  it('does not where the line got louder whenever the bot talked', () => {
    const status = new PathStatus();
    hear(status, 5, 300);
    expect(status.absent(false)).toBe(false);
    expect(status.clean(false)).toBe(false);
  });

  it('finds a line clean only where it kept within 0.25 dB of its floor', () => {
    const near = new PathStatus();
    hear(near, 1, 300);
    expect(near.clean(false)).toBe(false);
    const flat = new PathStatus();
    hear(flat, 0.1, 300);
    expect(flat.clean(false)).toBe(true);
    expect(flat.clean(true)).toBe(false);
  });

  it('takes an unknown echo at a hybrid’s worst (6 dB), under what the search sees (20 dB) where none was found', () => {
    const status = new PathStatus();
    expect(gainDb(status, false)).toBeCloseTo(-6, 6);
    hear(status, 0, 300);
    expect(gainDb(status, false)).toBeCloseTo(-20, 6);
    // A clean line stays quiet for a delay found later (a chance match).
    status.clean(false);
    expect(gainDb(status, true)).toBeCloseTo(-20, 6);
  });

  it('where none was found, takes the echo as loud as one of the bot’s usual level could hide in the noise, up to 12 dB under the bot', () => {
    const status = new PathStatus();
    // Not found absent yet: a hybrid's worst, whatever the noise.
    expect(gainDb(status, false, noiseAt(-3))).toBeCloseTo(-6, 6);
    hear(status, 0, 300);
    expect(gainDb(status, false, noiseAt(-40))).toBeCloseTo(-20, 6);
    expect(gainDb(status, false, noiseAt(-15))).toBeCloseTo(-15, 6);
    // In whole dB.
    expect(gainDb(status, false, noiseAt(-15.3))).toBeCloseTo(-15, 6);
    expect(gainDb(status, false, noiseAt(-3))).toBeCloseTo(-12, 6);
  });

  it('remembers a settled path, and forgets it when it moves having never shown over the line', () => {
    const status = new PathStatus();
    expect(status.settle(false)).toBe(false);
    expect(status.settledBefore).toBe(false);
    expect(status.settle(true)).toBe(true);
    status.settle(false);
    expect(status.settledBefore).toBe(true);
    status.pathMoved(-12);
    expect(status.settledBefore).toBe(true);
    expect(gainDb(status, true)).toBeCloseTo(-6, 6);
    status.pathMoved(-50);
    expect(status.settledBefore).toBe(false);
    expect(gainDb(status, true)).toBeCloseTo(-20, 6);
    status.reset();
    expect(gainDb(status, true)).toBeCloseTo(-6, 6);
  });
});
