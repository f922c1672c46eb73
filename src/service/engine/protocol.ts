/** Messages between the engine pool (main thread) and an engine worker thread. */
import type { EngineVoiceParams } from '../voices/params.js';

export const ENGINE_SAMPLE_RATE = 22_050;
export const OUTPUT_SAMPLE_RATE = 24_000;

export interface SynthJob {
  readonly type: 'synth';
  readonly jobId: number;
  readonly text: string;
  readonly voice: EngineVoiceParams;
}

export type ToWorker = SynthJob;

export type FromWorker =
  | { readonly type: 'ready' }
  | { readonly type: 'audio'; readonly jobId: number; readonly samples: Int16Array }
  | { readonly type: 'done'; readonly jobId: number; readonly cancelled: boolean }
  | { readonly type: 'failed'; readonly jobId: number; readonly message: string };

/**
 * Shared between the pool and one worker: slot 0 holds the id of the job the pool wants stopped. The
 * worker's synthesis loop is synchronous, so it cannot receive a message mid-job; it polls this slot
 * from eSpeak's callback instead (every ~100 ms of audio, i.e. well under a millisecond of work).
 */
export const CANCEL_SLOT = 0;
