/**
 * The process's one offline recogniser (src/recognition: PocketSphinx in WebAssembly, on worker
 * threads), shared by the two parts that need it: a call's flow hearing a spoken choice at a gather
 * (parts/calls.ts) and every speaker timing the words of speech that came without character timings
 * (the `Aligner`: calls and Discord guilds). Its threads start on first use, not with the app: an app
 * whose speech service sends timings, and whose callers never reach a listening gather, never loads it;
 * a start that fails is retried on the next use.
 */
import type { Logger } from 'pino';
import { Recognizer } from '../../recognition/recognizer.js';
import type { Aligner } from '../../speaker/word-alignment.js';
import type { LoadedConfig } from '../config.js';

export interface RecognitionPart {
  /** For gathers: each gather's own `minConfidence` decides a no-match, so every key is kept here. */
  readonly recognizer: Pick<Recognizer, 'recognize'>;
  /** For speakers: a segment's words, timed from its audio. */
  readonly aligner: Aligner;
  /** Whether the threads were started (for logs and tests). */
  readonly started: boolean;
  close(): Promise<void>;
}

export function startRecognition(loaded: LoadedConfig, logger: Logger): RecognitionPart {
  const log = logger.child({ part: 'recognition' });
  let starting: Promise<Recognizer> | undefined;
  let closed = false;
  const get = (): Promise<Recognizer> => {
    if (closed) return Promise.reject(new Error('the recogniser is closed'));
    starting ??= Recognizer.start({
      workers: loaded.config.calls.recognition.workers,
      logger: log,
      minConfidence: 0,
    }).catch((error: unknown) => {
      log.error({ err: error }, 'the recogniser could not start');
      starting = undefined;
      throw error;
    });
    return starting;
  };
  return {
    recognizer: {
      recognize: async (samples, sampleRate, grammar, options) =>
        (await get()).recognize(samples, sampleRate, grammar, options),
    },
    aligner: async (text, samples, sampleRate, signal) =>
      (await get()).align(text, samples, sampleRate, { signal }),
    get started() {
      return starting !== undefined;
    },
    close: async () => {
      closed = true;
      const running = await starting?.catch(() => undefined);
      await running?.close();
    },
  };
}
