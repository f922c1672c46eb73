/**
 * The realtime speech-to-text client: a caller's turn streamed to an ElevenLabs-compatible
 * `GET {base}{prefix}/v1/speech-to-text/realtime` WebSocket (Scribe v2 Realtime) as it is spoken,
 * partial transcripts while it goes on, and the committed transcript ~150 ms after the turn ends,
 * instead of a WAV posted to the batch API (stt.ts) once it has ended.
 *
 * **One session per caller's turn, not one per call.** A session opens at the turn's onset (its
 * pre-roll is the first audio sent), is committed once at the turn's end, and is closed when its
 * transcript is in. Why not keep one socket open for the whole call:
 * - The service bills and limits by streamed audio and session time (`session_time_limit_exceeded`,
 *   `insufficient_audio_activity`): a per-call socket would have to stream the silence between turns, or
 *   sit idle and be closed under us. Per turn, only speech is sent (what the VAD says, with pre-roll).
 * - A failure costs one turn, and that turn has a clean fallback (the batch API, for its recorded
 *   audio); the next turn starts afresh, with no reconnect logic and no state carried across.
 * - One commit per session keeps every answer unambiguous: a committed transcript belongs to this turn
 *   (never a late one of the turn before), and its word times count from the turn's first sample.
 * - `previous_text` is only taken with a session's first chunk: per turn, each turn can carry context.
 * The price is a handshake per turn (~100–300 ms to a remote service); it is paid while the caller
 * speaks, because audio given before `session_started` is held and sent then, so it reaches the
 * transcript's latency only for turns shorter than the handshake.
 *
 * The line's audio is sent in its own format where the service takes it (μ-law 8 kHz as `ulaw_8000`,
 * byte for byte; 16-bit PCM at 8/16/22.05/24/44.1/48 kHz as `pcm_<rate>`; A-law decoded, not
 * resampled, to `pcm_8000`), so nothing is resampled twice (realtime-protocol.ts' `realtimeFormatFor`).
 *
 * The key goes in one header (`xi-api-key`, or `ServicePlatform-APIKey`) to the configured service
 * only: the URL carries none (a base URL's `user:password@` becomes `Authorization: Basic`), redirects
 * are not followed, and the key and credentials are scrubbed from every message built from what a
 * server wrote. Logs name the base URL redacted, never a header.
 */
import type { Logger } from 'pino';
import { setTimeout as sleep } from 'node:timers/promises';
import type { WireFormat } from '../audio/framer.js';
import { parseBaseUrl, redactUrl } from './base-url.js';
import { normalizePrefix, numberOption, type AuthHeader } from './connection.js';
import { SpeechInputError } from './errors.js';
import { checkContext, checkModelId } from './limits.js';
import {
  DEFAULT_REALTIME_MODEL_ID,
  REALTIME_STT_PATH,
  realtimeFormatFor,
  realtimeUrl,
} from './realtime-protocol.js';
import { clientClosed, RealtimeSttSession, type RealtimeClock } from './realtime-session.js';
import { isLanguageTag } from './transcript.js';

export { canFallBackToBatch, RealtimeSttError, type RealtimePhase } from './realtime-error.js';
export type { RealtimeTranscript, RealtimeTranscriptEvent } from './realtime-feed.js';
export {
  DEFAULT_REALTIME_MODEL_ID,
  REALTIME_STT_PATH,
  realtimeFormatFor,
  type RealtimeAudioFormat,
} from './realtime-protocol.js';
export {
  RealtimeSttSession,
  type RealtimeClock,
  type RealtimeSessionEnd,
  type RealtimeSessionStatus,
} from './realtime-session.js';

/**
 * Handshake and `session_started`: a remote service answers in a few hundred ms; past this the turn is
 * better transcribed by the batch API than waited for.
 */
export const DEFAULT_REALTIME_CONNECT_TIMEOUT_MS = 5_000;
/**
 * `commit()` → committed transcript: the service transcribes as the audio streams, so a commit is
 * answered in ~150 ms whatever the turn's length; 3 s is a stall, and batch still has the turn.
 */
export const DEFAULT_REALTIME_COMMIT_TIMEOUT_MS = 3_000;
/** Our close frame → the server's; then the socket is cut. */
export const DEFAULT_REALTIME_CLOSE_TIMEOUT_MS = 1_000;
/** The longest turn streamed in one session (the batch client's `maxAudioMs` too). */
export const DEFAULT_REALTIME_MAX_AUDIO_MS = 60_000;
/**
 * The largest message a server may send: a 60 s turn's committed transcript with word timings is
 * ~150 KiB; the text and words in it are bounded again by the audio sent (transcript.ts).
 */
export const DEFAULT_REALTIME_MAX_MESSAGE_BYTES = 1024 * 1024;
export const DEFAULT_REALTIME_AUTH_HEADER: AuthHeader = 'xi-api-key';
const USER_AGENT = 'voxbridge-stt-realtime-client';
const OWNER = 'RealtimeSttClient';

export interface RealtimeSttOptions {
  /** `http(s)://host[:port][/path]`, as for the batch client; it is turned into `ws(s)://` here. */
  baseUrl: string;
  /** Default `''`: ElevenLabs' own path. */
  pathPrefix?: string;
  /** Sent as is in `authHeader`; never logged, scrubbed from error messages. Empty: no header. */
  apiKey: string;
  /** Default `xi-api-key` (ElevenLabs'); `ServicePlatform-APIKey` for the speech-service platform. */
  authHeader?: AuthHeader;
  /** Sent as `model_id`. Default `scribe_v2_realtime`. */
  modelId?: string;
  /** `open()` → `session_started`, else `connect_timeout`. Default 5 s. */
  connectTimeoutMs?: number;
  /** `commit()` → its committed transcript, else `commit_timeout`. Default 3 s. */
  commitTimeoutMs?: number;
  /** `close()` → the socket closed, else cut. Default 1 s. */
  closeTimeoutMs?: number;
  /** Audio of one session past this fails it with `audio_too_long`. Default 60 s. */
  maxAudioMs?: number;
  /** A server message over this fails its session with `response_too_large`. Default 1 MiB. */
  maxMessageBytes?: number;
  /** Every deadline runs on it. Default: `performance.now()` and timers. */
  clock?: RealtimeClock;
  /** Sessions opened, started, closed (debug) and failed (warn); never a key or a header. */
  log?: Logger;
}

export interface RealtimeTurnOptions {
  /** The line's audio format: what `sendAudio` is given. Mono, at a rate the service takes. */
  format: WireFormat;
  /** Sent as `language_code`; left out, the service detects the language. */
  languageCode?: string | undefined;
  /** Word timings in the committed transcript (`include_timestamps`). Default false. */
  includeTimestamps?: boolean | undefined;
  /** Context for the model (what was said before), sent with the first audio. */
  previousText?: string | undefined;
  /** Closes the session; its pending commit rejects with the signal's reason. */
  signal?: AbortSignal | undefined;
}

/*
 * The configuration that chooses and runs it is `stt.mode` (batch | realtime) and `stt.realtime`
 * (base URL, model, pre-roll, connect and commit deadlines, longest turn) in src/app/config-schema.ts;
 * the relay's turns (src/relay/vad-turns.ts, turn-stt.ts) open a session per turn and send a turn whose
 * session fails with `canFallBackToBatch(error)` to the batch client with its recorded audio, logged
 * with the error's code.
 */

const systemClock: RealtimeClock = {
  now: () => performance.now(),
  async sleepUntil(atMs, signal) {
    signal?.throwIfAborted();
    const delayMs = atMs - performance.now();
    if (delayMs > 0) await sleep(delayMs, undefined, signal ? { signal } : undefined);
  },
};

export class RealtimeSttClient {
  /** The base URL as given, its `user:password@` replaced by `[redacted]`: the form to log. */
  readonly redactedBaseUrl: string;
  readonly #origin: string;
  readonly #path: string;
  readonly #headers: Readonly<Record<string, string>>;
  readonly #secrets: readonly string[];
  readonly #modelId: string;
  readonly #clock: RealtimeClock;
  readonly #log: Logger | undefined;
  readonly #timeouts: { connect: number; commit: number; close: number };
  readonly #maxAudioMs: number;
  readonly #maxMessageBytes: number;
  readonly #sessions = new Set<RealtimeSttSession>();
  #closed = false;

  constructor(options: RealtimeSttOptions) {
    const base = parseBaseUrl(options.baseUrl);
    this.redactedBaseUrl = redactUrl(options.baseUrl);
    if (typeof options.apiKey !== 'string') throw new TypeError(`${OWNER}: apiKey must be a string`);
    const authHeader = options.authHeader ?? DEFAULT_REALTIME_AUTH_HEADER;
    if (authHeader !== 'xi-api-key' && authHeader !== 'ServicePlatform-APIKey')
      throw new TypeError(`${OWNER}: authHeader must be ServicePlatform-APIKey or xi-api-key`);
    const modelProblem = checkModelId(options.modelId);
    if (modelProblem) throw new TypeError(`${OWNER}: ${modelProblem.message}`);
    this.#modelId = options.modelId ?? DEFAULT_REALTIME_MODEL_ID;
    this.#origin = base.origin;
    this.#path = base.path + normalizePrefix(options.pathPrefix ?? '');
    const headers: Record<string, string> = { 'user-agent': USER_AGENT };
    if (options.apiKey !== '') headers[authHeader] = options.apiKey;
    if (base.authorization !== undefined) headers['authorization'] = base.authorization;
    this.#headers = headers;
    this.#secrets = [...(options.apiKey === '' ? [] : [options.apiKey]), ...base.secrets];
    const num = (name: keyof RealtimeSttOptions, value: number | undefined, fallback: number): number =>
      numberOption(OWNER, name, value, fallback);
    this.#timeouts = {
      connect: num('connectTimeoutMs', options.connectTimeoutMs, DEFAULT_REALTIME_CONNECT_TIMEOUT_MS),
      commit: num('commitTimeoutMs', options.commitTimeoutMs, DEFAULT_REALTIME_COMMIT_TIMEOUT_MS),
      close: num('closeTimeoutMs', options.closeTimeoutMs, DEFAULT_REALTIME_CLOSE_TIMEOUT_MS),
    };
    this.#maxAudioMs = num('maxAudioMs', options.maxAudioMs, DEFAULT_REALTIME_MAX_AUDIO_MS);
    this.#maxMessageBytes = Math.floor(
      num('maxMessageBytes', options.maxMessageBytes, DEFAULT_REALTIME_MAX_MESSAGE_BYTES),
    );
    this.#clock = options.clock ?? systemClock;
    this.#log = options.log;
  }

  /** Sessions not yet closed or failed. */
  get openSessions(): number {
    return this.#sessions.size;
  }

  /**
   * Opens one turn's session; it connects in the background while `sendAudio` is held. Throws a
   * `SpeechInputError` (before connecting) when the line's format is not one the service takes
   * without resampling (field `audio_format`), or `language_code` / `previous_text` are not valid;
   * `client_closed` once `close()` was called.
   */
  open(turn: RealtimeTurnOptions): RealtimeSttSession {
    if (this.#closed) throw clientClosed();
    const plan = realtimeFormatFor(turn.format);
    if (plan === undefined)
      throw new SpeechInputError(
        'audio_format',
        `the service takes mono μ-law or A-law at 8 kHz, or 16-bit PCM at 8–48 kHz, not ` +
          `${turn.format.encoding} at ${turn.format.sampleRate} Hz with ${turn.format.channels} channels`,
      );
    const { languageCode, previousText } = turn;
    if (languageCode !== undefined && (typeof languageCode !== 'string' || !isLanguageTag(languageCode)))
      throw new SpeechInputError('language_code', 'language_code must be an ISO 639-1 or 639-3 code');
    const contextProblem = checkContext('previous_text', previousText);
    if (contextProblem) throw new SpeechInputError(contextProblem.field, contextProblem.message);
    const includeTimestamps = turn.includeTimestamps ?? false;
    const session = new RealtimeSttSession({
      url: realtimeUrl(this.#origin, this.#path, {
        modelId: this.#modelId,
        audioFormat: plan.audioFormat,
        languageCode,
        includeTimestamps,
      }),
      redactedUrl: `${redactUrl(this.#origin)}${this.#path}${REALTIME_STT_PATH}`,
      headers: this.#headers,
      secrets: this.#secrets,
      plan,
      includeTimestamps,
      previousText: previousText === '' ? undefined : previousText,
      clock: this.#clock,
      log: this.#log,
      connectTimeoutMs: this.#timeouts.connect,
      commitTimeoutMs: this.#timeouts.commit,
      closeTimeoutMs: this.#timeouts.close,
      maxAudioMs: this.#maxAudioMs,
      maxMessageBytes: this.#maxMessageBytes,
      signal: turn.signal,
    });
    this.#sessions.add(session);
    void session.done.then(() => this.#sessions.delete(session));
    return session;
  }

  /** Closes every open session (cleanly) and refuses new ones with `client_closed`. */
  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all([...this.#sessions].map((s) => s.close()));
  }
}
