/**
 * How a realtime speech-to-text session fails: a `SpeechServiceError` (so everything that handles the
 * batch client's errors handles these), with where it failed and whether the turn it cut short may
 * still be transcribed by the batch API. The relay's fallback reads `fallback`, never a message.
 */
import { SpeechServiceError, type SpeechServiceErrorOptions } from './errors.js';

/** Where in a session it failed. */
export type RealtimePhase = 'connect' | 'stream' | 'commit';

export interface RealtimeSttErrorOptions extends SpeechServiceErrorOptions {
  phase: RealtimePhase;
  /** Whether the batch API may still transcribe this turn's audio (see `canFallBackToBatch`). */
  fallback: boolean;
}

/**
 * Codes (besides the server's own error kinds, realtime-protocol.ts' `SERVER_ERROR_KINDS`, and the
 * handshake's HTTP answers, http-errors.ts' codes):
 *
 * - `connection_failed`: no socket (refused, reset, DNS); `connect_timeout`: no `session_started`
 *   within `connectTimeoutMs`; `commit_timeout`: no committed transcript within `commitTimeoutMs`.
 * - `socket_closed`: the server closed the socket (or it broke) with work outstanding.
 * - `invalid_response`: a message that is not this protocol (not JSON, too deep, wrong shape, binary,
 *   the wrong audio format echoed); `response_too_large`: a message over `maxMessageBytes`;
 *   `too_many_messages`: more messages than the audio sent can explain.
 * - `send_stalled`: our audio is not leaving (the socket's buffer over its bound).
 * - `audio_too_long`: more audio than `maxAudioMs` in one session.
 * - `session_closed`: the session was closed (by `close()` or the client's) with a commit pending.
 */
export class RealtimeSttError extends SpeechServiceError {
  override readonly name = 'RealtimeSttError';
  readonly phase: RealtimePhase;
  readonly fallback: boolean;

  constructor(options: RealtimeSttErrorOptions) {
    super(options);
    this.phase = options.phase;
    this.fallback = options.fallback;
  }
}

/**
 * Whether `error` is a realtime session's failure after which this turn should be transcribed by the
 * batch API instead: the socket failed, timed out, or sent something unusable. False for anything else
 * (an abort, a refused key, a turn with no speech in it).
 */
export function canFallBackToBatch(error: unknown): error is RealtimeSttError {
  return error instanceof RealtimeSttError && error.fallback;
}
