/**
 * The speech part: the client every other part speaks through, and, with no `SPEECH_BASE_URL`, the
 * embedded local speech service mounted on this process's own server under `/api/speech`.
 */
import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import type { Logger } from 'pino';
import type { Route } from '../../http/router.js';
import { SCOPES } from '../../service/auth.js';
import { LocalSpeechService } from '../../service/index.js';
import { SpeechClient } from '../../speech/client.js';
import type { LoadedConfig } from '../config.js';

export const SPEECH_MOUNT = '/api/speech';

export interface SpeechPart {
  readonly client: SpeechClient;
  /** The embedded service, when no SPEECH_BASE_URL was given. */
  readonly service: LocalSpeechService | undefined;
  /** The key a person may use, generated at start in embedded mode when SPEECH_API_KEY is unset. */
  readonly generatedApiKey: string | undefined;
  readonly routes: readonly Route[];
  close(): Promise<void>;
}

/** `selfUrl`: this process's own server, where the embedded service is mounted. */
export async function startSpeech(
  loaded: LoadedConfig,
  selfUrl: string,
  logger: Logger,
): Promise<SpeechPart> {
  const { config, secrets } = loaded;
  let service: LocalSpeechService | undefined;
  let generatedApiKey: string | undefined;
  let baseUrl = config.speech.baseUrl;
  let pathPrefix = config.speech.pathPrefix;
  /** The key voxbridge's own client sends: SPEECH_API_KEY for a remote service, an internal one here. */
  let clientKey = secrets.speechApiKey;
  if (baseUrl === null) {
    const apiKey = secrets.speechApiKey ?? (generatedApiKey = randomBytes(24).toString('base64url'));
    // voxbridge speaks (calls, Discord) with a key of its own that never leaves the process, allowed
    // service.internalMaxConcurrent requests (by default a segment playing and the next prefetching per
    // call). Every key a person holds, SPEECH_API_KEY included, gets the documented per-key limit. The
    // internal key sees SPEECH_API_KEY's voices, so voices added with it are the ones calls speak in.
    clientKey = randomBytes(32).toString('base64url');
    const perKey = config.service.maxConcurrentPerKey;
    service = await LocalSpeechService.start({
      dataDir: resolve(config.dataDir),
      keys: [
        {
          id: 'voxbridge',
          owner: 'default',
          key: clientKey,
          scopes: SCOPES,
          maxConcurrent: config.service.internalMaxConcurrent ?? Math.max(perKey, 2 * config.calls.maxCalls),
        },
        { id: 'default', key: apiKey, scopes: SCOPES, maxConcurrent: perKey },
        ...config.service.keys.map((k) => ({
          id: k.id,
          key: secrets.serviceKeys.get(k.id)!,
          scopes: k.scopes,
          maxConcurrent: perKey,
        })),
      ],
      workers: config.service.workers,
      onnxModels: config.service.engines.onnx.models.map((m) =>
        typeof m === 'string' ? { path: resolve(m) } : { ...m, path: resolve(m.path) },
      ),
      maxConcurrentPerKey: perKey,
      voiceLimits: config.service.voices,
      logger: logger.child({ part: 'speech-service' }),
    });
    baseUrl = selfUrl;
    pathPrefix = SPEECH_MOUNT;
  } else if (!clientKey) {
    logger.warn(
      'SPEECH_BASE_URL is set but SPEECH_API_KEY is not: the remote service will likely answer 401',
    );
  }
  const client = new SpeechClient({
    baseUrl,
    pathPrefix,
    apiKey: clientKey ?? '',
    authHeader: config.speech.authHeader,
    firstByteTimeoutMs: config.speech.firstByteTimeoutMs,
    idleTimeoutMs: config.speech.idleTimeoutMs,
    maxRetries: config.speech.maxRetries,
    retryBaseDelayMs: config.speech.retryBaseDelayMs,
    retryMaxDelayMs: config.speech.retryMaxDelayMs,
    timestamps: config.speech.timestamps,
  });
  return {
    client,
    service,
    generatedApiKey,
    routes: service ? [{ prefix: SPEECH_MOUNT, handler: service.handle }] : [],
    async close() {
      await client.close();
      await service?.close();
    },
  };
}
