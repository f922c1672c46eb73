/**
 * The seam between the local speech service and a speech engine. An engine turns one piece of text
 * into 24 kHz mono s16le PCM, handing the audio out as it is produced, and says when each word of it
 * is spoken (for `/with-timestamps`). It describes itself: its voices, its languages, its licence.
 *
 * Engines run in the engine worker threads (`worker.ts`), one instance of each per thread, loaded by
 * `engines.ts`; the pool on the main thread (`pool.ts`) sends each piece to a worker with the voice's
 * parameters, and the worker hands it to the engine the parameters name. Synthesis may block its
 * thread (eSpeak-NG and Flite do: they are synchronous WebAssembly), so an engine polls for
 * cancellation through its output (`audio()` answers false) rather than waiting for a message.
 */
import type { EngineId, VoiceParams, VoiceParamsOf } from './voice-params.js';

export type { EngineId } from './voice-params.js';

/** The rate every engine delivers: what the service's formats are made from. */
export const OUTPUT_SAMPLE_RATE = 24_000;

export interface EngineLicence {
  /** SPDX identifier of the engine's licence, or `LicenseRef-…` for one that SPDX does not list. */
  readonly spdx: string;
  /** GPL-like: shipping the engine with a program puts conditions on the program's own licence. */
  readonly copyleft: boolean;
  /** The npm package it comes in, whose licence files say it in full. */
  readonly package: string;
  /** What it allows and asks for, in a sentence. */
  readonly summary: string;
}

/** One voice of the engine's own (not a voice of the service: those are made from these). */
export interface EngineVoice {
  /** The engine's name for it: `rms`, `en-gb-scotland`, … */
  readonly id: string;
  /** BCP 47 tags it speaks, lower case, e.g. `en-us`. */
  readonly languages: readonly string[];
  readonly gender?: 'male' | 'female' | undefined;
  /** The rate it synthesizes at, before the engine resamples to `OUTPUT_SAMPLE_RATE`. */
  readonly sampleRate: number;
  /** For people, when the engine names it beyond its id (an ONNX model's speaker). */
  readonly name?: string | undefined;
  /** The settings that speak it as it is, for an engine whose voices are offered as they are (ONNX). */
  readonly params?: VoiceParams | undefined;
}

export interface EngineDescriptor {
  readonly id: EngineId;
  /** For people: `Flite 2.3`, `eSpeak NG 1.51`. */
  readonly name: string;
  readonly licence: EngineLicence;
  /** Lower-case BCP 47 tags of every language it speaks (`en`, `en-us`, `de`, `pt-br`, …). */
  readonly languages: readonly string[];
  readonly voices: readonly EngineVoice[];
  /** Parts of it that did not load (a configured ONNX model), and why: the rest works. */
  readonly skipped?: ReadonlyArray<{ readonly what: string; readonly reason: string }> | undefined;
}

/**
 * When one word is spoken. Positions are code points of the text synthesized (end exclusive); times are
 * milliseconds from that text's first sample. `endMs` is where the word's sound stops, before any pause
 * that follows it (docs/speech-service.md, "Character timings").
 */
export interface WordTiming {
  readonly start: number;
  readonly end: number;
  readonly startMs: number;
  readonly endMs: number;
}

/** Where an engine puts what it makes. */
export interface SynthesisOutput {
  /**
   * Audio as it is produced: 24 kHz mono samples (the array is handed over: the engine must not touch
   * it again). False when the job was cancelled: the engine stops as soon as it can, and sends nothing
   * more.
   */
  audio(samples: Int16Array): boolean;
  /** Words whose timing is known, in the order spoken; best ahead of the audio that ends them. */
  words(words: readonly WordTiming[]): void;
}

/** One instance of an engine, in one thread; it speaks one piece at a time. */
export interface SpeechEngine<Id extends EngineId = EngineId> {
  readonly descriptor: EngineDescriptor & { readonly id: Id };
  /**
   * Speaks `text` (one piece of a request: a sentence or a few, at most a few hundred characters)
   * with `voice`. With `timings`, reports its words too (plain speech skips that work). Resolves
   * true once everything is out, false when `out.audio()` said the job was cancelled.
   */
  synthesize(
    text: string,
    voice: VoiceParamsOf<Id>,
    timings: boolean,
    out: SynthesisOutput,
  ): boolean | Promise<boolean>;
  /** Called when the thread is idle after a job: get ready for the next (nothing to do for most). */
  prepare?(): void;
}
