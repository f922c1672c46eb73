/**
 * One Silero session and the echo estimators of the calls assigned to it, on their own thread (see
 * pool.ts). Runs each batch's jobs in order and answers with all of their results at once. Messages
 * are handled one after another, never interleaved (Silero's runs are awaited): a stream's echo
 * windows are estimated in the order sent, and a close or a probe sees every job sent before it.
 */
import { parentPort } from 'node:worker_threads';
import { EchoEstimator } from './echo.js';
import type { FromVadWorker, ToVadWorker, VadJob, VadJobResult } from './protocol.js';
import { SileroSession } from './silero.js';

const port = parentPort;
if (!port) throw new Error('the VAD worker must run in a worker thread');

const session = await SileroSession.create();
/** The echo estimators of the streams sent here, created on a stream's first window. */
const estimators = new Map<number, EchoEstimator>();

function post(message: FromVadWorker): void {
  port!.postMessage(message);
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

async function runJob(job: VadJob): Promise<VadJobResult> {
  try {
    if (job.kind === 'silero') {
      const { p, state } = await session.run(job.input, job.state, job.sampleRate);
      return { id: job.id, p, state };
    }
    let estimator = estimators.get(job.stream);
    if (!estimator) {
      estimator = new EchoEstimator(job.sampleRate);
      estimators.set(job.stream, estimator);
    }
    return { id: job.id, verdict: estimator.process(job.inbound, job.reference) };
  } catch (error) {
    return { id: job.id, error: errorText(error) };
  }
}

async function handle(message: ToVadWorker): Promise<void> {
  switch (message.type) {
    case 'run': {
      const results: VadJobResult[] = [];
      for (const job of message.jobs) results.push(await runJob(job));
      post({ type: 'results', results });
      return;
    }
    case 'closeEcho':
      for (const stream of message.streams) estimators.delete(stream);
      return;
    case 'probe':
      post({ type: 'probe', id: message.id, echoStreams: estimators.size });
      return;
  }
}

let turn: Promise<void> = Promise.resolve();
port.on('message', (message: ToVadWorker) => {
  turn = turn.then(() => handle(message));
});

post({ type: 'ready', runtime: session.runtime });
