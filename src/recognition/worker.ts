/**
 * One recognition thread: a `SphinxDecoder` (the model loaded once, grammars compiled once), one job at
 * a time. Decoding is synchronous and takes tens of milliseconds a second of audio, so it runs here,
 * off the event loop. A job's answer is its only message.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { isFiller, loudFrames, pathFit } from './confidence.js';
import { decoderInput, SphinxDecoder, type Decoded } from './decoder.js';
import { FRAMES_PER_SECOND } from './model.js';
import {
  CANCEL_SLOT,
  type DecodedWord,
  type FromRecognitionWorker,
  type ToRecognitionWorker,
} from './protocol.js';

const port = parentPort;
if (!port) throw new Error('the recognition worker must run in a worker thread');
const cancel = new Int32Array((workerData as { cancel: SharedArrayBuffer }).cancel);

const decoder = await SphinxDecoder.create();

const FRAME_MS = 1000 / FRAMES_PER_SECOND;

/** The path's words (fillers out, alternate pronunciations by their base word), in ms. */
function words(decoded: Decoded): DecodedWord[] {
  return decoded.segments
    .filter((s) => !isFiller(s.word))
    .map((s) => ({
      word: s.word.replace(/\(\d+\)$/, ''),
      startMs: s.startFrame * FRAME_MS,
      endMs: (s.endFrame + 1) * FRAME_MS,
    }));
}

function run(job: ToRecognitionWorker): FromRecognitionWorker {
  const { jobId } = job;
  if (Atomics.load(cancel, CANCEL_SLOT) === jobId)
    return { type: 'failed', jobId, reason: 'cancelled', message: 'cancelled' };
  const started = performance.now();
  const input = decoderInput(job.samples, job.sampleRate);
  if (job.type === 'recognize') {
    let decoded: Decoded;
    try {
      decoded = decoder.recognize(job.grammarId, job.jsgf, input);
    } catch (error) {
      return { type: 'failed', jobId, reason: 'grammar', message: (error as Error).message };
    }
    return {
      type: 'recognized',
      jobId,
      words: words(decoded),
      fit: pathFit(decoded.segments, loudFrames(input)),
      scorePerFrame:
        decoded.score === undefined || decoded.frames === 0 ? undefined : decoded.score / decoded.frames,
      cpuMs: performance.now() - started,
    };
  }
  const decoded = decoder.align(job.words, input);
  const aligned = words(decoded);
  if (aligned.length !== job.words.length)
    return {
      type: 'failed',
      jobId,
      reason: 'alignment',
      message:
        aligned.length === 0
          ? 'the text could not be aligned to the audio'
          : `aligned ${aligned.length} of ${job.words.length} words`,
    };
  return { type: 'aligned', jobId, words: aligned, cpuMs: performance.now() - started };
}

port.on('message', (job: ToRecognitionWorker) => {
  let answer: FromRecognitionWorker;
  try {
    answer = run(job);
  } catch (error) {
    answer = {
      type: 'failed',
      jobId: job.jobId,
      reason: 'decoder',
      message: error instanceof Error ? error.message : String(error),
    };
  }
  port.postMessage(answer);
});

port.postMessage({ type: 'ready' });
