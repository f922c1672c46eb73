/** The verdict alone: a cell's and a window's energy against the echo predicted and the noise. */
import { describe, expect, it } from 'vitest';
import type { Cancellation } from '../../../../src/barge-in/echo/cancellation.js';
import { BANDS } from '../../../../src/barge-in/echo/cells.js';
import { LossTracker } from '../../../../src/barge-in/echo/loss-tracker.js';
import { ReferenceHistory } from '../../../../src/barge-in/echo/reference-history.js';
import { HOLDS_CALLER, HOLDS_ECHO, Verdict } from '../../../../src/barge-in/echo/verdict.js';

const BOT = 1e6;
const FLOOR = new Float64Array(BANDS).fill(1);
/** The floor's total, as the mean noise (the floor times its bias, 2). */
const NOISE_TOTAL = 2 * BANDS;
const level = (power: number): Float64Array => new Float64Array(BANDS).fill(power);

/** The caller's line: the echo (`BOT`, a loss of 0 dB) in every band, `times` that in `bands`. */
function line(times: number, bands: number): Float64Array {
  const out = level(BOT);
  for (let b = 0; b < bands; b++) out[b] = BOT * times;
  return out;
}

function playing(power = BOT): ReferenceHistory {
  const history = new ReferenceHistory();
  for (let i = 0; i < 200; i++) history.push(level(power), power * BANDS);
  return history;
}

/** One cell at a known delay (lags 8–12), judged. */
function judgeKnown(verdict: Verdict, history: ReferenceHistory, inBands: Float64Array): number {
  verdict.predict(history, new LossTracker(), 8, 12, undefined);
  return verdict.judgeCell(inBands, FLOOR, NOISE_TOTAL);
}

describe('verdict', () => {
  it('takes a cell the echo explains for the echo, and one 8 dB over it in two bands for the caller', () => {
    const verdict = new Verdict();
    const history = playing();
    expect(judgeKnown(verdict, history, line(1, 0))).toBe(HOLDS_ECHO);
    expect(judgeKnown(verdict, history, line(10, 1))).toBe(HOLDS_ECHO);
    expect(judgeKnown(verdict, history, line(10, 2))).toBe(HOLDS_ECHO | HOLDS_CALLER);
    expect(judgeKnown(verdict, history, line(5, 2))).toBe(HOLDS_ECHO);
  });

  it('expects no echo where the bot was quiet, and takes only what rises over the noise for the caller', () => {
    const verdict = new Verdict();
    const quiet = playing(0);
    expect(judgeKnown(verdict, quiet, level(1))).toBe(0);
    expect(judgeKnown(verdict, quiet, level(100))).toBe(HOLDS_CALLER);
  });

  it('takes a window for the caller when two of its cells hold the caller', () => {
    const verdict = new Verdict();
    const history = playing();
    verdict.startWindow();
    for (const times of [1, 10, 1, 10]) judgeKnown(verdict, history, line(times, 2));
    expect(verdict.judgeWindow(true)).toBe(HOLDS_ECHO | HOLDS_CALLER);
    verdict.startWindow();
    for (const times of [1, 10, 1, 1]) judgeKnown(verdict, history, line(times, 2));
    expect(verdict.judgeWindow(true)).toBe(HOLDS_ECHO);
  });

  it('takes a window for the caller when its cells summed stay 7 dB over the summed echo in three bands', () => {
    const verdict = new Verdict();
    const history = playing();
    // 7.4 dB over the echo in every cell: under the cell's 8 dB margin, over the window's 7.
    verdict.startWindow();
    for (let cell = 0; cell < 4; cell++) expect(judgeKnown(verdict, history, line(5.5, 3))).toBe(HOLDS_ECHO);
    expect(verdict.judgeWindow(true)).toBe(HOLDS_ECHO | HOLDS_CALLER);
    // 6.5 dB: not on a settled path; before one, the echo is at its loudest already and no margin applies.
    verdict.startWindow();
    for (let cell = 0; cell < 4; cell++) judgeKnown(verdict, history, line(4.5, 3));
    expect(verdict.judgeWindow(true)).toBe(HOLDS_ECHO);
    expect(verdict.judgeWindow(false)).toBe(HOLDS_ECHO | HOLDS_CALLER);
  });

  it('takes what the canceller leaves over its residual echo for the caller, but not a residual louder than the line', () => {
    const verdict = new Verdict();
    const history = playing();
    /** A canceller whose residual is `residual` in every band, leaving `left` of the echo. */
    const canceller = (residual: Float64Array, left: number): Cancellation =>
      ({ bands: residual, left: () => left }) as unknown as Cancellation;
    const judge = (inBands: Float64Array, c: Cancellation): number => {
      verdict.predict(history, new LossTracker(), 8, 12, c);
      return verdict.judgeCell(inBands, FLOOR, NOISE_TOTAL);
    };
    // The caller 4 dB over the echo in two bands, under the 8 dB margin.
    const talk = line(2.5, 2);
    // A canceller on the path takes the echo out (it leaves 1 % of it): the caller stands over that.
    const residual = level(BOT * 0.01);
    residual[0] = residual[1] = BOT * 1.5;
    expect(judge(talk, canceller(residual, 0.01))).toBe(HOLDS_ECHO | HOLDS_CALLER);
    // One off the path (a reply placed a part of a cell off) leaves it all, and adds its own error:
    // a residual louder than the line is not the caller.
    expect(judge(talk, canceller(level(BOT * 10), 1))).toBe(HOLDS_ECHO);
  });

  it('with no delay known, takes the bot at its loudest times the gain given, with no margin on top', () => {
    const verdict = new Verdict();
    const history = playing();
    const unknown = (gain: number, inBands: Float64Array): number => {
      verdict.predictUnknown(history, gain);
      return verdict.judgeCell(inBands, FLOOR, NOISE_TOTAL);
    };
    const caller = level(BOT * 0.25);
    caller[0] = caller[1] = BOT * 0.3;
    expect(unknown(0.25, caller)).toBe(HOLDS_ECHO | HOLDS_CALLER);
    expect(unknown(0.5, caller)).toBe(HOLDS_ECHO);
  });
});
