/**
 * Audio for judging the barge-in detector: caller utterances (the embedded eSpeak engine, several
 * voices) in line noise at a chosen SNR, and what a phone line carries when nobody talks (noise, hum,
 * DTMF digits, clicks, silence). Shared by the VAD tests and its benchmark.
 */
import { Resampler } from '../../src/audio/resampler.js';
import { espeakSpeech } from './audio.js';
import { seeded } from './random.js';

export const UTTERANCES = [
  'Hello, can you hear me?',
  'I would like to book a table for two.',
  'No, that is not right.',
  'Wait a moment please.',
  'Sorry, what did you say?',
  'My account number is four five six.',
  'Stop!',
  'Excuse me.',
];
export const VOICES: ReadonlyArray<readonly [string, number]> = [
  ['en-us', 50],
  ['en-us+f3', 60],
  ['en-us+m3', 30],
  ['en-gb+f2', 70],
  ['en', 40],
];
const ENGINE_RATE = 22_050;
/** A sample counts as speech from here on when finding the true onset. */
const ONSET_LEVEL = 300;

export function resample(x: Int16Array, from: number, to: number): Int16Array {
  const r = new Resampler({ inputRate: from, outputRate: to });
  const a = r.push(x);
  const b = r.flush();
  const out = new Int16Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

export interface TestUtterance {
  /** 1 s of line noise, the utterance in the same noise, 1 s of noise. */
  samples: Int16Array;
  /** Where the speech really starts (ms). */
  onsetMs: number;
  text: string;
}

export async function noisyUtterance(
  text: string,
  voice: readonly [string, number],
  sampleRate: number,
  snrDb: number,
  seed: number,
): Promise<TestUtterance> {
  const speech = resample(await espeakSpeech(text, voice[0], voice[1]), ENGINE_RATE, sampleRate);
  let onset = 0;
  while (onset < speech.length && Math.abs(speech[onset]!) < ONSET_LEVEL) onset++;
  let power = 0;
  for (const s of speech) power += s * s;
  power /= speech.length;
  // Uniform noise of this amplitude has the power that gives the SNR.
  const noiseAmplitude = Math.sqrt((power / 10 ** (snrDb / 10)) * 3);
  const random = seeded(seed);
  const lead = sampleRate;
  const samples = new Int16Array(lead + speech.length + sampleRate);
  for (let i = 0; i < samples.length; i++) {
    const s = i >= lead && i < lead + speech.length ? speech[i - lead]! : 0;
    samples[i] = Math.max(-32768, Math.min(32767, Math.round(s + (random() * 2 - 1) * noiseAmplitude)));
  }
  return { samples, onsetMs: ((lead + onset) / sampleRate) * 1000, text };
}

const DTMF: ReadonlyArray<readonly [number, number]> = [
  [697, 1209],
  [697, 1336],
  [770, 1477],
  [852, 1209],
  [941, 1336],
  [697, 1633],
  [941, 1477],
];

/**
 * One second of a line with nobody talking, of kind `second % 6`: line noise; DTMF digits (100 ms on,
 * 100 ms off, loud); mains hum with a harmonic; clicks four times a second; loud white noise; silence.
 */
export function nonSpeechSecond(second: number, sampleRate: number, random: () => number): Int16Array {
  const x = new Int16Array(sampleRate);
  const kind = second % 6;
  const [low, high] = DTMF[second % DTMF.length]!;
  for (let i = 0; i < sampleRate; i++) {
    const t = second + i / sampleRate;
    let v = (random() * 2 - 1) * 300;
    if (kind === 1 && i % (sampleRate / 5) < sampleRate / 10)
      v += 6000 * (Math.sin(2 * Math.PI * low * t) + Math.sin(2 * Math.PI * high * t));
    if (kind === 2) v += 3000 * Math.sin(2 * Math.PI * 50 * t) + 1500 * Math.sin(2 * Math.PI * 150 * t);
    if (kind === 3 && i % (sampleRate / 4) < 8) v += (random() * 2 - 1) * 20_000;
    if (kind === 4) v = (random() * 2 - 1) * 4000;
    if (kind === 5) v = 0;
    x[i] = Math.max(-32768, Math.min(32767, Math.round(v)));
  }
  return x;
}
