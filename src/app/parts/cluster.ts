/**
 * The cluster part, when `cluster.redisUrl` (REDIS_URL) is set: this instance's connection to Redis,
 * its entry in the registry with the calls and guilds it holds, the routes that answer `/calls` and
 * `/discord` for the whole cluster, and the shared tier of the phrase cache. Without a Redis URL
 * nothing here runs and the instance is the whole deployment.
 *
 * Started in two steps: `startCluster` before the other parts (their phrase cache takes the shared
 * store), `mount` once the calls and guilds exist.
 */
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import { describeGuild } from '../../../adapters/discord/control-api.js';
import type { DiscordGuilds } from '../../../adapters/discord/guilds.js';
import { CLOSE } from '../../http/ws-close.js';
import { holdsCall, listCalls } from '../../../adapters/media-stream/control-api.js';
import type { MediaStreamServer } from '../../../adapters/media-stream/server.js';
import { Forwarder } from '../../cluster/forward.js';
import { FANOUT_CONCURRENCY } from '../../cluster/gather.js';
import { RedisPhraseStore } from '../../cluster/phrase-store.js';
import { RedisConnection } from '../../cluster/redis.js';
import type { InstanceInfo } from '../../cluster/instance-entry.js';
import { ClusterRegistry } from '../../cluster/registry.js';
import { clusterRoutes } from '../../cluster/routes.js';
import { SignatureVerifier } from '../../cluster/signature.js';
import type { Route } from '../../http/router.js';
import type { Config, LoadedConfig } from '../config.js';

/** How much longer than `discord.joinTimeoutMs` a forwarded join's answer may take. */
const JOIN_ANSWER_MARGIN_MS = 5000;

/** Addresses that mean "every interface": not somewhere another instance can send a request. */
const UNSPECIFIED = new Set(['0.0.0.0', '::', '[::]']);

/** The host name other instances use for this one (so its Host check lets their requests in). */
export function instanceHost(config: Config): string | undefined {
  const { cluster, server } = config;
  if (cluster.redisUrl === null) return undefined;
  if (cluster.instanceUrl !== null) return new URL(cluster.instanceUrl).hostname;
  return UNSPECIFIED.has(server.host) ? hostname() : undefined;
}

export interface ClusterStatus {
  status: 'ok' | 'degraded';
  instance: string;
  registry: 'ok' | 'unreachable';
  instances: number;
}

export interface ClusterPart {
  readonly self: InstanceInfo;
  readonly registry: ClusterRegistry;
  readonly forwarder: Forwarder;
  readonly phrases: RedisPhraseStore | undefined;
  /** Registers the calls and guilds as they come and go; returns the routes to mount first. */
  mount(parts: { calls: MediaStreamServer; guilds: DiscordGuilds }): Route[];
  status(): ClusterStatus;
  /** Leaves the registry (what it held disappears from every view at once), then disconnects. */
  close(): Promise<void>;
}

export function startCluster(
  loaded: LoadedConfig,
  listeningUrl: string,
  logger: Logger,
): ClusterPart | undefined {
  const { config, secrets } = loaded;
  const { cluster } = config;
  if (cluster.redisUrl === null) return undefined;
  const log = logger.child({ part: 'cluster' });
  const listening = new URL(listeningUrl);
  let url =
    cluster.instanceUrl ??
    (UNSPECIFIED.has(config.server.host) ? `http://${hostname()}:${listening.port}` : listeningUrl);
  // Port 0 in INSTANCE_URL: the port this server got (a shard process on PORT=0).
  const advertised = new URL(url);
  if (advertised.port === '0') {
    advertised.port = listening.port;
    url = advertised.origin;
  }
  const self: InstanceInfo = {
    id: cluster.instanceId ?? `${hostname()}-${process.pid}`,
    url,
    startedAt: new Date().toISOString(),
  };
  const redis = new RedisConnection(cluster.redisUrl, log);
  const registry = new ClusterRegistry({
    redis,
    self,
    keyPrefix: cluster.keyPrefix,
    heartbeatMs: cluster.heartbeatMs,
    ttlMs: cluster.ttlMs,
    maxInstances: cluster.maxInstances,
    // Without a token nothing can be proved: a tokenless cluster is one machine's (HOST is loopback).
    loopbackOnly: secrets.clusterToken === undefined,
    logger: log,
  });
  const forwarder = new Forwarder({
    token: secrets.clusterToken,
    connectTimeoutMs: cluster.connectTimeoutMs,
    answerTimeoutMs: cluster.answerTimeoutMs,
    maxAnswerBytes: cluster.maxAnswerBytes,
  });
  const phrases = cluster.phraseCache.enabled
    ? new RedisPhraseStore({
        redis,
        keyPrefix: cluster.keyPrefix,
        maxEntryBytes: cluster.phraseCache.maxEntryBytes,
        ttlSeconds: cluster.phraseCache.ttlSeconds,
        timeoutMs: cluster.phraseCache.timeoutMs,
        logger: log,
      })
    : undefined;
  redis.start();
  log.info({ instance: self.id, url: self.url, redis: redis.redactedUrl }, 'cluster mode');

  return {
    self,
    registry,
    forwarder,
    phrases,
    mount({ calls, guilds }) {
      calls.onCall((call) => {
        // Only a call that started was claimed: one refused for a duplicate id must not release it.
        let claimed = false;
        call.on('event', (event) => {
          if (event.type === 'call.started') {
            claimed = true;
            void registry.claim('calls', call.id).then((claim) => {
              if (claim.ok) return;
              // The first live holder keeps the call: this connection is a duplicate (docs/operations.md).
              call.drop({
                code: CLOSE.policy,
                reason: `call id is held by instance ${claim.owner.id.slice(0, 64)}`,
              });
            });
          } else if (event.type === 'call.ended' && claimed) void registry.release('calls', call.id);
        });
      });
      guilds.on('joined', (voice) => {
        void registry.claim('guilds', voice.guildId).then((claim) => {
          if (!claim.ok)
            log.warn(
              { guildId: voice.guildId, owner: claim.owner.id },
              'guild also held by another instance (one bot token run by two instances?)',
            );
        });
      });
      guilds.on('ended', ({ guildId }) => void registry.release('guilds', guildId));
      registry.start();
      if (loaded.shard) void registry.holdShard(loaded.shard.id, loaded.shard.count);
      return clusterRoutes({
        registry,
        forwarder,
        verifier: new SignatureVerifier({ token: secrets.clusterToken, self: self.id }),
        controlToken: secrets.controlToken,
        // A forwarded join waits for the owner's own join deadline: its answer may take that long.
        joinAnswerTimeoutMs: Math.max(
          cluster.answerTimeoutMs,
          config.discord.joinTimeoutMs + JOIN_ANSWER_MARGIN_MS,
        ),
        calls: { has: (id) => holdsCall(calls, id), list: () => listCalls(calls) },
        guilds: {
          has: (id) => guilds.get(id) !== undefined,
          list: () => guilds.list().map((voice) => describeGuild(voice, guilds)),
        },
        list: {
          // Time to connect to a silent instance and hear back from one that answers.
          timeoutMs: Math.max(2 * cluster.connectTimeoutMs, 2000),
          maxAnswerBytes: cluster.maxAnswerBytes,
          // As much in all as the instances asked at once may send: what is held in memory at most.
          maxTotalBytes: FANOUT_CONCURRENCY * cluster.maxAnswerBytes,
        },
        logger: log,
      });
    },
    status() {
      const up = registry.available;
      return {
        status: up ? 'ok' : 'degraded',
        instance: self.id,
        registry: up ? 'ok' : 'unreachable',
        instances: up ? registry.instances().length : 1,
      };
    },
    async close() {
      await registry.stop();
      await forwarder.close();
      redis.close();
    },
  };
}
