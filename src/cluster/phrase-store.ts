/**
 * The cluster's tier of the phrase cache: a phrase's whole audio under `phrase:{sha256 of its key}`,
 * expiring after `ttlSeconds`, at most `maxEntryBytes`. A lookup that Redis does not answer within
 * `timeoutMs` (or while it is away) is a miss: the call asks the speech service rather than wait.
 */
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import type { SharedPhraseStore } from '../speaker/phrase-cache.js';
import type { RedisConnection } from './redis.js';

export interface RedisPhraseStoreOptions {
  redis: RedisConnection;
  keyPrefix: string;
  maxEntryBytes: number;
  ttlSeconds: number;
  timeoutMs: number;
  logger: Logger;
}

export interface SharedPhraseStats {
  hits: number;
  misses: number;
  /** Lookups that gave up (Redis away or slower than `timeoutMs`) and writes that failed. */
  errors: number;
  stored: number;
}

export class RedisPhraseStore implements SharedPhraseStore {
  readonly stats: SharedPhraseStats = { hits: 0, misses: 0, errors: 0, stored: 0 };
  readonly maxEntryBytes: number;

  constructor(private readonly options: RedisPhraseStoreOptions) {
    this.maxEntryBytes = options.maxEntryBytes;
  }

  private redisKey(key: string): string {
    return `${this.options.keyPrefix}phrase:${createHash('sha256').update(key).digest('hex')}`;
  }

  async get(key: string): Promise<Uint8Array | undefined> {
    const { redis, timeoutMs } = this.options;
    let audio: unknown;
    try {
      audio = await redis.run('phrase', () => redis.binary.get(this.redisKey(key)), timeoutMs);
    } catch {
      // Away, slow or failing: a miss, and the speech service is asked.
      this.stats.errors++;
      return undefined;
    }
    if (!Buffer.isBuffer(audio) || audio.byteLength > this.maxEntryBytes) {
      this.stats.misses++;
      return undefined;
    }
    this.stats.hits++;
    return new Uint8Array(audio.buffer, audio.byteOffset, audio.byteLength);
  }

  put(key: string, audio: Uint8Array): void {
    const { redis, ttlSeconds, logger } = this.options;
    if (audio.byteLength > this.maxEntryBytes) return;
    const value = Buffer.from(audio.buffer, audio.byteOffset, audio.byteLength);
    redis
      .run('phrase', () => redis.binary.set(this.redisKey(key), value, { EX: ttlSeconds }))
      .then(
        () => void this.stats.stored++,
        (error: unknown) => {
          this.stats.errors++;
          logger.debug({ err: (error as Error).message }, 'shared phrase not stored');
        },
      );
  }
}
