/**
 * The client of the speech service (ours, or ElevenLabs itself with `pathPrefix: ''` and
 * `authHeader: 'xi-api-key'`). One keep-alive pool per client, so each sentence reuses a warm
 * connection; retries only before the first audio byte; every call cancellable by its signal.
 */
import {
  bodyDeadlineMs,
  DEFAULT_DEADLINE_FLOOR_MS,
  DEFAULT_DEADLINE_REALTIME_MULTIPLE,
  maxAudioBytes,
  type DeadlinePolicy,
} from './budget.js';
import { numberOption, ServiceConnection, type AuthHeader, type ConnectionSettings } from './connection.js';
import { SpeechServiceError } from './errors.js';
import { FORMAT_INFO, type OutputFormat } from './formats.js';
import { headerValue } from './http-errors.js';
import { readBody, readJsonBody } from './response-body.js';
import { prepareSpeech, speechPath, type PreparedSpeech, type SpeechRequest } from './speech-request.js';
import { HttpSpeechStream, type SpeechStream } from './speech-stream.js';
import { TimestampedBody, timestampsLimits } from './timestamps.js';
import type { OpenResponse } from './transport.js';
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
export type { AuthHeader } from './connection.js';
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
const OWNER = 'SpeechClient';

export interface StreamMetrics {
  requestId?: string;
  firstByteMs: number;
  attempts: number;
  voiceId: string;
}

export interface SpeechClientOptions extends ConnectionSettings {
  /** Default `/api/speech`; `''` for ElevenLabs itself. */
  pathPrefix?: string;
  /** Default `ServicePlatform-APIKey`. */
  authHeader?: AuthHeader;
  /** Request start → first body byte, per attempt (a timed-out attempt is retried). Default 10 s. */
  firstByteTimeoutMs?: number;
  /** Longest silence between two chunks once audio flows (not retried). Default 10 s. */
  idleTimeoutMs?: number;
  /**
   * A response's body, once its first byte is in, must end within max(this, its text at a slow 4
   * characters a second × `deadlineRealtimeMultiple`), counting only the time spent waiting for the
   * service (not the time the caller holds the stream unread); past it the request fails with
   * `deadline_exceeded` (not retried). Default 30 s.
   */
  deadlineFloorMs?: number;
  /** See `deadlineFloorMs`. Default 2 (500 ms a character). */
  deadlineRealtimeMultiple?: number;
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

export class SpeechClient {
  /** The base URL as given, its `user:password@` replaced by `[redacted]`: the form to log. */
  readonly redactedBaseUrl: string;
  readonly #connection: ServiceConnection;
  readonly #onStreamMetrics: ((m: StreamMetrics) => void) | undefined;
  readonly #timestamps: boolean;
  readonly #deadline: DeadlinePolicy;
  /** Set once a with-timestamps request was refused and the plain stream worked: never asked again. */
  #timestampsMissing = false;

  constructor(options: SpeechClientOptions) {
    this.#connection = new ServiceConnection(options, {
      owner: OWNER,
      closedName: 'speech client',
      anyAuthHeader: true,
      userAgent: USER_AGENT,
      pathPrefix: DEFAULT_PATH_PREFIX,
      authHeader: 'ServicePlatform-APIKey',
      firstByteTimeoutMs: DEFAULT_FIRST_BYTE_TIMEOUT_MS,
      idleTimeoutMs: DEFAULT_IDLE_TIMEOUT_MS,
      connections: DEFAULT_CONNECTIONS,
    });
    this.redactedBaseUrl = this.#connection.redactedBaseUrl;
    this.#onStreamMetrics = options.onStreamMetrics;
    this.#timestamps = options.timestamps === true;
    this.#deadline = {
      floorMs: numberOption(OWNER, 'deadlineFloorMs', options.deadlineFloorMs, DEFAULT_DEADLINE_FLOOR_MS),
      realtimeMultiple: numberOption(
        OWNER,
        'deadlineRealtimeMultiple',
        options.deadlineRealtimeMultiple,
        DEFAULT_DEADLINE_REALTIME_MULTIPLE,
        true,
      ),
    };
  }

  /** The whole audio in one buffer. Retried (before the first byte) like `stream()`. */
  async synthesize(req: SpeechRequest, opts: CallOptions = {}): Promise<SynthesizeResult> {
    const prepared = prepareSpeech(req);
    const response = await this.#connection.open(
      {
        method: 'POST',
        path: speechPath(prepared, false),
        headers: this.#connection.headers('*/*', 'application/json'),
        body: prepared.body,
        idempotent: true,
        emptyCode: 'empty_audio',
        audioFormat: prepared.outputFormat,
        bodyDeadlineMs: this.#bodyDeadlineMs(prepared),
      },
      opts.signal,
    );
    const audio = await readBody(response, maxAudioBytes(prepared.outputFormat, prepared.textChars));
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
    const response = await this.#connection.open(
      {
        method: 'GET',
        path: `/v2/voices${query}`,
        headers: this.#connection.headers('application/json'),
        idempotent: true,
        emptyCode: 'invalid_response',
      },
      opts.signal,
    );
    return toVoicesPage(await this.#readJson(response), response.requestId);
  }

  /** Not idempotent: only a 429 or a refused connection is retried, so a voice is never created twice. */
  async addVoice(input: AddVoiceInput, opts: CallOptions = {}): Promise<AddedVoice> {
    const form = addVoiceForm(input);
    const response = await this.#connection.open(
      {
        method: 'POST',
        path: '/v1/voices/add',
        headers: this.#connection.headers('application/json'),
        body: form,
        idempotent: false,
        emptyCode: 'invalid_response',
      },
      opts.signal,
    );
    return toAddedVoice(await this.#readJson(response), response.requestId);
  }

  /** Closes the pool once running exchanges finish; later calls fail with `client_closed`. */
  async close(): Promise<void> {
    await this.#connection.close();
  }

  async #plainStream(
    prepared: PreparedSpeech,
    signal: AbortSignal | undefined,
    startedAt: number,
    earlierAttempts: number,
  ): Promise<SpeechStream> {
    const response = await this.#connection.open(
      {
        method: 'POST',
        path: speechPath(prepared, true),
        headers: this.#connection.headers('*/*', 'application/json'),
        body: prepared.body,
        idempotent: true,
        emptyCode: 'empty_audio',
        audioFormat: prepared.outputFormat,
        bodyDeadlineMs: this.#bodyDeadlineMs(prepared),
      },
      signal,
      startedAt,
    );
    return new HttpSpeechStream({
      response,
      format: prepared.outputFormat,
      contentType: this.#contentType(response, prepared.outputFormat),
      earlierAttempts,
      maxAudioBytes: maxAudioBytes(prepared.outputFormat, prepared.textChars),
    });
  }

  /** Reads up to the first audio before resolving, as the plain stream does (its first byte is audio). */
  async #timestampedStream(
    prepared: PreparedSpeech,
    signal: AbortSignal | undefined,
    startedAt: number,
  ): Promise<SpeechStream> {
    const response = await this.#connection.open(
      {
        method: 'POST',
        path: speechPath(prepared, true, true),
        headers: this.#connection.headers('application/json', 'application/json'),
        body: prepared.body,
        idempotent: true,
        emptyCode: 'empty_audio',
        timestamps: true,
        bodyDeadlineMs: this.#bodyDeadlineMs(prepared),
      },
      signal,
      startedAt,
    );
    const { textChars, textUnits, outputFormat } = prepared;
    const limits = timestampsLimits(textChars, textUnits, outputFormat);
    const body = new TimestampedBody(response, this.#connection.secrets, limits);
    await body.prime();
    return new HttpSpeechStream({
      response,
      format: prepared.outputFormat,
      // The JSON's audio is in the format asked for: the type it would have had on `/stream`.
      contentType: FORMAT_INFO[prepared.outputFormat].contentType,
      body,
      alignment: body.alignment,
      maxAudioBytes: maxAudioBytes(outputFormat, textChars),
    });
  }

  #bodyDeadlineMs(prepared: PreparedSpeech): number {
    return bodyDeadlineMs(this.#deadline, prepared.textChars);
  }

  #readJson(response: OpenResponse): Promise<unknown> {
    return readJsonBody(response, JSON_MAX_BYTES, this.#connection.secrets);
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
