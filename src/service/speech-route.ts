import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { WorkerQueueFullError } from '../async/worker-pool.js';
import { BodyTooLargeError, readBody } from '../http/http.js';
import { DEFAULT_OUTPUT_FORMAT, FORMAT_INFO, isOutputFormat, type OutputFormat } from '../speech/formats.js';
import {
  checkContext,
  checkModelId,
  checkText,
  checkVoiceSettings,
  DEFAULT_MODEL_ID,
  TEXT_MAX_CHARS,
  textLength,
  type VoiceSettings,
} from '../speech/limits.js';
import type { Principal } from './auth.js';
import { createEncoder, streamedWavHeader, wholeWavHeader } from './encoders.js';
import type { EnginePool } from './engine/pool.js';
import { badRequest, ServiceHttpError } from './http-errors.js';
import { WHOLE_BODY_MEMORY_BYTES, write } from './speech-body.js';
import { streamWithTimestamps, TIMESTAMPS_CONTENT_TYPE, wholeWithTimestamps } from './timestamps-route.js';
import type { ConcurrencyLimiter } from './limiter.js';
import { MODEL_IDS } from './models.js';
import { chooseEngine, LANGUAGE_CODE, type EngineCatalog } from './voices/language.js';
import { applySettings } from './voices/params.js';
import type { VoiceStore } from './voices/store.js';

/** A 5000-character text in JSON with escapes and settings stays far below this. */
const MAX_BODY_BYTES = 64 * 1024;
const RETRY_AFTER_SECONDS = 1;

export interface SpeechRouteDeps {
  readonly pool: EnginePool;
  /** The engines the pool's workers loaded: which one speaks a request. */
  readonly engines: EngineCatalog;
  readonly voices: VoiceStore;
  readonly limiter: ConcurrencyLimiter;
  readonly logger: Logger;
  /** Responses the client walked away from before their end (barge-in, a hang-up). */
  readonly stats: { disconnected: number };
}

interface SpeechInput {
  text: string;
  format: OutputFormat;
  modelId: string;
  settings: VoiceSettings;
  /** ElevenLabs' `language_code`: the language to speak in, when not the voice's own. */
  languageCode: string | undefined;
}

/** `language_code`: absent, null, or a language tag (`en`, `de`, `pt-BR`). */
function checkLanguageCode(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string' || !LANGUAGE_CODE.test(value))
    throw badRequest('language_code must be a language code such as "en", "de" or "pt-BR"', 'language_code');
  return value;
}

async function parseInput(req: IncomingMessage, url: URL): Promise<SpeechInput> {
  const formatParam = url.searchParams.get('output_format');
  const format = formatParam ?? DEFAULT_OUTPUT_FORMAT;
  if (!isOutputFormat(format))
    throw badRequest(
      `output_format ${JSON.stringify(formatParam)} is not one of pcm_24000, wav_24000, mp3_44100_192`,
      'output_format',
    );
  let raw: Buffer;
  try {
    raw = await readBody(req, MAX_BODY_BYTES);
  } catch (error) {
    if (error instanceof BodyTooLargeError)
      throw badRequest(error.message, 'text', 'max_character_limit_exceeded');
    throw error;
  }
  let body: unknown;
  try {
    body = JSON.parse(raw.toString('utf8'));
  } catch {
    throw badRequest('request body is not valid JSON', 'body');
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw badRequest('request body must be a JSON object', 'body');
  const b = body as Record<string, unknown>;
  const problem =
    checkText(b['text']) ??
    checkModelId(b['model_id'] ?? undefined) ??
    checkVoiceSettings(b['voice_settings']) ??
    // Accepted for the vendor's prosody across requests; the embedded engine reads each text alone.
    checkContext('previous_text', b['previous_text']) ??
    checkContext('next_text', b['next_text']);
  if (problem) {
    // Only text that is too long is over the limit; empty or whitespace-only text is just invalid.
    const code =
      problem.field === 'text' && typeof b['text'] === 'string' && textLength(b['text']) > TEXT_MAX_CHARS
        ? 'max_character_limit_exceeded'
        : 'invalid_parameters';
    throw badRequest(problem.message, problem.field, code);
  }
  const modelId = (b['model_id'] as string | undefined | null) ?? DEFAULT_MODEL_ID;
  if (!MODEL_IDS.has(modelId))
    throw badRequest(
      `model_id ${JSON.stringify(modelId)} is not a known model`,
      'model_id',
      'model_not_found',
    );
  return {
    text: b['text'] as string,
    format,
    modelId,
    settings: (b['voice_settings'] as VoiceSettings | null | undefined) ?? {},
    languageCode: checkLanguageCode(b['language_code']),
  };
}

/** One speech request, as the service's router has resolved it. */
export interface SpeechRouteRequest {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly url: URL;
  /** The authenticated key: its voices, its concurrency limit. */
  readonly principal: Principal;
  /** Already percent-decoded. */
  readonly voiceId: string;
  /** `/stream`: chunked as synthesized; else one whole body. */
  readonly streamed: boolean;
  /** `/with-timestamps`: the audio as base64 in JSON, with its character timings. */
  readonly timestamps: boolean;
  readonly requestId: string;
}

/** POST /v1/text-to-speech/{voice_id}[/stream][/with-timestamps] */
export async function handleSpeech(deps: SpeechRouteDeps, request: SpeechRouteRequest): Promise<void> {
  const { req, res, url, principal, voiceId, streamed, timestamps, requestId } = request;
  const input = await parseInput(req, url);
  const voice = deps.voices.get(voiceId);
  // Another key's voice is as invisible as a missing one: its existence is not disclosed.
  if (!voice || (voice.owner !== null && voice.owner !== principal.owner))
    throw new ServiceHttpError(404, 'voice_not_found', `voice ${voiceId} was not found`, 'voice_id');
  const choice = chooseEngine(voice, input.languageCode, deps.engines);
  if (!choice.ok)
    throw badRequest(choice.message, input.languageCode === undefined ? 'voice_id' : 'language_code');
  const release = deps.limiter.tryAcquire(principal.id, principal.maxConcurrent);
  if (!release)
    throw new ServiceHttpError(
      429,
      'concurrent_limit_exceeded',
      'too many concurrent speech requests for this key',
      undefined,
      RETRY_AFTER_SECONDS,
    );
  // The client going away (or the socket dying) stops synthesis at once.
  const abort = new AbortController();
  const onClose = (): void => {
    if (res.writableFinished) return;
    deps.stats.disconnected++;
    abort.abort(new Error('client disconnected'));
  };
  res.on('close', onClose);
  try {
    const params = applySettings(choice.params, input.settings);
    const encoder = await createEncoder(input.format, streamed);
    const headers = {
      'content-type': timestamps ? TIMESTAMPS_CONTENT_TYPE : FORMAT_INFO[input.format].contentType,
      'request-id': requestId,
      'character-cost': String(textLength(input.text)),
    };
    if (timestamps) {
      const audio = deps.pool.synthesizeTimed(input.text, params, abort.signal);
      if (streamed) await streamWithTimestamps(res, headers, encoder, audio, input.text, abort.signal);
      else await wholeWithTimestamps(res, headers, input.format, encoder, audio, input.text, abort.signal);
    } else {
      const audio = deps.pool.synthesize(input.text, params, abort.signal);
      if (streamed) await stream(res, headers, encoder, audio, abort.signal);
      else await whole(res, headers, input.format, encoder, audio, abort.signal);
    }
    deps.logger.debug(
      { requestId, voiceId, model: input.modelId, format: input.format, streamed, timestamps },
      'speech done',
    );
  } catch (error) {
    if (abort.signal.aborted) {
      deps.logger.debug({ requestId }, 'speech cancelled: client disconnected');
      return;
    }
    if (error instanceof WorkerQueueFullError)
      throw new ServiceHttpError(503, 'engine_busy', error.message, undefined, RETRY_AFTER_SECONDS);
    throw error;
  } finally {
    res.off('close', onClose);
    release();
  }
}

/**
 * Headers go out with the first audio, so an engine failure before it is still a proper 500. After it, a
 * failure can only cut the connection: a clean end would look like success (docs/speech-service.md).
 */
async function stream(
  res: ServerResponse,
  headers: Record<string, string>,
  encoder: Awaited<ReturnType<typeof createEncoder>>,
  audio: AsyncGenerator<Int16Array>,
  signal: AbortSignal,
): Promise<void> {
  let started = false;
  try {
    for await (const samples of audio) {
      const bytes = encoder.push(samples);
      if (!started) {
        if (bytes.byteLength === 0) continue;
        started = true;
        res.writeHead(200, headers);
        if (encoder.preamble) res.write(encoder.preamble);
      }
      await write(res, bytes, signal);
    }
    const tail = encoder.end();
    if (!started) {
      res.writeHead(200, headers);
      if (encoder.preamble) res.write(encoder.preamble);
    }
    await write(res, tail, signal);
    res.end();
  } catch (error) {
    if (started) {
      res.destroy(error instanceof Error ? error : undefined);
      return;
    }
    throw error;
  }
}

/**
 * The whole body. A short one (the usual case) is held until synthesis ends and sent with its
 * Content-Length and, for WAV, a header with the real sizes (docs/speech-service.md). One that outgrows
 * WHOLE_BODY_MEMORY_BYTES (5000 CJK characters make 79 MB) is not held: from then on it goes out as it
 * is produced, chunked, still one body (a WAV header then has the streaming placeholder sizes, as
 * `/stream` sends), each write waiting for the client. Memory per request stays bounded either way.
 */
async function whole(
  res: ServerResponse,
  headers: Record<string, string>,
  format: OutputFormat,
  encoder: Awaited<ReturnType<typeof createEncoder>>,
  audio: AsyncGenerator<Int16Array>,
  signal: AbortSignal,
): Promise<void> {
  const held: Uint8Array[] = [];
  let heldBytes = 0;
  let streaming = false;
  try {
    for await (const samples of audio) {
      const bytes = encoder.push(samples);
      if (streaming) {
        await write(res, bytes, signal);
        continue;
      }
      held.push(bytes);
      heldBytes += bytes.byteLength;
      if (heldBytes > WHOLE_BODY_MEMORY_BYTES) {
        streaming = true;
        res.writeHead(200, headers);
        if (format === 'wav_24000') res.write(streamedWavHeader());
        for (const part of held.splice(0)) await write(res, part, signal);
      }
    }
    const tail = encoder.end();
    if (streaming) {
      await write(res, tail, signal);
      res.end();
      return;
    }
    held.push(tail);
    heldBytes += tail.byteLength;
    signal.throwIfAborted();
    const header = format === 'wav_24000' ? wholeWavHeader(heldBytes) : undefined;
    res.writeHead(200, { ...headers, 'content-length': String(heldBytes + (header?.byteLength ?? 0)) });
    if (header) res.write(header);
    for (const part of held) await write(res, part, signal);
    res.end();
  } catch (error) {
    // After the headers, only a cut connection says it failed: a clean end would look like success.
    if (streaming) {
      res.destroy(error instanceof Error ? error : undefined);
      return;
    }
    throw error;
  }
}
