/** In-band DTMF: the right tone pair for each key, at the right times, detectable by a Goertzel filter. */
import { describe, expect, it } from 'vitest';
import { DTMF_GAP_MS, DTMF_PAUSE_MS, DTMF_TONE_MS, dtmfTones } from '../../../src/audio/dtmf.js';

/** Power of `freq` in the block (Goertzel), normalised by length. */
function goertzel(x: Int16Array, freq: number, rate: number): number {
  const k = 2 * Math.cos((2 * Math.PI * freq) / rate);
  let s1 = 0;
  let s2 = 0;
  for (const v of x) {
    const s = v + k * s1 - s2;
    s2 = s1;
    s1 = s;
  }
  return (s1 * s1 + s2 * s2 - k * s1 * s2) / (x.length * x.length);
}

const ROWS = [697, 770, 852, 941];
const COLUMNS = [1209, 1336, 1477, 1633];
const KEYS = ['123A', '456B', '789C', '*0#D'];

/** The key whose row and column tones are strongest in the block. */
function detect(block: Int16Array, rate: number): string {
  const strongest = (freqs: number[]): number =>
    freqs.reduce(
      (best, f, i) => (goertzel(block, f, rate) > goertzel(block, freqs[best]!, rate) ? i : best),
      0,
    );
  return KEYS[strongest(ROWS)]![strongest(COLUMNS)]!;
}

describe('dtmfTones', () => {
  it('plays each of the 16 keys as its own tone pair, with silence between, at 8 and 24 kHz', () => {
    for (const rate of [8000, 24_000]) {
      const keys = '0123456789*#ABCD';
      const audio = dtmfTones(keys, rate);
      const per = (ms: number): number => (ms * rate) / 1000;
      expect(audio.length).toBe(keys.length * per(DTMF_TONE_MS + DTMF_GAP_MS));
      for (const [i, key] of [...keys].entries()) {
        const at = i * per(DTMF_TONE_MS + DTMF_GAP_MS);
        expect(detect(audio.subarray(at + per(10), at + per(90)), rate)).toBe(key);
        const gap = audio.subarray(at + per(DTMF_TONE_MS), at + per(DTMF_TONE_MS + DTMF_GAP_MS));
        expect(gap.every((v) => v === 0)).toBe(true);
      }
      // Never clips.
      expect(Math.max(...audio.map(Math.abs))).toBeLessThan(32767);
    }
  });

  it('pauses for w, and refuses anything else', () => {
    const audio = dtmfTones('1w2', 8000);
    expect(audio.length).toBe((2 * (DTMF_TONE_MS + DTMF_GAP_MS) + DTMF_PAUSE_MS) * 8);
    expect(() => dtmfTones('12x', 8000)).toThrow(RangeError);
    expect(() => dtmfTones('', 8000)).toThrow(RangeError);
  });
});
