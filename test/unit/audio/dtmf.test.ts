/** In-band DTMF: the right tone pair for each key, at the right times, detectable by a Goertzel filter. */
import { describe, expect, it } from 'vitest';
import {
  DTMF_GAP_MS,
  DTMF_PAUSE_MS,
  DTMF_TONE_MS,
  DtmfToneDetector,
  dtmfTones,
} from '../../../src/audio/dtmf.js';
import { resampleWhole } from '../../../src/audio/resampler.js';
import { espeakSpeech } from '../../../testkit/audio.js';
import { atLevel } from '../../../testkit/echo-line.js';
import { seeded } from '../../../testkit/random.js';
import { UTTERANCES, VOICES } from '../../../testkit/vad-audio.js';

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

describe('DtmfToneDetector', () => {
  /** A key's tone pair as a phone may send it: off frequency, one tone louder than the other. */
  function keyTone(key: string, rate: number, offset: number, twistDb: number, ms: number): Int16Array {
    const row = ROWS[KEYS.findIndex((k) => k.includes(key))]!;
    const column = COLUMNS[KEYS.find((k) => k.includes(key))!.indexOf(key)]!;
    const out = new Int16Array((rate * ms) / 1000);
    const low = 0.25 * 32767;
    const high = low * 10 ** (-twistDb / 20);
    for (let i = 0; i < out.length; i++) {
      const t = i / rate;
      out[i] = Math.round(
        low * Math.sin(2 * Math.PI * row * (1 + offset) * t) +
          high * Math.sin(2 * Math.PI * column * (1 - offset) * t),
      );
    }
    return out;
  }

  /** Adds `b` into `a` from `at` (same rate), clipping. */
  function mix(a: Int16Array, b: Int16Array, at = 0): Int16Array {
    const out = a.slice();
    for (let i = 0; i < b.length && at + i < out.length; i++)
      out[at + i] = Math.max(-32768, Math.min(32767, out[at + i]! + b[i]!));
    return out;
  }

  it('hears every key, 1.5 % off frequency with 6 dB of twist, over speech 10 dB under it, at 8 and 16 kHz', async () => {
    for (const rate of [8000, 16_000] as const) {
      const detector = new DtmfToneDetector(rate);
      const speech = atLevel(
        resampleWhole(await espeakSpeech(UTTERANCES[0]!, 'en-us', 50), 22_050, rate),
        -26,
      );
      for (const key of '0123456789*#ABCD')
        for (const offset of [-0.015, 0, 0.015]) {
          const window = mix(
            speech.subarray(rate / 2, rate / 2 + (rate * 32) / 1000),
            keyTone(key, rate, offset, 6, 32),
          );
          expect(detector.holdsTone(window), `${key} ${offset} at ${rate}`).toBe(true);
        }
    }
  }, 60_000);

  it('hears a tone that covers only the first or the last 16 ms of a window', () => {
    const detector = new DtmfToneDetector(8000);
    const tone = atLevel(dtmfTones('5', 8000), -10).subarray(0, 8 * 16);
    expect(detector.holdsTone(mix(new Int16Array(256), tone, 0))).toBe(true);
    expect(detector.holdsTone(mix(new Int16Array(256), tone, 256 - tone.length))).toBe(true);
  });

  it('hears no key in speech (every voice, every window) nor in noise, hum or silence', async () => {
    for (const rate of [8000, 16_000] as const) {
      const detector = new DtmfToneDetector(rate);
      const window = (rate * 32) / 1000;
      let windows = 0;
      const flagged: string[] = [];
      for (const [i, text] of UTTERANCES.entries()) {
        const [voice, pitch, wpm] = VOICES[i % VOICES.length]!;
        const speech = resampleWhole(await espeakSpeech(text, voice, pitch, wpm), 22_050, rate);
        for (let at = 0; at + window <= speech.length; at += window / 2, windows++)
          if (detector.holdsTone(speech.subarray(at, at + window)))
            flagged.push(`${text} (${voice}) at ${at}`);
      }
      expect(windows).toBeGreaterThan(500);
      expect(flagged).toEqual([]);
      const random = seeded(3);
      const noise = Int16Array.from({ length: window }, () => Math.round((random() * 2 - 1) * 3000));
      const hum = Int16Array.from({ length: window }, (_, i) =>
        Math.round(8000 * Math.sin((2 * Math.PI * 50 * i) / rate)),
      );
      expect(detector.holdsTone(noise)).toBe(false);
      expect(detector.holdsTone(hum)).toBe(false);
      expect(detector.holdsTone(new Int16Array(window))).toBe(false);
    }
  }, 60_000);
});
