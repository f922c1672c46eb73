/** Messages between the VAD worker pool (pool.ts) and its workers (worker.ts). */
import type { EchoVerdict } from './echo.js';
import type { VadSampleRate } from './silero.js';

/** One Silero window with its call's state: any worker can run it. */
export interface SileroJob {
  kind: 'silero';
  id: number;
  input: Float32Array;
  state: Float32Array;
  sampleRate: VadSampleRate;
}

/**
 * One window of a call's echo estimation. The estimator's state lives in the worker, keyed by
 * `stream`, so a stream's jobs always go to the same worker; a worker that has no state for `stream`
 * (its first window, or the stream's worker died) starts a fresh estimator.
 */
export interface EchoJob {
  kind: 'echo';
  id: number;
  stream: number;
  inbound: Int16Array;
  reference: Int16Array;
  sampleRate: VadSampleRate;
}

export type VadJob = SileroJob | EchoJob;

export type VadJobResult =
  | { id: number; p: number; state: Float32Array }
  | { id: number; verdict: EchoVerdict }
  | { id: number; error: string };

export type ToVadWorker =
  /**
   * Jobs go out in batches: every window queued for a worker during one turn of the event loop, run
   * in the order given (a stream's echo windows must be, its estimator depends on the previous ones).
   */
  | { type: 'run'; jobs: VadJob[] }
  /** Drop these echo streams' estimators (after every job sent before). */
  | { type: 'closeEcho'; streams: number[] }
  /** Diagnostics: how many echo estimators the worker holds (after every message sent before). */
  | { type: 'probe'; id: number };

export type FromVadWorker =
  | { type: 'ready'; runtime: string }
  | { type: 'results'; results: VadJobResult[] }
  | { type: 'probe'; id: number; echoStreams: number };
