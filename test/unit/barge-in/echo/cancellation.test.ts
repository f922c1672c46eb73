/**
 * The cancellation's bookkeeping alone, on a synthetic hybrid 10 cells long: when the canceller runs,
 * when its residual is judged, and how much of the echo it is found to leave.
 */
import { describe, expect, it } from 'vitest';
import { hopSamples, PairAnalyser } from '../../../../src/barge-in/echo/analyser.js';
import { Cancellation } from '../../../../src/barge-in/echo/cancellation.js';
import { BANDS } from '../../../../src/barge-in/echo/cells.js';
import { seeded } from '../../../../testkit/random.js';

const RATE = 8000;
const HOP = hopSamples(RATE);
const DELAY_CELLS = 10;
const FLOOR = new Float64Array(BANDS).fill(1);

/** The bot (noise at about −20 dBFS) and its echo `DELAY_CELLS` later, 6 dB down. */
function hybrid(cells: number): { reference: Int16Array; inbound: Int16Array } {
  const random = seeded(8);
  const reference = Int16Array.from({ length: cells * HOP }, () => Math.round((random() * 2 - 1) * 5000));
  const lag = DELAY_CELLS * HOP;
  const inbound = Int16Array.from(reference, (_, i) => (i >= lag ? Math.round(reference[i - lag]! / 2) : 0));
  return { reference, inbound };
}

/** Runs the cells of `from`…`to` through, tracking what the canceller leaves. */
function run(c: Cancellation, signals: ReturnType<typeof hybrid>, from: number, to: number): void {
  const analyser = new PairAnalyser(RATE);
  const inBands = new Float64Array(BANDS);
  const refBands = new Float64Array(BANDS);
  for (let cell = from; cell < to; cell++) {
    c.process(signals.inbound, signals.reference, cell * HOP, true);
    analyser.push(signals.inbound, signals.reference, cell * HOP, inBands, refBands);
    c.track(false, inBands, FLOOR);
  }
}

describe('cancellation', () => {
  it('runs on a settled path whose echo is louder than −24 dB, and stops otherwise', () => {
    const c = new Cancellation(RATE);
    c.steer(undefined, -6);
    expect(c.state).toBe('off');
    c.steer(DELAY_CELLS, -30);
    expect(c.state).toBe('off');
    c.steer(DELAY_CELLS, -6);
    expect(c.state).toBe('acquiring');
    c.steer(undefined, -6);
    expect(c.state).toBe('off');
  });

  it('locks on the path, then judges its residual once it stayed locked a while, and finds the echo gone', () => {
    const c = new Cancellation(RATE);
    const signals = hybrid(200);
    run(c, signals, 0, 20);
    c.steer(DELAY_CELLS, -6);
    run(c, signals, 20, 80);
    expect(c.state).toBe('locked');
    expect(c.judging(false)).toBe(false);
    run(c, signals, 80, 120);
    expect(c.judging(false)).toBe(true);
    // Not while the echo is looked for over wide lags (a reply's start, a gap).
    expect(c.judging(true)).toBe(false);
    // What it leaves is never taken for less than 20 dB under the echo.
    for (const b of [2, 6, 10]) expect(c.left(b)).toBeCloseTo(0.01, 6);
    // The path moved: judged again only once locked a while.
    c.follow(HOP);
    expect(c.judging(false)).toBe(false);
  });

  it('is aimed anew when asked (a reply placed afresh), and stops on reset', () => {
    const c = new Cancellation(RATE);
    const signals = hybrid(120);
    c.steer(DELAY_CELLS, -6);
    run(c, signals, 0, 80);
    expect(c.state).toBe('locked');
    c.steer(DELAY_CELLS, -6);
    expect(c.state).toBe('locked');
    c.aimAgain();
    c.steer(DELAY_CELLS, -6);
    expect(c.state).toBe('acquiring');
    c.reset();
    expect(c.state).toBe('off');
  });
});
