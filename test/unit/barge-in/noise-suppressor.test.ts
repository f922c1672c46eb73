import { describe, expect, it } from 'vitest';
import { levelDbfs } from '../../../src/audio/level.js';
import { NoiseSuppressor } from '../../../src/barge-in/noise-suppressor.js';
import { seeded } from '../../../testkit/random.js';

const RATE = 8000;
const WINDOW = 256;

/** White noise at about `dbfs` (uniform samples), and a 440 Hz tone at `dbfs`, `seconds` long. */
function noise(seconds: number, dbfs: number, random: () => number): Float64Array {
  const amplitude = 32768 * 10 ** (dbfs / 20) * Math.sqrt(3);
  return Float64Array.from({ length: seconds * RATE }, () => (random() * 2 - 1) * amplitude);
}
function tone(seconds: number, dbfs: number, hz = 440): Float64Array {
  const amplitude = 32768 * 10 ** (dbfs / 20) * Math.SQRT2;
  return Float64Array.from(
    { length: seconds * RATE },
    (_, i) => amplitude * Math.sin((2 * Math.PI * hz * i) / RATE),
  );
}
function int16(...parts: Float64Array[]): Int16Array {
  const out = new Int16Array(parts[0]!.length);
  for (const p of parts)
    for (let i = 0; i < out.length; i++)
      out[i] = Math.max(-32768, Math.min(32767, Math.round(out[i]! + p[i]!)));
  return out;
}
/** Every window of `x` cleaned in order: what Silero hears, end to end. */
function cleanAll(suppressor: NoiseSuppressor, x: Int16Array): Int16Array {
  const out = new Int16Array(x.length);
  for (let o = 0; o + WINDOW <= x.length; o += WINDOW)
    out.set(suppressor.clean(x.subarray(o, o + WINDOW), true), o);
  return out;
}

/** `x` on for 200 ms, off for 150, over and over: a steady tone is the line's (hum), syllables are not. */
function syllables(x: Float64Array): Float64Array {
  return x.map((v, i) => (i % (0.35 * RATE) < 0.2 * RATE ? v : 0));
}
/** How much of `reference`, `lag` samples earlier, is in `out` over [from, to): the gain on it. */
function gainOn(out: Int16Array, reference: Int16Array, lag: number, from: number, to: number): number {
  let cross = 0;
  let power = 0;
  for (let i = from; i < to; i++) {
    cross += out[i]! * reference[i - lag]!;
    power += reference[i - lag]! ** 2;
  }
  return cross / power;
}

describe('NoiseSuppressor', () => {
  it('takes steady line noise down by 7 dB and more and leaves syllables 10 dB over it nearly whole, 4 ms late', () => {
    const random = seeded(1);
    const suppressor = new NoiseSuppressor(RATE, WINDOW);
    expect(suppressor.delaySamples).toBe(32);
    // 2 s of noise alone, then 2 s of "syllables" in the same noise.
    const lineNoise = noise(4, -40, random);
    const speech = syllables(tone(4, -30)).map((v, i) => (i < 2 * RATE ? 0 : v));
    const out = cleanAll(suppressor, int16(lineNoise, speech));
    const drop =
      levelDbfs(int16(lineNoise).subarray(RATE, 2 * RATE)) - levelDbfs(out.subarray(RATE, 2 * RATE));
    const alone = int16(speech);
    const kept = gainOn(out, alone, 32, 3 * RATE, 4 * RATE);
    const unaligned = gainOn(out, alone, 0, 3 * RATE, 4 * RATE);
    // Measured: 8.4 dB down (gains reach their −10.5 dB floor only in part), the syllables kept at 0.99.
    expect(drop).toBeGreaterThan(7);
    expect(kept).toBeGreaterThan(0.85);
    expect(kept).toBeLessThan(1.1);
    // In step with the syllables 4 ms earlier, not with them as they are.
    expect(unaligned).toBeLessThan(0.3);
  });

  it('passes loud audio over a quiet line through unchanged but for the delay', () => {
    const random = seeded(2);
    const x = int16(noise(2, -60, random), syllables(tone(2, -20, 700)));
    const out = cleanAll(new NoiseSuppressor(RATE, WINDOW), x);
    let error = 0;
    let power = 0;
    for (let i = RATE; i < 2 * RATE; i++) {
      error += (out[i]! - x[i - 32]!) ** 2;
      power += x[i - 32]! ** 2;
    }
    // The syllables 40 dB over the noise: the difference is the noise taken out and the gains' swing at
    // each syllable's edges (measured −29.7 dB).
    expect(10 * Math.log10(error / power)).toBeLessThan(-25);
  });

  it('follows a noisier line within 1.5 s, and a quieter one at once', () => {
    const random = seeded(3);
    const suppressor = new NoiseSuppressor(RATE, WINDOW);
    const quiet = noise(2, -50, random);
    const loud = noise(2, -30, random);
    const x = int16(
      Float64Array.from({ length: 6 * RATE }, (_, i) =>
        i < 2 * RATE || i >= 4 * RATE ? quiet[i % (2 * RATE)]! : loud[i - 2 * RATE]!,
      ),
    );
    const out = cleanAll(suppressor, x);
    const drop = (from: number, to: number): number =>
      levelDbfs(x.subarray(from, to)) - levelDbfs(out.subarray(from, to));
    // The louder noise's first 100 ms pass as if they might be speech (measured 0.2 dB down); 1.5 s
    // later it is the line's noise (8.8 dB down). Back on the quiet line, it is suppressed at once.
    expect(drop(2 * RATE + 64, 2 * RATE + 800)).toBeLessThan(3);
    expect(drop(3.5 * RATE, 4 * RATE)).toBeGreaterThan(7);
    expect(drop(4 * RATE + 256, 4 * RATE + 1024)).toBeGreaterThan(7);
  });

  it('windows listened to, then cleaned after all (going back to them), come out as cleaned in order', () => {
    const random = seeded(4);
    const x = int16(
      noise(3, -40, random),
      tone(3, -25).map((v, i) => (i < 2 * RATE ? 0 : v)),
    );
    const inOrder = cleanAll(new NoiseSuppressor(RATE, WINDOW), x);
    // The same line, its windows listened to until the tone's, the two before that cleaned again.
    const suppressor = new NoiseSuppressor(RATE, WINDOW);
    const at = (2 * RATE) / WINDOW;
    const win = (k: number): Int16Array => x.subarray(k * WINDOW, (k + 1) * WINDOW);
    for (let k = 0; k < at; k++) suppressor.listen(win(k));
    suppressor.goBack(win(at - 3));
    const again = [suppressor.clean(win(at - 2), false), suppressor.clean(win(at - 1), false)];
    const next = suppressor.clean(win(at), true);
    // The noise estimate is the same either way (followed on the same frames); the spectra differ only
    // in the smoothing of the first frames after going back.
    const close = (a: Int16Array, b: Int16Array): number => {
      let e = 0;
      let p = 0;
      for (let i = 0; i < a.length; i++) {
        e += (a[i]! - b[i]!) ** 2;
        p += b[i]! ** 2;
      }
      return 10 * Math.log10(e / p);
    };
    expect(close(again[1]!, inOrder.subarray((at - 1) * WINDOW, at * WINDOW))).toBeLessThan(-20);
    expect(close(next, inOrder.subarray(at * WINDOW, (at + 1) * WINDOW))).toBeLessThan(-20);
    expect(again[0]).toHaveLength(WINDOW);
  });

  it('refuses windows of another length, and forgets the line on reset', () => {
    const suppressor = new NoiseSuppressor(RATE, WINDOW);
    expect(() => suppressor.clean(new Int16Array(200), true)).toThrow(RangeError);
    expect(() => suppressor.listen(new Int16Array(512))).toThrow(RangeError);
    expect(() => new NoiseSuppressor(RATE, 100)).toThrow(RangeError);
    const random = seeded(5);
    const x = int16(noise(2, -30, random));
    for (let o = 0; o + WINDOW <= x.length; o += WINDOW) suppressor.listen(x.subarray(o, o + WINDOW));
    suppressor.reset();
    // As a new one: the line's noise and the audio under way forgotten.
    const fresh = new NoiseSuppressor(RATE, WINDOW);
    for (let o = 0; o + WINDOW <= RATE; o += WINDOW) {
      const w = x.subarray(o, o + WINDOW);
      expect(suppressor.clean(w, true)).toEqual(fresh.clean(w, true));
    }
  });

  it('works at 16 kHz with 8 ms frames', () => {
    const suppressor = new NoiseSuppressor(16_000, 512);
    expect(suppressor.delaySamples).toBe(64);
    const random = seeded(6);
    const x = Int16Array.from({ length: 2 * 16_000 }, () => Math.round((random() * 2 - 1) * 300));
    const out = new Int16Array(x.length);
    for (let o = 0; o + 512 <= x.length; o += 512) out.set(suppressor.clean(x.subarray(o, o + 512), true), o);
    expect(levelDbfs(x.subarray(16_000)) - levelDbfs(out.subarray(16_000))).toBeGreaterThan(7);
  });
});
