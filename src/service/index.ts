import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { availableParallelism } from 'node:os';
import { pino, type Logger } from 'pino';
import type { Scope } from './auth.js';
import type { RouteHandler } from '../http/http.js';
import { KeyRing, type Principal, type ServiceKey } from './auth.js';
import type { EngineDescriptor } from './engine/engine.js';
import type { OnnxModelConfig } from './engine/onnx/model-dir.js';
import { EnginePool } from './engine/pool.js';
import { sendServiceError, ServiceHttpError } from './http-errors.js';
import { ConcurrencyLimiter } from './limiter.js';
import { handleSpeech } from './speech-route.js';
import { handleAddVoice, handleListVoices, type VoiceLimits } from './voices-route.js';
import { builtInVoices } from './voices/builtin.js';
import { onnxVoices } from './voices/onnx.js';
import { EngineCatalog } from './voices/language.js';
import { VoiceStore } from './voices/store.js';

export type { ServiceKey } from './auth.js';

export interface LocalSpeechServiceOptions {
  dataDir: string;
  keys: readonly ServiceKey[];
  /** Engine worker threads (each with every engine that loads); 0 or unset = one per core. */
  workers?: number;
  /** Neural voices the operator brings: ONNX model directories (VITS, Piper), loaded in every worker. */
  onnxModels?: readonly OnnxModelConfig[];
  /** Speech requests in flight per key, for keys that do not set their own `maxConcurrent`. */
  maxConcurrentPerKey?: number;
  voiceLimits?: Partial<VoiceLimits>;
  logger?: Logger;
}

const DEFAULT_VOICE_LIMITS: VoiceLimits = {
  maxFiles: 25,
  maxFileBytes: 11 * 1024 * 1024,
  maxTotalBytes: 50 * 1024 * 1024,
  maxConcurrentUploads: 4,
  maxStoreBytes: 1024 * 1024 * 1024,
};
const DEFAULT_MAX_CONCURRENT_PER_KEY = 32;

const SPEECH_PATH = /^\/v1\/text-to-speech\/([^/]+)(\/stream)?(\/with-timestamps)?\/?$/;

/**
 * The speech-service contract, served from this process with the embedded engine. `handle` takes the
 * path below the mount point (`/api/speech`).
 */
export class LocalSpeechService {
  private constructor(
    private readonly keys: KeyRing,
    private readonly pool: EnginePool,
    readonly voices: VoiceStore,
    private readonly limiter: ConcurrencyLimiter,
    private readonly voiceLimits: VoiceLimits,
    private readonly logger: Logger,
  ) {
    this.catalog = new EngineCatalog(pool.engines);
  }

  /** Which engines the workers loaded, for choosing the one that speaks a request. */
  private readonly catalog: EngineCatalog;

  /** Voice uploads in progress, all keys together (bounded by `voiceLimits.maxConcurrentUploads`). */
  private readonly uploads = new ConcurrencyLimiter(1);

  static async start(options: LocalSpeechServiceOptions): Promise<LocalSpeechService> {
    const logger = options.logger ?? pino({ level: 'silent' });
    const keys = new KeyRing(options.keys);
    const voiceLimits = { ...DEFAULT_VOICE_LIMITS, ...options.voiceLimits };
    const pool = await EnginePool.start({
      workers: options.workers || availableParallelism(),
      onnxModels: options.onnxModels,
      logger,
    });
    let voices: VoiceStore;
    try {
      voices = await VoiceStore.open(
        options.dataDir,
        [...builtInVoices(), ...onnxVoices(pool.engine('onnx'))],
        {
          logger,
          maxBytes: voiceLimits.maxStoreBytes,
        },
      );
    } catch (error) {
      await pool.close();
      throw error;
    }
    logger.info(
      { engines: pool.engines.map((e) => e.id), unavailable: pool.unavailable.map((e) => e.id) },
      `speech engines: ${pool.engines.map((e) => `${e.name} (${e.licence.spdx})`).join(', ')}`,
    );
    return new LocalSpeechService(
      keys,
      pool,
      voices,
      new ConcurrencyLimiter(options.maxConcurrentPerKey ?? DEFAULT_MAX_CONCURRENT_PER_KEY),
      voiceLimits,
      logger,
    );
  }

  /** The engines this service speaks with: their voices, languages and licences. */
  get engines(): readonly EngineDescriptor[] {
    return this.pool.engines;
  }

  get engineStats(): Readonly<{ completed: number; cancelled: number }> {
    return this.pool.stats;
  }

  /** Speech responses cut short by their client (it disconnected before the end). */
  readonly requestStats = { disconnected: 0 };

  get engineQueueDepth(): number {
    return this.pool.queueDepth;
  }

  readonly handle: RouteHandler = async (req, res, path, url) => {
    const requestId = randomUUID().replaceAll('-', '');
    try {
      await this.route(req, res, path, url, requestId);
    } catch (error) {
      if (error instanceof ServiceHttpError) {
        this.logger.debug(
          { requestId, status: error.status, code: error.code },
          'speech service refused a request',
        );
        if (!res.headersSent) sendServiceError(res, error, requestId);
        else res.destroy();
      } else {
        this.logger.error({ requestId, err: error }, 'speech service failed');
        if (!res.headersSent)
          sendServiceError(
            res,
            new ServiceHttpError(500, 'internal_server_error', 'internal error'),
            requestId,
          );
        else res.destroy();
      }
      // An unread request body would otherwise hold the connection.
      if (!req.complete) req.resume();
    }
    return true;
  };

  private authorize(req: IncomingMessage, scope: Scope): Principal {
    const presented = KeyRing.presentedKey(req);
    if (!presented)
      throw new ServiceHttpError(
        401,
        'invalid_api_key',
        'an API key is required (ServicePlatform-APIKey or xi-api-key header)',
      );
    const principal = this.keys.authenticate(presented);
    if (!principal) throw new ServiceHttpError(401, 'invalid_api_key', 'invalid API key');
    if (!principal.scopes.has(scope))
      throw new ServiceHttpError(403, 'missing_permissions', `this API key lacks the ${scope} permission`);
    return principal;
  }

  private async route(
    req: IncomingMessage,
    res: ServerResponse,
    path: string,
    url: URL,
    requestId: string,
  ): Promise<void> {
    const method = req.method ?? 'GET';
    const speech = SPEECH_PATH.exec(path);
    if (speech) {
      this.allow(method, 'POST');
      const principal = this.authorize(req, 'speech');
      let voiceId: string;
      try {
        voiceId = decodeURIComponent(speech[1]!);
      } catch {
        throw new ServiceHttpError(
          404,
          'voice_not_found',
          'voice id is not valid percent-encoding',
          'voice_id',
        );
      }
      const deps = {
        pool: this.pool,
        engines: this.catalog,
        voices: this.voices,
        limiter: this.limiter,
        logger: this.logger,
        stats: this.requestStats,
      };
      await handleSpeech(deps, {
        req,
        res,
        url,
        principal,
        voiceId,
        streamed: speech[2] !== undefined,
        timestamps: speech[3] !== undefined,
        requestId,
      });
      return;
    }
    const voiceDeps = {
      voices: this.voices,
      engines: this.catalog,
      limits: this.voiceLimits,
      uploads: this.uploads,
      logger: this.logger,
    };
    if (path === '/v2/voices' || path === '/v2/voices/') {
      this.allow(method, 'GET');
      handleListVoices(voiceDeps, res, url, this.authorize(req, 'voices:read'), requestId);
      return;
    }
    if (path === '/v1/voices/add' || path === '/v1/voices/add/') {
      this.allow(method, 'POST');
      await handleAddVoice(voiceDeps, req, res, this.authorize(req, 'voices:write'), requestId);
      return;
    }
    throw new ServiceHttpError(404, 'not_found', `no endpoint ${method} ${path}`);
  }

  private allow(method: string, allowed: string): void {
    if (method !== allowed) throw new ServiceHttpError(405, 'method_not_allowed', `use ${allowed}`);
  }

  async close(): Promise<void> {
    await this.pool.close();
  }
}
