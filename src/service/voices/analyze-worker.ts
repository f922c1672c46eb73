/**
 * Decodes and analyses uploaded samples off the main thread: a long MP3 takes a second or more of CPU,
 * which would otherwise stall every stream the server is playing.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { analyzeSpeech, type SpeechAnalysis } from './analyze.js';
import { decodeSample, UnsupportedSampleError } from './decode.js';

export interface AnalyzeRequest {
  files: Array<{ fileName: string; mimeType: string; data: Uint8Array }>;
  /** Only the start of a long sample is analysed: pitch and pace show within a minute. */
  maxSeconds: number;
}

export type AnalyzeResponse =
  { ok: true; analyses: SpeechAnalysis[] } | { ok: false; unsupported: boolean; message: string };

async function run(request: AnalyzeRequest): Promise<AnalyzeResponse> {
  const analyses: SpeechAnalysis[] = [];
  for (const file of request.files) {
    try {
      const decoded = await decodeSample(file.data, file.fileName, file.mimeType);
      const limit = Math.min(decoded.samples.length, Math.round(request.maxSeconds * decoded.sampleRate));
      analyses.push(analyzeSpeech(decoded.samples.subarray(0, limit), decoded.sampleRate));
    } catch (error) {
      return {
        ok: false,
        unsupported: error instanceof UnsupportedSampleError,
        message: error instanceof Error ? error.message : String(error),
      };
    }
  }
  return { ok: true, analyses };
}

parentPort!.postMessage(await run(workerData as AnalyzeRequest));
