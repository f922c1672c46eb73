/** The caller's bits alone: each band against its running mean over the active cells. */
import { describe, expect, it } from 'vitest';
import { BANDS } from '../../../../src/barge-in/echo/cells.js';
import { InboundBits } from '../../../../src/barge-in/echo/inbound-bits.js';

const level = (power: number): Float64Array => new Float64Array(BANDS).fill(power);

describe('inbound bits', () => {
  it('sets the bands above their means; the first cell is its own mean', () => {
    const bits = new InboundBits();
    expect(bits.bits(level(1))).toBe(0);
    const louder = level(1);
    louder[2] = 10;
    louder[5] = 10;
    expect(bits.bits(louder)).toBe((1 << 2) | (1 << 5));
  });

  it('moves the means only with the cells it learns from', () => {
    const learnt = new InboundBits();
    const kept = new InboundBits();
    learnt.bits(level(1));
    kept.bits(level(1));
    for (let i = 0; i < 500; i++) {
      learnt.bits(level(10));
      learnt.learn();
      kept.bits(level(10));
    }
    expect(learnt.bits(level(5))).toBe(0);
    expect(kept.bits(level(5))).toBe((1 << BANDS) - 1);
  });

  it('starts afresh after a reset', () => {
    const bits = new InboundBits();
    bits.bits(level(1));
    bits.reset();
    expect(bits.bits(level(10))).toBe(0);
  });
});
