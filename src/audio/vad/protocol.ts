/** Messages between the VAD worker pool (pool.ts) and its workers (worker.ts). */
import type { VadSampleRate } from './silero.js';

export interface VadJob {
  id: number;
  input: Float32Array;
  state: Float32Array;
  sampleRate: VadSampleRate;
}

export type VadJobResult = { id: number; p: number; state: Float32Array } | { id: number; error: string };

/** Jobs go out in batches: every window queued for a worker during one turn of the event loop. */
export type ToVadWorker = { type: 'run'; jobs: VadJob[] };

export type FromVadWorker = { type: 'ready'; runtime: string } | { type: 'results'; results: VadJobResult[] };
