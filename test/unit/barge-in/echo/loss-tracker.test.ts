/** The echo's loss alone: a running median per band, slow to take the caller for the echo. */
import { describe, expect, it } from 'vitest';
import { BANDS } from '../../../../src/barge-in/echo/cells.js';
import { LossTracker } from '../../../../src/barge-in/echo/loss-tracker.js';
import { ReferenceHistory } from '../../../../src/barge-in/echo/reference-history.js';

const BOT = 1e6;
const DELAY = 10;
const FLOOR = new Float64Array(BANDS).fill(1);
const level = (power: number): Float64Array => new Float64Array(BANDS).fill(power);

/** A reference that played at every lag, `BOT` in every band. */
function playing(): ReferenceHistory {
  const history = new ReferenceHistory();
  for (let i = 0; i < 200; i++) history.push(level(BOT), BOT * BANDS);
  return history;
}

/** `cells` cells of the caller's line at `gainDb` under the bot; the mean loss after. */
function track(
  loss: LossTracker,
  history: ReferenceHistory,
  gainDb: number,
  cells: number,
  caller = false,
): number {
  for (let i = 0; i < cells; i++) {
    loss.countCell();
    loss.update(DELAY, history, level(BOT * 10 ** (gainDb / 10) + 2), FLOOR, caller);
  }
  return loss.meanDb();
}

describe('loss tracker', () => {
  it('starts as loud as the bot, and settles on the path’s loss per band', () => {
    const loss = new LossTracker();
    const history = playing();
    expect(loss.meanDb()).toBe(0);
    expect(loss.gainOf(3)).toBe(1);
    expect(track(loss, history, -12, 200)).toBeCloseTo(-12, 0);
    expect(loss.gainOf(3)).toBeCloseTo(10 ** (loss.meanDb() / 10), 9);
  });

  it('takes the caller over the echo for the echo getting louder by only 0.1 dB a cell', () => {
    const loss = new LossTracker();
    const history = playing();
    const settled = track(loss, history, -12, 200);
    expect(track(loss, history, 0, 10, true) - settled).toBeCloseTo(1, 6);
  });

  it('rises no faster than 0.3 dB a cell, but at the streak’s pace while the echo may be back (recover)', () => {
    const cellsToRise = (recover: boolean): number => {
      const loss = new LossTracker();
      const history = playing();
      track(loss, history, -20, 300);
      if (recover) loss.recover();
      for (let cells = 1; ; cells++) if (track(loss, history, -6, 1) > -7) return cells;
    };
    expect(cellsToRise(false)).toBeGreaterThanOrEqual(40);
    expect(cellsToRise(true)).toBeLessThan(20);
  });

  it('lowers the loss where the echo it predicts over the noise is not there', () => {
    const loss = new LossTracker();
    const history = playing();
    track(loss, history, -12, 200);
    for (let i = 0; i < 50; i++) loss.update(DELAY, history, level(1), FLOOR, false);
    expect(loss.meanDb()).toBeLessThan(-40);
  });

  it('is as loud as the bot again after a reset', () => {
    const loss = new LossTracker();
    track(loss, playing(), -12, 200);
    loss.reset();
    expect(loss.meanDb()).toBe(0);
  });
});
