/**
 * One eSpeak-NG instance on its own thread. Synthesis is synchronous and would block the HTTP server,
 * so it runs here; audio goes back in ~100 ms chunks as eSpeak produces them, already resampled from
 * eSpeak's 22 050 Hz to the service's 24 000 Hz.
 */
import { parentPort, workerData } from 'node:worker_threads';
import Init from '@echogarden/espeak-ng-emscripten';
import { Resampler } from '../../audio/resampler.js';
import {
  CANCEL_SLOT,
  ENGINE_SAMPLE_RATE,
  OUTPUT_SAMPLE_RATE,
  type FromWorker,
  type ToWorker,
  type WordTiming,
} from './protocol.js';
import { escapeSsml } from './ssml.js';
import { WordMarks } from './word-marks.js';

const port = parentPort;
if (!port) throw new Error('engine worker must run in a worker thread');
const cancel = new Int32Array((workerData as { cancel: SharedArrayBuffer }).cancel);

const engine = new (await Init()).eSpeakNGWorker();
const resampler = new Resampler({ inputRate: ENGINE_SAMPLE_RATE, outputRate: OUTPUT_SAMPLE_RATE });

function post(message: FromWorker | { type: 'ready' }): void {
  if (message.type === 'audio') port!.postMessage(message, [message.samples.buffer as ArrayBuffer]);
  else port!.postMessage(message);
}

function postWords(jobId: number, words: WordTiming[]): void {
  if (words.length > 0) post({ type: 'words', jobId, words });
}

function run(job: Extract<ToWorker, { type: 'synth' }>): void {
  const v = job.voice;
  engine.set_voice(`${v.language}+${v.variant}`);
  engine.rate = v.rateWpm;
  engine.pitch = v.pitch;
  engine.range = v.range;
  resampler.reset();
  // Only a request for timings pays for them (reading the events, one backward scan of the samples).
  const marks = job.timings ? new WordMarks(job.text, ENGINE_SAMPLE_RATE) : undefined;
  let cancelled = false;
  engine.synthesize(escapeSsml(job.text), (samples, events) => {
    if (Atomics.load(cancel, CANCEL_SLOT) === job.jobId) {
      cancelled = true;
      return true;
    }
    if (marks) postWords(job.jobId, marks.push(samples, events));
    const out = resampler.push(samples);
    if (out.length > 0) post({ type: 'audio', jobId: job.jobId, samples: out });
    return false;
  });
  if (!cancelled) {
    if (marks) postWords(job.jobId, marks.end());
    const tail = resampler.flush();
    if (tail.length > 0) post({ type: 'audio', jobId: job.jobId, samples: tail });
  }
  post({ type: 'done', jobId: job.jobId, cancelled });
}

port.on('message', (job: ToWorker) => {
  try {
    run(job);
  } catch (error) {
    post({
      type: 'failed',
      jobId: job.jobId,
      message: error instanceof Error ? error.message : String(error),
    });
  }
});
post({ type: 'ready' });
