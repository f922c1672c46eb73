/**
 * Audio for judging the barge-in detector: caller utterances (the embedded eSpeak engine, several
 * voices, pitches and speaking rates) in white or pink line noise at a chosen SNR, optionally through
 * G.711 mu-law as a phone line carries it, and what a line carries when nobody talks (noise, mains hum,
 * DTMF digits, clicks, pops, silence). Shared by the VAD tests, its benchmark and the call tests.
 */
import { decodeMulaw, encodeMulaw } from '../src/audio/g711.js';
import { resampleWhole } from '../src/audio/resampler.js';
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

/** eSpeak voice, pitch (0–99) and speaking rate (words per minute; 175 when absent). */
export type TestVoice = readonly [voice: string, pitch: number, rateWpm?: number];

export const VOICES: readonly TestVoice[] = [
  ['en-us', 50],
  ['en-us+f3', 60, 200],
  ['en-us+m3', 30, 150],
  ['en-gb+f2', 70, 230],
  ['en', 40, 130],
  ['en-us+m7', 20, 190],
  ['en-gb+f4', 85, 160],
];
const ENGINE_RATE = 22_050;
/** A sample counts as speech from here on when finding the true onset. */
const ONSET_LEVEL = 300;

/**
 * Where the speech in `samples` really starts and ends: the first sample as loud as `ONSET_LEVEL`, and
 * one past the last (both `samples.length` when none is).
 */
export function speechBounds(samples: Int16Array): { onset: number; end: number } {
  let onset = 0;
  while (onset < samples.length && Math.abs(samples[onset]!) < ONSET_LEVEL) onset++;
  let end = samples.length;
  while (end > onset && Math.abs(samples[end - 1]!) < ONSET_LEVEL) end--;
  return { onset, end };
}

export interface TestUtterance {
  /** 1 s of line noise, the utterance in the same noise, 1 s of noise. */
  samples: Int16Array;
  /** Where the speech really starts (ms). */
  onsetMs: number;
  /** How long the speech lasts, from its onset to its last loud sample (ms). */
  speechMs: number;
  text: string;
}

export interface NoiseOptions {
  /** White (flat) or pink (−3 dB per octave, more like room and handset noise). Default white. */
  color?: 'white' | 'pink';
  /** Through mu-law and back, as a G.711 line delivers it. Default false. */
  mulaw?: boolean;
}

/** Pink noise by Paul Kellett's economy filter: unit-ish amplitude, ±1 dB from 40 Hz to Nyquist. */
export function pinkSource(random: () => number): () => number {
  let b0 = 0;
  let b1 = 0;
  let b2 = 0;
  return () => {
    const w = random() * 2 - 1;
    b0 = 0.99765 * b0 + w * 0.099046;
    b1 = 0.963 * b1 + w * 0.2965164;
    b2 = 0.57 * b2 + w * 1.0526913;
    return (b0 + b1 + b2 + w * 0.1848) * 0.25;
  };
}

function rms(x: Int16Array | Float64Array): number {
  let sum = 0;
  for (const s of x) sum += s * s;
  return Math.sqrt(sum / Math.max(1, x.length));
}

const clip = (v: number): number => Math.max(-32768, Math.min(32767, Math.round(v)));

function throughMulaw(x: Int16Array): Int16Array {
  return decodeMulaw(encodeMulaw(x));
}

export async function noisyUtterance(
  text: string,
  voice: TestVoice,
  sampleRate: number,
  snrDb: number,
  seed: number,
  options: NoiseOptions = {},
): Promise<TestUtterance> {
  const speech = resampleWhole(
    await espeakSpeech(text, voice[0], voice[1], voice[2]),
    ENGINE_RATE,
    sampleRate,
  );
  const { onset, end } = speechBounds(speech);
  const random = seeded(seed);
  const lead = sampleRate;
  const length = lead + speech.length + sampleRate;
  const source = options.color === 'pink' ? pinkSource(random) : () => random() * 2 - 1;
  const noise = new Float64Array(length);
  for (let i = 0; i < length; i++) noise[i] = source();
  const gain = rms(speech) / 10 ** (snrDb / 20) / rms(noise);
  const samples = new Int16Array(length);
  for (let i = 0; i < length; i++) {
    const s = i >= lead && i < lead + speech.length ? speech[i - lead]! : 0;
    samples[i] = clip(s + noise[i]! * gain);
  }
  return {
    samples: options.mulaw ? throughMulaw(samples) : samples,
    onsetMs: ((lead + onset) / sampleRate) * 1000,
    speechMs: ((end - onset) / sampleRate) * 1000,
    text,
  };
}

/** The 16 DTMF keys' (low, high) frequency pairs. */
const DTMF: ReadonlyArray<readonly [number, number]> = [697, 770, 852, 941].flatMap((low) =>
  [1209, 1336, 1477, 1633].map((high) => [low, high] as const),
);

export const NON_SPEECH_KINDS = [
  'line noise',
  'DTMF digits, 100 ms on / 100 ms off',
  '50 Hz hum with harmonics',
  '60 Hz hum with harmonics',
  'clicks',
  'pops',
  'loud white noise',
  'pink noise',
  'digital silence',
  'a DTMF key held down',
] as const;

/**
 * One second of a line with nobody talking, of kind `NON_SPEECH_KINDS[second % 10]`, at levels a phone
 * line really has (DTMF tones each −10 dBFS, hum −20 dBFS, clicks and pops near full scale, loud noise
 * −18 dBFS), then through mu-law at 8 kHz. Consecutive seconds switch kind abruptly, which the detector
 * must also survive.
 */
export function nonSpeechSecond(second: number, sampleRate: number, random: () => number): Int16Array {
  const x = new Int16Array(sampleRate);
  const kind = second % NON_SPEECH_KINDS.length;
  const pink = pinkSource(random);
  const mains = kind === 3 ? 60 : 50;
  const tone = 0.316 * 32768 * Math.SQRT2;
  // Clicks and pops at random times, a few a second.
  const events = new Set<number>();
  for (let k = 0; k < 3 + Math.floor(random() * 6); k++) events.add(Math.floor(random() * sampleRate));
  let pop = 0;
  let popSign = 1;
  let digit = DTMF[Math.floor(random() * DTMF.length)]!;
  for (let i = 0; i < sampleRate; i++) {
    const t = second + i / sampleRate;
    let v = (random() * 2 - 1) * 300;
    if (kind === 1 || kind === 9) {
      const on = kind === 9 || i % (sampleRate / 5) < sampleRate / 10;
      if (kind === 1 && i % (sampleRate / 5) === 0) digit = DTMF[Math.floor(random() * DTMF.length)]!;
      if (on) v += tone * (Math.sin(2 * Math.PI * digit[0] * t) + Math.sin(2 * Math.PI * digit[1] * t));
    }
    if (kind === 2 || kind === 3) {
      const w = 2 * Math.PI * mains * t;
      v += 3000 * Math.sin(w) + 1200 * Math.sin(3 * w) + 600 * Math.sin(5 * w) + 300 * Math.sin(7 * w);
    }
    if (kind === 4 && events.has(i)) {
      // A click: a few samples of full-scale crackle.
      for (let j = 0; j < 6 && i + j < sampleRate; j++) x[i + j] = clip((random() * 2 - 1) * 30_000);
    }
    if (kind === 5) {
      // A pop: a step that decays over ~10 ms (a plug, a handset knock).
      if (events.has(i)) {
        pop = 20_000;
        popSign = random() < 0.5 ? -1 : 1;
      }
      v += popSign * pop;
      pop *= Math.exp(-1000 / (10 * sampleRate));
    }
    if (kind === 6) v = (random() * 2 - 1) * 7000;
    if (kind === 7) v = pink() * 12_000;
    if (kind === 8) v = 0;
    if (x[i] === 0) x[i] = clip(v);
  }
  return sampleRate === 8000 ? throughMulaw(x) : x;
}
