/**
 * The speech-to-text client: a caller's turn (a WAV file, cut by the voice-activity detector) → its
 * text, from an ElevenLabs-compatible `POST {base}{prefix}/v1/speech-to-text` (docs/speech-to-text.md).
 *
 * It shares the speech client's rules by sharing its parts (connection.ts → transport.ts): one
 * keep-alive pool, the key and the URL's credentials scrubbed from every message, and retries only
 * where nothing was transcribed yet (a refused or dropped connection, a timed-out attempt, 408, 429
 * within `maxRetryAfterMs` of its `Retry-After`, 5xx). Transcribing acts on nothing, so it is retried as
 * an idempotent request. Everything the peer sends is bounded: the answer's bytes, its content type and
 * its shape (transcript.ts); and so is what we send: the WAV's length is checked before any request.
 */
import { Blob } from 'node:buffer';
import { FormData } from 'undici';
import { readWavInfo, WavFormatError, type WavInfo } from '../audio/wav.js';
import { isJsonType } from '../http/http.js';
import { numberOption, ServiceConnection, type AuthHeader, type ConnectionSettings } from './connection.js';
import { SpeechInputError, SpeechServiceError } from './errors.js';
import { headerValue, unexpectedContentType } from './http-errors.js';
import { checkModelId } from './limits.js';
import { readJsonBody } from './response-body.js';
import { isLanguageTag, toTranscript, type TranscriptBody } from './transcript.js';
import type { OpenResponse } from './transport.js';

export type { TranscriptWord } from './transcript.js';

/** Below the prefix. */
export const STT_PATH = '/v1/speech-to-text';
/**
 * ElevenLabs' own path. (The speech client's default, `/api/speech`, is where voxbridge mounts its
 * local service, which has no speech-to-text.)
 */
export const DEFAULT_STT_PATH_PREFIX = '';
export const DEFAULT_STT_AUTH_HEADER: AuthHeader = 'xi-api-key';
export const DEFAULT_STT_MODEL_ID = 'scribe_v1';
/**
 * The whole transcription happens before the answer's first byte, so this bounds it, per attempt:
 * generous for a full turn; a caller that needs a tighter bound on the whole call (retries included)
 * passes `signal: AbortSignal.timeout(…)`.
 */
export const DEFAULT_STT_FIRST_BYTE_TIMEOUT_MS = 20_000;
export const DEFAULT_STT_IDLE_TIMEOUT_MS = 10_000;
/**
 * A request lasts as long as its transcription (not, as speech does, as long as its audio plays), so
 * fewer sockets serve as many calls.
 */
export const DEFAULT_STT_CONNECTIONS = 64;
/** The longest caller's turn sent: 60 s (1.9 MB of 16 kHz mono 16-bit). */
export const DEFAULT_MAX_AUDIO_MS = 60_000;
/** ElevenLabs refuses shorter audio; refusing it here saves the round trip. */
export const MIN_AUDIO_MS = 100;
/** Bytes of a WAV file besides its samples (headers, LIST chunks) that may go with them. */
export const MAX_NON_AUDIO_BYTES = 64 * 1024;
/** A turn's transcript with word timings is tens of kilobytes; more is a misbehaving peer. */
export const DEFAULT_MAX_RESPONSE_BYTES = 1024 * 1024;
/**
 * Within `maxResponseBytes`, an answer may hold this much for any turn, plus `RESPONSE_BYTES_PER_SECOND`
 * per second of its audio: ~6 word entries a second of ~130 bytes each is under 1 KiB, so 16 KiB is
 * far more than any transcript of it (60 s: 1 MiB).
 */
export const RESPONSE_BASE_BYTES = 64 * 1024;
export const RESPONSE_BYTES_PER_SECOND = 16 * 1024;
/**
 * A transcription must be done (retries, backoff and the whole answer included) within this floor
 * plus `DEFAULT_STT_DEADLINE_REALTIME_MULTIPLE` times the turn's length, else `deadline_exceeded`: a
 * service that stalls or drips its answer costs one turn, and the turns after it are transcribed.
 */
export const DEFAULT_STT_DEADLINE_FLOOR_MS = 30_000;
export const DEFAULT_STT_DEADLINE_REALTIME_MULTIPLE = 2;
const UPLOAD_FILENAME = 'turn.wav';
const UPLOAD_CONTENT_TYPE = 'audio/wav';
const USER_AGENT = 'voxbridge-stt-client';
const OWNER = 'SttClient';

export interface SttClientOptions extends ConnectionSettings {
  /** Default `''`: ElevenLabs' own path (see `DEFAULT_STT_PATH_PREFIX`). */
  pathPrefix?: string;
  /** Default `xi-api-key` (ElevenLabs'); `ServicePlatform-APIKey` for the speech-service platform. */
  authHeader?: AuthHeader;
  /** Request sent → first byte of the answer, per attempt (retried). Default 20 s. */
  firstByteTimeoutMs?: number;
  /** Longest pause inside the answer once it flows (not retried). Default 10 s. */
  idleTimeoutMs?: number;
  /** Keep-alive pool size. Default 64. */
  connections?: number;
  /** Sent as `model_id`. Default `scribe_v1`. */
  modelId?: string;
  /** Audio longer than this is refused before sending. Default 60 s. */
  maxAudioMs?: number;
  /**
   * An answer over this many bytes is cut off and refused (`response_too_large`); a shorter bound
   * applies to a short turn (`RESPONSE_BASE_BYTES` + `RESPONSE_BYTES_PER_SECOND` of its audio). Default 1 MiB.
   */
  maxResponseBytes?: number;
  /**
   * Each `transcribe()` must end within `deadlineFloorMs + deadlineRealtimeMultiple × the audio's
   * length`, retries included, else it fails with `deadline_exceeded` (not retryable). Defaults 30 s, 2.
   */
  deadlineFloorMs?: number;
  deadlineRealtimeMultiple?: number;
}

export interface TranscribeOptions {
  /** Aborts the request (and any backoff); the call rejects with the signal's reason. */
  signal?: AbortSignal | undefined;
  /** Sent as `language_code` (ISO 639-1 or 639-3); left out, the service detects the language. */
  languageCode?: string | undefined;
}

export interface Transcript extends TranscriptBody {
  /** Length of the audio sent. */
  audioMs: number;
  requestId: string | undefined;
  attempts: number;
  /** The call's start → the answer's first byte, retries and backoff included. */
  firstByteMs: number;
}

/** The upload's facts, or a `SpeechInputError` (field `file`) saying why it will not be sent. */
function checkAudio(wav: unknown, maxAudioMs: number): WavInfo {
  if (!(wav instanceof Uint8Array))
    throw new SpeechInputError('file', 'the audio must be a Uint8Array holding a WAV file');
  let info: WavInfo;
  try {
    info = readWavInfo(wav);
  } catch (error) {
    if (!(error instanceof WavFormatError)) throw error;
    throw new SpeechInputError('file', `the audio is not a WAV file this client reads: ${error.message}`);
  }
  const ms = Math.round(info.durationMs);
  if (info.durationMs < MIN_AUDIO_MS)
    throw new SpeechInputError('file', `the audio is ${ms} ms long; at least ${MIN_AUDIO_MS} ms are needed`);
  if (info.durationMs > maxAudioMs)
    throw new SpeechInputError(
      'file',
      `the audio is ${ms} ms long; at most ${maxAudioMs} ms (maxAudioMs) are sent`,
    );
  const extra = wav.byteLength - info.dataBytes;
  if (extra > MAX_NON_AUDIO_BYTES)
    throw new SpeechInputError(
      'file',
      `the WAV file holds ${extra} bytes besides its samples; at most ${MAX_NON_AUDIO_BYTES} are sent`,
    );
  return info;
}

function checkLanguageCode(code: unknown): string | undefined {
  if (code === undefined) return undefined;
  if (typeof code !== 'string' || !isLanguageTag(code))
    throw new SpeechInputError(
      'language_code',
      'language_code must be an ISO 639-1 or 639-3 code (e.g. en, eng), optionally with subtags',
    );
  return code;
}

/** `application/json` or a `+json` type; no header at all is taken as JSON too. */
function isJsonContentType(value: string | undefined): boolean {
  return value === undefined || value.trim() === '' || isJsonType(value);
}

export class SttClient {
  /** The base URL as given, its `user:password@` replaced by `[redacted]`: the form to log. */
  readonly redactedBaseUrl: string;
  readonly #connection: ServiceConnection;
  readonly #modelId: string;
  readonly #maxAudioMs: number;
  readonly #maxResponseBytes: number;
  readonly #deadlineFloorMs: number;
  readonly #deadlineMultiple: number;

  constructor(options: SttClientOptions) {
    this.#connection = new ServiceConnection(options, {
      owner: OWNER,
      userAgent: USER_AGENT,
      pathPrefix: DEFAULT_STT_PATH_PREFIX,
      authHeader: DEFAULT_STT_AUTH_HEADER,
      firstByteTimeoutMs: DEFAULT_STT_FIRST_BYTE_TIMEOUT_MS,
      idleTimeoutMs: DEFAULT_STT_IDLE_TIMEOUT_MS,
      connections: DEFAULT_STT_CONNECTIONS,
    });
    this.redactedBaseUrl = this.#connection.redactedBaseUrl;
    const modelProblem = checkModelId(options.modelId);
    if (modelProblem) throw new TypeError(`${OWNER}: ${modelProblem.message}`);
    this.#modelId = options.modelId ?? DEFAULT_STT_MODEL_ID;
    this.#maxAudioMs = numberOption(OWNER, 'maxAudioMs', options.maxAudioMs, DEFAULT_MAX_AUDIO_MS);
    this.#maxResponseBytes = Math.floor(
      numberOption(OWNER, 'maxResponseBytes', options.maxResponseBytes, DEFAULT_MAX_RESPONSE_BYTES),
    );
    this.#deadlineFloorMs = numberOption(
      OWNER,
      'deadlineFloorMs',
      options.deadlineFloorMs,
      DEFAULT_STT_DEADLINE_FLOOR_MS,
    );
    this.#deadlineMultiple = numberOption(
      OWNER,
      'deadlineRealtimeMultiple',
      options.deadlineRealtimeMultiple,
      DEFAULT_STT_DEADLINE_REALTIME_MULTIPLE,
      true,
    );
  }

  /**
   * The text of `wav` (any PCM or float WAV; voxbridge sends 16 kHz mono 16-bit). Rejects with a
   * `SpeechInputError` before sending when the audio is not a readable WAV or is shorter than
   * `MIN_AUDIO_MS` or longer than `maxAudioMs`; with a `SpeechServiceError` when the service fails,
   * answers something that is not a transcript or misses the deadline (`deadline_exceeded`); with the
   * signal's reason when `signal` aborts.
   */
  async transcribe(wav: Uint8Array, opts: TranscribeOptions = {}): Promise<Transcript> {
    const audio = checkAudio(wav, this.#maxAudioMs);
    const languageCode = checkLanguageCode(opts.languageCode);
    const { signal } = opts;
    const deadlineMs = this.#deadlineFloorMs + audio.durationMs * this.#deadlineMultiple;
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(this.#deadlineExceeded(deadlineMs, audio)), deadlineMs);
    const callSignal = signal ? AbortSignal.any([signal, deadline.signal]) : deadline.signal;
    const maxResponseBytes = Math.min(
      this.#maxResponseBytes,
      RESPONSE_BASE_BYTES + Math.ceil((audio.durationMs / 1000) * RESPONSE_BYTES_PER_SECOND),
    );
    const form = new FormData();
    // The small fields first: a server reading the stream knows them before the file arrives.
    form.append('model_id', this.#modelId);
    if (languageCode !== undefined) form.append('language_code', languageCode);
    form.append('file', new Blob([wav], { type: UPLOAD_CONTENT_TYPE }), UPLOAD_FILENAME);
    let response: OpenResponse;
    let json: unknown;
    try {
      response = await this.#connection.open(
        {
          method: 'POST',
          path: STT_PATH,
          headers: this.#connection.headers('application/json'),
          body: form,
          idempotent: true,
          emptyCode: 'invalid_response',
        },
        callSignal,
      );
      const contentType = headerValue(response.headers, 'content-type');
      if (!isJsonContentType(contentType)) {
        response.cancel();
        throw unexpectedContentType(response, 'a JSON transcript', this.#connection.secrets);
      }
      json = await readJsonBody(response, maxResponseBytes, this.#connection.secrets);
    } catch (error) {
      throw this.#reworded(error);
    } finally {
      clearTimeout(timer);
    }
    if (signal?.aborted) throw signal.reason;
    return {
      ...toTranscript(json, audio.durationMs, response.requestId),
      audioMs: audio.durationMs,
      requestId: response.requestId,
      attempts: response.attempts,
      firstByteMs: response.firstByteMs,
    };
  }

  /** Closes the pool once running requests finish; later calls fail with `client_closed`. */
  async close(): Promise<void> {
    await this.#connection.close();
  }

  #deadlineExceeded(deadlineMs: number, audio: WavInfo): SpeechServiceError {
    return new SpeechServiceError({
      code: 'deadline_exceeded',
      message:
        `no whole transcript within ${Math.round(deadlineMs)} ms, the deadline for ` +
        `${Math.round(audio.durationMs)} ms of audio`,
      retryable: false,
    });
  }

  /** The transport words its timeouts for audio; what did not come here is a transcript. */
  #reworded(error: unknown): unknown {
    if (!(error instanceof SpeechServiceError)) return error;
    let message: string;
    if (error.code === 'first_byte_timeout')
      message = `no transcript within ${this.#connection.firstByteTimeoutMs} ms of sending the audio`;
    else if (error.code === 'idle_timeout')
      message = `the transcript stopped arriving for ${this.#connection.idleTimeoutMs} ms`;
    else return error;
    return new SpeechServiceError({
      code: error.code,
      message,
      status: error.status,
      requestId: error.requestId,
      retryable: error.retryable,
      retryAfterMs: error.retryAfterMs,
      cause: error,
    });
  }
}
