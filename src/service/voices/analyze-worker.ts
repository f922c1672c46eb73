/**
 * Decodes and analyses uploaded samples off the main thread: a long MP3 takes a second or more of CPU,
 * which would otherwise stall every stream the server is playing.
 */
import { open, type FileHandle } from 'node:fs/promises';
import { parentPort } from 'node:worker_threads';
import { parseWav } from '../../audio/wav.js';
import { analyzeSpeech, type SpeechAnalysis } from './analyze.js';
import { decodeSample, UnsupportedSampleError } from './decode.js';

/** Read first: a WAV's headers and the start of its data, from which its bytes per second follow. */
const PROBE_BYTES = 1024 * 1024;

export interface AnalyzeRequest {
  type: 'analyze';
  /** Samples on disk, read here one at a time: the uploads never pass through the main thread's memory. */
  files: Array<{ fileName: string; mimeType: string; path: string }>;
  /** Only the start of a long sample is analysed: pitch and pace show within a minute. */
  maxSeconds: number;
}

export type AnalyzeResponse =
  | { type: 'analyses'; analyses: SpeechAnalysis[] }
  /** `unsupported`: audio it cannot read (a 400); `failed`: anything else. */
  | { type: 'unsupported' | 'failed'; message: string };

export type FromAnalyzeWorker = { type: 'ready' } | AnalyzeResponse;

async function readAt(handle: FileHandle, into: Buffer, from: number): Promise<void> {
  for (let done = from; done < into.length;) {
    const { bytesRead } = await handle.read(into, done, into.length - done, done);
    if (bytesRead === 0) throw new Error('sample file ended early');
    done += bytesRead;
  }
}

/**
 * The part of a sample file worth decoding: of a WAV, what holds its first `maxSeconds` of audio (a
 * 250 s WAV would otherwise be decoded whole, 4 bytes per sample, to analyse 60 s of it); of anything
 * else, the whole file (≤ maxFileBytes; MP3 decoding stops at `maxSeconds` by itself).
 */
async function readSampleStart(path: string, maxSeconds: number): Promise<Buffer> {
  const handle = await open(path, 'r');
  try {
    const { size } = await handle.stat();
    const probe = Buffer.alloc(Math.min(size, PROBE_BYTES));
    await readAt(handle, probe, 0);
    if (probe.length === size) return probe;
    let wanted = size;
    try {
      // The probe's frames give an upper bound of the bytes per frame (headers included in the bytes).
      const { sampleRate, samples } = parseWav(probe);
      if (samples.length > 0)
        wanted = Math.min(
          size,
          probe.length + Math.ceil(maxSeconds * sampleRate * (probe.length / samples.length)),
        );
    } catch {
      // Not a WAV, or one whose data starts past the probe: read it all.
    }
    const buf = Buffer.alloc(wanted);
    probe.copy(buf);
    await readAt(handle, buf, probe.length);
    return buf;
  } finally {
    await handle.close();
  }
}

async function run(request: AnalyzeRequest): Promise<AnalyzeResponse> {
  const analyses: SpeechAnalysis[] = [];
  for (const file of request.files) {
    try {
      const data = await readSampleStart(file.path, request.maxSeconds);
      const decoded = await decodeSample(data, file.fileName, file.mimeType, request.maxSeconds);
      const limit = Math.min(decoded.samples.length, Math.round(request.maxSeconds * decoded.sampleRate));
      analyses.push(analyzeSpeech(decoded.samples.subarray(0, limit), decoded.sampleRate));
    } catch (error) {
      return {
        type: error instanceof UnsupportedSampleError ? 'unsupported' : 'failed',
        message: error instanceof Error ? error.message : String(error),
      };
    }
  }
  return { type: 'analyses', analyses };
}

const port = parentPort;
if (!port) throw new Error('the voice analysis worker must run in a worker thread');
const post = (message: FromAnalyzeWorker): void => port.postMessage(message);
port.on('message', (request: AnalyzeRequest) => void run(request).then(post));
post({ type: 'ready' });
