/** The watch for gaps in the far end's playout alone: the echo, predicted loud, missing in cells in a row. */
import { describe, expect, it } from 'vitest';
import { BANDS, MAX_GAP_CELLS } from '../../../../src/barge-in/echo/cells.js';
import { LossTracker } from '../../../../src/barge-in/echo/loss-tracker.js';
import { GapWatch } from '../../../../src/barge-in/echo/playout-gaps.js';
import { ReferenceHistory } from '../../../../src/barge-in/echo/reference-history.js';

const BOT = 1e6;
const DELAY = 10;
const FLOOR = new Float64Array(BANDS).fill(1);
const level = (power: number): Float64Array => new Float64Array(BANDS).fill(power);
/** The echo as the loss (0 dB, as loud as the bot) predicts it; the line's noise alone. */
const ECHO = level(BOT);
const NOISE = level(1);

function history(power = BOT): ReferenceHistory {
  const h = new ReferenceHistory();
  for (let i = 0; i < 200; i++) h.push(level(power), power * BANDS);
  return h;
}

describe('playout gap watch', () => {
  it('opens a gap where the echo is missing in two cells in a row, and closes it when it shows again', () => {
    const watch = new GapWatch();
    const h = history();
    const loss = new LossTracker();
    expect(watch.watch(DELAY, h, loss, NOISE, FLOOR)).toBe(false);
    expect(watch.holding).toBe(true);
    expect(watch.watch(DELAY, h, loss, NOISE, FLOOR)).toBe(true);
    expect(watch.watch(DELAY, h, loss, ECHO, FLOOR)).toBe(false);
    expect(watch.holding).toBe(false);
    // One cell alone is the end of a word.
    expect(watch.watch(DELAY, h, loss, NOISE, FLOOR)).toBe(false);
    expect(watch.watch(DELAY, h, loss, ECHO, FLOOR)).toBe(false);
  });

  it('keeps a gap open over cells that tell nothing (the bot quiet at the delay), not past the longest gap', () => {
    const watch = new GapWatch();
    const loss = new LossTracker();
    watch.watch(DELAY, history(), loss, NOISE, FLOOR);
    expect(watch.watch(DELAY, history(), loss, NOISE, FLOOR)).toBe(true);
    const quiet = history(1);
    expect(watch.watch(DELAY, quiet, loss, NOISE, FLOOR)).toBe(true);
    expect(watch.holding).toBe(false);
    let open = 3;
    while (watch.watch(DELAY, quiet, loss, NOISE, FLOOR)) open++;
    expect(open).toBe(MAX_GAP_CELLS);
  });

  it('watches nothing without a settled path', () => {
    const watch = new GapWatch();
    const loss = new LossTracker();
    for (let i = 0; i < 5; i++) expect(watch.watch(undefined, history(), loss, NOISE, FLOOR)).toBe(false);
    expect(watch.holding).toBe(false);
  });
});
