import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { once } from 'node:events';
import { resolve } from 'node:path';
import type { Logger } from 'pino';
import { DiscordBot } from '../../adapters/discord/bot.js';
import { discordControlApi } from '../../adapters/discord/control-api.js';
import { warmDiscordAudio } from '../../adapters/discord/discord-sink.js';
import { DiscordGuilds } from '../../adapters/discord/guilds.js';
import type { GuildVoice } from '../../adapters/discord/guild-voice.js';
import type { Call } from '../../adapters/media-stream/call.js';
import type { CallEvent } from '../../adapters/media-stream/call-events.js';
import { bargeInDetectors } from '../../adapters/media-stream/barge-in.js';
import { controlApi } from '../../adapters/media-stream/control-api.js';
import { PROTOCOLS } from '../protocols/index.js';
import type { GatewayName, GatewayProtocol } from '../protocols/types.js';
import { MediaStreamServer } from '../../adapters/media-stream/server.js';
import { designResampler } from '../audio/resampler.js';
import { SileroModel } from '../audio/vad/index.js';
import { SPEAKER_SAMPLE_RATE } from '../speaker/segment-audio.js';
import { LocalSpeechService } from '../service/index.js';
import { systemClock } from '../speaker/clock.js';
import { PhraseCache } from '../speaker/phrase-cache.js';
import { SpeechClient } from '../speech/client.js';
import { limitConnections, type ConnectionLimit } from '../http/connection-limit.js';
import { isLoopbackHost, WebGuard } from '../http/web-guard.js';
import { SCOPES } from '../service/auth.js';
import type { LoadedConfig } from './config.js';
import { sendJson, type RouteHandler } from '../http/http.js';
import { VoxbridgeMetrics } from './metrics.js';
import { phonePageApi, phonePageRoot } from './phone-page.js';

export const SPEECH_MOUNT = '/api/speech';
/** Sink rates in use: G.711 phones, wideband phones (L16 16 kHz), Discord. */
const WARM_OUTPUT_RATES = [8000, 16_000, 48_000];

export interface App {
  readonly url: string;
  readonly server: Server;
  readonly client: SpeechClient;
  /** The embedded service, when no SPEECH_BASE_URL was given. */
  readonly service: LocalSpeechService | undefined;
  /** The key the client sends; generated at start in embedded mode when none was given. */
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

/**
 * One HTTP server for everything. Parts mount under a path prefix; `/healthz` is 503 until every part is
 * ready, then 200.
 */
export async function startApp(loaded: LoadedConfig, options: StartOptions): Promise<App> {
  const { config, secrets } = loaded;
  const { logger } = options;
  const mounts: Array<{ prefix: string; handler: RouteHandler }> = [];
  let ready = false;

  const { server: serverConfig } = config;
  const server = createServer(
    {
      headersTimeout: serverConfig.headersTimeoutMs,
      requestTimeout: serverConfig.requestTimeoutMs,
      keepAliveTimeout: serverConfig.keepAliveTimeoutMs,
      // Timeouts are enforced by a periodic sweep; the default (30 s) lets slow clients linger.
      connectionsCheckingInterval: Math.min(1000, serverConfig.headersTimeoutMs / 2),
    },
    (req, res) => void dispatch(req, res),
  );
  const connections = limitConnections(server, {
    maxConnections: serverConfig.maxConnections,
    firstRequestTimeoutMs: serverConfig.headersTimeoutMs,
    onRefused: (open) => logger.warn({ open }, 'connection refused: at server.maxConnections'),
  });
  const guard = new WebGuard({ allowedHosts: serverConfig.allowedHosts });
  async function dispatch(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const verdict = guard.checkRequest(req);
    if (!verdict.ok) {
      logger.warn({ host: req.headers.host, origin: req.headers.origin, method: req.method }, verdict.reason);
      sendJson(res, 403, { error: verdict.reason });
      return;
    }
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'http://localhost');
    } catch {
      sendJson(res, 400, { error: 'bad request target' });
      return;
    }
    if (url.pathname === '/healthz') {
      sendJson(res, ready ? 200 : 503, { status: ready ? 'ok' : 'starting' });
      return;
    }
    // Parts mount while the process warms up; until all are there, nothing is routed.
    if (!ready) {
      sendJson(res, 503, { error: 'starting' }, { 'retry-after': '1' });
      return;
    }
    for (const { prefix, handler } of mounts) {
      if (url.pathname === prefix || url.pathname.startsWith(`${prefix}/`)) {
        try {
          if (await handler(req, res, url.pathname.slice(prefix.length) || '/', url)) return;
        } catch (error) {
          logger.error({ err: error, path: url.pathname }, 'request failed');
          if (!res.headersSent) sendJson(res, 500, { error: 'internal error' });
          else res.destroy();
          return;
        }
      }
    }
    sendJson(res, 404, { error: `no route for ${req.method ?? 'GET'} ${url.pathname}` });
  }

  server.listen(config.server.port, config.server.host);
  await once(server, 'listening');
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const url = `http://${host}:${address.port}`;

  let service: LocalSpeechService | undefined;
  let generatedApiKey: string | undefined;
  let apiKey = secrets.speechApiKey;
  /** The key voxbridge's own client sends: SPEECH_API_KEY for a remote service, an internal one here. */
  let clientKey = apiKey;
  let baseUrl = config.speech.baseUrl;
  let pathPrefix = config.speech.pathPrefix;
  try {
    if (baseUrl === null) {
      if (!apiKey) apiKey = generatedApiKey = randomBytes(24).toString('base64url');
      // voxbridge speaks (calls, Discord) with a key of its own that never leaves the process, allowed
      // service.internalMaxConcurrent requests (by default a segment playing and the next prefetching per
      // call). Every key a person holds, SPEECH_API_KEY included, gets the documented per-key limit. The
      // internal key sees SPEECH_API_KEY's voices, so voices added with it are the ones calls speak in.
      const internalKey = randomBytes(32).toString('base64url');
      const keys = [
        {
          id: 'voxbridge',
          owner: 'default',
          key: internalKey,
          scopes: SCOPES,
          maxConcurrent:
            config.service.internalMaxConcurrent ??
            Math.max(config.service.maxConcurrentPerKey, 2 * config.calls.maxCalls),
        },
        { id: 'default', key: apiKey, scopes: SCOPES, maxConcurrent: config.service.maxConcurrentPerKey },
        ...config.service.keys.map((k) => ({
          id: k.id,
          key: secrets.serviceKeys.get(k.id)!,
          scopes: k.scopes,
          maxConcurrent: config.service.maxConcurrentPerKey,
        })),
      ];
      clientKey = internalKey;
      service = await LocalSpeechService.start({
        dataDir: resolve(config.dataDir),
        keys,
        workers: config.service.workers,
        maxConcurrentPerKey: config.service.maxConcurrentPerKey,
        voiceLimits: config.service.voices,
        logger: logger.child({ part: 'speech-service' }),
      });
      mounts.push({ prefix: SPEECH_MOUNT, handler: service.handle });
      baseUrl = url;
      pathPrefix = SPEECH_MOUNT;
    } else if (!apiKey) {
      logger.warn(
        'SPEECH_BASE_URL is set but SPEECH_API_KEY is not: the remote service will likely answer 401',
      );
    }
  } catch (error) {
    server.close();
    throw error;
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
  });
  // Design the resampler filters the calls and Discord use now (≈ 12 ms each the first time), not
  // in the middle of a first call's first frames.
  for (const rate of WARM_OUTPUT_RATES) designResampler(SPEAKER_SAMPLE_RATE, rate);
  const cache = new PhraseCache({ maxBytes: config.calls.phraseCacheBytes });
  const { bargeIn } = config.calls;
  // One voice-activity model for every call, loaded before the first call can arrive.
  const vad = bargeIn.enabled ? await SileroModel.load() : undefined;
  const protocols: Partial<Record<GatewayName, GatewayProtocol>> = {};
  for (const name of config.calls.gateways) protocols[name] = PROTOCOLS[name];
  const calls = new MediaStreamServer({
    server,
    guard,
    protocols,
    settings: {
      voiceId: config.calls.voiceId,
      leadMs: config.calls.leadMs,
      markIntervalMs: config.calls.markIntervalMs,
      bargeIn: bargeIn.enabled,
      defaultFlow: config.calls.defaultFlow ?? undefined,
      flows: config.flows,
      protocolOptions: Object.fromEntries(
        Object.entries(config.calls.formats).map(([g, { l16ByteOrder, ...f }]) => [
          g,
          { outbound: { ...f, channels: 1 as const }, ...(l16ByteOrder ? { l16ByteOrder } : {}) },
        ]),
      ),
    },
    limits: {
      maxCalls: config.calls.maxCalls,
      maxPendingSockets: config.calls.maxPendingSockets,
      startTimeoutMs: config.calls.startTimeoutMs,
      maxPayloadBytes: config.calls.maxPayloadBytes,
      maxMessagesPerSecond: config.calls.maxMessagesPerSecond,
    },
    secrets: { twilioAuthToken: secrets.twilioAuthToken, mediaStreamToken: secrets.mediaStreamToken },
    source: client,
    cache,
    clock: systemClock,
    logger: logger.child({ part: 'calls' }),
    ...(vad
      ? {
          detector: bargeInDetectors(vad, {
            minSpeechMs: bargeIn.minSpeechMs,
            minSpeechWhileAudibleMs: bargeIn.minSpeechWhileAudibleMs,
          }),
        }
      : {}),
    ...(options.post ? { post: options.post } : {}),
  });
  mounts.push({ prefix: '/calls', handler: controlApi(calls, secrets.controlToken) });

  const metrics = new VoxbridgeMetrics({
    activeCalls: () => calls.list().length,
    activeGuilds: () => discord.list().length,
    engineQueueDepth: () => service?.engineQueueDepth,
  });
  const discord = new DiscordGuilds({
    settings: {
      ...config.discord,
      modelId: config.speech.modelId,
      narration: {
        narrator: config.discord.narration.narrator,
        cast: Object.fromEntries(
          Object.entries(config.discord.narration.cast).map(([name, m]) => [
            name,
            {
              voiceId: m.voiceId,
              // Only the settings the config gives (exact optional properties).
              ...(m.voiceSettings
                ? {
                    voiceSettings: Object.fromEntries(
                      Object.entries(m.voiceSettings).filter(([, v]) => v !== undefined),
                    ),
                  }
                : {}),
            },
          ]),
        ),
      },
    },
    source: client,
    cache,
    logger: logger.child({ part: 'discord' }),
  });
  let bot: DiscordBot | undefined;
  mounts.push({
    prefix: '/discord',
    handler: discordControlApi({
      guilds: discord,
      controlToken: secrets.controlToken,
      ...(secrets.discordToken ? { adapterCreator: (guildId: string) => bot?.adapterCreator(guildId) } : {}),
    }),
  });
  discord.on('joined', (voice) => {
    metrics.watchGuild(voice);
    logGuildEvents(voice, logger.child({ part: 'discord', guildId: voice.guildId }));
  });
  calls.onCall((call) => {
    metrics.watchCall(call);
    logCallEvents(call, logger.child({ part: 'calls', gateway: call.gateway }));
  });
  mounts.push({ prefix: '/metrics', handler: metrics.handler(secrets.controlToken) });
  // The browser phone: `GET /` and its routes under `/phone`.
  mounts.push({
    prefix: '/phone',
    handler: phonePageApi({
      gateways: config.calls.gateways,
      flows: config.flows,
      defaultFlow: config.calls.defaultFlow,
      client,
      secrets,
    }),
  });
  mounts.push({ prefix: '/', handler: phonePageRoot() });
  if (secrets.discordToken) {
    const ms = await warmDiscordAudio();
    logger.debug({ ms: Math.round(ms) }, 'Opus encoder warmed');
  }

  if (!isLoopbackHost(serverConfig.host) && serverConfig.allowedHosts.length === 0)
    logger.warn(
      { host: serverConfig.host },
      'server.allowedHosts is empty: only requests to an IP address or a loopback name are answered; ' +
        'add the host names gateways and browsers use (ALLOWED_HOSTS=voxbridge.example.com)',
    );
  ready = true;
  logger.info(
    { url, speech: service ? 'embedded' : 'remote', speechBaseUrl: client.redactedBaseUrl },
    'voxbridge ready',
  );
  // The bot logs in after the service is up: Discord being slow or unreachable does not hold the rest.
  let botStarting: Promise<void> | undefined;
  if (secrets.discordToken) {
    botStarting = DiscordBot.start({
      token: secrets.discordToken,
      guilds: discord,
      listVoices: async () => (await client.listVoices({ pageSize: 100 })).voices,
      commandGuildIds: config.discord.commandGuildIds,
      logger: logger.child({ part: 'discord' }),
    }).then(
      (started) => {
        bot = started;
      },
      (error: unknown) =>
        logger.error(
          { err: error },
          'the Discord bot could not log in (check DISCORD_TOKEN); it is not running',
        ),
    );
  }

  return {
    url,
    server,
    client,
    service,
    generatedApiKey,
    calls,
    discord,
    metrics,
    connections,
    discordBot: () => bot,
    async close({ graceMs = 0 } = {}) {
      ready = false;
      calls.stopAccepting();
      const busy = (): boolean =>
        calls.speaking || discord.list().some((v) => v.speaker.audible || v.speaker.queued > 0);
      const deadline = performance.now() + graceMs;
      while (busy() && performance.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      await botStarting;
      await discord.close();
      await bot?.close();
      await calls.close();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      await client.close();
      await service?.close();
    },
  };
}

/**
 * One log line per call event (the control API's event stream), with the call's id as the event has
 * it: the gateway's (Twilio's callSid, …) from the start message on, the id `/calls/{id}` takes; and
 * the stream id once there is one.
 */
function logCallEvents(call: Call, logger: Logger): void {
  const onEvent = (event: CallEvent): void => {
    const { seq: _seq, at: _at, callId, type, ...fields } = event;
    const { streamId } = call;
    logger.info({ callId, ...(streamId === undefined ? {} : { streamId }), ...fields }, type);
    if (type === 'call.ended') call.off('event', onEvent);
  };
  call.on('event', onEvent);
}

/** One log line per utterance start and end, and per barge-in, with the guild's id. */
function logGuildEvents(voice: GuildVoice, logger: Logger): void {
  voice.speaker.on('utteranceStart', ({ id }) => logger.info({ utteranceId: id }, 'utterance.started'));
  voice.speaker.on('utteranceEnd', ({ id, result }) =>
    logger.info(
      {
        utteranceId: id,
        status: result.status,
        playedMs: result.playedMs,
        firstByteMs: result.metrics.firstByteMs,
        underruns: result.metrics.underruns,
        ...(result.error === undefined ? {} : { err: result.error }),
      },
      'utterance.finished',
    ),
  );
  voice.on('bargeIn', (e) =>
    logger.info(
      {
        userId: e.userId,
        interrupted: e.interrupted,
        afterMs: Math.round(e.decidedAtMs - e.speakingSinceMs),
      },
      'barge-in',
    ),
  );
}
