/**
 * One engine thread: an instance of every engine that loads (`engines.ts`), one job at a time, each
 * handed to the engine its voice names. Synthesis is synchronous and would block the HTTP server, so it
 * runs here; audio goes back as the engine produces it, at 24 kHz, after the voice's effect, if any.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { Whisperer } from '../../audio/whisper.js';
import {
  OUTPUT_SAMPLE_RATE,
  type EngineId,
  type SpeechEngine,
  type SynthesisOutput,
  type WordTiming,
} from './engine.js';
import { loadEngines, type EngineOptions } from './engines.js';
import {
  CANCEL_SLOT,
  type EngineWorkerReady,
  type FromWorker,
  type SynthJob,
  type ToWorker,
} from './protocol.js';

const port = parentPort;
if (!port) throw new Error('engine worker must run in a worker thread');
const data = workerData as { cancel: SharedArrayBuffer; options: EngineOptions };
const cancel = new Int32Array(data.cancel);

const { engines, unavailable } = await loadEngines(data.options);
const byId = new Map<EngineId, SpeechEngine>(engines.map((e) => [e.descriptor.id, e]));
const whisperer = new Whisperer(OUTPUT_SAMPLE_RATE);

function post(message: FromWorker | EngineWorkerReady): void {
  if (message.type === 'audio') port!.postMessage(message, [message.samples.buffer as ArrayBuffer]);
  else port!.postMessage(message);
}

/** What the engine makes, to the pool; false (nothing sent) once the pool wants the job stopped. */
function output(job: SynthJob): SynthesisOutput & { cancelled: boolean; end(): void } {
  const effect = job.voice.effect === 'whisper' ? whisperer : undefined;
  effect?.reset();
  const state = {
    cancelled: false,
    audio(samples: Int16Array): boolean {
      if (Atomics.load(cancel, CANCEL_SLOT) === job.jobId) state.cancelled = true;
      if (state.cancelled) return false;
      const out = effect ? effect.push(samples) : samples;
      if (out.length > 0) post({ type: 'audio', jobId: job.jobId, samples: out });
      return true;
    },
    words(words: readonly WordTiming[]): void {
      if (!state.cancelled && words.length > 0) post({ type: 'words', jobId: job.jobId, words: [...words] });
    },
    /** The effect's last samples. */
    end(): void {
      const tail = effect?.flush();
      if (tail && tail.length > 0 && !state.cancelled)
        post({ type: 'audio', jobId: job.jobId, samples: tail });
    },
  };
  return state;
}

async function run(job: SynthJob): Promise<void> {
  const engine = byId.get(job.voice.engine);
  if (!engine) throw new Error(`the ${job.voice.engine} engine is not available in this process`);
  const out = output(job);
  // The voice names its engine, so its parameters are that engine's.
  const finished = await engine.synthesize(job.text, job.voice, job.timings, out);
  if (finished && !out.cancelled) out.end();
  post({ type: 'done', jobId: job.jobId, cancelled: !finished || out.cancelled });
}

/** Jobs come one at a time (the pool waits for `done`), but a job may await: they are chained. */
let queue = Promise.resolve();
port.on('message', (job: ToWorker) => {
  queue = queue.then(async () => {
    try {
      await run(job);
    } catch (error) {
      post({
        type: 'failed',
        jobId: job.jobId,
        message: error instanceof Error ? error.message : String(error),
      });
    }
    // Between jobs: an engine that makes its next instance ahead of time does it now.
    setImmediate(() => {
      for (const engine of engines) engine.prepare?.();
    });
  });
});

for (const engine of engines) engine.prepare?.();
post({
  type: 'ready',
  engines: engines.map((e) => e.descriptor),
  unavailable,
});
