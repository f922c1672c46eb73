/** Messages between the engine pool (main thread) and an engine worker thread. */
import type { EngineDescriptor, WordTiming } from './engine.js';
import type { EngineUnavailable } from './engines.js';
import type { VoiceParams } from './voice-params.js';

export interface SynthJob {
  readonly type: 'synth';
  readonly jobId: number;
  readonly text: string;
  /** Names the engine (`voice.engine`) and how it speaks. */
  readonly voice: VoiceParams;
  /** Also report when each word is spoken (`words` messages); off for plain speech, which needs none. */
  readonly timings: boolean;
}

export type ToWorker = SynthJob;

/** A worker's first message, before any job: the engines it loaded, and those it could not. */
export interface EngineWorkerReady {
  readonly type: 'ready';
  readonly engines: readonly EngineDescriptor[];
  readonly unavailable: readonly EngineUnavailable[];
}

/** A job's messages. */
export type FromWorker =
  | { readonly type: 'audio'; readonly jobId: number; readonly samples: Int16Array }
  /**
   * Words the engine finished, sent ahead of the audio they came with when the engine knows them
   * early (eSpeak), or with the piece's last audio (Flite, which knows them once it has made it all);
   * the last ones of a job may come after its last audio.
   */
  | { readonly type: 'words'; readonly jobId: number; readonly words: readonly WordTiming[] }
  | { readonly type: 'done'; readonly jobId: number; readonly cancelled: boolean }
  | { readonly type: 'failed'; readonly jobId: number; readonly message: string };

/**
 * Shared between the pool and one worker: slot 0 holds the id of the job the pool wants stopped. The
 * worker's synthesis is synchronous, so it cannot receive a message mid-job; the engine's output
 * polls this slot instead (every chunk of audio, i.e. well under a millisecond of work).
 */
export const CANCEL_SLOT = 0;
