/**
 * When each word is spoken, read from eSpeak's events as synthesis runs (in the engine worker). eSpeak
 * marks a word where its first phoneme starts, and a clause's end after the pause that closes it; a word
 * lasts until the next mark. Its sound, though, stops earlier when a pause follows: the samples show
 * where (eSpeak's pauses are digital silence), so a word ends at its last sound and the pause is left to
 * the characters after it (docs/speech-service.md, "Character timings").
 */
import type { ESpeakEvent } from '@echogarden/espeak-ng-emscripten';
import type { WordTiming } from '../engine.js';
import { escapedOrigins } from './ssml.js';

/**
 * The loudest sample still counted as silence (about −50 dBFS). eSpeak's pauses and a stop consonant's
 * closure are exact zeros, and a word's decay falls below this within a few milliseconds.
 */
export const SILENCE_MAX_AMPLITUDE = 100;

interface OpenWord {
  readonly start: number;
  readonly end: number;
  readonly startMs: number;
}

export class WordMarks {
  readonly #origins: Uint32Array;
  readonly #samplesPerMs: number;
  /** Samples of the synthesis seen so far. */
  #samples = 0;
  /** Just past the last sample louder than silence, counted from the synthesis's first sample. */
  #soundEnd = 0;
  /** The word being spoken: its end is not known until the next mark. */
  #open: OpenWord | undefined;

  /** `text` as the caller gave it (before SSML escaping): positions are reported in its code points. */
  constructor(text: string, sampleRate: number) {
    this.#origins = escapedOrigins(text);
    this.#samplesPerMs = sampleRate / 1000;
  }

  /** One engine callback: its samples and events. Returns the words it finished. */
  push(samples: Int16Array, events: readonly ESpeakEvent[]): WordTiming[] {
    const done: WordTiming[] = [];
    const base = this.#samples;
    let scanned = 0;
    for (const event of events) {
      if (event.type !== 'word' && event.type !== 'end') continue;
      // A mark belongs to this callback's audio; eSpeak rounds it to whole ms, so clamp it inside.
      const at = Math.min(
        samples.length,
        Math.max(scanned, Math.round(event.audio_position * this.#samplesPerMs) - base),
      );
      this.#scan(samples, scanned, at, base);
      scanned = at;
      const atMs = (base + at) / this.#samplesPerMs;
      this.#close(atMs, done);
      if (event.type === 'word') this.#open = this.#word(event, atMs);
    }
    this.#scan(samples, scanned, samples.length, base);
    this.#samples += samples.length;
    return done;
  }

  /** Synthesis ended: a word still open ends with the last sound. */
  end(): WordTiming[] {
    const done: WordTiming[] = [];
    this.#close(this.#samples / this.#samplesPerMs, done);
    return done;
  }

  /** Moves `#soundEnd` to the last loud sample of `samples[from, to)`, if there is one. */
  #scan(samples: Int16Array, from: number, to: number, base: number): void {
    for (let i = to - 1; i >= from; i--) {
      const s = samples[i]!;
      if (s > SILENCE_MAX_AMPLITUDE || s < -SILENCE_MAX_AMPLITUDE) {
        this.#soundEnd = base + i + 1;
        return;
      }
    }
  }

  #close(atMs: number, done: WordTiming[]): void {
    const open = this.#open;
    if (open === undefined) return;
    this.#open = undefined;
    const soundEndMs = this.#soundEnd / this.#samplesPerMs;
    done.push({ ...open, endMs: Math.min(atMs, Math.max(open.startMs, soundEndMs)) });
  }

  /** The caller's code points a word event covers (an entity such as `&amp;` maps back to its `&`). */
  #word(event: ESpeakEvent, atMs: number): OpenWord | undefined {
    const origins = this.#origins;
    const first = event.text_position - 1;
    if (!Number.isInteger(first) || first < 0 || first >= origins.length) return undefined;
    const last = Math.min(origins.length, first + Math.max(1, event.word_length)) - 1;
    return { start: origins[first]!, end: origins[last]! + 1, startMs: atMs };
  }
}
