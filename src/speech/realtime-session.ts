/**
 * (Over 400 lines: one state machine, whose socket events, deadlines and inbound messages all read
 * and change the one state; what goes out is realtime-outbox.ts, what is parsed realtime-protocol.ts.)
 *
 * One realtime speech-to-text session: one WebSocket to the service, for one caller's turn (see
 * stt-realtime.ts for why a turn and not a call). Audio given before the service said
 * `session_started` is held (bounded by `maxAudioMs`) and sent then, so the socket opens while the
 * caller already speaks; every deadline runs on the injected clock; every message of the server is
 * bounded and checked (realtime-protocol.ts) before it is used, and one that is not this protocol
 * fails this session, never another.
 *
 * Its lifecycle is one union keyed on `status`, changed in `#setState` only, which does all the
 * teardown: connecting → open → closing → closed, or failed from anywhere before closed.
 */
import type { IncomingMessage } from 'node:http';
import type { Logger } from 'pino';
import WebSocket, { type RawData } from 'ws';
import { CLOSE, closeReason } from '../http/ws-close.js';
import { rawText } from '../http/ws-data.js';
import { SpeechInputError, SpeechServiceError } from './errors.js';
import { errorFromResponse, errorFromTransport, redact } from './http-errors.js';
import { RealtimeSttError, type RealtimePhase } from './realtime-error.js';
import { TranscriptFeed, type RealtimeTranscript, type RealtimeTranscriptEvent } from './realtime-feed.js';
import { AudioOutbox } from './realtime-outbox.js';
import {
  parseServerMessage,
  RealtimeProtocolError,
  SERVER_ERROR_KINDS,
  type RealtimeAudioFormat,
  type RealtimeFormatPlan,
  type ServerErrorKind,
  type ServerMessage,
} from './realtime-protocol.js';
import type { TranscriptBody } from './transcript.js';

/** Monotonic time and sleeping on it: the speaker's `Clock` shape, so a test's fake clock drives both. */
export interface RealtimeClock {
  now(): number;
  /** Resolves once `now() >= atMs`; rejects with `signal.reason` on abort. */
  sleepUntil(atMs: number, signal?: AbortSignal): Promise<void>;
}

/** Our audio not leaving the socket beyond this many bytes means the link has stalled: `send_stalled`. */
export const MAX_BUFFERED_BYTES = 1024 * 1024;
/**
 * Messages a server may send per second of audio, and before any: partials come a few times a second;
 * far more is a peer flooding us.
 */
export const MESSAGES_BASE = 64;
export const MESSAGES_PER_AUDIO_SECOND = 50;
/** Commits per session (asked or not); a turn needs one. */
export const MAX_COMMITS = 32;
/** Of a refused handshake's body, this much is read for its error. */
const REFUSAL_BODY_BYTES = 4096;

/** What the client resolved for one session. */
export interface RealtimeSessionSettings {
  readonly url: string;
  /** The URL for logs and messages (its query holds no secret; the base's credentials are gone). */
  readonly redactedUrl: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly secrets: readonly string[];
  readonly plan: RealtimeFormatPlan;
  readonly includeTimestamps: boolean;
  readonly previousText: string | undefined;
  readonly clock: RealtimeClock;
  readonly log: Logger | undefined;
  readonly connectTimeoutMs: number;
  readonly commitTimeoutMs: number;
  readonly closeTimeoutMs: number;
  readonly maxAudioMs: number;
  readonly maxMessageBytes: number;
  readonly signal: AbortSignal | undefined;
}

type State =
  | { readonly status: 'connecting' }
  | { readonly status: 'open'; readonly sessionId: string }
  | { readonly status: 'closing'; readonly sessionId: string | undefined }
  /** `reason`: the caller's abort reason, when an abort closed it. */
  | { readonly status: 'closed'; readonly sessionId: string | undefined; readonly reason?: unknown }
  | { readonly status: 'failed'; readonly sessionId: string | undefined; readonly error: RealtimeSttError };

export type RealtimeSessionStatus = State['status'];

/** How a session ended (`done`). */
export interface RealtimeSessionEnd {
  readonly status: 'closed' | 'failed';
  readonly error: RealtimeSttError | undefined;
  readonly sessionId: string | undefined;
  readonly audioMs: number;
  readonly commits: number;
}

interface PendingCommit {
  readonly atMs: number;
  resolve(transcript: RealtimeTranscript): void;
  reject(error: unknown): void;
}

export class RealtimeSttSession {
  readonly audioFormat: RealtimeAudioFormat;
  readonly sampleRate: number;
  /** Resolves once the session is closed or failed; never rejects. */
  readonly done: Promise<RealtimeSessionEnd>;
  #state: State = { status: 'connecting' };
  readonly #s: RealtimeSessionSettings;
  readonly #ws: WebSocket;
  /** Aborted at the end: stops every deadline's sleep. */
  readonly #life = new AbortController();
  readonly #feed = new TranscriptFeed();
  readonly #ready: Promise<void>;
  #settleReady!: (error?: Error) => void;
  #resolveDone!: (end: RealtimeSessionEnd) => void;
  readonly #outbox: AudioOutbox;
  readonly #commits: PendingCommit[] = [];
  #bytes = 0;
  #bytesSinceCommit = 0;
  #commitsAsked = 0;
  #commitsAnswered = 0;
  #messages = 0;
  readonly #onAbort = (): void => this.#abort();

  constructor(settings: RealtimeSessionSettings) {
    this.#s = settings;
    const { plan } = settings;
    this.audioFormat = plan.audioFormat;
    this.sampleRate = plan.sampleRate;
    this.#outbox = new AudioOutbox(plan, settings.previousText);
    this.done = new Promise((resolve) => (this.#resolveDone = resolve));
    this.#ready = new Promise<void>((resolve, reject) => {
      this.#settleReady = (error) => (error === undefined ? resolve() : reject(error));
    });
    this.#ready.catch(() => undefined); // a caller that never asks is told through `done` instead
    this.#ws = new WebSocket(settings.url, {
      headers: { ...settings.headers },
      maxPayload: settings.maxMessageBytes,
      perMessageDeflate: false,
      followRedirects: false,
    });
    this.#ws.on('unexpected-response', (_req, res) => this.#onRefused(res));
    this.#ws.on('message', (data, isBinary) => this.#onMessage(data, isBinary));
    this.#ws.on('error', (error) => this.#onSocketError(error));
    this.#ws.on('close', (code, reason) => this.#onClose(code, reason));
    settings.log?.debug({ url: settings.redactedUrl, audioFormat: this.audioFormat }, 'realtime stt opening');
    this.#after(settings.connectTimeoutMs, () => {
      if (this.#state.status === 'connecting')
        this.#fail('connect_timeout', `no session_started within ${settings.connectTimeoutMs} ms`, {
          retryable: true,
        });
    });
    if (settings.signal?.aborted) queueMicrotask(this.#onAbort);
    else settings.signal?.addEventListener('abort', this.#onAbort, { once: true });
  }

  get status(): RealtimeSessionStatus {
    return this.#state.status;
  }

  /** The service's id for the session, once it started. */
  get sessionId(): string | undefined {
    return this.#state.status === 'connecting' ? undefined : this.#state.sessionId;
  }

  /** Why the session failed, once it has. */
  get error(): RealtimeSttError | undefined {
    return this.#state.status === 'failed' ? this.#state.error : undefined;
  }

  /** Audio taken so far (ms), sent or held. */
  get audioMs(): number {
    return this.#bytes / this.#s.plan.bytesPerMs;
  }

  /** Resolves when the service has started the session; rejects with how it failed (or was closed). */
  ready(): Promise<void> {
    return this.#ready;
  }

  /**
   * The line's audio, in the format the session was opened with: sent at once when the session has
   * started, held until then. False, and nothing taken, once the session is closing, closed or failed
   * (its error is in `error`, and `commit()` rejects with it): the caller keeps the turn for batch.
   */
  sendAudio(chunk: Uint8Array): boolean {
    const status = this.#state.status;
    if (status !== 'connecting' && status !== 'open') return false;
    const bytes = this.#outbox.convert(chunk);
    if (bytes.byteLength === 0) return true;
    this.#bytes += bytes.byteLength;
    this.#bytesSinceCommit += bytes.byteLength;
    if (this.audioMs > this.#s.maxAudioMs) {
      this.#fail('audio_too_long', `more than ${this.#s.maxAudioMs} ms of audio in one session`);
      return false;
    }
    if (status === 'connecting') this.#outbox.hold(bytes);
    else this.#sendAll(this.#outbox.audio(bytes));
    return true;
  }

  /**
   * Commits the audio sent since the last commit and resolves with its transcript (with word timings
   * when the session was opened with `includeTimestamps`). Rejects with a `RealtimeSttError` when none
   * comes within `commitTimeoutMs`, or the session fails or is closed first.
   */
  commit(): Promise<RealtimeTranscript> {
    const status = this.#state.status;
    if (status !== 'connecting' && status !== 'open') return Promise.reject(this.#endError());
    if (this.#commitsAsked >= MAX_COMMITS)
      return Promise.reject(new SpeechInputError('commit', `at most ${MAX_COMMITS} commits in one session`));
    this.#commitsAsked++;
    this.#bytesSinceCommit = 0;
    const promise = new Promise<RealtimeTranscript>((resolve, reject) => {
      const pending: PendingCommit = { atMs: this.#s.clock.now(), resolve, reject };
      this.#commits.push(pending);
      this.#after(this.#s.commitTimeoutMs, () => {
        if (this.#commits.includes(pending))
          this.#fail('commit_timeout', `no committed transcript within ${this.#s.commitTimeoutMs} ms`, {
            retryable: true,
          });
      });
    });
    if (status === 'connecting') this.#outbox.holdCommit();
    else this.#send(this.#outbox.commit());
    return promise;
  }

  /** Partial and committed transcripts as they come; ends when the session closes, throws if it fails. */
  events(signal?: AbortSignal): AsyncGenerator<RealtimeTranscriptEvent, void, undefined> {
    return this.#feed.values(signal);
  }

  /**
   * Closes the socket cleanly (a close frame, then the server's; after `closeTimeoutMs` it is cut).
   * A commit still pending rejects with `session_closed`. Resolves when the socket is closed.
   */
  async close(): Promise<void> {
    const state = this.#state;
    if (state.status === 'connecting') {
      this.#setState({ status: 'closed', sessionId: undefined });
    } else if (state.status === 'open') {
      this.#setState({ status: 'closing', sessionId: state.sessionId });
      this.#ws.close(CLOSE.normal);
      this.#after(this.#s.closeTimeoutMs, () => {
        if (this.#state.status === 'closing')
          this.#setState({ status: 'closed', sessionId: state.sessionId });
      });
    }
    await this.done;
  }

  #setState(next: State): void {
    const prev = this.#state;
    if (prev.status === 'closed' || prev.status === 'failed') return;
    this.#state = next;
    const { log } = this.#s;
    if (next.status === 'open') {
      log?.debug({ sessionId: next.sessionId }, 'realtime stt session started');
      this.#settleReady();
      this.#sendAll(this.#outbox.drain());
      return;
    }
    if (next.status === 'closing') {
      this.#outbox.clear();
      this.#rejectCommits(this.#endError());
      return;
    }
    if (next.status !== 'closed' && next.status !== 'failed') return;
    this.#life.abort();
    this.#s.signal?.removeEventListener('abort', this.#onAbort);
    const error = this.#endError();
    this.#outbox.clear();
    this.#rejectCommits(error);
    this.#settleReady(error);
    this.#feed.end(next.status === 'failed' ? next.error : next.reason);
    // A clean close has its socket closed already; anything else cuts it (no more of it is wanted).
    if (this.#ws.readyState !== WebSocket.CLOSED) this.#ws.terminate();
    const end: RealtimeSessionEnd = {
      status: next.status,
      error: next.status === 'failed' ? next.error : undefined,
      sessionId: next.sessionId,
      audioMs: this.audioMs,
      commits: this.#commitsAnswered,
    };
    if (next.status === 'failed')
      log?.warn(
        {
          code: next.error.code,
          phase: next.error.phase,
          fallback: next.error.fallback,
          err: next.error.message,
        },
        'realtime stt session failed',
      );
    else
      log?.debug(
        { sessionId: end.sessionId, audioMs: Math.round(end.audioMs) },
        'realtime stt session closed',
      );
    this.#resolveDone(end);
  }

  /** What a commit or `ready()` rejects with once the session is past use. */
  #endError(): Error {
    const state = this.#state;
    if (state.status === 'failed') return state.error;
    if (state.status === 'closed' && state.reason !== undefined) return state.reason as Error;
    return new RealtimeSttError({
      code: 'session_closed',
      message: 'the realtime speech-to-text session was closed',
      phase: 'commit',
      fallback: false,
      retryable: false,
    });
  }

  #rejectCommits(error: unknown): void {
    for (const pending of this.#commits.splice(0)) pending.reject(error);
  }

  #phase(): RealtimePhase {
    if (this.#state.status === 'connecting') return 'connect';
    return this.#commits.length > 0 ? 'commit' : 'stream';
  }

  #fail(
    code: string,
    message: string,
    extra: { fallback?: boolean; retryable?: boolean; status?: number; cause?: unknown } = {},
  ): void {
    const state = this.#state;
    if (state.status === 'closed' || state.status === 'failed') return;
    const error = new RealtimeSttError({
      code,
      message: redact(`realtime speech-to-text at ${this.#s.redactedUrl}: ${message}`, this.#s.secrets),
      phase: this.#phase(),
      fallback: extra.fallback ?? true,
      retryable: extra.retryable ?? false,
      status: extra.status,
      cause: extra.cause,
    });
    this.#setState({ status: 'failed', sessionId: this.sessionId, error });
  }

  #abort(): void {
    this.#setState({ status: 'closed', sessionId: this.sessionId, reason: this.#s.signal?.reason });
  }

  /** Runs `then` after `ms` on the clock, unless the session ends first. */
  #after(ms: number, then: () => void): void {
    const { clock } = this.#s;
    clock.sleepUntil(clock.now() + ms, this.#life.signal).then(then, () => undefined);
  }

  /** Sends the messages in order, stopping at the first that cannot go. */
  #sendAll(messages: readonly string[]): void {
    for (const message of messages) if (!this.#send(message)) return;
  }

  #send(text: string): boolean {
    if (this.#state.status !== 'open' || this.#ws.readyState !== WebSocket.OPEN) return false;
    if (this.#ws.bufferedAmount > MAX_BUFFERED_BYTES) {
      this.#fail('send_stalled', `${this.#ws.bufferedAmount} bytes of audio are not leaving the socket`, {
        retryable: true,
      });
      return false;
    }
    this.#ws.send(text);
    return true;
  }

  /** The handshake answered with HTTP instead of switching protocols (a refused key, a 429, a 404). */
  #onRefused(res: IncomingMessage): void {
    const parts: Buffer[] = [];
    let size = 0;
    let finished = false;
    const finish = (): void => {
      if (finished) return;
      finished = true;
      res.destroy();
      const status = res.statusCode ?? 0;
      const bodyText = Buffer.concat(parts).toString('utf8').slice(0, REFUSAL_BODY_BYTES);
      const error = errorFromResponse({ status, headers: res.headers, bodyText }, this.#s.secrets);
      this.#fail(error.code, `the handshake was refused: ${error.message}`, {
        status,
        retryable: error.retryable,
        fallback: status !== 401 && status !== 403,
        cause: error,
      });
    };
    res.on('data', (chunk: Buffer) => {
      size += chunk.byteLength;
      parts.push(chunk);
      if (size >= REFUSAL_BODY_BYTES) finish();
    });
    res.on('end', finish);
    res.on('error', finish);
    res.on('close', finish);
  }

  #onSocketError(error: Error): void {
    const { code } = error as { code?: unknown };
    if (code === 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH') {
      this.#fail('response_too_large', `a message exceeds ${this.#s.maxMessageBytes} bytes`, {
        cause: error,
      });
      return;
    }
    const transport = errorFromTransport(error, this.#s.secrets);
    if (this.#state.status === 'connecting')
      this.#fail('connection_failed', `cannot connect: ${transport.message}`, {
        retryable: transport.retryable,
        cause: transport,
      });
    else this.#fail('socket_closed', `the socket failed: ${transport.message}`, { cause: transport });
  }

  #onClose(code: number, reason: Buffer): void {
    const state = this.#state;
    if (state.status === 'closed' || state.status === 'failed') return;
    if (state.status === 'closing') {
      this.#setState({ status: 'closed', sessionId: state.sessionId });
      return;
    }
    // Nothing lost: every commit answered and no audio since the last one.
    const nothingOwed =
      this.#commits.length === 0 && this.#bytesSinceCommit === 0 && this.#commitsAnswered > 0;
    if (nothingOwed && state.status === 'open') {
      this.#setState({ status: 'closed', sessionId: state.sessionId });
      return;
    }
    const said = reason.length > 0 ? ` ${closeReason(reason.toString('utf8'))}` : '';
    this.#fail('socket_closed', `the service closed the socket (${code}${said})`, { retryable: true });
  }

  #onMessage(data: RawData, isBinary: boolean): void {
    const status = this.#state.status;
    if (status !== 'connecting' && status !== 'open') return;
    this.#messages++;
    const allowed = MESSAGES_BASE + Math.ceil((this.audioMs / 1000) * MESSAGES_PER_AUDIO_SECOND);
    if (this.#messages > allowed) {
      this.#fail(
        'too_many_messages',
        `${this.#messages} messages for ${Math.round(this.audioMs)} ms of audio`,
      );
      return;
    }
    if (isBinary) {
      this.#fail('invalid_response', 'the service sent a binary message');
      return;
    }
    let message: ServerMessage;
    try {
      message = parseServerMessage(rawText(data), this.audioMs);
    } catch (error) {
      if (!(error instanceof RealtimeProtocolError)) throw error;
      this.#fail('invalid_response', `a message is not this protocol: ${error.message}`, { cause: error });
      return;
    }
    switch (message.type) {
      case 'session_started':
        return this.#onStarted(message.sessionId, message.audioFormat, message.sampleRate);
      case 'server_error':
        return this.#onServerError(message.kind, message.error);
      case 'other':
        return;
      default:
        if (status === 'connecting') {
          this.#fail('invalid_response', `${message.type} before session_started`);
          return;
        }
        if (message.type === 'partial_transcript') {
          this.#feed.push({
            type: 'partial',
            text: message.transcript.text,
            audioMs: this.audioMs,
            atMs: this.#s.clock.now(),
          });
          return;
        }
        // With timestamps asked for, the timed copy (sent after the plain one) is the turn's transcript.
        if ((message.type === 'committed_transcript_with_timestamps') === this.#s.includeTimestamps)
          this.#onCommitted(message.transcript);
    }
  }

  #onStarted(sessionId: string, audioFormat: string | undefined, sampleRate: number | undefined): void {
    if (this.#state.status !== 'connecting') {
      this.#fail('invalid_response', 'a second session_started');
      return;
    }
    if (audioFormat !== undefined && audioFormat !== this.audioFormat) {
      this.#fail('invalid_response', `the service started a ${audioFormat} session, not ${this.audioFormat}`);
      return;
    }
    if (sampleRate !== undefined && sampleRate !== this.sampleRate) {
      this.#fail(
        'invalid_response',
        `the service started a ${sampleRate} Hz session, not ${this.sampleRate} Hz`,
      );
      return;
    }
    this.#setState({ status: 'open', sessionId });
  }

  #onServerError(kind: ServerErrorKind, said: string): void {
    const { fallback, retryable } = SERVER_ERROR_KINDS[kind];
    this.#fail(kind, `the service said ${kind}${said === '' ? '' : `: ${said}`}`, { fallback, retryable });
  }

  #onCommitted(body: TranscriptBody): void {
    if (++this.#commitsAnswered > MAX_COMMITS) {
      this.#fail('too_many_messages', `more than ${MAX_COMMITS} committed transcripts in one session`);
      return;
    }
    const pending = this.#commits.shift();
    const transcript: RealtimeTranscript = {
      ...body,
      audioMs: this.audioMs,
      commitLatencyMs: pending === undefined ? undefined : this.#s.clock.now() - pending.atMs,
      sessionId: this.sessionId,
    };
    this.#feed.push({ type: 'committed', transcript, requested: pending !== undefined });
    pending?.resolve(transcript);
  }
}

/** `SpeechServiceError` with `client_closed`: what `open()` throws once the client was closed. */
export function clientClosed(): SpeechServiceError {
  return new SpeechServiceError({
    code: 'client_closed',
    message: 'the realtime speech-to-text client was closed',
    retryable: false,
  });
}
