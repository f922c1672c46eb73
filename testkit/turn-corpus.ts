/**
 * Callers' turns with pauses where people pause (issue 45, part 3): mid-number, after "um", between
 * clauses, and complete short answers with none. A script's `|` marks a pause; each part is spoken on
 * its own (the cast's voices from the local service with its character timings, or eSpeak straight
 * from the engine with its word marks), trimmed to its words, and the parts are laid end to end with
 * 300–900 ms of silence between them, then put on a phone line (8 kHz μ-law, optional white noise).
 * Every turn knows its words with their times on the line's timeline, its pauses and its true end (the
 * end of its last word's sound). Shared by the endpointing tests and bench/turns.ts.
 */
import type { WordTiming } from '../src/service/engine/engine.js';
import { espeakTimedSpeech } from './audio.js';
import { serviceSpeech } from './menu-audio.js';
import { LINE_RATE, onPhoneLine } from './phone-line.js';
import { seeded } from './random.js';
import type { TestVoice } from './vad-audio.js';

/** Where the turn's pauses are: what it tests. */
export type TurnKind = 'number' | 'hesitation' | 'clause' | 'short-answer' | 'sentence';

export interface TurnScript {
  readonly kind: TurnKind;
  /** The words as written, punctuation included; `|` where the caller pauses. */
  readonly text: string;
}

export const TURN_SCRIPTS: readonly TurnScript[] = [
  { kind: 'number', text: 'My number is four one five | two three nine | one two three four.' },
  { kind: 'number', text: "It's five five five | zero one nine nine." },
  { kind: 'number', text: 'My account number is seven two | nine nine one | four.' },
  { kind: 'number', text: 'The code is | four four seven two.' },
  { kind: 'number', text: 'My zip code is nine four | one oh three.' },
  { kind: 'number', text: 'Four one five | six two eight | three three one nine.' },
  { kind: 'hesitation', text: "I'd like to, um, | change my address." },
  { kind: 'hesitation', text: 'Um, | I need to pay my bill.' },
  { kind: 'hesitation', text: 'Can I, uh, | speak to someone about my order?' },
  { kind: 'hesitation', text: "It's the, er, | the blue one." },
  { kind: 'hesitation', text: 'I think, um, | Tuesday would be best.' },
  { kind: 'clause', text: 'I wanted to ask about my bill | and also my address.' },
  { kind: 'clause', text: 'I called yesterday | but nobody called me back.' },
  { kind: 'clause', text: "I need to move my appointment | because I'm away next week." },
  { kind: 'clause', text: "I'd like to book a table | for four people | on Friday evening." },
  { kind: 'clause', text: 'So I was wondering | if you could help me with my account.' },
  { kind: 'clause', text: 'I wanted to ask about | my last payment.' },
  { kind: 'clause', text: 'My name is | John Smith.' },
  { kind: 'clause', text: "Yes, | that's right." },
  { kind: 'clause', text: "I have a question about my order, | it hasn't arrived yet." },
  { kind: 'short-answer', text: 'Yes.' },
  { kind: 'short-answer', text: 'No.' },
  { kind: 'short-answer', text: 'Yes, please.' },
  { kind: 'short-answer', text: 'Billing, please.' },
  { kind: 'short-answer', text: "That's all." },
  { kind: 'short-answer', text: "That's right." },
  { kind: 'short-answer', text: 'No, thank you.' },
  { kind: 'short-answer', text: 'Sales.' },
  { kind: 'short-answer', text: 'Okay.' },
  { kind: 'short-answer', text: 'Technical support.' },
  { kind: 'sentence', text: 'I want to cancel my order.' },
  { kind: 'sentence', text: 'Can you tell me my balance?' },
  { kind: 'sentence', text: 'What time do you close today?' },
];

/** The shortest and longest pause a script's `|` becomes (ms). */
export const PAUSE_RANGE_MS = [300, 900] as const;

/** A word as speech-to-text would write it (its punctuation included), and when it was spoken (ms). */
export interface TimedWord {
  readonly text: string;
  readonly startMs: number;
  /** Where its sound ends (before any pause after it). */
  readonly endMs: number;
}

/** One part of a script, spoken: its samples and its words, timed from its first sample. */
export interface SpokenPart {
  readonly samples: Int16Array;
  readonly sampleRate: number;
  readonly words: readonly TimedWord[];
}

export interface TurnVoice {
  readonly name: string;
  speak(text: string): Promise<SpokenPart>;
}

export interface CorpusTurn {
  readonly voice: string;
  readonly kind: TurnKind;
  /** The script's text without its `|`. */
  readonly text: string;
  /** The line's audio: `LINE_RATE` samples decoded from μ-law. */
  readonly samples: Int16Array;
  readonly sampleRate: typeof LINE_RATE;
  /** On the line's timeline (ms from its first sample). */
  readonly words: readonly TimedWord[];
  /** The inserted pauses: from the end of one word's sound to the start of the next's. */
  readonly pauses: ReadonlyArray<{ readonly startMs: number; readonly endMs: number }>;
  /** Where the speech starts (its first word) and truly ends (its last word's sound). */
  readonly startMs: number;
  readonly endMs: number;
}

/** Whitespace-separated words of `text` with their code-point ranges. */
function writtenWords(text: string): Array<{ text: string; start: number; end: number }> {
  const points = Array.from(text);
  const out: Array<{ text: string; start: number; end: number }> = [];
  let start = -1;
  for (let i = 0; i <= points.length; i++) {
    const blank = i === points.length || /\s/u.test(points[i]!);
    if (!blank && start < 0) start = i;
    if (blank && start >= 0) {
      out.push({ text: points.slice(start, i).join(''), start, end: i });
      start = -1;
    }
  }
  return out;
}

const spoken = (c: string): boolean => /[\p{L}\p{N}]/u.test(c);

/**
 * Words timed from character timings (ElevenLabs' `alignment`): a word from its first letter's start
 * to its last letter's end; the punctuation after it holds the pause that follows, not its sound.
 */
export function wordsFromCharacters(
  characters: readonly string[],
  startMs: readonly number[],
  endMs: readonly number[],
): TimedWord[] {
  return writtenWords(characters.join('')).flatMap((w) => {
    const letters: number[] = [];
    for (let i = w.start; i < w.end; i++) if (spoken(characters[i]!)) letters.push(i);
    if (letters.length === 0) return [];
    return [{ text: w.text, startMs: startMs[letters[0]!]!, endMs: endMs[letters.at(-1)!]! }];
  });
}

/** Words timed from the engine's word marks (code-point ranges of `text`). */
export function wordsFromMarks(text: string, marks: readonly WordTiming[]): TimedWord[] {
  return writtenWords(text).flatMap((w) => {
    const covering = marks.filter((m) => m.start < w.end && m.end > w.start);
    if (covering.length === 0) return [];
    return [{ text: w.text, startMs: covering[0]!.startMs, endMs: covering.at(-1)!.endMs }];
  });
}

/** A voice of the local service's cast (at `apiBase`, …/api/speech), timed by its `/with-timestamps`. */
export function serviceVoice(apiBase: string, apiKey: string, voiceId: string): TurnVoice {
  return {
    name: voiceId,
    async speak(text) {
      const s = await serviceSpeech(apiBase, apiKey, voiceId, text);
      return {
        samples: s.samples,
        sampleRate: s.sampleRate,
        words: wordsFromCharacters(s.characters, s.charStartMs, s.charEndMs),
      };
    },
  };
}

/** eSpeak straight from the engine, timed by its word marks. */
export function espeakVoice(voice: TestVoice): TurnVoice {
  return {
    name: `espeak ${voice[0]} p${voice[1]} ${voice[2] ?? 175} wpm`,
    async speak(text) {
      const s = await espeakTimedSpeech(text, voice[0], voice[1], voice[2]);
      return { samples: s.samples, sampleRate: 22_050, words: wordsFromMarks(text, s.words) };
    },
  };
}

export interface TurnOptions {
  /** Seeds the pauses' lengths (and the noise). */
  seed: number;
  /** Each pause's length (ms), in order; default: drawn from `PAUSE_RANGE_MS`. */
  pausesMs?: readonly number[];
  /** Line noise (dB SNR); undefined: none. */
  snrDb?: number | undefined;
  /** Line before the speech and after it (ms): after it, longer than any rule waits. */
  leadMs?: number;
  tailMs?: number;
}

/** Audio kept around a part's words (ms): the onset of its first, the decay of its last. */
const EDGE_MS = 10;

/** `script` in `voice`, its pauses in place, on a phone line. */
export async function corpusTurn(
  script: TurnScript,
  voice: TurnVoice,
  options: TurnOptions,
): Promise<CorpusTurn> {
  const random = seeded(options.seed);
  const parts = await Promise.all(script.text.split('|').map((t) => voice.speak(t.trim())));
  const rate = parts[0]!.sampleRate;
  const [low, high] = PAUSE_RANGE_MS;
  const toSamples = (ms: number): number => Math.round((ms * rate) / 1000);
  // Lay the parts out in ms: each clip from EDGE_MS before its first word to EDGE_MS after its last.
  const clips: Array<{ part: SpokenPart; fromMs: number; toMs: number; atMs: number }> = [];
  const words: TimedWord[] = [];
  const pauses: Array<{ startMs: number; endMs: number }> = [];
  let lastEndMs = 0;
  for (const [i, part] of parts.entries()) {
    const first = part.words[0];
    const last = part.words.at(-1);
    if (!first || !last) throw new Error(`no timed words in "${script.text}" (${voice.name})`);
    const fromMs = Math.max(0, first.startMs - EDGE_MS);
    const toMs = Math.min((part.samples.length / rate) * 1000, last.endMs + EDGE_MS);
    let firstStartMs = EDGE_MS;
    if (i > 0) {
      const pauseMs = options.pausesMs?.[i - 1] ?? Math.round((low + random() * (high - low)) / 10) * 10;
      firstStartMs = lastEndMs + pauseMs;
      pauses.push({ startMs: lastEndMs, endMs: firstStartMs });
    }
    const shift = firstStartMs - first.startMs;
    clips.push({ part, fromMs, toMs, atMs: fromMs + shift });
    for (const w of part.words)
      words.push({ text: w.text, startMs: w.startMs + shift, endMs: w.endMs + shift });
    lastEndMs = last.endMs + shift;
  }
  const speech = new Int16Array(toSamples(lastEndMs + EDGE_MS) + 1);
  for (const c of clips) {
    const clip = c.part.samples.subarray(toSamples(c.fromMs), toSamples(c.toMs));
    const at = toSamples(c.atMs);
    speech.set(clip.subarray(0, Math.max(0, speech.length - at)), at);
  }
  const leadMs = options.leadMs ?? 1000;
  const samples = onPhoneLine(speech, rate, {
    snrDb: options.snrDb,
    seed: options.seed,
    leadMs,
    tailMs: options.tailMs ?? 3500,
  });
  const onLine = (w: TimedWord): TimedWord => ({
    ...w,
    startMs: w.startMs + leadMs,
    endMs: w.endMs + leadMs,
  });
  const lineWords = words.map(onLine);
  return {
    voice: voice.name,
    kind: script.kind,
    text: script.text.replace(/\s*\|\s*/g, ' '),
    samples,
    sampleRate: LINE_RATE,
    words: lineWords,
    pauses: pauses.map((p) => ({ startMs: p.startMs + leadMs, endMs: p.endMs + leadMs })),
    startMs: lineWords[0]!.startMs,
    endMs: lineWords.at(-1)!.endMs,
  };
}
