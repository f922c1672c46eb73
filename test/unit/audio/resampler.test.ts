import { describe, expect, it } from 'vitest';
import { concatInt16 as concat } from '../../../src/audio/pcm.js';
import { Resampler, designResampler } from '../../../src/audio/resampler.js';
import { seeded } from '../../../testkit/random.js';

/** The rate pairs the project needs, with the passband each must keep flat. */
const PATHS = [
  { inputRate: 24_000, outputRate: 8000, passbandHz: 3400 },
  { inputRate: 24_000, outputRate: 16_000, passbandHz: 7000 },
  { inputRate: 24_000, outputRate: 48_000, passbandHz: 10_000 },
  { inputRate: 22_050, outputRate: 24_000, passbandHz: 9500 },
  { inputRate: 24_000, outputRate: 44_100, passbandHz: 10_000 },
] as const;

const AMPLITUDE = 20_000;
const PASSBAND_TOLERANCE_DB = 0.1;
const REJECTION_DB = 80;
/** Seconds of tone per measurement, and the edges left out of the analysis (onset and flush). */
const TONE_SECONDS = 0.25;
const EDGE_SECONDS = 0.02;

function tone(frequencyHz: number, sampleRate: number, seconds: number, amplitude = AMPLITUDE): Int16Array {
  const out = new Int16Array(Math.round(seconds * sampleRate));
  for (let n = 0; n < out.length; n++)
    out[n] = Math.round(amplitude * Math.sin((2 * Math.PI * frequencyHz * n) / sampleRate));
  return out;
}

function noise(length: number, seed: number, amplitude: number): Int16Array {
  const random = seeded(seed);
  const out = new Int16Array(length);
  for (let n = 0; n < length; n++) out[n] = Math.round((random() * 2 - 1) * amplitude);
  return out;
}

function resampleAll(r: Resampler, input: Int16Array): Int16Array {
  return concat([r.push(input), r.flush()]);
}

/** Index of the first difference, or -1 when equal. */
function firstDifference(a: Int16Array, b: Int16Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i;
  return a.length === b.length ? -1 : n;
}

/**
 * Amplitude of the component at `frequencyHz`, by a DFT at that exact frequency under a 4-term
 * Blackman-Harris window (sidelobes below -92 dB), over the samples away from both ends.
 */
function amplitudeAt(samples: Int16Array, sampleRate: number, frequencyHz: number): number {
  const edge = Math.round(EDGE_SECONDS * sampleRate);
  const n = samples.length - 2 * edge;
  const window = blackmanHarris(n);
  const step = (2 * Math.PI * frequencyHz) / sampleRate;
  const [dr, di] = [Math.cos(step), -Math.sin(step)];
  let [cr, ci] = [1, 0];
  let re = 0;
  let im = 0;
  for (let i = 0; i < n; i++) {
    const s = samples[edge + i]! * window[i]!;
    re += s * cr;
    im += s * ci;
    const nr = cr * dr - ci * di;
    ci = cr * di + ci * dr;
    cr = nr;
  }
  return (2 * Math.hypot(re, im)) / window.reduce((a, w) => a + w, 0);
}

const windows = new Map<number, Float64Array>();
function blackmanHarris(n: number): Float64Array {
  let w = windows.get(n);
  if (!w) {
    w = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      const x = (2 * Math.PI * i) / (n - 1);
      w[i] = 0.35875 - 0.48829 * Math.cos(x) + 0.14128 * Math.cos(2 * x) - 0.01168 * Math.cos(3 * x);
    }
    windows.set(n, w);
  }
  return w;
}

function fold(frequencyHz: number, sampleRate: number): number {
  const f = ((frequencyHz % sampleRate) + sampleRate) % sampleRate;
  return f > sampleRate / 2 ? sampleRate - f : f;
}

/**
 * Everywhere a tone at `toneHz` could leave unwanted energy in the output: its alias when it lies
 * above the output's Nyquist frequency, and the images the upsampling creates at k·inputRate ± tone,
 * all folded into the output band. Frequencies too close to the tone itself (or to DC and Nyquist,
 * where a real DFT is ambiguous) are left out.
 */
function spuriousFrequencies(toneHz: number, inputRate: number, outputRate: number, up: number): number[] {
  const found = new Set<number>();
  const candidates = toneHz > outputRate / 2 ? [toneHz] : [];
  for (let k = 1; k <= up; k++) candidates.push(k * inputRate - toneHz, k * inputRate + toneHz);
  for (const c of candidates) {
    const g = fold(c, outputRate);
    const clear = Math.abs(g - toneHz) > 150 && g > 30 && g < outputRate / 2 - 30;
    if (clear) found.add(Math.round(g * 100) / 100);
  }
  return [...found];
}

const dB = (ratio: number): number => 20 * Math.log10(ratio);

describe('Resampler: frequency response on every project path', () => {
  for (const path of PATHS) {
    const { inputRate, outputRate, passbandHz } = path;
    const name = `${inputRate} → ${outputRate}`;

    it(`${name}: flat within ${PASSBAND_TOLERANCE_DB} dB up to ${passbandHz} Hz`, () => {
      let worst = 0;
      const r = new Resampler({ inputRate, outputRate });
      const tones = Array.from({ length: 25 }, (_, i) => 50.3 + ((passbandHz - 50.3) * i) / 24);
      for (const toneHz of tones) {
        const out = resampleAll(r, tone(toneHz, inputRate, TONE_SECONDS));
        const gain = dB(amplitudeAt(out, outputRate, toneHz) / AMPLITUDE);
        if (Math.abs(gain) > Math.abs(worst)) worst = gain;
      }
      console.log(`${name}: passband 0–${passbandHz} Hz, worst gain ${worst.toFixed(4)} dB`);
      expect(Math.abs(worst)).toBeLessThan(PASSBAND_TOLERANCE_DB);
    });

    it(`${name}: aliases and images landing in the passband ≥ ${REJECTION_DB} dB down`, () => {
      const r = new Resampler({ inputRate, outputRate });
      // Passband tones (their images), plus, when downsampling, tones above the output's Nyquist
      // frequency whose alias lands in the passband.
      const tones = [300.7, 1000.3, passbandHz / 2 + 13.1, passbandHz - 7.3];
      if (outputRate < inputRate) {
        const stopbandHz = outputRate - passbandHz;
        for (let f = stopbandHz + 3.1; f < inputRate / 2; f += (inputRate / 2 - stopbandHz) / 9)
          tones.push(f);
      }
      let worstInBand = Infinity;
      let worstAnywhere = Infinity;
      for (const toneHz of tones) {
        const out = resampleAll(r, tone(toneHz, inputRate, TONE_SECONDS));
        for (const g of spuriousFrequencies(toneHz, inputRate, outputRate, r.design.up)) {
          const rejection = -dB(amplitudeAt(out, outputRate, g) / AMPLITUDE);
          if (g <= passbandHz) worstInBand = Math.min(worstInBand, rejection);
          // Images of passband tones come from the filter's stopband wherever they land.
          if (toneHz <= passbandHz) worstAnywhere = Math.min(worstAnywhere, rejection);
        }
      }
      const show = (db: number): string => (Number.isFinite(db) ? `${db.toFixed(1)} dB down` : 'none');
      console.log(
        `${name}: ${r.design.tapsPerPhase} taps × ${r.design.up} phases; worst alias/image in the passband ` +
          `${show(worstInBand)}; worst image of a passband tone anywhere ${show(worstAnywhere)}`,
      );
      if (Number.isFinite(worstInBand)) expect(worstInBand).toBeGreaterThanOrEqual(REJECTION_DB);
      expect(worstAnywhere).toBeGreaterThanOrEqual(REJECTION_DB);
    });
  }

  it('tones beyond the passband are not amplified (no ringing gain in the transition band)', () => {
    for (const { inputRate, outputRate } of PATHS) {
      const nyquist = Math.min(inputRate, outputRate) / 2;
      const out = resampleAll(
        new Resampler({ inputRate, outputRate }),
        tone(nyquist - 200, inputRate, TONE_SECONDS),
      );
      expect(amplitudeAt(out, outputRate, nyquist - 200)).toBeLessThan(AMPLITUDE * 1.01);
    }
  });
});

describe('Resampler: timing and length', () => {
  it('compensates the group delay: output sample k is the input at time k / outputRate', () => {
    for (const { inputRate, outputRate } of PATHS) {
      const f = 440.7;
      const out = resampleAll(new Resampler({ inputRate, outputRate }), tone(f, inputRate, 0.1));
      const ideal = tone(f, outputRate, 0.1);
      const edge = Math.round(EDGE_SECONDS * outputRate);
      let maxError = 0;
      for (let k = edge; k < out.length - edge; k++)
        maxError = Math.max(maxError, Math.abs(out[k]! - ideal[k]!));
      // A delay of one output sample would show as an error of ~2π·440/8000·20000 ≈ 7000.
      expect(maxError).toBeLessThanOrEqual(4);
    }
  });

  it('yields round(inputSamples × outputRate / inputRate) samples in total', () => {
    for (const { inputRate, outputRate } of PATHS) {
      for (const length of [0, 1, 2, 3, 7, 79, 146, 147, 160, 1000, 22_063]) {
        const r = new Resampler({ inputRate, outputRate });
        const out = resampleAll(r, noise(length, length, 1000));
        expect(out.length, `${inputRate} → ${outputRate}, ${length} samples`).toBe(
          Math.round((length * outputRate) / inputRate),
        );
      }
    }
  });

  it('holds back only the filter look-ahead (a few ms) before flush', () => {
    for (const { inputRate, outputRate } of PATHS) {
      const r = new Resampler({ inputRate, outputRate });
      const input = noise(inputRate, 3, 8000);
      const early = r.push(input);
      const expected = (input.length * outputRate) / inputRate;
      expect(expected - early.length).toBeLessThanOrEqual(r.delaySamples + 1);
      expect(r.delaySamples / outputRate).toBeLessThan(0.005);
      expect(r.flush().length).toBe(Math.round(expected) - early.length);
    }
  });
});

describe('Resampler: streaming', () => {
  /** Random chunk sizes: empty and one-sample chunks often, and some larger than the internal block. */
  function chunkSizes(seed: number, total: number): number[] {
    const random = seeded(seed);
    const sizes: number[] = [];
    for (let left = total; left > 0;) {
      const pick = random();
      const size =
        pick < 0.15
          ? 0
          : pick < 0.3
            ? 1
            : pick < 0.95
              ? Math.floor(random() * 700)
              : 4000 + Math.floor(random() * 6000);
      sizes.push(Math.min(size, left));
      left -= Math.min(size, left);
    }
    return sizes;
  }

  it('is bit-identical however the input is chunked', () => {
    for (const { inputRate, outputRate } of PATHS) {
      for (const outputChannels of [1, 2] as const) {
        // Full-scale noise exercises clipping too.
        const input = concat([
          noise(inputRate, 11, 32_767),
          tone(1234.5, inputRate, 0.5),
          noise(3000, 12, 3000),
        ]);
        const whole = resampleAll(new Resampler({ inputRate, outputRate, outputChannels }), input);
        for (const seed of [1, 2, 3]) {
          const r = new Resampler({ inputRate, outputRate, outputChannels });
          const parts: Int16Array[] = [];
          let at = 0;
          for (const size of chunkSizes(seed, input.length)) {
            parts.push(r.push(input.subarray(at, at + size)));
            at += size;
          }
          parts.push(r.flush());
          expect(
            firstDifference(concat(parts), whole),
            `${inputRate} → ${outputRate} ×${outputChannels}`,
          ).toBe(-1);
        }
      }
    }
  });

  it('returns a new array each time, owning its whole buffer (safe to transfer)', () => {
    const r = new Resampler({ inputRate: 22_050, outputRate: 24_000 });
    const a = r.push(noise(2205, 1, 1000));
    const b = r.push(noise(2205, 2, 1000));
    const c = r.flush();
    for (const out of [a, b, c]) {
      expect(out.byteOffset).toBe(0);
      expect(out.buffer.byteLength).toBe(out.byteLength);
    }
    expect(a.buffer).not.toBe(b.buffer);
  });

  it('reset() and flush() both return to a fresh state', () => {
    for (const { inputRate, outputRate } of PATHS) {
      const input = noise(5000, 21, 10_000);
      const fresh = resampleAll(new Resampler({ inputRate, outputRate }), input);
      const r = new Resampler({ inputRate, outputRate });
      r.push(noise(3333, 22, 10_000));
      r.reset();
      expect(firstDifference(resampleAll(r, input), fresh)).toBe(-1);
      // flush() inside resampleAll left it fresh for the next utterance.
      expect(firstDifference(resampleAll(r, input), fresh)).toBe(-1);
    }
  });

  it('duplicates mono into interleaved stereo', () => {
    const input = noise(12_000, 5, 10_000);
    const mono = resampleAll(new Resampler({ inputRate: 24_000, outputRate: 48_000 }), input);
    const stereo = resampleAll(
      new Resampler({ inputRate: 24_000, outputRate: 48_000, outputChannels: 2 }),
      input,
    );
    expect(stereo.length).toBe(2 * mono.length);
    for (let k = 0; k < mono.length; k++) {
      if (stereo[2 * k] !== mono[k] || stereo[2 * k + 1] !== mono[k]) throw new Error(`frame ${k} differs`);
    }
  });

  it('clips overshoot to the int16 range instead of wrapping around', () => {
    for (const { inputRate, outputRate } of PATHS) {
      // A full-scale 500 Hz square wave: the filter's Gibbs overshoot exceeds ±32767.
      const period = inputRate / 500;
      const input = new Int16Array(inputRate / 10);
      for (let n = 0; n < input.length; n++) input[n] = n % period < period / 2 ? 32_767 : -32_768;
      const out = resampleAll(new Resampler({ inputRate, outputRate }), input);
      const outPeriod = outputRate / 500;
      // The last few ms see the silence that flush() pads: another edge.
      for (let k = 0; k < out.length - outputRate / 200; k++) {
        const t = k % outPeriod;
        const margin = outputRate / 4000; // 0.25 ms away from each edge
        if (t > margin && t < outPeriod / 2 - margin) expect(out[k]).toBeGreaterThan(16_000);
        if (t > outPeriod / 2 + margin && t < outPeriod - margin) expect(out[k]).toBeLessThan(-16_000);
      }
    }
  });

  it('rejects rates that are not positive integers', () => {
    expect(() => new Resampler({ inputRate: 0, outputRate: 8000 })).toThrow(RangeError);
    expect(() => new Resampler({ inputRate: 24_000, outputRate: 44_100.5 })).toThrow(RangeError);
  });
});

describe('Resampler: filter design', () => {
  it('designs the hot paths equiripple, shorter than the Kaiser-windowed sinc they replace', () => {
    // 24 → 8 kHz: Kaiser's formula for 85 dB over 3.4–4.6 kHz at 24 kHz gives 112 taps (56 multiplies a
    // sample, mirrored taps paired). A third-band equiripple for 84 dB needs about 100 (Kaiser's estimate
    // for equal ripples), of which every third is zero: 34 pairs and the centre.
    const toPhone = designResampler(24_000, 8000);
    expect(toPhone.method).toBe('equiripple');
    expect(toPhone.tapsPerPhase).toBeLessThanOrEqual(102);
    expect(toPhone.multipliesPerOutput).toBeLessThanOrEqual(36);
    // 24 → 48 kHz: Kaiser needs 36 taps a phase (9 multiplies a sample, phase 0 being a copy). A
    // half-band equiripple over 10–14 kHz at 48 kHz needs about 59 taps, 30 of them in phase 1.
    const toDiscord = designResampler(24_000, 48_000);
    expect(toDiscord.method).toBe('equiripple');
    expect(toDiscord.tapsPerPhase).toBeLessThanOrEqual(30);
    expect(toDiscord.multipliesPerOutput).toBeLessThanOrEqual(7.5);
    for (const design of [toPhone, toDiscord, designResampler(24_000, 16_000)])
      expect(design.attenuationDb).toBeGreaterThanOrEqual(84);
  });

  it('keeps the Kaiser window where L is large', () => {
    expect(designResampler(22_050, 24_000)).toMatchObject({ method: 'kaiser', up: 160 });
    expect(designResampler(24_000, 44_100)).toMatchObject({ method: 'kaiser', up: 147 });
  });

  it('designs each rate pair once: every Resampler of the pair shares the same, frozen design', () => {
    const a = new Resampler({ inputRate: 24_000, outputRate: 8000 });
    const b = new Resampler({ inputRate: 24_000, outputRate: 8000, outputChannels: 2 });
    expect(b.design).toBe(a.design);
    expect(designResampler(24_000, 8000)).toBe(a.design);
    expect(Object.isFrozen(a.design)).toBe(true);
  });

  it('passes the input through unchanged when the rates are equal', () => {
    const input = noise(5000, 31, 20_000);
    expect(
      firstDifference(resampleAll(new Resampler({ inputRate: 16_000, outputRate: 16_000 }), input), input),
    ).toBe(-1);
  });
});

describe('Resampler: speed', () => {
  /** CPU seconds per hour of input audio, measured on `seconds` of audio in 20 ms chunks after a warm-up. */
  function cpuSecondsPerHour(
    inputRate: number,
    outputRate: number,
    outputChannels: 1 | 2,
    seconds: number,
  ): number {
    const r = new Resampler({ inputRate, outputRate, outputChannels });
    const chunk = noise(inputRate / 50, 9, 10_000);
    for (let i = 0; i < 500; i++) r.push(chunk);
    const chunks = seconds * 50;
    const start = process.cpuUsage();
    for (let i = 0; i < chunks; i++) r.push(chunk);
    const used = process.cpuUsage(start);
    return ((used.user + used.system) / 1e6) * (3600 / seconds);
  }

  it('runs far faster than real time on the hot paths', () => {
    // Five minutes of audio each; the bound is only a generous sanity check, the figures are printed.
    const toPhone = cpuSecondsPerHour(24_000, 8000, 1, 300);
    const toDiscord = cpuSecondsPerHour(24_000, 48_000, 2, 300);
    console.log(`24k → 8k mono: ${toPhone.toFixed(2)} CPU-s per hour of audio`);
    console.log(`24k → 48k stereo: ${toDiscord.toFixed(2)} CPU-s per hour of audio`);
    expect(toPhone).toBeLessThan(60);
    expect(toDiscord).toBeLessThan(60);
  });
});
