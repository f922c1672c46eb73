/**
 * The client of the speech service (ours, or ElevenLabs itself with `pathPrefix: ''` and
 * `authHeader: 'xi-api-key'`). One keep-alive pool per client, so each sentence reuses a warm
 * connection; retries only before the first audio byte; every call cancellable by its signal.
 */
import { Pool } from 'undici';
import { parseBaseUrl, redactUrl } from './base-url.js';
import { SpeechServiceError } from './errors.js';
import { FORMAT_INFO, type OutputFormat } from './formats.js';
import { headerValue } from './http-errors.js';
import {
  DEFAULT_MAX_RETRIES,
  DEFAULT_MAX_RETRY_AFTER_MS,
  DEFAULT_RETRY_BASE_DELAY_MS,
  DEFAULT_RETRY_MAX_DELAY_MS,
} from './retry.js';
import { prepareSpeech, speechPath, type PreparedSpeech, type SpeechRequest } from './speech-request.js';
import { HttpSpeechStream, type SpeechStream } from './speech-stream.js';
import { TimestampedBody } from './timestamps.js';
import { Transport, type CallSpec, type OpenResponse } from './transport.js';
import {
  addVoiceForm,
  toAddedVoice,
  toVoicesPage,
  voicesQueryString,
  type AddedVoice,
  type AddVoiceInput,
  type ListVoicesQuery,
  type VoicesPage,
} from './voices.js';

export type { CharacterAlignment } from './alignment.js';
export type { SpeechRequest, SpeechVoiceSettings } from './speech-request.js';
export type { SpeechStream } from './speech-stream.js';
export type {
  AddedVoice,
  AddVoiceFile,
  AddVoiceInput,
  ListVoicesQuery,
  Voice,
  VoicesPage,
} from './voices.js';

export const DEFAULT_PATH_PREFIX = '/api/speech';
/** Long enough for a cold engine's first sentence, short enough that a stuck server is noticed. */
export const DEFAULT_FIRST_BYTE_TIMEOUT_MS = 10_000;
export const DEFAULT_IDLE_TIMEOUT_MS = 10_000;
/**
 * HTTP/1.1 carries one stream per socket, and every utterance playing at once (one per call or guild)
 * holds one for its whole length: a small pool would make the next caller wait for someone else's
 * sentence to finish before its first byte.
 */
export const DEFAULT_CONNECTIONS = 256;
/** JSON answers (voice lists) beyond this are refused rather than buffered. */
const JSON_MAX_BYTES = 16 * 1024 * 1024;
const USER_AGENT = 'voxbridge-speech-client';

export type AuthHeader = 'ServicePlatform-APIKey' | 'xi-api-key';

export interface StreamMetrics {
  requestId?: string;
  firstByteMs: number;
  attempts: number;
  voiceId: string;
}

export interface SpeechClientOptions {
  /**
   * e.g. `http://127.0.0.1:8080` (a path, if any, is kept in front of the prefix). `user:password@`
   * in it is sent as `Authorization: Basic` (for a proxy in front of the service), besides the key in
   * `authHeader`, and scrubbed from error messages; log it only through `redactUrl`.
   */
  baseUrl: string;
  /** Default `/api/speech`; `''` for ElevenLabs itself. */
  pathPrefix?: string;
  /** Sent as is in `authHeader`; never logged, scrubbed from error messages. Empty: no header. */
  apiKey: string;
  /** Default `ServicePlatform-APIKey`. */
  authHeader?: AuthHeader;
  /** Request start → first body byte, per attempt (a timed-out attempt is retried). Default 10 s. */
  firstByteTimeoutMs?: number;
  /** Longest silence between two chunks once audio flows (not retried). Default 10 s. */
  idleTimeoutMs?: number;
  /** Default 2. */
  maxRetries?: number;
  /** Default 250 ms. */
  retryBaseDelayMs?: number;
  /** Cap of our own backoff. Default 4 s. */
  retryMaxDelayMs?: number;
  /** The longest `Retry-After` honoured; a longer one fails the call at once. Default 30 s. */
  maxRetryAfterMs?: number;
  /** Keep-alive pool size. Default 256 (see `DEFAULT_CONNECTIONS` for why). */
  connections?: number;
  /** Called once per `stream()` when its first audio byte arrived. Exceptions are ignored. */
  onStreamMetrics?: (m: StreamMetrics) => void;
  /**
   * `stream()` asks for character timings (`/stream/with-timestamps`) and exposes them as the
   * stream's `alignment`; the audio is the same. A service that answers 404 or 405 there (it lacks
   * the endpoint) gets the plain `/stream` instead, then and for the client's lifetime. Default false.
   */
  timestamps?: boolean;
}

export interface CallOptions {
  signal?: AbortSignal | undefined;
}

export interface SynthesizeResult {
  audio: Buffer;
  format: OutputFormat;
  contentType: string;
  requestId?: string;
  firstByteMs: number;
  attempts: number;
}

/**
 * A with-timestamps request refused because the service lacks the endpoint: 405, or a 404 that does not
 * name the voice (an unknown voice is 404 `voice_not_found` on every path, and falling back would
 * only ask again).
 */
function lacksTimestamps(error: unknown): boolean {
  if (!(error instanceof SpeechServiceError)) return false;
  return error.status === 405 || (error.status === 404 && error.code !== 'voice_not_found');
}

function positive(name: string, value: number | undefined, fallback: number, allowZero = false): number {
  if (value === undefined) return fallback;
  if (!Number.isFinite(value) || value < 0 || (!allowZero && value === 0))
    throw new TypeError(`SpeechClient: ${name} must be a ${allowZero ? 'non-negative' : 'positive'} number`);
  return value;
}

function normalizePrefix(prefix: string): string {
  const trimmed = prefix.replace(/\/+$/, '');
  if (trimmed === '') return '';
  return trimmed.startsWith('/') ? trimmed : `/${trimmed}`;
}

async function readAll(response: OpenResponse, maxBytes: number): Promise<Buffer> {
  const parts: Buffer[] = [];
  let size = 0;
  for (let chunk = await response.next(); chunk !== undefined; chunk = await response.next()) {
    size += chunk.byteLength;
    if (size > maxBytes) {
      response.cancel();
      throw new SpeechServiceError({
        code: 'response_too_large',
        message: `the speech service's answer exceeds ${maxBytes} bytes`,
        requestId: response.requestId,
        retryable: false,
      });
    }
    parts.push(chunk);
  }
  return parts.length === 1 && parts[0] !== undefined ? parts[0] : Buffer.concat(parts, size);
}

async function readJson(response: OpenResponse): Promise<unknown> {
  const body = await readAll(response, JSON_MAX_BYTES);
  try {
    return JSON.parse(body.toString('utf8'));
  } catch (cause) {
    throw new SpeechServiceError({
      code: 'invalid_response',
      message: 'the speech service answered with malformed JSON',
      status: response.status,
      requestId: response.requestId,
      retryable: false,
      cause,
    });
  }
}

export class SpeechClient {
  /** The base URL as given, its `user:password@` replaced by `[redacted]`: the form to log. */
  readonly redactedBaseUrl: string;
  readonly #pool: Pool;
  readonly #transport: Transport;
  readonly #apiKey: string;
  readonly #authHeader: AuthHeader;
  readonly #basicAuth: string | undefined;
  readonly #onStreamMetrics: ((m: StreamMetrics) => void) | undefined;
  readonly #timestamps: boolean;
  /** Scrubbed from what a server wrote, wherever it ends up in an error. */
  readonly #secrets: readonly string[];
  /** Set once a with-timestamps request was refused and the plain stream worked: never asked again. */
  #timestampsMissing = false;
  #closed = false;

  constructor(options: SpeechClientOptions) {
    const base = parseBaseUrl(options.baseUrl);
    this.redactedBaseUrl = redactUrl(options.baseUrl);
    if (typeof options.apiKey !== 'string') throw new TypeError('SpeechClient: apiKey must be a string');
    this.#apiKey = options.apiKey;
    this.#authHeader = options.authHeader ?? 'ServicePlatform-APIKey';
    this.#basicAuth = base.authorization;
    this.#onStreamMetrics = options.onStreamMetrics;
    this.#timestamps = options.timestamps === true;
    this.#secrets = [...(options.apiKey === '' ? [] : [options.apiKey]), ...base.secrets];
    this.#pool = new Pool(base.origin, {
      connections: Math.floor(positive('connections', options.connections, DEFAULT_CONNECTIONS)),
    });
    this.#transport = new Transport({
      pool: this.#pool,
      basePath: base.path + normalizePrefix(options.pathPrefix ?? DEFAULT_PATH_PREFIX),
      firstByteTimeoutMs: positive(
        'firstByteTimeoutMs',
        options.firstByteTimeoutMs,
        DEFAULT_FIRST_BYTE_TIMEOUT_MS,
      ),
      idleTimeoutMs: positive('idleTimeoutMs', options.idleTimeoutMs, DEFAULT_IDLE_TIMEOUT_MS),
      retry: {
        maxRetries: Math.floor(positive('maxRetries', options.maxRetries, DEFAULT_MAX_RETRIES, true)),
        baseDelayMs: positive(
          'retryBaseDelayMs',
          options.retryBaseDelayMs,
          DEFAULT_RETRY_BASE_DELAY_MS,
          true,
        ),
        maxDelayMs: positive('retryMaxDelayMs', options.retryMaxDelayMs, DEFAULT_RETRY_MAX_DELAY_MS, true),
        maxRetryAfterMs: positive(
          'maxRetryAfterMs',
          options.maxRetryAfterMs,
          DEFAULT_MAX_RETRY_AFTER_MS,
          true,
        ),
      },
      secrets: this.#secrets,
    });
  }

  /** The whole audio in one buffer. Retried (before the first byte) like `stream()`. */
  async synthesize(req: SpeechRequest, opts: CallOptions = {}): Promise<SynthesizeResult> {
    const prepared = prepareSpeech(req);
    const response = await this.#open(
      {
        method: 'POST',
        path: speechPath(prepared, false),
        headers: this.#headers('*/*', 'application/json'),
        body: prepared.body,
        idempotent: true,
        emptyCode: 'empty_audio',
        audioFormat: prepared.outputFormat,
      },
      opts.signal,
    );
    const audio = await readAll(response, Number.MAX_SAFE_INTEGER);
    if (prepared.outputFormat === 'pcm_24000' && audio.byteLength % 2 !== 0) {
      throw new SpeechServiceError({
        code: 'misaligned_audio',
        message: `the PCM body has an odd byte count (${audio.byteLength})`,
        requestId: response.requestId,
        retryable: false,
      });
    }
    const result: SynthesizeResult = {
      audio,
      format: prepared.outputFormat,
      contentType: this.#contentType(response, prepared.outputFormat),
      firstByteMs: response.firstByteMs,
      attempts: response.attempts,
    };
    if (response.requestId !== undefined) result.requestId = response.requestId;
    return result;
  }

  /**
   * Resolves once the first audio byte arrived (all retries happen before). The stream pulls from the
   * socket as it is iterated; for `pcm_24000` every chunk holds whole 16-bit samples. With
   * `timestamps`, the stream also carries the answer's `alignment`.
   */
  async stream(req: SpeechRequest, opts: CallOptions = {}): Promise<SpeechStream> {
    const prepared = prepareSpeech(req);
    const startedAt = performance.now();
    let stream: SpeechStream;
    if (this.#timestamps && !this.#timestampsMissing) {
      try {
        stream = await this.#timestampedStream(prepared, opts.signal, startedAt);
      } catch (error) {
        if (!lacksTimestamps(error)) throw error;
        stream = await this.#plainStream(prepared, opts.signal, startedAt, 1);
        this.#timestampsMissing = true;
      }
    } else stream = await this.#plainStream(prepared, opts.signal, startedAt, 0);
    this.#reportMetrics(stream, prepared.voiceId);
    return stream;
  }

  async listVoices(q: ListVoicesQuery = {}, opts: CallOptions = {}): Promise<VoicesPage> {
    const query = voicesQueryString(q);
    const response = await this.#open(
      {
        method: 'GET',
        path: `/v2/voices${query}`,
        headers: this.#headers('application/json'),
        idempotent: true,
        emptyCode: 'invalid_response',
      },
      opts.signal,
    );
    return toVoicesPage(await readJson(response), response.requestId);
  }

  /** Not idempotent: only a 429 or a refused connection is retried, so a voice is never created twice. */
  async addVoice(input: AddVoiceInput, opts: CallOptions = {}): Promise<AddedVoice> {
    const form = addVoiceForm(input);
    const response = await this.#open(
      {
        method: 'POST',
        path: '/v1/voices/add',
        headers: this.#headers('application/json'),
        body: form,
        idempotent: false,
        emptyCode: 'invalid_response',
      },
      opts.signal,
    );
    return toAddedVoice(await readJson(response), response.requestId);
  }

  /** Closes the pool once running exchanges finish; later calls fail with `client_closed`. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#pool.close();
  }

  async #plainStream(
    prepared: PreparedSpeech,
    signal: AbortSignal | undefined,
    startedAt: number,
    earlierAttempts: number,
  ): Promise<SpeechStream> {
    const response = await this.#open(
      {
        method: 'POST',
        path: speechPath(prepared, true),
        headers: this.#headers('*/*', 'application/json'),
        body: prepared.body,
        idempotent: true,
        emptyCode: 'empty_audio',
        audioFormat: prepared.outputFormat,
      },
      signal,
      startedAt,
    );
    return new HttpSpeechStream({
      response,
      format: prepared.outputFormat,
      contentType: this.#contentType(response, prepared.outputFormat),
      earlierAttempts,
    });
  }

  /** Reads up to the first audio before resolving, as the plain stream does (its first byte is audio). */
  async #timestampedStream(
    prepared: PreparedSpeech,
    signal: AbortSignal | undefined,
    startedAt: number,
  ): Promise<SpeechStream> {
    const response = await this.#open(
      {
        method: 'POST',
        path: speechPath(prepared, true, true),
        headers: this.#headers('application/json', 'application/json'),
        body: prepared.body,
        idempotent: true,
        emptyCode: 'empty_audio',
        timestamps: true,
      },
      signal,
      startedAt,
    );
    const body = new TimestampedBody(response, this.#secrets);
    await body.prime();
    return new HttpSpeechStream({
      response,
      format: prepared.outputFormat,
      // The JSON's audio is in the format asked for: the type it would have had on `/stream`.
      contentType: FORMAT_INFO[prepared.outputFormat].contentType,
      body,
      alignment: body.alignment,
    });
  }

  async #open(
    spec: CallSpec,
    signal: AbortSignal | undefined,
    startedAt = performance.now(),
  ): Promise<OpenResponse> {
    if (this.#closed)
      throw new SpeechServiceError({
        code: 'client_closed',
        message: 'the speech client was closed',
        retryable: false,
      });
    return this.#transport.open(spec, signal, { startedAt });
  }

  #headers(accept: string, contentType?: string): Record<string, string> {
    const headers: Record<string, string> = { accept, 'user-agent': USER_AGENT };
    if (contentType !== undefined) headers['content-type'] = contentType;
    if (this.#apiKey !== '') headers[this.#authHeader] = this.#apiKey;
    // A header of its own: the key headers are never `Authorization`, so both can be sent.
    if (this.#basicAuth !== undefined) headers['authorization'] = this.#basicAuth;
    return headers;
  }

  #contentType(response: OpenResponse, format: OutputFormat): string {
    return headerValue(response.headers, 'content-type') ?? FORMAT_INFO[format].contentType;
  }

  #reportMetrics(stream: SpeechStream, voiceId: string): void {
    const report = this.#onStreamMetrics;
    if (report === undefined) return;
    const metrics: StreamMetrics = { firstByteMs: stream.firstByteMs, attempts: stream.attempts, voiceId };
    if (stream.requestId !== undefined) metrics.requestId = stream.requestId;
    try {
      report(metrics);
    } catch {
      // A metrics sink must not break the audio path.
    }
  }
}
