/**
 * Messages between the VAD worker pool (pool.ts) and its workers (worker.ts). Each worker hosts whole
 * detectors (detector.ts), one per stream (a call's caller audio), with the Silero state and the echo
 * estimator they carry: a stream's pushes all go to its worker, in order.
 *
 * The pushes of one turn of the event loop travel as one message: their numbers packed in a
 * `Float64Array` and their audio in one `Int16Array`, both transferred, not cloned (a clone costs per
 * object, and there are thousands of pushes a second).
 */
import type { DetectorOptions, SpeechTurn } from './detector.js';

/**
 * A hosted detector's options: those of `DetectorOptions` that can cross a thread (not its functions),
 * and whether the ends of the caller's turns are wanted (they come back with the results).
 */
export type HostedDetectorOptions = Omit<DetectorOptions, 'now' | 'onTurnEnd' | 'onSilence'> & {
  turns: boolean;
};

/**
 * Each push's numbers in `PushBatch.meta`, in this order: its id, its stream, its inbound timestamp
 * (NaN: none), whether the bot was audible (0 or 1), its samples' length, its reference's length (0:
 * none), how far its reference moved (samples, `PushInfo.referenceMoved`). Its samples then its
 * reference follow the previous push's in `audio`.
 */
export const PUSH_FIELDS = 7;

/** The wall clock every thread shares (ms): a batch's `sentAt`, and the worker's measure of its wait. */
export function sharedNow(): number {
  return performance.timeOrigin + performance.now();
}

export interface PushBatch {
  type: 'batch';
  /** Streams to start, before the pushes (a stream's first push, or its first on a new worker). */
  opens: Array<{ stream: number; options: HostedDetectorOptions }>;
  meta: Float64Array;
  audio: Int16Array;
  /** When the batch was sent (`performance.timeOrigin + performance.now()`): its wait counts as lag. */
  sentAt: number;
  /** Streams to drop, after the pushes. */
  closes: number[];
}

/**
 * Each push's outcome in `PushResults.meta`: its id, 1 when it completed an onset (else 0), the onset's
 * `onsetMs`, `detectedMs`, `probability` and `speechStartMs`, then the caller's silence after it
 * (`callerSilence`: `fromMs` and `quietMs`, NaN before their first onset). A stream's results come
 * back in the order of its pushes; different streams' need not (the worker runs a stream whose caller
 * may be speaking first).
 */
export const RESULT_FIELDS = 8;

export interface PushResults {
  type: 'results';
  meta: Float64Array;
  /** Turns that ended while a push was processed (rare), by the push's id. */
  turns: Array<{ id: number; turn: SpeechTurn }>;
  /** Pushes that failed, by id. */
  errors: Array<{ id: number; error: string }>;
  /**
   * Since the last results: windows that would have woken Silero but were judged by the energy gate
   * alone, their detector being behind (`DetectorStats.skipped`), and Silero inferences run.
   */
  skipped: number;
  inferences: number;
}

export type ToVadWorker =
  | PushBatch
  /** Diagnostics: how many detectors the worker holds (after every message sent before). */
  | { type: 'probe'; id: number };

/** The worker's first message: its model is loaded and warmed up. */
export interface VadWorkerReady {
  type: 'ready';
  runtime: string;
  /** Why the native runtime did not load, when the worker fell back to WASM (silero.ts). */
  fallback?: string | undefined;
}

export type FromVadWorker = PushResults | { type: 'probe'; id: number; detectors: number };
