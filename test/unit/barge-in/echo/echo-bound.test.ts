/** What the echo could be before its path is known: the bound learnt lag by lag (echo/echo-bound.ts). */
import { describe, expect, it } from 'vitest';
import { BANDS } from '../../../../src/barge-in/echo/cells.js';
import { EchoBound } from '../../../../src/barge-in/echo/echo-bound.js';
import { ReferenceHistory } from '../../../../src/barge-in/echo/reference-history.js';
import { seeded } from '../../../../testkit/random.js';

/** A hybrid's worst loss, the most the echo can be against the reference (−6 dB). */
const CAP = 10 ** (-6 / 10);
/** A speech-like reference cell: band powers of −20 dBFS speech, scattered over 20 dB, sometimes a pause. */
function referenceCell(random: () => number): Float64Array {
  const bands = new Float64Array(BANDS);
  const on = random() > 0.15;
  for (let b = 0; b < BANDS; b++) bands[b] = on ? 1e6 * 10 ** (-2 * random()) : 0;
  return bands;
}

interface Run {
  /** Per cell after the first second: the echo the line held and the bound's prediction, per band. */
  held: Float64Array[];
  predicted: Float64Array[];
  /** Per cell after the first second: the bot at its loudest over every lag times the cap (the rule before). */
  loudest: Float64Array[];
}

/** `seconds` of the bot talking into a line whose echo is `gain` at `delayCells` (none: undefined). */
function run(seconds: number, delayCells: number | undefined, gain: number, noise = 1): Run {
  const random = seeded(7);
  const history = new ReferenceHistory();
  const bound = new EchoBound();
  const refs: Float64Array[] = [];
  const out: Run = { held: [], predicted: [], loudest: [] };
  for (let cell = 0; cell < (seconds * 1000) / 8; cell++) {
    const ref = referenceCell(random);
    refs.push(ref);
    history.push(
      ref,
      ref.reduce((a, v) => a + v, 0),
    );
    const line = new Float64Array(BANDS);
    const source = delayCells === undefined ? undefined : refs[cell - delayCells];
    for (let b = 0; b < BANDS; b++) {
      // The echo of an 8 ms cell scatters around the reference's power times the gain (±3 dB here).
      const echo = source ? source[b]! * gain * 10 ** ((random() * 6 - 3) / 10) : 0;
      line[b] = echo + noise * random();
    }
    const predicted = new Float64Array(BANDS);
    bound.next(line, history, CAP, predicted);
    if (cell >= 125) {
      out.held.push(line);
      out.predicted.push(predicted);
      const loudest = new Float64Array(BANDS);
      for (let b = 0; b < BANDS; b++) loudest[b] = history.peakOf(b) * CAP;
      out.loudest.push(loudest);
    }
  }
  return out;
}

const sum = (cells: Float64Array[]): number => cells.reduce((a, c) => a + c.reduce((x, v) => x + v, 0), 0);

describe('echo bound', () => {
  it('never predicts less echo than the line holds at its path, nor more than a hybrid’s worst', () => {
    for (const [delayCells, gainDb] of [
      [5, -6],
      [18, -12],
      [37, -20],
      [80, -30],
    ] as const) {
      const { held, predicted, loudest } = run(3, delayCells, 10 ** (gainDb / 10));
      for (const [k, cell] of held.entries())
        for (let b = 0; b < BANDS; b++) {
          expect(predicted[k]![b]!, `lag ${delayCells}, ${gainDb} dB, band ${b}`).toBeGreaterThanOrEqual(
            cell[b]! * 10 ** (-3 / 10) - 1,
          );
          expect(predicted[k]![b]!).toBeLessThanOrEqual(loudest[k]![b]! + 1e-9);
        }
    }
  });

  it('is far under the bot at its loudest on a soft echo, and under the line on none', () => {
    // −20 dB at 300 ms: the bound's echo is a fraction of the rule before's.
    const soft = run(3, 37, 10 ** (-20 / 10));
    expect(sum(soft.predicted) / sum(soft.loudest)).toBeLessThan(0.1);
    // A loud echo (−6 dB): the bound stays near a hybrid's worst at the path, as it must.
    const loud = run(3, 5, 10 ** (-6 / 10));
    expect(sum(loud.predicted) / sum(loud.loudest)).toBeGreaterThan(0.15);
    // No echo at all: the line holds only its noise, and the bound falls to about it.
    const none = run(3, undefined, 0);
    expect(sum(none.predicted) / sum(none.loudest)).toBeLessThan(1e-4);
  });

  it('forgets what it learnt on reset', () => {
    const random = seeded(3);
    const history = new ReferenceHistory();
    const bound = new EchoBound();
    const quiet = new Float64Array(BANDS);
    const out = new Float64Array(BANDS);
    for (let cell = 0; cell < 200; cell++) {
      const ref = referenceCell(random);
      history.push(
        ref,
        ref.reduce((a, v) => a + v, 0),
      );
      bound.next(quiet, history, CAP, out);
    }
    const learnt = out.reduce((a, v) => a + v, 0);
    bound.reset();
    bound.next(quiet, history, CAP, out);
    // Unlearnt, every lag may hold the echo at a hybrid's worst: the bot's loudest around it.
    expect(out.reduce((a, v) => a + v, 0)).toBeGreaterThan(learnt * 100);
  });
});
