/**
 * The audio of one `stream()` call, as an async iterable that pulls from the socket only when the
 * consumer asks (backpressure, no queue). Stopping early, by `break` or `cancel()`, destroys the
 * connection at once so a barge-in frees the server's worker without waiting for the text to finish.
 */
import type { CharacterAlignment } from './alignment.js';
import { SpeechServiceError } from './errors.js';
import type { OutputFormat } from './formats.js';
import { int16ToBytes, PcmAligner } from '../audio/pcm.js';
import type { OpenResponse } from './transport.js';

export interface SpeechStream extends AsyncIterable<Uint8Array> {
  readonly format: OutputFormat;
  readonly contentType: string;
  readonly requestId: string | undefined;
  /** Call start → first non-empty body chunk, retries and backoff included. */
  readonly firstByteMs: number;
  /** Attempts made before the audio started (1 when the first one worked). */
  readonly attempts: number;
  /** Stops the stream and closes its connection; iteration then ends with `reason`. */
  cancel(reason?: unknown): void;
  /**
   * The character timings of a with-timestamps answer (`SpeechClientOptions.timestamps`): ms from the
   * first sample, the arrays growing as the answer is read (ahead of the audio they time), each entry
   * final once present. Absent when the answer had none (timestamps off, or a service without them).
   */
  readonly alignment?: CharacterAlignment;
}

/** Where the audio bytes come from: the response's body itself, or what a with-timestamps body decodes to. */
export interface AudioBody {
  /** The next non-empty bytes, or `undefined` at the clean end. */
  next(): Promise<Uint8Array | undefined>;
  cancel(reason?: unknown): void;
}

export interface SpeechStreamInit {
  readonly response: OpenResponse;
  readonly format: OutputFormat;
  readonly contentType: string;
  /** Default: the response's body. */
  readonly body?: AudioBody;
  readonly alignment?: CharacterAlignment;
  /** Attempts refused before `response`'s own (a with-timestamps request that fell back). */
  readonly earlierAttempts?: number;
  /**
   * The most audio bytes the request's text may turn into (budget.ts); past it the stream fails with
   * `response_too_large`, so a service that never ends cannot keep an utterance playing. Default: none.
   */
  readonly maxAudioBytes?: number;
}

export class HttpSpeechStream implements SpeechStream {
  readonly format: OutputFormat;
  readonly contentType: string;
  readonly requestId: string | undefined;
  readonly firstByteMs: number;
  readonly attempts: number;
  readonly alignment?: CharacterAlignment;
  readonly #body: AudioBody;
  readonly #maxAudioBytes: number;
  #iterated = false;

  constructor(init: SpeechStreamInit) {
    this.#body = init.body ?? init.response;
    this.format = init.format;
    this.contentType = init.contentType;
    this.requestId = init.response.requestId;
    this.firstByteMs = init.response.firstByteMs;
    this.attempts = init.response.attempts + (init.earlierAttempts ?? 0);
    this.#maxAudioBytes = init.maxAudioBytes ?? Infinity;
    if (init.alignment !== undefined) this.alignment = init.alignment;
  }

  cancel(reason?: unknown): void {
    this.#body.cancel(reason);
  }

  /** Single use: the bytes come off a socket once. */
  [Symbol.asyncIterator](): AsyncIterator<Uint8Array, undefined> {
    if (this.#iterated) throw new TypeError('a SpeechStream can be iterated only once');
    this.#iterated = true;
    const chunks = this.#chunks();
    // `return()` cancels before delegating: a generator that never started would skip its `finally`.
    const stop = (): void => this.#body.cancel();
    return {
      next: () => chunks.next(),
      return: async () => {
        stop();
        return chunks.return(undefined);
      },
      throw: async (error?: unknown) => {
        stop();
        return chunks.throw(error);
      },
    };
  }

  async *#chunks(): AsyncGenerator<Uint8Array, undefined, undefined> {
    const body = this.#body;
    const aligner = this.format === 'pcm_24000' ? new PcmAligner() : undefined;
    let ended = false;
    let audioBytes = 0;
    try {
      for (let chunk = await body.next(); chunk !== undefined; chunk = await body.next()) {
        audioBytes += chunk.byteLength;
        if (audioBytes > this.#maxAudioBytes) throw this.#tooLong();
        const out = aligner ? int16ToBytes(aligner.push(chunk)) : chunk;
        if (out.byteLength > 0) yield out;
      }
      ended = true;
    } finally {
      if (!ended) body.cancel();
    }
    if (aligner !== undefined && aligner.pendingBytes > 0) {
      throw new SpeechServiceError({
        code: 'misaligned_audio',
        message: 'the PCM stream ended in the middle of a 16-bit sample (odd byte count)',
        requestId: this.requestId,
        retryable: false,
      });
    }
    return undefined;
  }

  #tooLong(): SpeechServiceError {
    return new SpeechServiceError({
      code: 'response_too_large',
      message: `the speech service sent more than ${this.#maxAudioBytes} bytes of audio, more than the text can take`,
      requestId: this.requestId,
      retryable: false,
    });
  }
}
