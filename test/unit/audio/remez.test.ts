import { describe, expect, it } from 'vitest';
import {
  minimaxCosineSum,
  nyquistLowpass,
  shortestNyquistLowpass,
  type Band,
} from '../../../src/audio/remez.js';

/** Zero-phase response Σ h[n]·cos(2πf·(n − centre)) of symmetric taps. */
function response(taps: Float64Array, f: number): number {
  const centre = (taps.length - 1) / 2;
  let a = 0;
  for (let n = 0; n < taps.length; n++) a += taps[n]! * Math.cos(2 * Math.PI * f * (n - centre));
  return a;
}

/** `points` + 1 evenly spaced frequencies from `from` to `to`, both included. */
function span(from: number, to: number, points: number): number[] {
  return Array.from({ length: points + 1 }, (_, i) => from + ((to - from) * i) / points);
}

/** The local maxima of |values| (the ends included when they are maxima). */
function peaks(values: readonly number[]): number[] {
  const out: number[] = [];
  values.forEach((v, i) => {
    const m = Math.abs(v);
    if (
      (i === 0 || m >= Math.abs(values[i - 1]!)) &&
      (i === values.length - 1 || m > Math.abs(values[i + 1]!))
    )
      out.push(m);
  });
  return out;
}

/** Taps of odd length 2n − 1 from the coefficients of cos(2π·d·f), d = 0…n−1. */
function tapsFromCosines(coefficients: Float64Array): Float64Array {
  const n = coefficients.length;
  const taps = new Float64Array(2 * n - 1);
  taps[n - 1] = coefficients[0]!;
  for (let d = 1; d < n; d++) taps[n - 1 - d] = taps[n - 1 + d] = coefficients[d]! / 2;
  return taps;
}

function expectSymmetric(taps: Float64Array): void {
  for (let n = 0; n < taps.length; n++) expect(taps[n], `tap ${n}`).toBe(taps[taps.length - 1 - n]);
}

describe('minimaxCosineSum: a classical lowpass', () => {
  // Passband to 0.1, stopband from 0.15 cycles per sample; ripples δp = 0.01 (±0.09 dB), δs = 0.001 (60 dB).
  const passbandRipple = 0.01;
  const stopbandRipple = 0.001;
  const bands: Band[] = [
    { from: 0, to: 0.1, gain: 1, weight: 1 / passbandRipple },
    { from: 0.15, to: 0.5, gain: 0, weight: 1 / stopbandRipple },
  ];
  // Kaiser's estimate for these ripples is (−20·log10 √(δp·δs) − 13) / (14.6 · 0.05) + 1 ≈ 52 taps;
  // the design needs 57 (55 misses by 1 %).
  const cosines = 29;
  const design = minimaxCosineSum(
    Array.from({ length: cosines }, (_, d) => d),
    bands,
  );
  const taps = tapsFromCosines(design.coefficients);
  const passband = span(0, 0.1, 4000).map((f) => response(taps, f) - 1);
  const stopband = span(0.15, 0.5, 14_000).map((f) => response(taps, f));

  it('meets both ripples, as the deviation it reports says', () => {
    expect(design.converged).toBe(true);
    expect(design.deviation).toBeLessThanOrEqual(1);
    const worstPass = Math.max(...passband.map(Math.abs));
    const worstStop = Math.max(...stopband.map(Math.abs));
    expect(worstPass).toBeLessThanOrEqual(passbandRipple * design.deviation * 1.001);
    expect(worstStop).toBeLessThanOrEqual(stopbandRipple * design.deviation * 1.001);
  });

  it('is equiripple: every peak of the weighted error equally high, in both bands', () => {
    const heights = [
      ...peaks(passband).map((p) => p / passbandRipple),
      ...peaks(stopband).map((p) => p / stopbandRipple),
    ];
    // At least one more alternation than there are coefficients (the Chebyshev alternation theorem).
    expect(heights.length).toBeGreaterThanOrEqual(cosines + 1);
    // The exchange stops within 1 % of the optimum.
    for (const h of heights) expect(h).toBeGreaterThan(0.98 * design.deviation);
  });

  it('has linear phase: symmetric taps', () => {
    expectSymmetric(taps);
  });

  it('reports the frequencies where its error peaks', () => {
    const { extremalFrequencies } = design;
    expect(extremalFrequencies).toHaveLength(cosines + 1);
    for (const f of extremalFrequencies) {
      const inPassband = f <= 0.1;
      const error = inPassband
        ? (response(taps, f) - 1) / passbandRipple
        : response(taps, f) / stopbandRipple;
      expect(Math.abs(error)).toBeGreaterThan(0.98 * design.deviation);
    }
  });
});

describe('nyquistLowpass', () => {
  for (const { band, halfLength, stopbandEdge } of [
    // 24 → 48 kHz: passband to 10 kHz, stopband from 14 kHz, at 48 kHz.
    { band: 2, halfLength: 29, stopbandEdge: 14 / 48 },
    // 24 → 8 kHz: passband to 3.4 kHz, stopband from 4.6 kHz, at 24 kHz.
    { band: 3, halfLength: 50, stopbandEdge: 4.6 / 24 },
    { band: 4, halfLength: 43, stopbandEdge: 0.15 },
  ]) {
    describe(`band ${band}, ${2 * halfLength + 1} taps`, () => {
      const filter = nyquistLowpass(band, halfLength, stopbandEdge)!;
      const { taps, stopbandRipple } = filter;
      const cutoff = 1 / (2 * band);
      const passbandEdge = 2 * cutoff - stopbandEdge;

      it('is exactly 1/N at the centre and exactly zero at every N-th tap from it', () => {
        expect(taps).toHaveLength(2 * halfLength + 1);
        expect(taps[halfLength]).toBe(1 / band);
        for (let d = band; d <= halfLength; d += band) {
          expect(taps[halfLength + d], `tap +${d}`).toBe(0);
          expect(taps[halfLength - d], `tap −${d}`).toBe(0);
        }
        expectSymmetric(taps);
      });

      it('has an equiripple stopband within the ripple it reports', () => {
        const stopband = span(stopbandEdge, 0.5, 20_000).map((f) => response(taps, f));
        const heights = peaks(stopband);
        const worst = Math.max(...heights);
        expect(worst).toBeLessThanOrEqual(stopbandRipple * 1.001);
        for (const h of heights) expect(h).toBeGreaterThan(0.98 * stopbandRipple);
      });

      it('keeps the passband within N − 1 stopband ripples of 1', () => {
        const worst = Math.max(...span(0, passbandEdge, 4000).map((f) => Math.abs(response(taps, f) - 1)));
        expect(worst).toBeLessThanOrEqual((band - 1) * stopbandRipple * 1.001);
      });

      it('is an N-th band filter: its N shifted copies add up to 1', () => {
        for (const f of span(0, 0.5, 97)) {
          let sum = 0;
          for (let k = 0; k < band; k++) sum += response(taps, f + k / band);
          expect(sum).toBeCloseTo(1, 12);
        }
      });
    });
  }

  it('half-band: the response is antisymmetric about a quarter of the rate, exactly ½ there', () => {
    const { taps } = nyquistLowpass(2, 29, 14 / 48)!;
    expect(response(taps, 0.25)).toBeCloseTo(0.5, 14);
    for (const f of span(0, 0.25, 50)) expect(response(taps, f) + response(taps, 0.5 - f)).toBeCloseTo(1, 14);
  });

  it('converges to the same filter from another design’s extremal frequencies', () => {
    const cold = nyquistLowpass(3, 50, 4.6 / 24)!;
    const warm = nyquistLowpass(3, 50, 4.6 / 24, nyquistLowpass(3, 47, 4.6 / 24)!.extremalFrequencies)!;
    expect(warm.stopbandRipple / cold.stopbandRipple).toBeGreaterThan(0.99);
    expect(warm.stopbandRipple / cold.stopbandRipple).toBeLessThan(1.01);
  });

  it('rejects a band below 2 and a stopband edge outside (cutoff, 0.5)', () => {
    expect(() => nyquistLowpass(1, 10, 0.3)).toThrow(RangeError);
    expect(() => nyquistLowpass(3, 10, 0.1)).toThrow(RangeError);
    expect(() => nyquistLowpass(3, 10, 0.5)).toThrow(RangeError);
  });
});

describe('shortestNyquistLowpass', () => {
  const ripple84Db = 10 ** (-84 / 20);

  for (const { name, band, stopbandEdge } of [
    { name: '24 → 8 kHz', band: 3, stopbandEdge: 4.6 / 24 },
    { name: '24 → 16 kHz', band: 3, stopbandEdge: 9 / 48 },
    { name: '24 → 48 kHz', band: 2, stopbandEdge: 14 / 48 },
  ]) {
    it(`${name}: meets the ripple, and one tap shorter would not`, () => {
      const filter = shortestNyquistLowpass(band, stopbandEdge, ripple84Db, 200)!;
      expect(filter.stopbandRipple).toBeLessThanOrEqual(ripple84Db);
      // Half lengths at a multiple of N end on a zero tap: the same filter as one shorter.
      let shorter = filter.halfLength - 1;
      if (shorter % band === 0) shorter--;
      expect(nyquistLowpass(band, shorter, stopbandEdge)!.stopbandRipple).toBeGreaterThan(ripple84Db);
    });
  }

  it('is shorter than a Kaiser-windowed sinc for the same attenuation', () => {
    // 24 → 8 kHz: Kaiser's formula for 84 dB over a 1.2 kHz transition at 24 kHz gives 106 taps.
    const transition = (2 * Math.PI * 1200) / 24_000;
    const kaiserTaps = Math.ceil((84 - 7.95) / (2.285 * transition)) + 1;
    const filter = shortestNyquistLowpass(3, 4.6 / 24, ripple84Db, 200)!;
    expect(2 * filter.halfLength + 1).toBeLessThanOrEqual(0.95 * kaiserTaps);
  });

  it('gives up beyond the longest allowed', () => {
    expect(shortestNyquistLowpass(3, 4.6 / 24, ripple84Db, 30)).toBeUndefined();
  });
});
