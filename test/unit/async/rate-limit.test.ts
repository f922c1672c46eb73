import { describe, expect, it } from 'vitest';
import { RateLimit } from '../../../src/async/rate-limit.js';

describe('RateLimit', () => {
  it('allows a burst, then the rate', () => {
    const r = new RateLimit(10, 5);
    let ok = 0;
    for (let i = 0; i < 20; i++) if (r.take(0)) ok++;
    expect(ok).toBe(5);
    // 100 ms later: one token came back.
    expect(r.take(100)).toBe(true);
    expect(r.take(100)).toBe(false);
  });

  it('refills no further than the burst after a long pause', () => {
    const r = new RateLimit(10, 5);
    for (let i = 0; i < 5; i++) r.take(0);
    let ok = 0;
    for (let i = 0; i < 20; i++) if (r.take(60_000)) ok++;
    expect(ok).toBe(5);
  });

  it('keeps a steady peer under its rate going forever', () => {
    const r = new RateLimit(50, 100);
    for (let t = 0; t < 60_000; t += 20) expect(r.take(t)).toBe(true);
  });

  it('takes no tokens back when the clock steps backwards', () => {
    const r = new RateLimit(10, 2);
    r.take(1000);
    r.take(1000);
    expect(r.take(0)).toBe(false);
    expect(r.take(1000)).toBe(false);
  });

  it('refuses nonsense', () => {
    expect(() => new RateLimit(0, 1)).toThrow(RangeError);
    expect(() => new RateLimit(1, 0)).toThrow(RangeError);
  });
});
