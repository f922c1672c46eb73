/**
 * The audio of one `stream()` call, as an async iterable that pulls from the socket only when the
 * consumer asks (backpressure, no queue). Stopping early, by `break` or `cancel()`, destroys the
 * connection at once so a barge-in frees the server's worker without waiting for the text to finish.
 */
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
}

export interface SpeechStreamInit {
  readonly response: OpenResponse;
  readonly format: OutputFormat;
  readonly contentType: string;
}

export class HttpSpeechStream implements SpeechStream {
  readonly format: OutputFormat;
  readonly contentType: string;
  readonly requestId: string | undefined;
  readonly firstByteMs: number;
  readonly attempts: number;
  readonly #response: OpenResponse;
  #iterated = false;

  constructor(init: SpeechStreamInit) {
    this.#response = init.response;
    this.format = init.format;
    this.contentType = init.contentType;
    this.requestId = init.response.requestId;
    this.firstByteMs = init.response.firstByteMs;
    this.attempts = init.response.attempts;
  }

  cancel(reason?: unknown): void {
    this.#response.cancel(reason);
  }

  /** Single use: the bytes come off a socket once. */
  [Symbol.asyncIterator](): AsyncIterator<Uint8Array, undefined> {
    if (this.#iterated) throw new TypeError('a SpeechStream can be iterated only once');
    this.#iterated = true;
    const chunks = this.#chunks();
    // `return()` cancels before delegating: a generator that never started would skip its `finally`.
    const stop = (): void => this.#response.cancel();
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
    const response = this.#response;
    const aligner = this.format === 'pcm_24000' ? new PcmAligner() : undefined;
    let ended = false;
    try {
      for (let chunk = await response.next(); chunk !== undefined; chunk = await response.next()) {
        const out = aligner ? int16ToBytes(aligner.push(chunk)) : chunk;
        if (out.byteLength > 0) yield out;
      }
      ended = true;
    } finally {
      if (!ended) response.cancel();
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
}
