/** Messages between the engine pool (main thread) and an engine worker thread. */
import type { EngineVoiceParams } from '../voices/params.js';

export const ENGINE_SAMPLE_RATE = 22_050;
export const OUTPUT_SAMPLE_RATE = 24_000;

export interface SynthJob {
  readonly type: 'synth';
  readonly jobId: number;
  readonly text: string;
  readonly voice: EngineVoiceParams;
  /** Also report when each word is spoken (`words` messages); off for plain speech, which needs none. */
  readonly timings: boolean;
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

export type ToWorker = SynthJob;

/** A job's messages; the worker's first message, before any job, is `{ type: 'ready' }`. */
export type FromWorker =
  | { readonly type: 'audio'; readonly jobId: number; readonly samples: Int16Array }
  /**
   * Words the engine finished (their sound and the pause after them) in the callback that also produced
   * the next `audio` message, sent ahead of it; the last ones of a job may come after its last audio.
   */
  | { readonly type: 'words'; readonly jobId: number; readonly words: readonly WordTiming[] }
  | { readonly type: 'done'; readonly jobId: number; readonly cancelled: boolean }
  | { readonly type: 'failed'; readonly jobId: number; readonly message: string };

/**
 * Shared between the pool and one worker: slot 0 holds the id of the job the pool wants stopped. The
 * worker's synthesis loop is synchronous, so it cannot receive a message mid-job; it polls this slot
 * from eSpeak's callback instead (every ~100 ms of audio, i.e. well under a millisecond of work).
 */
export const CANCEL_SLOT = 0;
