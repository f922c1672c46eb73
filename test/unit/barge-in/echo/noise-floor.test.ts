/** The line's noise floor alone: minimum statistics over blocks of cells. */
import { describe, expect, it } from 'vitest';
import { BANDS } from '../../../../src/barge-in/echo/cells.js';
import { bandPowerOfNoise } from '../../../../src/barge-in/echo/analyser.js';
import { LINE_FLOOR_DBFS, NOISE_BIAS, NoiseFloor } from '../../../../src/barge-in/echo/noise-floor.js';

/** Band powers `power` times those of line noise at −60 dBFS (10 dB over the floor's least). */
const UNIT = bandPowerOfNoise(8000, -60);
const level = (power: number): Float64Array => new Float64Array(BANDS).fill(power * UNIT);

describe('noise floor', () => {
  it("does not learn the first cell, half a transform's frame", () => {
    const floor = new NoiseFloor(8000);
    floor.push(level(1));
    for (let i = 0; i < 10; i++) floor.push(level(2));
    expect(floor.bands[0]! / UNIT).toBeCloseTo(2, 9);
  });

  it('on a steady line is the line, and its total the mean noise over all bands', () => {
    const floor = new NoiseFloor(8000);
    let total = 0;
    for (let i = 0; i < 10; i++) total = floor.push(level(3));
    expect(floor.bands[5]! / UNIT).toBeCloseTo(3, 9);
    expect(total / UNIT).toBeCloseTo(3 * NOISE_BIAS * BANDS, 6);
  });

  it('stays under speech and bursts shorter than a block', () => {
    const floor = new NoiseFloor(8000);
    for (let i = 0; i < 300; i++) floor.push(level(1));
    for (let i = 0; i < 100; i++) {
      floor.push(level(1000));
      expect(floor.bands[0]! / UNIT).toBeLessThan(1.0001);
    }
  });

  it('follows a noisier line within two blocks (2 s)', () => {
    const floor = new NoiseFloor(8000);
    for (let i = 0; i < 200; i++) floor.push(level(1));
    for (let i = 0; i < 250; i++) floor.push(level(100));
    expect(floor.bands[0]! / UNIT).toBeCloseTo(100, 3);
  });

  it('starts afresh after a reset', () => {
    const floor = new NoiseFloor(8000);
    for (let i = 0; i < 200; i++) floor.push(level(1));
    floor.reset();
    // The first cell after a reset is half a transform's frame (3 dB under the line): not learnt.
    floor.push(level(25));
    floor.push(level(50));
    expect(floor.bands[0]! / UNIT).toBeCloseTo(50, 9);
  });

  it("what the caller must stand over never goes under the codec's crumbs: LINE_FLOOR_DBFS on a line with no noise", () => {
    for (const rate of [8000, 16000] as const) {
      const floor = new NoiseFloor(rate);
      const least = bandPowerOfNoise(rate, LINE_FLOOR_DBFS);
      let total = 0;
      for (let i = 0; i < 300; i++) total = floor.push(new Float64Array(BANDS).fill(least / 100));
      expect(floor.line[3]).toBeCloseTo(least, 12);
      expect(total).toBeCloseTo(least * NOISE_BIAS * BANDS, 9);
      // The floor itself is the line's (a gap in the far end's playout falls to it).
      expect(floor.bands[3]).toBeCloseTo(least / 100, 12);
      // A line over it is its own floor.
      for (let i = 0; i < 300; i++) floor.push(new Float64Array(BANDS).fill(least * 4));
      expect(floor.line[3]).toBeCloseTo(least * 4, 9);
    }
  });
});
