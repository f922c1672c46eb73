/**
 * The detectors of the calls assigned to this thread (see pool.ts), each a `SpeechOnsetDetector` on
 * the thread's one Silero session, its echo estimator beside it.
 *
 * A batch's pushes join a queue per stream, and the thread works through them a slice at a time
 * (`SLICE_MS`), letting new batches in between slices. Each stream's pushes run in order, but not the
 * streams in the order they came: a stream whose detector is listening (Silero heard the last window,
 * or a run of speech is under way) goes first, the others then oldest first. When the thread falls
 * behind (the cores are busy), a caller who has begun to speak is heard with the audio that comes next,
 * not after every other call's backlog: the windows that confirm the run are not in the queue behind
 * lines that hold only noise or the bot's echo. The others wait longer instead, and past `MAX_LAG_MS`
 * are judged by the energy gate alone until they catch up (the gate never starts a run).
 *
 * Results go back at the end of each slice, and at once after a push that found an onset or ended a
 * turn. A probe is answered once every push sent before it has run.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { SpeechOnsetDetector, type SpeechTurn } from './detector.js';
import {
  PUSH_FIELDS,
  RESULT_FIELDS,
  sharedNow,
  type FromVadWorker,
  type PushBatch,
  type PushResults,
  type ToVadWorker,
  type VadWorkerReady,
} from './protocol.js';
import { SileroModel, SileroSession, type SileroSessionOptions } from './silero.js';

const port = parentPort;
if (!port) throw new Error('the VAD worker must run in a worker thread');

/**
 * Work done between two looks at the thread's messages (ms): a push from a listening stream waits at
 * most this long behind the others' (about 20 pushes of 20 ms, a few of them with a Silero window).
 */
const SLICE_MS = 2;

const session = await SileroSession.create(undefined, (workerData ?? {}) as SileroSessionOptions);
const model = new SileroModel(session);

interface Push {
  id: number;
  stream: Hosted;
  /** The order it arrived in, over all streams (probes wait for the pushes before them). */
  seq: number;
  samples: Int16Array;
  timestampMs: number;
  botAudible: boolean;
  reference: Int16Array | undefined;
  referenceMoved: number;
  /** When its batch was sent (the shared clock): its wait counts as the detector's lag. */
  sentAt: number;
  done: boolean;
}

interface Hosted {
  stream: number;
  /** Absent when it could not be made: its pushes are answered with `error`. */
  detector: SpeechOnsetDetector | undefined;
  error: string | undefined;
  /** Turns that ended since the last push's result was taken. */
  turns: SpeechTurn[];
  /** Its pushes not yet run, oldest first. */
  queue: Push[];
  /** Dropped by the pool: closed once its queue is empty. */
  closing: boolean;
}

const hosted = new Map<number, Hosted>();
/** Every push not yet run (and some that ran out of turn, `done`), in the order they came. */
let arrivals: Push[] = [];
let head = 0;
/** Streams that are listening and have pushes queued: they go first. */
const listening = new Set<Hosted>();
let seq = 0;
const probes: Array<{ id: number; after: number }> = [];
let running = false;

/** The results gathered since they last went back. */
let outMeta: number[] = [];
let outTurns: PushResults['turns'] = [];
let outErrors: PushResults['errors'] = [];
/** The detectors' skipped windows and inferences since the last results (`PushResults`). */
let outSkipped = 0;
let outInferences = 0;

function post(message: FromVadWorker | VadWorkerReady, transfer: ArrayBuffer[] = []): void {
  port!.postMessage(message, transfer);
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function sendResults(): void {
  if (outMeta.length === 0 && outErrors.length === 0) return;
  const meta = Float64Array.from(outMeta);
  post(
    {
      type: 'results',
      meta,
      turns: outTurns,
      errors: outErrors,
      skipped: outSkipped,
      inferences: outInferences,
    },
    [meta.buffer],
  );
  outMeta = [];
  outTurns = [];
  outErrors = [];
  outSkipped = 0;
  outInferences = 0;
}

function open(stream: number, options: PushBatch['opens'][number]['options']): void {
  const { turns: wantsTurns, ...rest } = options;
  const h: Hosted = hosted.get(stream) ?? {
    stream,
    detector: undefined,
    error: undefined,
    turns: [],
    queue: [],
    closing: false,
  };
  // (The pool opens a stream once per worker; pushes already queued would go to the new detector.)
  h.detector?.close();
  h.detector = undefined;
  h.error = undefined;
  h.closing = false;
  try {
    h.detector = new SpeechOnsetDetector(model, {
      ...rest,
      onTurnEnd: wantsTurns ? (turn) => h.turns.push(turn) : undefined,
    });
  } catch (error) {
    h.error = errorText(error);
  }
  hosted.set(stream, h);
}

function close(stream: number): void {
  const h = hosted.get(stream);
  if (!h) return;
  h.closing = true;
  if (h.queue.length === 0) drop(h);
}

function drop(h: Hosted): void {
  h.detector?.close();
  hosted.delete(h.stream);
  listening.delete(h);
}

function enqueue(batch: PushBatch): void {
  for (const { stream, options } of batch.opens) open(stream, options);
  const { meta, audio, sentAt } = batch;
  const count = meta.length / PUSH_FIELDS;
  let offset = 0;
  for (let i = 0; i < count; i++) {
    const m = i * PUSH_FIELDS;
    const samples = audio.subarray(offset, offset + meta[m + 4]!);
    offset += samples.length;
    const referenceLength = meta[m + 5]!;
    const reference = referenceLength > 0 ? audio.subarray(offset, offset + referenceLength) : undefined;
    offset += referenceLength;
    const id = meta[m]!;
    const stream = hosted.get(meta[m + 1]!);
    if (!stream) {
      outErrors.push({ id, error: `no detector for stream ${meta[m + 1]}` });
      continue;
    }
    const push: Push = {
      id,
      stream,
      seq: seq++,
      samples,
      timestampMs: meta[m + 2]!,
      botAudible: meta[m + 3] === 1,
      reference,
      referenceMoved: meta[m + 6]!,
      sentAt,
      done: false,
    };
    stream.queue.push(push);
    arrivals.push(push);
    if (stream.detector?.listening) listening.add(stream);
  }
  for (const stream of batch.closes) close(stream);
}

/** The next push to run: a listening stream's first, else the oldest. */
function next(): Push | undefined {
  for (const stream of listening) {
    const push = stream.queue[0];
    if (push) return push;
    listening.delete(stream);
  }
  return oldest();
}

/** The oldest push not yet run (the head of its stream's queue: each queue runs in order). */
function oldest(): Push | undefined {
  while (head < arrivals.length && arrivals[head]!.done) head++;
  if (head > 1024 && head * 2 > arrivals.length) {
    arrivals = arrivals.slice(head);
    head = 0;
  }
  return arrivals[head];
}

async function runPush(push: Push): Promise<void> {
  const { stream } = push;
  stream.queue.shift();
  push.done = true;
  const { detector } = stream;
  let found = false;
  if (!detector) outErrors.push({ id: push.id, error: stream.error ?? 'no detector' });
  else {
    // RESULT_FIELDS numbers (protocol.ts): the onset's fields stay 0 when it found none.
    const r = outMeta.length;
    const counts = detector.stats;
    const skippedBefore = counts.skipped;
    const inferencesBefore = counts.inferences;
    outMeta.push(push.id);
    for (let k = 1; k < RESULT_FIELDS; k++) outMeta.push(0);
    try {
      const onset = await detector.push(push.samples, {
        timestampMs: Number.isNaN(push.timestampMs) ? undefined : push.timestampMs,
        botAudible: push.botAudible,
        reference: push.reference,
        referenceMoved: push.referenceMoved,
        waitedMs: Math.max(0, sharedNow() - push.sentAt),
      });
      if (onset) {
        outMeta[r + 1] = 1;
        outMeta[r + 2] = onset.onsetMs;
        outMeta[r + 3] = onset.detectedMs;
        outMeta[r + 4] = onset.probability;
        outMeta[r + 5] = onset.speechStartMs;
        found = true;
      }
      const silence = detector.callerSilence;
      outMeta[r + 6] = silence ? silence.fromMs : Number.NaN;
      outMeta[r + 7] = silence ? silence.quietMs : Number.NaN;
    } catch (error) {
      outMeta.length = r;
      outErrors.push({ id: push.id, error: errorText(error) });
    }
    outSkipped += counts.skipped - skippedBefore;
    outInferences += counts.inferences - inferencesBefore;
    if (stream.turns.length > 0) {
      for (const turn of stream.turns) outTurns.push({ id: push.id, turn });
      stream.turns.length = 0;
      found = true;
    }
    if (detector.listening && stream.queue.length > 0) listening.add(stream);
    else listening.delete(stream);
  }
  if (stream.closing && stream.queue.length === 0) drop(stream);
  // An onset (or a turn's end) goes back at once: the call's barge-in waits for nothing else.
  if (found) sendResults();
}

/** Probes whose pushes have all run. */
function answerProbes(): void {
  if (probes.length === 0) return;
  const pending = oldest()?.seq ?? seq;
  while (probes.length > 0 && probes[0]!.after <= pending) {
    // A stream dropped before the probe has no push left before it either: it is gone.
    post({ type: 'probe', id: probes.shift()!.id, detectors: hosted.size });
  }
}

async function slice(): Promise<void> {
  const until = performance.now() + SLICE_MS;
  try {
    for (let push = next(); push; push = performance.now() < until ? next() : undefined) await runPush(push);
  } finally {
    sendResults();
    answerProbes();
    if (next()) setImmediate(runSlice);
    else running = false;
  }
}

function runSlice(): void {
  void slice();
}

function start(): void {
  if (running) return;
  running = true;
  setImmediate(runSlice);
}

/** A batch that could not be taken in at all: its pushes are answered with the error. */
function refuse(batch: PushBatch, error: unknown): void {
  const count = batch.meta.length / PUSH_FIELDS;
  for (let i = 0; i < count; i++)
    outErrors.push({ id: batch.meta[i * PUSH_FIELDS]!, error: errorText(error) });
  sendResults();
}

port.on('message', (message: ToVadWorker) => {
  switch (message.type) {
    case 'batch':
      // Whatever fails, every push is answered: a call waiting for one would wait for ever.
      try {
        enqueue(message);
      } catch (error) {
        refuse(message, error);
      }
      start();
      return;
    case 'probe':
      probes.push({ id: message.id, after: seq });
      answerProbes();
      return;
  }
});

post({ type: 'ready', runtime: session.runtime, fallback: session.fallback });
