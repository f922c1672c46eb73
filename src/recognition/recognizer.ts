/**
 * Offline speech recognition of menu answers, and forced alignment of a known text to its audio, on
 * worker threads (worker.ts, on the shared `WorkerPool`), each with one soundswallower decoder.
 *
 * `recognize` decodes a caller's turn with a menu grammar (grammar.ts) and says which choice it was,
 * if sure enough (`minConfidence`, confidence.ts): speech the grammar does not hold is a no-match, not
 * whichever choice it sounds least unlike. Part of that confidence is the answer's margin over its
 * nearest rival, which takes a second pass: the same audio decoded with the menu less that answer
 * (`competitorGrammar`), as an urgent job. A pass costs the same as the first (about 25 ms of CPU a
 * second of audio), so the second is taken only when the margin decides: not when the first pass's
 * answer fails even with the widest margin, nor when it passes even with the narrowest, at the
 * threshold the answer is held to (bench/menus.ts at 20 dB: a second pass for 13 % of the recognitions,
 * CPU per recognition 57 ms p50 and 128 ms p95, against 76 % and 98 / 150 ms before the confidence was
 * refitted and the pass made conditional).
 *
 * `align` times the words of a text that was spoken (a segment whose speech service sent no
 * character timings), so what a listener heard up to a barge-in can be cut at a word.
 *
 * Everything a job may hold is bounded (`RECOGNITION_LIMITS`): its audio, its text, the jobs waiting
 * (a full queue refuses at once: `RecognitionError` `queue_full`), and its time, queue included (past
 * it the job is abandoned: `timeout`). An aborted signal rejects with its reason, and takes a queued
 * job out of the queue; a job already on a thread runs to its end (one synchronous call) and its
 * answer is dropped.
 */
import type { Logger } from 'pino';
import {
  WorkerPool,
  WorkerPoolClosedError,
  WorkerQueueFullError,
  type WorkerJob,
} from '../async/worker-pool.js';
import { compiledModule } from '../paths.js';
import { alignedWords, alignmentPlan, type AlignedWord, type RecognizedWord } from './alignment.js';
import { carrierShare, confidence, MARGIN_MAX, MARGIN_MIN } from './confidence.js';
import { competitorGrammar, type MenuGrammar } from './grammar.js';
import {
  CANCEL_SLOT,
  type Aligned,
  type FromRecognitionWorker,
  type Recognized,
  type ToRecognitionWorker,
} from './protocol.js';

export type { AlignedWord, RecognizedWord } from './alignment.js';

export interface Recognition {
  /** '' when nothing in the grammar was heard. */
  readonly text: string;
  /** The choice, when confident enough (else a no-match). */
  readonly key: string | undefined;
  readonly digits: string | undefined;
  /** 0..1 */
  readonly confidence: number;
  readonly words: readonly RecognizedWord[];
  /** The worker's time on it. */
  readonly cpuMs: number;
}

/**
 * The confidence below which an answer is a no-match: the regression's threshold (confidence.ts). On
 * the menu benchmark (bench/menus.ts) at 20 dB SNR: 95.0 % of answers to the right branch, 1.9 % to a
 * wrong one, 83 % of sentences outside the menu refused (no noise: 95.6 / 1.1 / 81; 10 dB: 80.0 / 5.8 /
 * 84). 0.7 takes 92.5 % right, 1.7 % wrong and 9 % of the sentences outside at 20 dB; 0.3, 96.1 / 2.2 /
 * 26.
 */
export const DEFAULT_MIN_CONFIDENCE = 0.5;

export const RECOGNITION_LIMITS = {
  /** Audio of one recognition (s): a menu answer is a few seconds. */
  recognizeSeconds: 30,
  /** Audio of one alignment (s): one segment of an utterance. */
  alignSeconds: 120,
  /** Text of one alignment (UTF-16 units). */
  alignChars: 8000,
  /** Jobs waiting for a thread. */
  queuedJobs: 64,
  /** A job's time from `recognize`/`align` to its answer, waiting included (ms). */
  recognizeTimeoutMs: 5000,
  alignTimeoutMs: 30_000,
  minSampleRate: 8000,
  maxSampleRate: 48_000,
} as const;

export type RecognitionErrorCode = 'bad_input' | 'too_long' | 'queue_full' | 'timeout' | 'closed' | 'failed';

export class RecognitionError extends Error {
  override readonly name = 'RecognitionError';
  constructor(
    message: string,
    readonly code: RecognitionErrorCode,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

export interface RecognizerOptions {
  /** Worker threads, one decoder each (~50 MB resident); default 1. */
  workers?: number;
  logger?: Logger;
  minConfidence?: number;
  /**
   * Takes the second pass whenever there is an answer, so that `confidence` is exact rather than a
   * bound where the answer was decided without it (benchmarks sweep thresholds over it); default false.
   */
  exactConfidence?: boolean;
}

interface Job extends WorkerJob<ToRecognitionWorker, FromRecognitionWorker> {
  readonly message: ToRecognitionWorker;
}

export class Recognizer {
  private nextJobId = 1;

  private constructor(
    private readonly pool: WorkerPool<ToRecognitionWorker, FromRecognitionWorker>,
    private readonly cancels: readonly Int32Array[],
    private readonly minConfidence: number,
    private readonly exactConfidence: boolean,
  ) {}

  /** Starts the threads and waits until each has its model loaded. */
  static async start(options: RecognizerOptions = {}): Promise<Recognizer> {
    const count = Math.max(1, Math.floor(options.workers ?? 1));
    const minConfidence = options.minConfidence ?? DEFAULT_MIN_CONFIDENCE;
    if (!(minConfidence >= 0 && minConfidence <= 1))
      throw new RangeError('minConfidence must be from 0 to 1');
    const cancels = Array.from({ length: count }, () => new Int32Array(new SharedArrayBuffer(4)));
    const pool = await WorkerPool.start<ToRecognitionWorker, FromRecognitionWorker>({
      module: compiledModule('recognition/worker.js'),
      name: 'recognition worker',
      threadName: 'voxbridge-recognition',
      workers: count,
      workerData: (slot) => ({ cancel: cancels[slot]!.buffer }),
      maxQueuedJobs: RECOGNITION_LIMITS.queuedJobs,
      logger: options.logger,
    });
    return new Recognizer(pool, cancels, minConfidence, options.exactConfidence ?? false);
  }

  /**
   * Which choice of `grammar` the caller's `samples` (mono, `sampleRate`) said, if any. `threshold` is
   * the confidence the answer will be held to (a gather's `minConfidence`; default the recogniser's
   * own): the second pass is taken only when it could carry the confidence across it, and otherwise
   * the confidence reported is the bound on its side (at least that, or at most that).
   */
  async recognize(
    samples: Int16Array,
    sampleRate: number,
    grammar: MenuGrammar,
    options: { signal?: AbortSignal; threshold?: number } = {},
  ): Promise<Recognition> {
    checkAudio(samples, sampleRate, RECOGNITION_LIMITS.recognizeSeconds);
    const threshold = options.threshold ?? this.minConfidence;
    const deadline = performance.now() + RECOGNITION_LIMITS.recognizeTimeoutMs;
    // Kept for a second pass: the first's copy is handed to its thread.
    const kept = samples.slice();
    const first = await this.decode(grammar, kept.slice(), sampleRate, deadline, false, options.signal);
    const text = first.words.map((w) => w.word).join(' ');
    const answer = grammar.interpret(text);
    const result = (sure: number, cpuMs: number): Recognition =>
      sure >= this.minConfidence && (answer.key !== undefined || answer.digits !== undefined)
        ? { text, key: answer.key, digits: answer.digits, confidence: sure, words: first.words, cpuMs }
        : { text: '', key: undefined, digits: undefined, confidence: sure, words: [], cpuMs };
    const carriers = carrierShare(first.words, grammar.carrierWords(text));
    const best = confidence(first.fit, MARGIN_MAX, carriers);
    if (answer.key === undefined && answer.digits === undefined) return result(best, first.cpuMs);
    if (!this.exactConfidence) {
      // Not even the widest margin would make it, or the narrowest would not stop it: no second pass.
      if (best < threshold) return result(best, first.cpuMs);
      const worst = confidence(first.fit, MARGIN_MIN, carriers);
      if (worst >= threshold) return result(worst, first.cpuMs);
    }
    const competitor = competitorGrammar(grammar, answer);
    let margin = MARGIN_MAX;
    let cpuMs = first.cpuMs;
    if (competitor) {
      // Urgent: the caller waits on it, and its thread has the model warm for it.
      const second = await this.decode(competitor, kept, sampleRate, deadline, true, options.signal);
      cpuMs += second.cpuMs;
      if (first.scorePerFrame !== undefined && second.scorePerFrame !== undefined)
        margin = first.scorePerFrame - second.scorePerFrame;
    }
    return result(confidence(first.fit, margin, carriers), cpuMs);
  }

  /**
   * Forced alignment of a known text to its audio (soundswallower set_align_text / get_alignment):
   * word times, for word-exact heard text. One entry per word of `text`; a `RecognitionError`
   * (`failed`) when the text cannot be fitted to the audio (e.g. audio much shorter than its words).
   */
  async align(
    text: string,
    samples: Int16Array,
    sampleRate: number,
    options: { signal?: AbortSignal } = {},
  ): Promise<readonly AlignedWord[]> {
    if (typeof text !== 'string') throw new RecognitionError('the text to align is not text', 'bad_input');
    if (text.length > RECOGNITION_LIMITS.alignChars)
      throw new RecognitionError(
        `a text to align has at most ${RECOGNITION_LIMITS.alignChars} characters`,
        'too_long',
      );
    checkAudio(samples, sampleRate, RECOGNITION_LIMITS.alignSeconds);
    const plan = alignmentPlan(text);
    if (plan.tokens.length === 0) return [];
    const copy = samples.slice();
    const answer = await this.run<Aligned>(
      { type: 'align', jobId: this.nextJobId++, words: plan.spoken, samples: copy, sampleRate },
      performance.now() + RECOGNITION_LIMITS.alignTimeoutMs,
      false,
      options.signal,
    );
    return alignedWords(text, plan, answer.words);
  }

  /** One decoding of `samples` (handed over) with `grammar`. */
  private decode(
    grammar: MenuGrammar,
    samples: Int16Array,
    sampleRate: number,
    deadline: number,
    urgent: boolean,
    signal: AbortSignal | undefined,
  ): Promise<Recognized> {
    return this.run<Recognized>(
      {
        type: 'recognize',
        jobId: this.nextJobId++,
        grammarId: grammar.id,
        jsgf: grammar.jsgf,
        samples,
        sampleRate,
      },
      deadline,
      urgent,
      signal,
    );
  }

  /** Stops the threads: jobs queued or running fail (`closed`). */
  close(): Promise<void> {
    return this.pool.close();
  }

  /** Runs one job (its samples handed over): its answer, or its failure, timeout or abort. */
  private run<T extends Recognized | Aligned>(
    message: ToRecognitionWorker,
    deadline: number,
    urgent: boolean,
    signal: AbortSignal | undefined,
  ): Promise<T> {
    signal?.throwIfAborted();
    const timeoutMs = Math.max(0, deadline - performance.now());
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      const finish = (error: unknown, answer?: T): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        if (answer) resolve(answer);
        else reject(error instanceof Error ? error : new Error(String(error)));
      };
      const abandon = (error: unknown): void => {
        if (!this.pool.cancel(job)) {
          const slot = this.pool.slotOf(job);
          if (slot !== undefined) Atomics.store(this.cancels[slot]!, CANCEL_SLOT, message.jobId);
        }
        finish(error);
      };
      const onAbort = (): void => abandon(signal!.reason);
      const timer = setTimeout(
        () => abandon(new RecognitionError(`no answer in time (${message.type})`, 'timeout')),
        timeoutMs,
      );
      const job: Job = {
        message,
        transfer: [message.samples.buffer as ArrayBuffer],
        onMessage: (answer) => {
          if (answer.jobId !== message.jobId) return false;
          if (answer.type === 'failed')
            finish(new RecognitionError(`${message.type} failed: ${answer.message}`, 'failed'));
          else finish(undefined, answer as T);
          return true;
        },
        onFail: (error) =>
          finish(
            error instanceof WorkerPoolClosedError
              ? new RecognitionError('the recognizer is closed', 'closed', { cause: error })
              : new RecognitionError(`${message.type} failed: ${error.message}`, 'failed', { cause: error }),
          ),
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      try {
        this.pool.submit(job, urgent);
      } catch (error) {
        finish(
          error instanceof WorkerQueueFullError
            ? new RecognitionError(
                `${RECOGNITION_LIMITS.queuedJobs} recognitions already wait for a thread`,
                'queue_full',
                { cause: error },
              )
            : error instanceof WorkerPoolClosedError
              ? new RecognitionError('the recognizer is closed', 'closed', { cause: error })
              : error,
        );
      }
    });
  }
}

function checkAudio(samples: Int16Array, sampleRate: number, maxSeconds: number): void {
  if (!(samples instanceof Int16Array))
    throw new RecognitionError('audio must be an Int16Array', 'bad_input');
  if (
    !Number.isInteger(sampleRate) ||
    sampleRate < RECOGNITION_LIMITS.minSampleRate ||
    sampleRate > RECOGNITION_LIMITS.maxSampleRate
  )
    throw new RecognitionError(
      `sample rate ${sampleRate} is not from ${RECOGNITION_LIMITS.minSampleRate} to ${RECOGNITION_LIMITS.maxSampleRate} Hz`,
      'bad_input',
    );
  if (samples.length > maxSeconds * sampleRate)
    throw new RecognitionError(`at most ${maxSeconds} s of audio`, 'too_long');
}
