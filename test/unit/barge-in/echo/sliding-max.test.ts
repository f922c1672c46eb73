/** The sliding maximum alone, against a scan of the last values. */
import { describe, expect, it } from 'vitest';
import { SlidingMax } from '../../../../src/barge-in/echo/sliding-max.js';
import { seeded } from '../../../../testkit/random.js';

describe('sliding maximum', () => {
  it('gives per lane the largest of the last span values, as a scan would', () => {
    const lanes = 3;
    const span = 7;
    const max = new SlidingMax(lanes, span);
    const random = seeded(4);
    const history: number[][] = [];
    const row = new Float64Array(lanes + 2);
    for (let n = 0; n < 500; n++) {
      // Some runs of equal values and of rising and falling ones, not only noise.
      for (let lane = 0; lane < lanes; lane++)
        row[1 + lane] = n % 50 < 10 ? 5 : n % 50 < 20 ? n % 50 : Math.floor(random() * 20);
      history.push(Array.from(row.subarray(1, 1 + lanes)));
      max.push(row, 1);
      const recent = history.slice(-span);
      for (let lane = 0; lane < lanes; lane++)
        expect(max.max(lane)).toBe(Math.max(...recent.map((values) => values[lane]!)));
    }
  });

  it('is 0 before any value and after a clear', () => {
    const max = new SlidingMax(2, 4);
    expect(max.max(1)).toBe(0);
    max.push(Float64Array.of(3, 9), 0);
    expect(max.max(1)).toBe(9);
    max.clear();
    expect(max.max(0)).toBe(0);
    expect(max.max(1)).toBe(0);
  });
});
