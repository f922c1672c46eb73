/**
 * The first seconds of outbound calls, for judging answering-machine detection (src/barge-in/amd.ts):
 * what the callee's side sends once the call is answered, as a phone line delivers it (8 kHz through
 * G.711 μ-law, with white or pink line noise at 10–30 dB SNR or none, the speech at −32 to −12 dBFS,
 * after 0–1.5 s of silence).
 *
 * - Machines: voicemail greetings of 3–15 s (several sentences with the short pauses of a recorded
 *   greeting, 150–400 ms, between them; the sentence that passes the length drawn is said whole), half of them ending with a beep (440–2000 Hz, 0.3–1 s,
 *   0.2–0.8 s after the last word); and IVR menus ("For billing, press one").
 * - People: a short answer ("Hello?", "Hi, this is Sam", "Yes?") and then silence, waiting for the
 *   caller; or "Hello?" and, 1–2 s later, "Hello?" again.
 * - Silence: nobody says anything (the right answer is `unknown`).
 *
 * Speech comes from the embedded eSpeak-NG engine, in the voices of the local speech service's cast
 * (each with its engine settings, as the service speaks them) and testkit/vad-audio.ts's eSpeak voices.
 * Every call is drawn from a seed, so a corpus is the same on every run.
 */
import { decodeMulaw, encodeMulaw } from '../src/audio/g711.js';
import { resampleWhole } from '../src/audio/resampler.js';
import { builtInVoices } from '../src/service/voices/builtin.js';
import { espeakSpeech } from './audio.js';
import { atLevel } from './echo-line.js';
import { seeded } from './random.js';
import { pinkSource, speechBounds, VOICES } from './vad-audio.js';

export const AMD_LINE_RATE = 8000;
const ENGINE_RATE = 22_050;

export type AmdExpected = 'human' | 'machine' | 'unknown';
export type CallKind = 'voicemail' | 'voicemail-beep' | 'ivr' | 'hello' | 'hello-again' | 'silence';
export const CALL_KINDS: readonly CallKind[] = [
  'voicemail',
  'voicemail-beep',
  'ivr',
  'hello',
  'hello-again',
  'silence',
];

export const EXPECTED: Readonly<Record<CallKind, AmdExpected>> = {
  voicemail: 'machine',
  'voicemail-beep': 'machine',
  ivr: 'machine',
  hello: 'human',
  'hello-again': 'human',
  silence: 'unknown',
};

/** An eSpeak voice as the engine takes it: `language+variant`, pitch, rate, pitch range. */
export interface AmdVoice {
  readonly name: string;
  readonly voice: string;
  readonly pitch: number;
  readonly rateWpm: number;
  readonly range: number;
}

/** The cast's eight built-in voices as eSpeak speaks them (their settings for other languages), then seven more eSpeak variants. */
export const AMD_VOICES: readonly AmdVoice[] = [
  ...builtInVoices().flatMap((v) =>
    v.espeak
      ? [
          {
            name: v.voice_id,
            voice: `${v.espeak.language}+${v.espeak.variant}`,
            pitch: v.espeak.pitch,
            rateWpm: v.espeak.rateWpm,
            range: v.espeak.range,
          },
        ]
      : [],
  ),
  ...VOICES.map(([voice, pitch, rateWpm]) => ({
    name: `espeak ${voice} p${pitch}`,
    voice,
    pitch,
    rateWpm: rateWpm ?? 175,
    range: 50,
  })),
];

/** A voicemail greeting opens with one of these… */
const VM_OPENERS = [
  "Hi, you've reached Sam.",
  'Hello, this is Maria Lopez.',
  'You have reached the voicemail of John Smith.',
  'Hi, this is Alex at Green Valley Plumbing.',
  'The person you are calling is not available.',
  "Hey, it's Chris.",
  'Thank you for calling Doctor Patel.',
];
/** …and goes on with some of these, in any order. */
const VM_SENTENCES = [
  "I can't come to the phone right now.",
  'Please leave your name and number after the tone.',
  "And I'll get back to you as soon as I can.",
  'I am either on the other line or away from my desk.',
  'Leave a message and I will call you back.',
  'Have a great day.',
  'If this is urgent, please call my mobile instead.',
  'At the tone, please record your message.',
  'When you have finished recording, you may hang up.',
  'Our office hours are nine to five, Monday to Friday.',
  'Thanks for calling.',
  'I am out of the office until Monday.',
  'For anything about your order, please send us an email.',
  'Please speak clearly and leave your phone number twice.',
];
const IVR_OPENERS = [
  'Thank you for calling Acme Bank.',
  'Welcome to City Power and Light.',
  'Thank you for calling the support line.',
  'Hello, and welcome to Pizza Express.',
];
const IVR_SENTENCES = [
  'Please listen carefully, as our menu options have changed.',
  'Your call may be recorded for quality purposes.',
  'For account balances, press one.',
  'For customer service, press two.',
  'To report an outage, press three.',
  'To speak with an agent, press zero.',
  'For opening hours and directions, press four.',
  'To hear these options again, press star.',
  'To place an order, press five.',
  'Para español, oprima el nueve.',
];
const HELLOS = [
  'Hello?',
  'Hello.',
  'Yes?',
  'Yeah, hello?',
  'Hi, this is Sam.',
  'Hello, who is this?',
  'Hello, Maria speaking.',
  'Good morning.',
  'Hi there.',
  'This is John.',
  'Hello, yes?',
  'Speaking.',
];

const BEEP_HZ = [1000, 850, 1400, 440, 950, 2000];

export interface AmdCall {
  readonly id: string;
  readonly kind: CallKind;
  readonly expected: AmdExpected;
  readonly voice: string;
  /** μ-law-decoded samples at 8 kHz. */
  readonly samples: Int16Array;
  readonly sampleRate: typeof AMD_LINE_RATE;
  /** The speech's level (dBFS over its loud part). */
  readonly levelDbfs: number;
  /** Line noise: its colour and SNR to the speech; undefined for a clean line (digital silence). */
  readonly noise: { readonly color: 'white' | 'pink'; readonly snrDb: number } | undefined;
  /** Silence before the first speech (ms). */
  readonly leadMs: number;
  /** Where the first speech starts and the last ends (ms); undefined for silence. */
  readonly speechStartMs: number | undefined;
  readonly speechEndMs: number | undefined;
  /** A person's first utterance: how long it lasts (ms). */
  readonly firstUtteranceMs: number | undefined;
  /** The beep at the end of a greeting. */
  readonly beep:
    { readonly frequencyHz: number; readonly startMs: number; readonly endMs: number } | undefined;
  readonly text: string;
}

const cache = new Map<string, Int16Array>();

/** `text` in `voice`, at 8 kHz, trimmed to its speech (as loud as the engine makes it). */
async function sentence(voice: AmdVoice, text: string): Promise<Int16Array> {
  const key = `${voice.name}\u0000${text}`;
  let samples = cache.get(key);
  if (!samples) {
    const raw = await espeakSpeech(text, voice.voice, voice.pitch, voice.rateWpm, voice.range);
    const { onset, end } = speechBounds(raw);
    samples = resampleWhole(raw.subarray(onset, end), ENGINE_RATE, AMD_LINE_RATE);
    cache.set(key, samples);
  }
  return samples;
}

const ms = (samples: number): number => (samples * 1000) / AMD_LINE_RATE;
const count = (milliseconds: number): number => Math.round((milliseconds * AMD_LINE_RATE) / 1000);

/** Pieces laid on a timeline, at 8 kHz. */
class Timeline {
  private readonly parts: Array<{ at: number; samples: Int16Array }> = [];
  length = 0;

  silence(milliseconds: number): void {
    this.length += count(milliseconds);
  }

  add(samples: Int16Array): { startMs: number; endMs: number } {
    const at = this.length;
    this.parts.push({ at, samples });
    this.length += samples.length;
    return { startMs: ms(at), endMs: ms(this.length) };
  }

  render(): Float64Array {
    const out = new Float64Array(this.length);
    for (const p of this.parts) for (let i = 0; i < p.samples.length; i++) out[p.at + i] = p.samples[i]!;
    return out;
  }
}

/** A beep with 5 ms ramps, at `dbfs` RMS. */
function beepTone(frequencyHz: number, milliseconds: number, dbfs: number): Int16Array {
  const n = count(milliseconds);
  const ramp = count(5);
  const amplitude = 32768 * 10 ** (dbfs / 20) * Math.SQRT2;
  return Int16Array.from({ length: n }, (_, i) =>
    Math.round(
      amplitude *
        Math.min(1, i / ramp, (n - 1 - i) / ramp) *
        Math.sin((2 * Math.PI * frequencyHz * i) / AMD_LINE_RATE),
    ),
  );
}

function pick<T>(random: () => number, items: readonly T[]): T {
  return items[Math.floor(random() * items.length)]!;
}

const uniform = (random: () => number, low: number, high: number): number => low + random() * (high - low);

/** `items` in a random order (Fisher–Yates on a copy). */
function shuffled<T>(random: () => number, items: readonly T[]): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/** A greeting: an opener and other sentences until it lasts `targetMs`, with pauses between. */
async function greeting(
  random: () => number,
  voice: AmdVoice,
  openers: readonly string[],
  sentences: readonly string[],
  targetMs: number,
  level: number,
  line: Timeline,
): Promise<{ text: string[]; startMs: number; endMs: number }> {
  const texts = [pick(random, openers), ...shuffled(random, sentences)];
  const said: string[] = [];
  let startMs = Number.NaN;
  let endMs = 0;
  for (const text of texts) {
    if (said.length > 0) {
      if (endMs - startMs >= targetMs) break;
      line.silence(uniform(random, 150, 400));
    }
    const placed = line.add(atLevel(await sentence(voice, text), level));
    if (said.length === 0) startMs = placed.startMs;
    endMs = placed.endMs;
    said.push(text);
  }
  return { text: said, startMs, endMs };
}

/** One call's first seconds, of `kind`, drawn from `seed`. */
export async function amdCall(kind: CallKind, seed: number): Promise<AmdCall> {
  const random = seeded(seed * 7919 + CALL_KINDS.indexOf(kind));
  const voice = pick(random, AMD_VOICES);
  const level = uniform(random, -32, -12);
  const noise =
    random() < 0.25
      ? undefined
      : { color: random() < 0.5 ? ('white' as const) : ('pink' as const), snrDb: uniform(random, 10, 30) };
  const leadMs = uniform(random, 0, 1500);
  const line = new Timeline();
  line.silence(leadMs);
  let speechStartMs: number | undefined;
  let speechEndMs: number | undefined;
  let firstUtteranceMs: number | undefined;
  let beep: AmdCall['beep'];
  let text = '';
  switch (kind) {
    case 'voicemail':
    case 'voicemail-beep':
    case 'ivr': {
      const ivr = kind === 'ivr';
      const g = await greeting(
        random,
        voice,
        ivr ? IVR_OPENERS : VM_OPENERS,
        ivr ? IVR_SENTENCES : VM_SENTENCES,
        uniform(random, 3000, 15_000),
        level,
        line,
      );
      speechStartMs = g.startMs;
      speechEndMs = g.endMs;
      text = g.text.join(' ');
      if (kind === 'voicemail-beep') {
        line.silence(uniform(random, 200, 800));
        const frequencyHz = pick(random, BEEP_HZ);
        const placed = line.add(
          beepTone(frequencyHz, uniform(random, 300, 1000), level + uniform(random, -6, 3)),
        );
        beep = { frequencyHz, ...placed };
      }
      line.silence(3000);
      break;
    }
    case 'hello':
    case 'hello-again': {
      const first = pick(random, HELLOS);
      const said = line.add(atLevel(await sentence(voice, first), level));
      speechStartMs = said.startMs;
      speechEndMs = said.endMs;
      firstUtteranceMs = said.endMs - said.startMs;
      text = first;
      if (kind === 'hello-again') {
        line.silence(uniform(random, 1000, 2000));
        const again = pick(random, ['Hello?', 'Hello? Anyone there?', 'Hello?', 'Yes, hello?']);
        speechEndMs = line.add(atLevel(await sentence(voice, again), level)).endMs;
        text += ` … ${again}`;
      }
      line.silence(kind === 'hello' ? 4000 : 3000);
      break;
    }
    case 'silence':
      line.silence(7000 - leadMs);
      break;
  }
  const clean = line.render();
  const samples = new Int16Array(clean.length);
  if (noise) {
    const source = noise.color === 'pink' ? pinkSource(random) : () => random() * 2 - 1;
    const raw = Float64Array.from({ length: clean.length }, () => source());
    let sum = 0;
    for (const v of raw) sum += v * v;
    const gain = (32768 * 10 ** ((level - noise.snrDb) / 20)) / Math.sqrt(sum / Math.max(1, raw.length));
    for (let i = 0; i < clean.length; i++) clean[i] = clean[i]! + raw[i]! * gain;
  }
  for (let i = 0; i < clean.length; i++)
    samples[i] = Math.max(-32768, Math.min(32767, Math.round(clean[i]!)));
  return {
    id: `${kind}#${seed}`,
    kind,
    expected: EXPECTED[kind],
    voice: voice.name,
    samples: decodeMulaw(encodeMulaw(samples)),
    sampleRate: AMD_LINE_RATE,
    levelDbfs: level,
    noise,
    leadMs,
    speechStartMs,
    speechEndMs,
    firstUtteranceMs,
    beep,
    text,
  };
}

/** `perKind` calls of each kind in `kinds`, seeds from `firstSeed` on. */
export async function amdCorpus(
  perKind: Readonly<Partial<Record<CallKind, number>>>,
  firstSeed = 1,
): Promise<AmdCall[]> {
  const calls: AmdCall[] = [];
  for (const kind of CALL_KINDS)
    for (let n = 0; n < (perKind[kind] ?? 0); n++) calls.push(await amdCall(kind, firstSeed + n));
  return calls;
}
