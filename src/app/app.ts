/**
 * The composition root: one HTTP server, and the parts mounted on it — the speech client (with the
 * embedded local speech service unless SPEECH_BASE_URL is set), phone calls, Discord, metrics and the
 * browser phone. Each part maps its own configuration and returns its routes and its shutdown; this
 * file only orders them. docs/architecture.md draws the layers.
 */
import type { Server } from 'node:http';
import type { Logger } from 'pino';
import type { DiscordBot } from '../../adapters/discord/bot.js';
import type { DiscordGuilds } from '../../adapters/discord/guilds.js';
import type { MediaStreamServer } from '../../adapters/media-stream/server.js';
import type { ConnectionLimit } from '../http/connection-limit.js';
import type { LocalSpeechService } from '../service/index.js';
import { PhraseCache } from '../speaker/phrase-cache.js';
import type { SpeechClient } from '../speech/client.js';
import type { LoadedConfig } from './config.js';
import { startHttpServer } from './http-server.js';
import { VoxbridgeMetrics } from './metrics.js';
import { startCalls } from './parts/calls.js';
import { instanceHost, startCluster, type ClusterPart } from './parts/cluster.js';
import { startDiscord } from './parts/discord.js';
import { startRecognition } from './parts/recognition.js';
import { startRelays } from './parts/relays.js';
import { startSpeech } from './parts/speech.js';
import { phonePageRoutes } from './phone-page.js';

export interface App {
  readonly url: string;
  readonly server: Server;
  readonly client: SpeechClient;
  /** The embedded service, when no SPEECH_BASE_URL was given. */
  readonly service: LocalSpeechService | undefined;
  /** The key a person may use, generated at start in embedded mode when SPEECH_API_KEY is unset. */
  readonly generatedApiKey: string | undefined;
  /** The phone calls: `/media/<gateway>` WebSockets, and the control API at `/calls`. */
  readonly calls: MediaStreamServer;
  /** Discord voice in every guild (driven by the bot and by the control API at `/discord`). */
  readonly discord: DiscordGuilds;
  readonly metrics: VoxbridgeMetrics;
  /** Connections open now and refused at `server.maxConnections`. */
  readonly connections: ConnectionLimit;
  /** The bot, once logged in (only when DISCORD_TOKEN is set). */
  readonly discordBot: () => DiscordBot | undefined;
  /** This instance in its cluster, when REDIS_URL is set. */
  readonly cluster: ClusterPart | undefined;
  /**
   * Stops accepting, lets what is being said finish for up to `graceMs` (default 0), then interrupts
   * it, hangs up every call, leaves Discord voice and closes the speech service.
   */
  close(options?: { graceMs?: number }): Promise<void>;
}

export interface StartOptions {
  logger: Logger;
  /** Sends flow webhooks; default fetch. */
  post?: (url: string, body: unknown, signal: AbortSignal) => Promise<number>;
}

export async function startApp(loaded: LoadedConfig, options: StartOptions): Promise<App> {
  const { config, secrets } = loaded;
  const { logger } = options;
  // Listening first: `/healthz` answers 503 while the parts warm up. Other instances of a cluster
  // reach this one by a name its Host check must let in, and the gateways by its public address.
  const extraHosts = [
    instanceHost(config),
    config.server.publicUrl === null ? undefined : new URL(config.server.publicUrl).hostname,
  ].filter((h): h is string => h !== undefined);
  const http = await startHttpServer(
    extraHosts.length === 0
      ? config.server
      : { ...config.server, allowedHosts: [...config.server.allowedHosts, ...extraHosts] },
    logger,
  );
  let speech;
  try {
    speech = await startSpeech(loaded, http.url, logger);
  } catch (error) {
    await http.close();
    throw error;
  }
  const { client } = speech;
  const cluster = startCluster(loaded, http.url, logger);
  // Repeated prompts, shared by every call and guild (and, in a cluster, by every instance).
  const cache = new PhraseCache({ maxBytes: config.calls.phraseCacheBytes, shared: cluster?.phrases });
  // Relay apps and their speech-to-text, for calls and guilds alike.
  const relays = startRelays(loaded, logger);
  // The offline recogniser, for gathers that listen and for speakers timing words: started on first use.
  const recognition = startRecognition(loaded, logger);
  let calls, discord;
  try {
    calls = await startCalls({
      loaded,
      server: http.server,
      guard: http.guard,
      source: client,
      cache,
      relays,
      recognition,
      logger,
      post: options.post,
    });
    discord = await startDiscord({
      loaded,
      client,
      cache,
      relays,
      recognition,
      logger,
      // Each shard process is an instance of the cluster of its own, speaking through this one's
      // embedded speech service when there is no remote one.
      shardEnv: (shardId) => ({
        INSTANCE_ID: `${cluster?.self.id ?? 'voxbridge'}-shard-${shardId}`,
        PORT: '0',
        ...(config.cluster.instanceUrl === null
          ? {}
          : { INSTANCE_URL: Object.assign(new URL(config.cluster.instanceUrl), { port: '0' }).origin }),
        ...(speech.service
          ? {
              SPEECH_BASE_URL: http.url,
              SPEECH_API_KEY: secrets.speechApiKey ?? speech.generatedApiKey ?? '',
            }
          : {}),
      }),
    });
  } catch (error) {
    await calls?.close();
    await relays.close();
    await recognition.close();
    await cluster?.close();
    await http.close();
    await speech.close();
    throw error;
  }
  const { vadWorkers } = calls;
  const metrics = new VoxbridgeMetrics({
    activeCalls: () => calls.calls.list().length,
    activeGuilds: () => discord.guilds.list().length,
    engineQueueDepth: () => speech.service?.engineQueueDepth,
    vad:
      vadWorkers &&
      (() => ({
        queueDepth: vadWorkers.queueDepth,
        restarts: vadWorkers.stats.restarts,
        skippedWindows: vadWorkers.stats.skippedWindows,
        inferences: vadWorkers.stats.inferences,
      })),
    cluster:
      cluster &&
      (() => ({ ...cluster.status(), ...cluster.forwarder.stats, phrases: cluster.phrases?.stats })),
  });
  calls.calls.onCall((call) => metrics.watchCall(call));
  discord.guilds.on('joined', (voice) => metrics.watchGuild(voice));
  // The cluster's routes come first: they pass on what another instance holds.
  if (cluster) {
    http.router.mount(...cluster.mount({ calls: calls.calls, guilds: discord.guilds }));
    http.router.health = () => {
      const status = cluster.status();
      return { status: status.status, cluster: status };
    };
  }
  http.router.mount(
    ...speech.routes,
    ...calls.routes,
    ...discord.routes,
    { prefix: '/metrics', handler: metrics.handler(secrets.controlToken) },
    ...phonePageRoutes({
      gateways: config.calls.gateways,
      flows: config.flows,
      defaultFlow: config.calls.defaultFlow,
      client,
      secrets,
    }),
  );
  http.router.ready = true;
  logger.info(
    { url: http.url, speech: speech.service ? 'embedded' : 'remote', speechBaseUrl: client.redactedBaseUrl },
    'voxbridge ready',
  );
  discord.startBot();

  return {
    url: http.url,
    server: http.server,
    client,
    service: speech.service,
    generatedApiKey: speech.generatedApiKey,
    calls: calls.calls,
    discord: discord.guilds,
    metrics,
    connections: http.connections,
    discordBot: () => discord.bot(),
    cluster,
    async close({ graceMs = 0 } = {}) {
      http.router.ready = false;
      calls.calls.stopAccepting();
      // Out of the cluster first: the others stop sending requests here at once.
      await cluster?.close();
      const busy = (): boolean =>
        calls.calls.speaking || discord.guilds.list().some((v) => v.speaker.audible || v.speaker.queued > 0);
      const deadline = performance.now() + graceMs;
      while (busy() && performance.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      await discord.close();
      await calls.close();
      await relays.close();
      await recognition.close();
      await http.close();
      await speech.close();
    },
  };
}
