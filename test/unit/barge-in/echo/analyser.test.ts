/** The band analysers alone: tones land in their bands, the pair keeps its two signals apart. */
import { describe, expect, it } from 'vitest';
import { hopSamples, PairAnalyser, SignalAnalyser } from '../../../../src/barge-in/echo/analyser.js';
import { BANDS } from '../../../../src/barge-in/echo/cells.js';

const RATE = 8000;
const HOP = hopSamples(RATE);

function tone(hz: number, amplitude: number, samples: number): Int16Array {
  return Int16Array.from({ length: samples }, (_, i) =>
    Math.round(amplitude * Math.sin((2 * Math.PI * hz * i) / RATE)),
  );
}

const loudest = (bands: Float64Array): number => bands.indexOf(Math.max(...bands));
const sum = (bands: Float64Array): number => bands.reduce((a, b) => a + b, 0);

describe('band analysers', () => {
  it('cut 8 ms hops at both rates', () => {
    expect(hopSamples(8000)).toBe(64);
    expect(hopSamples(16_000)).toBe(128);
  });

  it('put each signal of the pair in its own bands, at its power', () => {
    const analyser = new PairAnalyser(RATE);
    // 1125 Hz is in band 3 (1000–1250 Hz), 2125 Hz in band 7.
    const inbound = tone(1125, 8000, 4 * HOP);
    const reference = tone(2125, 4000, 4 * HOP);
    const inBands = new Float64Array(BANDS);
    const refBands = new Float64Array(BANDS);
    let refTotal = 0;
    for (let offset = 0; offset < inbound.length; offset += HOP)
      refTotal = analyser.push(inbound, reference, offset, inBands, refBands);
    expect(loudest(inBands)).toBe(3);
    expect(loudest(refBands)).toBe(7);
    expect(refTotal).toBeCloseTo(sum(refBands), 6);
    // Per bin: the bands' sum times the bins a band holds (4) is the tone's power, give or take the
    // window's leakage past the bands.
    expect(10 * Math.log10((sum(inBands) * 4) / (8000 ** 2 / 2))).toBeCloseTo(0, 0);
    expect(10 * Math.log10((sum(refBands) * 4) / (4000 ** 2 / 2))).toBeCloseTo(0, 0);
    // The other signal's tone is far under each (the split by symmetry leaks only round-off).
    expect(inBands[7]! / inBands[3]!).toBeLessThan(1e-4);
    expect(refBands[3]! / refBands[7]!).toBeLessThan(1e-4);
  });

  it('one signal alone: the same bands as the pair gives its inbound side', () => {
    const pair = new PairAnalyser(RATE);
    const single = new SignalAnalyser(RATE);
    const inbound = tone(700, 5000, 6 * HOP);
    const silence = new Int16Array(inbound.length);
    const fromPair = new Float64Array(BANDS);
    const refBands = new Float64Array(BANDS);
    const alone = new Float64Array(BANDS);
    for (let offset = 0; offset < inbound.length; offset += HOP) {
      pair.push(inbound, silence, offset, fromPair, refBands);
      single.push(Float64Array.from(inbound.subarray(offset, offset + HOP)), alone);
      for (let b = 0; b < BANDS; b++) expect(alone[b]).toBeCloseTo(fromPair[b]!, 3);
    }
    expect(loudest(alone)).toBe(1);
  });

  it('forget their frames on reset', () => {
    const single = new SignalAnalyser(RATE);
    const bands = new Float64Array(BANDS);
    single.push(Float64Array.from(tone(1125, 8000, HOP)), bands);
    expect(sum(bands)).toBeGreaterThan(0);
    single.reset();
    single.push(new Float64Array(HOP), bands);
    expect(sum(bands)).toBe(0);
  });
});
