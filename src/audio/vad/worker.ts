/**
 * The detectors of the calls assigned to this thread (see pool.ts), each a `SpeechOnsetDetector` on
 * the thread's one Silero session, its echo estimator beside it. Messages are handled one after
 * another, never interleaved, and a batch's pushes in the order sent: a stream's audio reaches its
 * detector in order, and a probe sees every push sent before it.
 */
import { parentPort } from 'node:worker_threads';
import { SpeechOnsetDetector, type SpeechTurn } from './detector.js';
import {
  PUSH_FIELDS,
  RESULT_FIELDS,
  type FromVadWorker,
  type PushBatch,
  type PushResults,
  type ToVadWorker,
} from './protocol.js';
import { SileroModel, SileroSession } from './silero.js';

const port = parentPort;
if (!port) throw new Error('the VAD worker must run in a worker thread');

const session = await SileroSession.create();
const model = new SileroModel(session);

interface Hosted {
  detector: SpeechOnsetDetector;
  /** Turns that ended since the last push's result was taken. */
  turns: SpeechTurn[];
}

const detectors = new Map<number, Hosted>();

function post(message: FromVadWorker, transfer: ArrayBuffer[] = []): void {
  port!.postMessage(message, transfer);
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

async function run(batch: PushBatch): Promise<void> {
  for (const { stream, options } of batch.opens) {
    const { turns: wantsTurns, ...rest } = options;
    const turns: SpeechTurn[] = [];
    const detector = new SpeechOnsetDetector(model, {
      ...rest,
      onTurnEnd: wantsTurns ? (turn) => turns.push(turn) : undefined,
    });
    detectors.get(stream)?.detector.close();
    detectors.set(stream, { detector, turns });
  }
  const waitedMs = Math.max(0, performance.timeOrigin + performance.now() - batch.sentAt);
  const { meta, audio } = batch;
  const count = meta.length / PUSH_FIELDS;
  // Results go back in the order of the pushes, and at once up to a push that found an onset: the
  // call's barge-in does not wait for the rest of the batch (other calls' windows, Silero's included).
  let first = 0;
  let out = results(count);
  const flush = (end: number): void => {
    const done = out.meta.slice(0, (end - first) * RESULT_FIELDS);
    post({ ...out, meta: done }, [done.buffer]);
    first = end;
    out = results(count - end);
  };
  let offset = 0;
  for (let i = 0; i < count; i++) {
    const m = i * PUSH_FIELDS;
    const id = meta[m]!;
    const timestampMs = meta[m + 2]!;
    const samples = audio.subarray(offset, offset + meta[m + 4]!);
    offset += samples.length;
    const referenceLength = meta[m + 5]!;
    const reference = referenceLength > 0 ? audio.subarray(offset, offset + referenceLength) : undefined;
    offset += referenceLength;
    const r = (i - first) * RESULT_FIELDS;
    out.meta[r] = id;
    const hosted = detectors.get(meta[m + 1]!);
    if (!hosted) {
      out.errors.push({ id, error: `no detector for stream ${meta[m + 1]}` });
      continue;
    }
    try {
      const onset = await hosted.detector.push(samples, {
        ...(Number.isNaN(timestampMs) ? {} : { timestampMs }),
        botAudible: meta[m + 3] === 1,
        reference,
        referenceMoved: meta[m + 6]!,
        waitedMs,
      });
      if (onset) {
        out.meta[r + 1] = 1;
        out.meta[r + 2] = onset.onsetMs;
        out.meta[r + 3] = onset.detectedMs;
        out.meta[r + 4] = onset.probability;
      }
    } catch (error) {
      out.errors.push({ id, error: errorText(error) });
    }
    if (hosted.turns.length > 0) {
      for (const turn of hosted.turns) out.turns.push({ id, turn });
      hosted.turns.length = 0;
    }
    if (out.meta[r + 1] === 1 && i + 1 < count) flush(i + 1);
  }
  for (const stream of batch.closes) {
    detectors.get(stream)?.detector.close();
    detectors.delete(stream);
  }
  post(out, [out.meta.buffer as ArrayBuffer]);
}

function results(count: number): PushResults {
  return { type: 'results', meta: new Float64Array(count * RESULT_FIELDS), turns: [], errors: [] };
}

/** A batch that could not run at all: every push in it is answered with the error. */
function refuse(batch: PushBatch, error: unknown): void {
  const count = batch.meta.length / PUSH_FIELDS;
  const errors = Array.from({ length: count }, (_, i) => ({
    id: batch.meta[i * PUSH_FIELDS]!,
    error: errorText(error),
  }));
  post({ ...results(0), errors });
}

async function handle(message: ToVadWorker): Promise<void> {
  switch (message.type) {
    case 'batch':
      // Whatever fails, every push is answered: a call waiting for one would wait for ever.
      return run(message).catch((error: unknown) => refuse(message, error));
    case 'probe':
      post({ type: 'probe', id: message.id, detectors: detectors.size });
      return;
  }
}

let turn: Promise<void> = Promise.resolve();
port.on('message', (message: ToVadWorker) => {
  turn = turn.then(() => handle(message));
});

post({ type: 'ready', runtime: session.runtime });
