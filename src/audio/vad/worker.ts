/**
 * One Silero session on its own thread (see pool.ts). Runs each batch's windows in order and answers
 * with all of their results at once.
 */
import { parentPort } from 'node:worker_threads';
import type { FromVadWorker, ToVadWorker, VadJobResult } from './protocol.js';
import { SileroSession } from './silero.js';

const port = parentPort;
if (!port) throw new Error('the VAD worker must run in a worker thread');

const session = await SileroSession.create();

function post(message: FromVadWorker): void {
  port!.postMessage(message);
}

port.on('message', (message: ToVadWorker) => {
  void (async () => {
    const results: VadJobResult[] = [];
    for (const job of message.jobs) {
      try {
        const { p, state } = await session.run(job.input, job.state, job.sampleRate);
        results.push({ id: job.id, p, state });
      } catch (error) {
        results.push({ id: job.id, error: error instanceof Error ? error.message : String(error) });
      }
    }
    post({ type: 'results', results });
  })();
});

post({ type: 'ready', runtime: session.runtime });
