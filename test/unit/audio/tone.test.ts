/** Steady single tones (an answering machine's beep): found at their frequency and times, and nothing else. */
import { describe, expect, it } from 'vitest';
import { dtmfTones } from '../../../src/audio/dtmf.js';
import { decodeMulaw, encodeMulaw } from '../../../src/audio/g711.js';
import { resampleWhole } from '../../../src/audio/resampler.js';
import { concatSamples } from '../../../src/audio/pcm.js';
import { TONE_BLOCK_MS, ToneDetector, type Tone } from '../../../src/audio/tone.js';
import { espeakSpeech } from '../../../testkit/audio.js';
import { seeded } from '../../../testkit/random.js';
import { pinkSource, UTTERANCES, VOICES } from '../../../testkit/vad-audio.js';

/** `ms` of a sine at `hz`, `dbfs` RMS, with 5 ms ramps. */
function tone(hz: number, ms: number, rate: number, dbfs = -20): Float64Array {
  const n = Math.round((ms * rate) / 1000);
  const ramp = Math.round((5 * rate) / 1000);
  const a = 32768 * 10 ** (dbfs / 20) * Math.SQRT2;
  return Float64Array.from(
    { length: n },
    (_, i) => a * Math.min(1, i / ramp, (n - 1 - i) / ramp) * Math.sin((2 * Math.PI * hz * i) / rate),
  );
}

const gap = (ms: number, rate: number): Float64Array => new Float64Array(Math.round((ms * rate) / 1000));

const join = (...parts: Float64Array[]): Float64Array => concatSamples(parts, Float64Array);

function pcm(x: Float64Array): Int16Array {
  return Int16Array.from(x, (v) => Math.max(-32768, Math.min(32767, Math.round(v))));
}

/** White noise at `dbfs` RMS added. */
function withNoise(x: Float64Array, dbfs: number, seed: number): Float64Array {
  const random = seeded(seed);
  const a = 32768 * 10 ** (dbfs / 20) * Math.sqrt(3);
  return Float64Array.from(x, (v) => v + (random() * 2 - 1) * a);
}

function tones(samples: Int16Array, rate: number, chunk = samples.length): Tone[] {
  const d = new ToneDetector(rate);
  const out: Tone[] = [];
  for (let at = 0; at < samples.length; at += chunk) out.push(...d.push(samples.subarray(at, at + chunk)));
  out.push(...d.flush());
  return out;
}

describe('ToneDetector', () => {
  it('finds a beep at any frequency of 400–3000 Hz, within 1 % of it, and its start and end within a block', () => {
    for (const hz of [425, 440, 850, 950, 1000, 1400, 2000, 2900]) {
      const found = tones(pcm(join(gap(700, 8000), tone(hz, 500, 8000), gap(500, 8000))), 8000);
      expect(found, `${hz} Hz`).toHaveLength(1);
      const t = found[0]!;
      expect(Math.abs(t.frequencyHz - hz)).toBeLessThan(0.01 * hz);
      expect(Math.abs(t.startMs - 700)).toBeLessThanOrEqual(TONE_BLOCK_MS);
      expect(Math.abs(t.endMs - 1200)).toBeLessThanOrEqual(TONE_BLOCK_MS);
      expect(t.durationMs).toBeCloseTo(t.endMs - t.startMs, 6);
      expect(Math.abs(t.levelDbfs + 20)).toBeLessThan(3);
    }
  });

  it('works at any sample rate (16, 24, 44.1 and 48 kHz), in line noise', () => {
    for (const rate of [16_000, 24_000, 44_100, 48_000]) {
      // In white noise 8 dB under the tone: the zero-padded transforms keep its whole main lobe.
      const found = tones(
        pcm(withNoise(join(gap(300, rate), tone(1000, 400, rate), gap(300, rate)), -28, rate)),
        rate,
      );
      expect(found, `${rate} Hz`).toHaveLength(1);
      expect(Math.abs(found[0]!.frequencyHz - 1000)).toBeLessThan(10);
      expect(Math.abs(found[0]!.durationMs - 400)).toBeLessThanOrEqual(2 * TONE_BLOCK_MS);
    }
  });

  it('hears a beep through μ-law in white noise 6 dB under it', () => {
    const line = decodeMulaw(
      encodeMulaw(pcm(withNoise(join(gap(500, 8000), tone(850, 600, 8000, -24), gap(500, 8000)), -30, 3))),
    );
    const found = tones(line, 8000);
    expect(found).toHaveLength(1);
    expect(Math.abs(found[0]!.frequencyHz - 850)).toBeLessThan(9);
  });

  it('reports three tones one after another (a special information tone), each at its own frequency', () => {
    const sit = join(
      tone(913.8, 330, 8000),
      tone(1370.6, 330, 8000),
      tone(1776.7, 330, 8000),
      gap(200, 8000),
    );
    const found = tones(pcm(sit), 8000);
    expect(found.map((t) => Math.round(t.frequencyHz / 10) * 10)).toEqual([910, 1370, 1780]);
  });

  it('finds the same tones however the audio is chunked, each as soon as it ends', () => {
    const audio = pcm(
      withNoise(
        join(gap(400, 8000), tone(1000, 300, 8000), gap(900, 8000), tone(1400, 700, 8000), gap(400, 8000)),
        -45,
        4,
      ),
    );
    const whole = tones(audio, 8000);
    expect(whole).toHaveLength(2);
    for (const chunk of [1, 160, 257, 1000]) expect(tones(audio, 8000, chunk)).toEqual(whole);
    // Pushed in 20 ms frames, each tone is reported by the frame after its end.
    const d = new ToneDetector(8000);
    const reportedAt: number[] = [];
    for (let at = 0; at < audio.length; at += 160)
      if (d.push(audio.subarray(at, at + 160)).length > 0) reportedAt.push(((at + 160) / 8000) * 1000);
    expect(reportedAt[0]! - 700).toBeGreaterThanOrEqual(0);
    expect(reportedAt[0]! - 700).toBeLessThanOrEqual(2 * TONE_BLOCK_MS);
    expect(reportedAt[1]! - 2300).toBeLessThanOrEqual(2 * TONE_BLOCK_MS);
  });

  it('says a tone is under way before it is long enough to report, and flush reports one cut off', () => {
    const d = new ToneDetector(8000);
    expect(d.push(pcm(tone(1000, 320, 8000)))).toEqual([]);
    expect(d.inTone).toBe(true);
    const [cut] = d.flush();
    expect(cut?.durationMs).toBe(320);
    expect(d.inTone).toBe(false);
  });

  it('is not fooled by a blip, a glide, DTMF keys, noise, hum or silence', () => {
    const rate = 8000;
    const glide = Float64Array.from(
      { length: rate / 2 },
      (_, i) => 3000 * Math.sin(2 * Math.PI * (600 * (i / rate) + 800 * (i / rate) ** 2)),
    );
    const pink = pinkSource(seeded(9));
    const cases: Record<string, Float64Array> = {
      'a 60 ms blip': join(gap(200, rate), tone(1000, 60, rate), gap(200, rate)),
      'a glide from 600 to 1400 Hz': glide,
      'DTMF keys': Float64Array.from(dtmfTones('159#0', rate)),
      'a key held down': Float64Array.from(
        { length: rate },
        (_, i) =>
          4000 * (Math.sin((2 * Math.PI * 770 * i) / rate) + Math.sin((2 * Math.PI * 1336 * i) / rate)),
      ),
      'white noise': withNoise(gap(1000, rate), -30, 5),
      'pink noise': Float64Array.from({ length: rate }, () => pink() * 8000),
      '50 Hz hum': Float64Array.from(
        { length: rate },
        (_, i) => 5000 * Math.sin((2 * Math.PI * 50 * i) / rate),
      ),
      'a 300 Hz tone (under the band)': tone(300, 500, rate),
      silence: gap(1000, rate),
    };
    for (const [name, x] of Object.entries(cases)) expect(tones(pcm(x), rate), name).toEqual([]);
    // Under the band only by choice: a lower minHz hears the 300 Hz tone.
    const low = new ToneDetector(rate, { minHz: 250 });
    expect([...low.push(pcm(tone(300, 500, rate))), ...low.flush()]).toHaveLength(1);
  });

  it('finds no tone in speech: eSpeak voices saying everyday sentences, high and low', async () => {
    for (const [v, voice] of VOICES.entries())
      for (const text of UTTERANCES.slice(0, 4)) {
        const speech = resampleWhole(await espeakSpeech(text, voice[0], voice[1], voice[2]), 22_050, 8000);
        expect(tones(speech, 8000), `${voice[0]} p${voice[1]}: ${text} (${v})`).toEqual([]);
      }
  });

  it('refuses options out of their bounds', () => {
    expect(() => new ToneDetector(2000)).toThrow(RangeError);
    expect(() => new ToneDetector(8000, { minShare: 0.3 })).toThrow(/minShare/);
    expect(() => new ToneDetector(8000, { minHz: 5000 })).toThrow(/minHz/);
    expect(() => new ToneDetector(8000, { minToneMs: 10 })).toThrow(/minToneMs/);
  });
});
