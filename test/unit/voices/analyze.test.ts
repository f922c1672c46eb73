import { describe, expect, it } from 'vitest';
import { analyzeSpeech } from '../../../src/service/voices/analyze.js';
import { espeakSpeech } from '../../../testkit/audio.js';

const ENGINE_RATE = 22_050;

/** Deterministic uniform noise in -1..1 (mulberry32). */
function noise(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return (((t ^ (t >>> 14)) >>> 0) / 4294967296) * 2 - 1;
  };
}

/**
 * A harmonic tone with 1/h amplitudes up to 4 kHz (a crude vowel) at `f0Hz`, times `envelope(t)`, plus
 * white noise of amplitude `noiseLevel`.
 */
function tone(
  f0Hz: number,
  sampleRate: number,
  seconds: number,
  envelope: (t: number) => number = () => 1,
  noiseLevel = 0,
): Float32Array {
  const out = new Float32Array(Math.round(sampleRate * seconds));
  const rand = noise(42);
  for (let i = 0; i < out.length; i++) {
    const t = i / sampleRate;
    let v = 0;
    for (let h = 1; h * f0Hz < Math.min(4000, sampleRate / 2); h++)
      v += Math.sin(2 * Math.PI * h * f0Hz * t + h) / h;
    out[i] = 0.3 * v * envelope(t) + noiseLevel * rand();
  }
  return out;
}

function toFloat(pcm: Int16Array): Float32Array {
  return Float32Array.from(pcm, (v) => v / 32768);
}

const PASSAGE =
  'When the sunlight strikes raindrops in the air, they act as a prism and form a rainbow. ' +
  'The rainbow is a division of white light into many beautiful colors.';

describe('analyzeSpeech on synthetic signals', () => {
  it.each([
    [55, 16_000],
    [85, 8000],
    [110, 44_100],
    [123.4, 22_050],
    [196, 48_000],
    [262, 24_000],
    [330, 11_025],
    [390, 16_000],
  ])('measures a %f Hz harmonic tone at %i Hz within 3 %%', (f0Hz, sampleRate) => {
    const a = analyzeSpeech(tone(f0Hz, sampleRate, 1.5), sampleRate);
    expect(Math.abs(a.f0Hz / f0Hz - 1)).toBeLessThan(0.03);
    expect(a.voicedSeconds).toBeGreaterThan(1.3);
    expect(a.durationSeconds).toBeCloseTo(1.5, 3);
  });

  it('keeps the pitch of a tone in noise (about 15 dB SNR) and of a tone with vibrato', () => {
    expect(
      analyzeSpeech(
        tone(140, 16_000, 2, () => 1, 0.1),
        16_000,
      ).f0Hz,
    ).toBeCloseTo(140, -0.5);
    // ±3 % vibrato at 5 Hz: the median stays at the centre.
    const sampleRate = 22_050;
    const vibrato = new Float32Array(sampleRate * 2);
    let phase = 0;
    for (let i = 0; i < vibrato.length; i++) {
      phase += (2 * Math.PI * 180 * (1 + 0.03 * Math.sin((2 * Math.PI * 5 * i) / sampleRate))) / sampleRate;
      vibrato[i] = 0.3 * (Math.sin(phase) + 0.5 * Math.sin(2 * phase) + 0.3 * Math.sin(3 * phase));
    }
    expect(Math.abs(analyzeSpeech(vibrato, sampleRate).f0Hz / 180 - 1)).toBeLessThan(0.02);
  });

  it.each([3, 4.5, 6])('counts amplitude-modulated pulses at %f per second as syllables', (rate) => {
    // Raised-cosine bursts filling 60 % of each period, silence between them (shorter than a pause).
    const burst = (t: number): number => {
      const phase = (t * rate) % 1;
      return phase < 0.6 ? Math.sin((Math.PI * phase) / 0.6) ** 2 : 0;
    };
    const seconds = 6;
    const a = analyzeSpeech(tone(150, 16_000, seconds, burst, 0.001), 16_000);
    expect(Math.abs(a.syllables - rate * seconds)).toBeLessThanOrEqual(1);
    expect(Math.abs(a.syllablesPerSecond / rate - 1)).toBeLessThan(0.05);
    expect(a.f0Hz).toBeCloseTo(150, -0.5);
  });

  it('counts sinusoidal modulation (no silence between syllables) too', () => {
    const a = analyzeSpeech(
      tone(220, 24_000, 5, (t) => 0.55 - 0.45 * Math.cos(2 * Math.PI * 5 * t)),
      24_000,
    );
    expect(Math.abs(a.syllablesPerSecond / 5 - 1)).toBeLessThan(0.05);
  });

  it('leaves pauses out of the speaking time', () => {
    const sampleRate = 16_000;
    const burst = (t: number): number => {
      // 2 s of 4 Hz syllables, 1.5 s of silence, 2 s more.
      if (t >= 2 && t < 3.5) return 0;
      const phase = (t * 4) % 1;
      return phase < 0.6 ? Math.sin((Math.PI * phase) / 0.6) ** 2 : 0;
    };
    const a = analyzeSpeech(tone(120, sampleRate, 5.5, burst), sampleRate);
    expect(a.durationSeconds).toBeCloseTo(5.5, 5);
    expect(a.speakingSeconds).toBeGreaterThan(3.5);
    expect(a.speakingSeconds).toBeLessThan(4.2);
    expect(a.syllables).toBe(16);
  });

  it('finds no voice in white noise or silence', () => {
    const rand = noise(7);
    const white = Float32Array.from({ length: 16_000 * 2 }, () => 0.3 * rand());
    const a = analyzeSpeech(white, 16_000);
    expect(a.voicedSeconds).toBeLessThan(0.1);
    expect(a.syllables).toBe(0);
    const silent = analyzeSpeech(new Float32Array(16_000), 16_000);
    expect(silent).toMatchObject({
      f0Hz: 0,
      syllables: 0,
      syllablesPerSecond: 0,
      voicedSeconds: 0,
      rmsDb: -150,
    });
    expect(analyzeSpeech(new Float32Array(0), 16_000).durationSeconds).toBe(0);
  });

  it('reports the RMS level in dBFS', () => {
    const sine = Float32Array.from({ length: 16_000 }, (_, i) => Math.sin((2 * Math.PI * 1000 * i) / 16_000));
    expect(analyzeSpeech(sine, 16_000).rmsDb).toBeCloseTo(-3.01, 1);
    expect(
      analyzeSpeech(
        sine.map((v) => v / 10),
        16_000,
      ).rmsDb,
    ).toBeCloseTo(-23.01, 1);
  });

  it('analyzes 30 s of speech in well under a second', async () => {
    const speech = toFloat(await espeakSpeech(PASSAGE, 'en-us+m3', 30));
    const signal = new Float32Array(30 * ENGINE_RATE);
    for (let o = 0; o < signal.length; o += speech.length)
      signal.set(speech.subarray(0, signal.length - o), o);
    const started = performance.now();
    const a = analyzeSpeech(signal, ENGINE_RATE);
    expect(performance.now() - started).toBeLessThan(1000);
    expect(a.durationSeconds).toBe(30);
  });
});

describe('analyzeSpeech on eSpeak speech', () => {
  it('measures a lower F0 for a lower pitch setting, close to the engine settings', async () => {
    const low = analyzeSpeech(toFloat(await espeakSpeech(PASSAGE, 'en-us+m3', 20)), ENGINE_RATE);
    const high = analyzeSpeech(toFloat(await espeakSpeech(PASSAGE, 'en-us+m3', 80)), ENGINE_RATE);
    expect(low.f0Hz).toBeLessThan(high.f0Hz * 0.7);
    // The notes: pitch 10 → ≈ 75 Hz, 90 → ≈ 154 Hz for the default male voice.
    expect(low.f0Hz).toBeGreaterThan(70);
    expect(low.f0Hz).toBeLessThan(90);
    expect(high.f0Hz).toBeGreaterThan(125);
    expect(high.f0Hz).toBeLessThan(155);
    const female = analyzeSpeech(toFloat(await espeakSpeech(PASSAGE, 'en-us+f3', 50)), ENGINE_RATE);
    expect(female.f0Hz).toBeGreaterThan(190);
    expect(female.f0Hz).toBeLessThan(230);
  });

  it('measures a higher syllable rate for a faster speaking rate', async () => {
    const slow = analyzeSpeech(toFloat(await espeakSpeech(PASSAGE, 'en-us+m3', 50, 120)), ENGINE_RATE);
    const fast = analyzeSpeech(toFloat(await espeakSpeech(PASSAGE, 'en-us+m3', 50, 240)), ENGINE_RATE);
    expect(fast.syllablesPerSecond).toBeGreaterThan(slow.syllablesPerSecond * 1.4);
    // The passage has 41 syllables; the count holds at an ordinary pace.
    expect(Math.abs(slow.syllables - 41)).toBeLessThanOrEqual(3);
    expect(fast.voicedSeconds).toBeLessThan(slow.voicedSeconds);
  });
});
