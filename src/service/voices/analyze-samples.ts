import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import { compiledModule } from '../../paths.js';
import type { SpeechAnalysis } from './analyze.js';
import type { AnalyzeRequest, AnalyzeResponse } from './analyze-worker.js';
import { UnsupportedSampleError } from './decode.js';

const MAX_ANALYSIS_SECONDS = 60;

/**
 * Analyses voice samples in a short-lived worker thread (voices are added rarely; a pool would idle).
 * Throws UnsupportedSampleError for audio it cannot read.
 */
export async function analyzeSamples(
  files: ReadonlyArray<{ fileName: string; mimeType: string; path: string }>,
): Promise<SpeechAnalysis[]> {
  const request: AnalyzeRequest = {
    files: files.map(({ fileName, mimeType, path }) => ({ fileName, mimeType, path })),
    maxSeconds: MAX_ANALYSIS_SECONDS,
  };
  const worker = new Worker(compiledModule('service/voices/analyze-worker.js'), { workerData: request });
  try {
    const [response] = (await once(worker, 'message')) as [AnalyzeResponse];
    if (response.ok) return response.analyses;
    if (response.unsupported) throw new UnsupportedSampleError(response.message);
    throw new Error(`sample analysis failed: ${response.message}`);
  } finally {
    await worker.terminate();
  }
}
