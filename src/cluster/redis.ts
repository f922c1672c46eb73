/**
 * The one Redis connection of an instance (node-redis). It never queues a command while Redis is away:
 * a command then fails at once, so a caller answers 503 instead of hanging, and nothing piles up in
 * memory. It reconnects by itself (50 ms doubling to 1 s between attempts) and says when Redis comes
 * and goes: `up` and `down`, each once per change, logged once (not once per attempt).
 */
import { EventEmitter } from 'node:events';
import { createClient, RESP_TYPES } from '@redis/client';
import type { Logger } from 'pino';
import { redactUrl } from '../speech/base-url.js';

export class ClusterUnavailableError extends Error {
  override readonly name = 'ClusterUnavailableError';
  readonly code = 'cluster_unavailable';
}

function newClient(url: string) {
  return createClient({
    url,
    disableOfflineQueue: true,
    // A Redis that stops answering without closing the connection is noticed within a second.
    pingInterval: 1000,
    socket: {
      connectTimeout: 2000,
      reconnectStrategy: (retries: number) => Math.min(50 * 2 ** retries, 1000),
    },
  });
}

export type RedisClient = ReturnType<typeof newClient>;

export interface RedisConnectionEvents {
  up: [];
  down: [];
}

export class RedisConnection extends EventEmitter<RedisConnectionEvents> {
  readonly client: RedisClient;
  /** The same connection, answering bulk strings as Buffers (audio). */
  readonly binary;
  /** The URL as logged: credentials replaced by `[redacted]`. */
  readonly redactedUrl: string;
  private connected = false;
  private closed = false;

  constructor(
    url: string,
    private readonly logger: Logger,
    /** How long a command may take before the caller gives up on it (ms). */
    readonly commandTimeoutMs = 1000,
  ) {
    super();
    this.redactedUrl = redactUrl(url);
    this.client = newClient(url);
    this.binary = this.client.withTypeMapping({ [RESP_TYPES.BLOB_STRING]: Buffer });
    this.client.on('ready', () => {
      if (this.connected) return;
      this.connected = true;
      this.logger.info({ redis: this.redactedUrl }, 'redis connected');
      this.emit('up');
    });
    this.client.on('error', (error: Error) => {
      if (!this.connected) return; // every failed reconnect attempt says so: once is enough
      this.connected = false;
      this.logger.warn({ redis: this.redactedUrl, err: error.message }, 'redis unreachable; reconnecting');
      this.emit('down');
    });
  }

  /** Whether commands can be sent now. */
  get up(): boolean {
    return this.connected && this.client.isReady;
  }

  /** Starts connecting (and reconnecting, for as long as it is open); never throws. */
  start(): void {
    this.client.connect().catch((error: unknown) => {
      if (!this.closed)
        this.logger.error({ redis: this.redactedUrl, err: (error as Error).message }, 'redis client stopped');
    });
  }

  /**
   * Runs `command` while Redis is up, bounded by `timeoutMs` (default `commandTimeoutMs`): rejects with
   * a `ClusterUnavailableError` when Redis is down, slow, or the command fails for the connection.
   */
  async run<T>(what: string, command: () => Promise<T>, timeoutMs = this.commandTimeoutMs): Promise<T> {
    if (!this.up) throw new ClusterUnavailableError(`redis is unreachable (${what})`);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new ClusterUnavailableError(`redis did not answer within ${timeoutMs} ms (${what})`)),
        timeoutMs,
      );
    });
    try {
      return await Promise.race([command(), timeout]);
    } catch (error) {
      if (error instanceof ClusterUnavailableError) throw error;
      throw new ClusterUnavailableError(`redis failed (${what}): ${(error as Error).message}`, {
        cause: error,
      });
    } finally {
      clearTimeout(timer);
    }
  }

  close(): void {
    this.closed = true;
    this.connected = false;
    // Whatever had to be written was awaited by its caller: nothing pending is worth waiting for.
    try {
      this.client.destroy();
    } catch {
      // never connected: nothing to close
    }
  }
}
