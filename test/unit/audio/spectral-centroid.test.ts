import { describe, expect, it } from 'vitest';
import { concatSamples } from '../../../src/audio/pcm.js';
import { spectralCentroidHz } from '../../../testkit/spectrum.js';

/** Sum of sines `[frequency, amplitude]`, `seconds` long. */
function tones(
  sampleRate: number,
  seconds: number,
  parts: ReadonlyArray<readonly [number, number]>,
): Float32Array {
  const out = new Float32Array(Math.round(sampleRate * seconds));
  for (let i = 0; i < out.length; i++) {
    let v = 0;
    for (const [hz, amplitude] of parts) v += amplitude * Math.sin((2 * Math.PI * hz * i) / sampleRate);
    out[i] = v;
  }
  return out;
}

const concat = (...parts: Float32Array[]): Float32Array => concatSamples(parts, Float32Array);

describe('spectralCentroidHz', () => {
  it.each([
    [1000, 24_000],
    [440, 48_000],
    [3000, 22_050],
  ])('puts a %i Hz tone sampled at %i Hz within a percent of it', (hz, rate) => {
    const measured = spectralCentroidHz(tones(rate, 1, [[hz, 0.5]]), rate);
    expect(Math.abs(measured - hz) / hz).toBeLessThan(0.01);
  });

  it('weights frequencies by magnitude: equal tones at 500 and 2000 Hz → 1250 Hz; a louder top → higher', () => {
    const even = spectralCentroidHz(
      tones(24_000, 1, [
        [500, 0.3],
        [2000, 0.3],
      ]),
      24_000,
    );
    expect(Math.abs(even - 1250) / 1250).toBeLessThan(0.01);
    const bright = spectralCentroidHz(
      tones(24_000, 1, [
        [500, 0.1],
        [2000, 0.3],
      ]),
      24_000,
    );
    expect(Math.abs(bright - 1625) / 1625).toBeLessThan(0.01);
  });

  it('measures the active frames only: silence and a hiss 35 dB down around the speech do not move it', () => {
    const rate = 24_000;
    const speech = tones(rate, 1, [[1500, 0.5]]);
    // Faded in and out over 20 ms, as speech starts and stops (an abrupt onset is a broadband click).
    const fade = 0.02 * rate;
    for (let i = 0; i < fade; i++) {
      speech[i] = speech[i]! * (i / fade);
      speech[speech.length - 1 - i] = speech[speech.length - 1 - i]! * (i / fade);
    }
    const hiss = tones(rate, 2, [[8000, 0.5 * 10 ** (-35 / 20)]]);
    const padded = concat(new Float32Array(rate), hiss, speech, hiss, new Float32Array(rate));
    // Counted in, the hiss would pull it to about 1900 Hz.
    expect(Math.abs(spectralCentroidHz(padded, rate) - 1500) / 1500).toBeLessThan(0.01);
  });

  it('leaves out what lies above maxHz, so that recordings at different rates compare', () => {
    const rate = 48_000;
    const wide = tones(rate, 1, [
      [1000, 0.3],
      [15_000, 0.3],
    ]);
    expect(spectralCentroidHz(wide, rate)).toBeGreaterThan(7000);
    expect(Math.abs(spectralCentroidHz(wide, rate, { maxHz: 12_000 }) - 1000) / 1000).toBeLessThan(0.01);
  });

  it('is 0 for silence and for a recording shorter than one frame', () => {
    expect(spectralCentroidHz(new Float32Array(24_000), 24_000)).toBe(0);
    expect(spectralCentroidHz(tones(24_000, 0.01, [[1000, 0.5]]), 24_000)).toBe(0);
  });
});
