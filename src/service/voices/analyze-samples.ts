import { WorkerPool } from '../../async/worker-pool.js';
import { compiledModule } from '../../paths.js';
import type { SpeechAnalysis } from './analyze.js';
import type { AnalyzeRequest, AnalyzeResponse } from './analyze-worker.js';
import { UnsupportedSampleError } from './decode.js';

const MAX_ANALYSIS_SECONDS = 60;

/**
 * Analyses voice samples in a short-lived worker thread (voices are added rarely; a pool kept running
 * would idle): a pool of one, for its single job. Throws UnsupportedSampleError for audio it cannot
 * read, and `WorkerCrashedError` if the thread dies on a sample.
 */
export async function analyzeSamples(
  files: ReadonlyArray<{ fileName: string; mimeType: string; path: string }>,
): Promise<SpeechAnalysis[]> {
  const request: AnalyzeRequest = {
    type: 'analyze',
    files: files.map(({ fileName, mimeType, path }) => ({ fileName, mimeType, path })),
    maxSeconds: MAX_ANALYSIS_SECONDS,
  };
  const pool = await WorkerPool.start<AnalyzeRequest, AnalyzeResponse>({
    module: compiledModule('service/voices/analyze-worker.js'),
    name: 'voice analysis worker',
    workers: 1,
    maxQueuedJobs: 1,
  });
  try {
    const response = await pool.request(request);
    if (response.type === 'analyses') return response.analyses;
    if (response.type === 'unsupported') throw new UnsupportedSampleError(response.message);
    throw new Error(`sample analysis failed: ${response.message}`);
  } finally {
    await pool.close();
  }
}
