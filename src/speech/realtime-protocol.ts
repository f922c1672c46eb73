/**
 * ElevenLabs' realtime speech-to-text protocol (`GET /v1/speech-to-text/realtime`, a WebSocket), as a
 * pure translator: the URL and its query, the audio formats it takes, the one message a client sends
 * (`input_audio_chunk`), and every message a server sends read into a checked union. No sockets here
 * (stt-realtime.ts has the session).
 *
 * What the wire looks like was taken from the official SDK (@elevenlabs/elevenlabs-js 2.73,
 * `wrapper/realtime/scribe.js` and `connection.js`), the ground truth where the docs are vague:
 *
 * - URL: the base URL with http(s) turned into ws(s), then `/v1/speech-to-text/realtime`, and the query
 *   `model_id` (required), `commit_strategy` (`manual` | `vad`), `audio_format`, `language_code`,
 *   `include_timestamps`, the VAD settings and a few more. The key goes in the `xi-api-key` header (or
 *   a single-use `token` in the query, which the SDK then sends instead of the key).
 * - Client → server: `{message_type: "input_audio_chunk", audio_base_64, commit, sample_rate,
 *   previous_text?}`; a commit is that message with `audio_base_64: ""` and `commit: true`;
 *   `previous_text` only with the first chunk.
 * - Server → client, discriminated by `message_type`: `session_started` {session_id, config},
 *   `partial_transcript` {text}, `committed_transcript` {text}, `committed_transcript_with_timestamps`
 *   {text, language_code?, words?} (sent after `committed_transcript` when `include_timestamps=true`),
 *   and errors `{message_type: <kind>, error: <text>}` of the kinds in `SERVER_ERROR_KINDS`. Other
 *   types (`final_transcript`, `edited_transcript`, …) exist for options this client does not ask for.
 *
 * Everything a server sends is bounded before it is used: the message's size (by the socket's
 * `maxPayload`), its nesting (`jsonDepthExceeds`, before `JSON.parse`), its shape (zod), and its text
 * and word count in proportion to the audio sent (transcript.ts, the batch client's own rules).
 */
import { z } from 'zod';
import type { WireFormat } from '../audio/framer.js';
import { jsonDepthExceeds } from '../http/json-depth.js';
import { toTranscript, type TranscriptBody } from './transcript.js';

/** Below the base URL's path and the prefix. */
export const REALTIME_STT_PATH = '/v1/speech-to-text/realtime';
export const DEFAULT_REALTIME_MODEL_ID = 'scribe_v2_realtime';

/** The SDK's `AudioFormat` enum: what the service takes. Everything is mono. */
export const REALTIME_AUDIO_FORMATS = [
  'pcm_8000',
  'pcm_16000',
  'pcm_22050',
  'pcm_24000',
  'pcm_44100',
  'pcm_48000',
  'ulaw_8000',
] as const;
export type RealtimeAudioFormat = (typeof REALTIME_AUDIO_FORMATS)[number];

/** How a line's audio becomes one of the service's formats, without resampling. */
export interface RealtimeFormatPlan {
  readonly audioFormat: RealtimeAudioFormat;
  readonly sampleRate: number;
  /** `alaw`: decoded to s16le at the same rate (no API format takes A-law); `none`: sent as it is. */
  readonly transcode: 'none' | 'alaw';
  /** Bytes of one millisecond of the format's audio (μ-law 8, 16-bit PCM 2 × rate / 1000). */
  readonly bytesPerMs: number;
}

const PCM_RATES: ReadonlySet<number> = new Set([8000, 16_000, 22_050, 24_000, 44_100, 48_000]);

/**
 * The service's format for a line's: μ-law 8 kHz goes as `ulaw_8000` byte for byte, s16le at a rate
 * the service takes as `pcm_<rate>`, A-law 8 kHz decoded to `pcm_8000`. `undefined` for what it cannot
 * take without resampling (another rate, stereo): the caller resamples once, to 16 kHz.
 */
export function realtimeFormatFor(line: WireFormat): RealtimeFormatPlan | undefined {
  if (line.channels !== 1) return undefined;
  if (line.encoding === 'mulaw' && line.sampleRate === 8000)
    return { audioFormat: 'ulaw_8000', sampleRate: 8000, transcode: 'none', bytesPerMs: 8 };
  if (line.encoding === 'alaw' && line.sampleRate === 8000)
    return { audioFormat: 'pcm_8000', sampleRate: 8000, transcode: 'alaw', bytesPerMs: 16 };
  if (line.encoding === 's16le' && PCM_RATES.has(line.sampleRate))
    return {
      audioFormat: `pcm_${line.sampleRate}` as RealtimeAudioFormat,
      sampleRate: line.sampleRate,
      transcode: 'none',
      bytesPerMs: (line.sampleRate * 2) / 1000,
    };
  return undefined;
}

/** The query of one session (only what this client sets; the SDK's other options are left out). */
export interface RealtimeQuery {
  readonly modelId: string;
  readonly audioFormat: RealtimeAudioFormat;
  readonly languageCode?: string | undefined;
  readonly includeTimestamps: boolean;
}

/**
 * `ws(s)://host[:port]{basePath}{prefix}/v1/speech-to-text/realtime?…`. The commit strategy is always
 * `manual`: voxbridge's own VAD decides where a caller's turn ends, and the turn is committed then.
 */
export function realtimeUrl(origin: string, path: string, query: RealtimeQuery): string {
  const params = new URLSearchParams();
  params.append('model_id', query.modelId);
  params.append('commit_strategy', 'manual');
  params.append('audio_format', query.audioFormat);
  if (query.languageCode !== undefined) params.append('language_code', query.languageCode);
  params.append('include_timestamps', String(query.includeTimestamps));
  const wsOrigin = origin.replace(/^http/i, 'ws');
  return `${wsOrigin}${path}${REALTIME_STT_PATH}?${params.toString()}`;
}

/** One `input_audio_chunk`: audio (base64), or a commit (`audio` empty, `commit` true). */
export function encodeAudioChunk(
  audio: Uint8Array,
  sampleRate: number,
  options: { readonly commit?: boolean; readonly previousText?: string | undefined } = {},
): string {
  return JSON.stringify({
    message_type: 'input_audio_chunk',
    audio_base_64: Buffer.from(audio.buffer, audio.byteOffset, audio.byteLength).toString('base64'),
    commit: options.commit ?? false,
    sample_rate: sampleRate,
    ...(options.previousText === undefined ? {} : { previous_text: options.previousText }),
  });
}

/**
 * The error kinds a server sends as `message_type` (the SDK's list), and whether a turn they cut
 * short may still be transcribed by the batch API: not when the account itself is refused (the same
 * key would be refused there too) or when the service heard no speech; yes for everything else.
 */
export const SERVER_ERROR_KINDS = {
  error: { fallback: true, retryable: false },
  auth_error: { fallback: false, retryable: false },
  quota_exceeded: { fallback: false, retryable: false },
  unaccepted_terms: { fallback: false, retryable: false },
  insufficient_audio_activity: { fallback: false, retryable: false },
  commit_throttled: { fallback: true, retryable: true },
  transcriber_error: { fallback: true, retryable: true },
  rate_limited: { fallback: true, retryable: true },
  input_error: { fallback: true, retryable: false },
  invalid_request: { fallback: true, retryable: false },
  queue_overflow: { fallback: true, retryable: true },
  resource_exhausted: { fallback: true, retryable: true },
  session_time_limit_exceeded: { fallback: true, retryable: true },
  chunk_size_exceeded: { fallback: true, retryable: false },
} as const satisfies Record<string, { fallback: boolean; retryable: boolean }>;
export type ServerErrorKind = keyof typeof SERVER_ERROR_KINDS;

function isServerErrorKind(kind: string): kind is ServerErrorKind {
  return Object.hasOwn(SERVER_ERROR_KINDS, kind);
}

/** A server message, checked. Text is already cut to what the audio sent can hold. */
export type ServerMessage =
  | {
      readonly type: 'session_started';
      readonly sessionId: string;
      /** As the server echoes its config, when it does. */
      readonly audioFormat: string | undefined;
      readonly sampleRate: number | undefined;
    }
  | { readonly type: 'partial_transcript'; readonly transcript: TranscriptBody }
  | { readonly type: 'committed_transcript'; readonly transcript: TranscriptBody }
  | { readonly type: 'committed_transcript_with_timestamps'; readonly transcript: TranscriptBody }
  | { readonly type: 'server_error'; readonly kind: ServerErrorKind; readonly error: string }
  /** A type this client does not ask for (`final_transcript`, …) or does not know: skipped. */
  | { readonly type: 'other'; readonly messageType: string };

/** Why a server message was refused; the session that got it fails with `invalid_response`. */
export class RealtimeProtocolError extends Error {
  override readonly name = 'RealtimeProtocolError';
}

/** Deeper than any message of the protocol (`words[].characters` is four levels down). */
export const REALTIME_MAX_JSON_DEPTH = 8;
/** A message type's name; longer is not this protocol. */
const MAX_TYPE_CHARS = 64;
const MAX_SESSION_ID_CHARS = 128;
/** How much of a server's error text is kept. */
export const MAX_SERVER_ERROR_CHARS = 300;

const envelope = z.looseObject({ message_type: z.string().min(1).max(MAX_TYPE_CHARS) });
const sessionStarted = z.looseObject({
  session_id: z.string().min(1).max(MAX_SESSION_ID_CHARS),
  config: z
    .looseObject({
      audio_format: z.string().max(MAX_TYPE_CHARS).optional(),
      sample_rate: z.number().int().positive().optional(),
    })
    .optional(),
});
/** `text` alone: the transcript checks (and cuts) it; a missing text is an empty one. */
const textOnly = z.looseObject({ text: z.string().optional() });
const serverError = z.looseObject({ error: z.string().optional(), message: z.string().optional() });

function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
}

function shapeError(type: string, error: z.ZodError): RealtimeProtocolError {
  const issue = error.issues[0];
  const where = issue && issue.path.length > 0 ? issue.path.join('.') : 'the message';
  return new RealtimeProtocolError(`${type}: ${where} ${issue?.message ?? 'is malformed'}`);
}

/** The transcript of a message, or a protocol error naming what was wrong with it. */
function transcriptOf(json: Record<string, unknown>, type: string, audioMs: number): TranscriptBody {
  try {
    return toTranscript(json, audioMs, undefined);
  } catch (error) {
    throw new RealtimeProtocolError(`${type}: ${(error as Error).message}`, { cause: error });
  }
}

/**
 * One text message of the server, for a session that has sent `audioMs` of audio so far (the bound on
 * how much text and how many words it may carry). Throws a `RealtimeProtocolError` when it is not JSON,
 * nests too deep, or has the wrong shape for its type.
 */
export function parseServerMessage(text: string, audioMs: number): ServerMessage {
  if (jsonDepthExceeds(text, REALTIME_MAX_JSON_DEPTH))
    throw new RealtimeProtocolError(`a message nests deeper than ${REALTIME_MAX_JSON_DEPTH} levels`);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    // The parser's own message quotes the text, which may hold anything: it is not kept.
    throw new RealtimeProtocolError('a message is not JSON');
  }
  const head = envelope.safeParse(json);
  if (!head.success) throw new RealtimeProtocolError('a message is not an object with a message_type');
  const body = head.data;
  const type = body.message_type;
  switch (type) {
    case 'session_started': {
      const parsed = sessionStarted.safeParse(body);
      if (!parsed.success) throw shapeError(type, parsed.error);
      return {
        type,
        sessionId: parsed.data.session_id,
        audioFormat: parsed.data.config?.audio_format,
        sampleRate: parsed.data.config?.sample_rate,
      };
    }
    case 'partial_transcript':
    case 'committed_transcript': {
      const parsed = textOnly.safeParse(body);
      if (!parsed.success) throw shapeError(type, parsed.error);
      return { type, transcript: transcriptOf({ text: parsed.data.text ?? '' }, type, audioMs) };
    }
    case 'committed_transcript_with_timestamps':
      return { type, transcript: transcriptOf({ ...body, text: body['text'] ?? '' }, type, audioMs) };
    default: {
      if (!isServerErrorKind(type)) return { type: 'other', messageType: type };
      const parsed = serverError.safeParse(body);
      if (!parsed.success) throw shapeError(type, parsed.error);
      const said = parsed.data.error ?? parsed.data.message ?? '';
      return { type: 'server_error', kind: type, error: oneLine(said, MAX_SERVER_ERROR_CHARS) };
    }
  }
}
