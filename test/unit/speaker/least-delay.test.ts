import { describe, expect, it } from 'vitest';
import { LeastDelay } from '../../../src/speaker/least-delay.js';

describe('LeastDelay', () => {
  it('keeps the least sample of the last two blocks, and takes a real change within two blocks', () => {
    const d = new LeastDelay(1000);
    expect(d.add(50, 0)).toBe(50);
    expect(d.add(300, 200)).toBe(50); // a late sample does not move it
    expect(d.add(40, 400)).toBe(40);
    // The path really got 100 ms slower from t = 500 on: the old blocks age out.
    expect(d.add(140, 1000)).toBe(40);
    expect(d.add(145, 1900)).toBe(40);
    expect(d.add(150, 2000)).toBe(140);
    expect(d.add(160, 3000)).toBe(150);
    d.reset();
    expect(d.add(500, 3100)).toBe(500);
  });

  it('refuses a block that is not a positive length', () => {
    expect(() => new LeastDelay(0)).toThrow(RangeError);
    expect(() => new LeastDelay(Number.NaN)).toThrow(RangeError);
  });
});
