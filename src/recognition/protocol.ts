/** Messages between the recogniser (main thread, recognizer.ts) and its worker threads (worker.ts). */
import type { PathFit } from './confidence.js';

/** A recognition: `samples` at `sampleRate` (the buffer is transferred), decoded with the grammar. */
export interface RecognizeJob {
  readonly type: 'recognize';
  readonly jobId: number;
  readonly grammarId: string;
  readonly jsgf: string;
  readonly samples: Int16Array;
  readonly sampleRate: number;
}

/** A forced alignment of `words` (dictionary words, `UNKNOWN_WORD` for others) to the audio. */
export interface AlignJob {
  readonly type: 'align';
  readonly jobId: number;
  readonly words: readonly string[];
  readonly samples: Int16Array;
  readonly sampleRate: number;
}

export type ToRecognitionWorker = RecognizeJob | AlignJob;

/** A word the decoder put in its result: milliseconds from the first sample given. */
export interface DecodedWord {
  readonly word: string;
  readonly startMs: number;
  readonly endMs: number;
}

export interface Recognized {
  readonly type: 'recognized';
  readonly jobId: number;
  /** The words of the best path, fillers (silence, noise) left out; empty when no path was found. */
  readonly words: readonly DecodedWord[];
  /** How well the path fits (confidence.ts); undefined with no words. */
  readonly fit: PathFit | undefined;
  /** The best path's total score, per frame decoded; undefined with no path. */
  readonly scorePerFrame: number | undefined;
  readonly cpuMs: number;
}

export interface Aligned {
  readonly type: 'aligned';
  readonly jobId: number;
  /** One per word given, in order. */
  readonly words: readonly DecodedWord[];
  readonly cpuMs: number;
}

export type RecognitionFailure = 'cancelled' | 'grammar' | 'alignment' | 'decoder';

export interface Failed {
  readonly type: 'failed';
  readonly jobId: number;
  readonly reason: RecognitionFailure;
  readonly message: string;
}

export type FromRecognitionWorker = Recognized | Aligned | Failed;

/**
 * The word an alignment puts where the text has one the dictionary lacks (a name, a number): the
 * model's spoken-noise phone, so the words around it stay in place.
 */
export const UNKNOWN_WORD = 'xunknownx';

/**
 * Shared between the pool and one worker: slot 0 holds the id of the job the pool no longer wants.
 * The decoder takes an utterance in one synchronous call (its cepstral mean is the whole utterance's),
 * so a job cannot be stopped part-way; the worker reads this slot before it starts one, which skips
 * a job abandoned on its way to the thread.
 */
export const CANCEL_SLOT = 0;
