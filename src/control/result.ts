/**
 * An utterance's result as the control APIs answer it (`POST /calls/{id}/say`,
 * `POST /discord/guilds/{id}/say`) and as the call events carry it (`utterance.finished`): one shape,
 * decided here, so the two APIs and the event stream cannot drift apart.
 */
import type { InterruptResult, UtteranceResult } from '../speaker/speaker.js';

/** Why an utterance failed, as a client can branch on it: a stable `code`, and words for a person. */
export interface ResultError {
  code: string;
  message: string;
}

/**
 * The part of a result that leaves the process, camelCase for code that holds it (a call event keeps
 * one); `resultJson` puts it on the wire.
 */
export interface PublicResult {
  status: UtteranceResult['status'];
  playedMs: number;
  heardText: string;
  error?: ResultError;
  firstByteMs: number | undefined;
  firstFrameMs: number | undefined;
  underruns: number;
}

/**
 * The wire shape. Every key is always there except `error` (only when the utterance failed); a time
 * not measured (no audio came) is `null`, never a missing key.
 */
export interface UtteranceResultJson {
  status: UtteranceResult['status'];
  played_ms: number;
  heard_text: string;
  error?: ResultError;
  first_byte_ms: number | null;
  first_frame_ms: number | null;
  underruns: number;
}

/** Error codes are `SpeechServiceError`'s (`timeout`, `invalid_input`, …); anything else is `error`. */
const UNCODED = 'error';
const NO_MESSAGE = 'utterance failed';

/**
 * Any thrown value as `{code, message}`: the speaker settles with whatever failed, which need not be
 * an Error, and a client must never meet a bare string in one API and an object in the other.
 */
export function resultError(error: unknown): ResultError {
  const fields =
    typeof error === 'object' && error !== null ? (error as { code?: unknown; message?: unknown }) : {};
  const code = typeof fields.code === 'string' && fields.code !== '' ? fields.code : UNCODED;
  const message =
    typeof fields.message === 'string' && fields.message !== ''
      ? fields.message
      : typeof error === 'string' && error !== ''
        ? error
        : NO_MESSAGE;
  return { code, message };
}

export function publicResult(result: UtteranceResult): PublicResult {
  return {
    status: result.status,
    playedMs: result.playedMs,
    heardText: result.heardText,
    ...(result.error === undefined ? {} : { error: resultError(result.error) }),
    firstByteMs: result.metrics.firstByteMs,
    firstFrameMs: result.metrics.firstFrameMs,
    underruns: result.metrics.underruns,
  };
}

export function resultJson(result: PublicResult): UtteranceResultJson {
  return {
    status: result.status,
    played_ms: result.playedMs,
    heard_text: result.heardText,
    ...(result.error === undefined
      ? {}
      : { error: { code: result.error.code, message: result.error.message } }),
    first_byte_ms: result.firstByteMs ?? null,
    first_frame_ms: result.firstFrameMs ?? null,
    underruns: result.underruns,
  };
}

/** An utterance's result on the wire. */
export function utteranceResultJson(result: UtteranceResult): UtteranceResultJson {
  return resultJson(publicResult(result));
}

/** What an interrupt stopped (`POST /calls/{id}/interrupt`), on the wire. */
export function interruptResultJson(result: InterruptResult): {
  interrupted: boolean;
  played_ms: number;
  heard_text: string;
} {
  return { interrupted: result.interrupted, played_ms: result.playedMs, heard_text: result.heardText };
}
