/** The line's noise floor alone: minimum statistics over blocks of cells. */
import { describe, expect, it } from 'vitest';
import { BANDS } from '../../../../src/barge-in/echo/cells.js';
import { NOISE_BIAS, NoiseFloor } from '../../../../src/barge-in/echo/noise-floor.js';

const level = (power: number): Float64Array => new Float64Array(BANDS).fill(power);

describe('noise floor', () => {
  it('on a steady line is the line, and its total the mean noise over all bands', () => {
    const floor = new NoiseFloor();
    let total = 0;
    for (let i = 0; i < 10; i++) total = floor.push(level(3));
    expect(floor.bands[5]).toBeCloseTo(3, 9);
    expect(total).toBeCloseTo(3 * NOISE_BIAS * BANDS, 6);
  });

  it('stays under speech and bursts shorter than a block', () => {
    const floor = new NoiseFloor();
    for (let i = 0; i < 300; i++) floor.push(level(1));
    for (let i = 0; i < 100; i++) {
      floor.push(level(1000));
      expect(floor.bands[0]).toBeLessThan(1.0001);
    }
  });

  it('follows a noisier line within two blocks (2 s)', () => {
    const floor = new NoiseFloor();
    for (let i = 0; i < 200; i++) floor.push(level(1));
    for (let i = 0; i < 250; i++) floor.push(level(100));
    expect(floor.bands[0]).toBeCloseTo(100, 3);
  });

  it('starts afresh after a reset', () => {
    const floor = new NoiseFloor();
    for (let i = 0; i < 200; i++) floor.push(level(1));
    floor.reset();
    floor.push(level(50));
    expect(floor.bands[0]).toBe(50);
  });
});
