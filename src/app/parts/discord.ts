/**
 * The Discord part: voice in every guild (`DiscordGuilds`), the control API at `/discord`, and the bot,
 * which logs in only when DISCORD_TOKEN is set and only after the rest is serving, so Discord being slow
 * or unreachable holds nothing else up.
 */
import type { Logger } from 'pino';
import { DiscordBot } from '../../../adapters/discord/bot.js';
import { discordControlApi } from '../../../adapters/discord/control-api.js';
import { warmDiscordAudio } from '../../../adapters/discord/discord-sink.js';
import type { GuildVoice } from '../../../adapters/discord/guild-voice.js';
import { DiscordGuilds } from '../../../adapters/discord/guilds.js';
import { startShards, type RunningShards } from '../../../adapters/discord/shards.js';
import { designResampler } from '../../audio/resampler.js';
import type { Route } from '../../http/router.js';
import type { PhraseCache } from '../../speaker/phrase-cache.js';
import { SPEAKER_SAMPLE_RATE } from '../../speaker/segment-audio.js';
import type { SpeechClient } from '../../speech/client.js';
import { compiledModule } from '../../paths.js';
import { TURN_SAMPLE_RATE } from '../../relay/turn-recorder.js';
import type { LoadedConfig } from '../config.js';
import type { RecognitionPart } from './recognition.js';
import type { Relays } from './relays.js';

/** Discord's rate, both ways: 48 kHz stereo. */
const DISCORD_SAMPLE_RATE = 48_000;

export interface DiscordPart {
  readonly guilds: DiscordGuilds;
  readonly routes: readonly Route[];
  /** The bot, once logged in (in this process: not when its shards run as processes of their own). */
  bot(): DiscordBot | undefined;
  /**
   * Logs the bot in (when DISCORD_TOKEN is set), or starts its shard processes (`discord.shards`); a
   * failure is logged, never thrown.
   */
  startBot(): void;
  /** Leaves every guild and logs the bot out. */
  close(): Promise<void>;
}

export async function startDiscord(options: {
  loaded: LoadedConfig;
  client: SpeechClient;
  cache: PhraseCache;
  /** The relay apps a guild may be handed to, with speech-to-text for members' turns (shared with calls). */
  relays: Relays;
  /** The speakers' aligner (the offline recogniser, shared with calls). */
  recognition: Pick<RecognitionPart, 'aligner'>;
  logger: Logger;
  /** What each shard process needs besides this process's environment (`discord.shards`). */
  shardEnv?: ((shardId: number) => Record<string, string>) | undefined;
}): Promise<DiscordPart> {
  const { config, secrets } = options.loaded;
  const logger = options.logger.child({ part: 'discord' });
  designResampler(SPEAKER_SAMPLE_RATE, DISCORD_SAMPLE_RATE);
  // Members' voices for a relay's speech-to-text (or its app's speaker events).
  const hearsMembers =
    options.relays.stt !== undefined ||
    Object.values(options.relays.settings).some((r) => r.events?.has('speaker-events'));
  if (hearsMembers) designResampler(DISCORD_SAMPLE_RATE, TURN_SAMPLE_RATE);
  let bot: DiscordBot | undefined;
  const guilds = new DiscordGuilds({
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
    source: options.client,
    cache: options.cache,
    aligner: options.recognition.aligner,
    relays: options.relays,
    directory: {
      botUserId: () => bot?.userId,
      memberName: (guildId, userId) => bot?.memberName(guildId, userId),
    },
    logger,
  });
  guilds.on('joined', (voice) => logGuildEvents(voice, logger.child({ guildId: voice.guildId })));
  const token = secrets.discordToken;
  if (token) {
    const ms = await warmDiscordAudio();
    logger.debug({ ms: Math.round(ms) }, 'Opus encoder warmed');
  }
  let shards: RunningShards | undefined;
  let starting: Promise<void> | undefined;
  // The shards run the bot, each in a process of its own (this process only manages them).
  const manageShards = config.discord.shards !== null && !options.loaded.shard;
  return {
    guilds,
    routes: [
      {
        prefix: '/discord',
        handler: discordControlApi({
          guilds,
          controlToken: secrets.controlToken,
          ...(token ? { adapterCreator: (guildId: string) => bot?.adapterCreator(guildId) } : {}),
          botElsewhere:
            token && manageShards
              ? 'the bot runs in shard processes, and the one for this guild has not joined the cluster (yet)'
              : undefined,
        }),
      },
    ],
    bot: () => bot,
    startBot() {
      if (!token || starting) return;
      if (manageShards) {
        starting = startShards({
          file: compiledModule('app/main.js').pathname,
          token,
          total: config.discord.shards!,
          shardIds: config.discord.shardIds ?? undefined,
          apiUrl: config.discord.apiUrl ?? undefined,
          spawnDelayMs: config.discord.shardSpawnDelayMs,
          readyTimeoutMs: config.discord.joinTimeoutMs + 30_000,
          env: (id) => options.shardEnv?.(id) ?? {},
          logger,
        }).then(
          (started) => {
            shards = started;
          },
          (error: unknown) =>
            logger.error({ err: error }, 'the Discord shards could not start; the bot is not running'),
        );
        return;
      }
      starting = DiscordBot.start({
        token,
        guilds,
        listVoices: async () => (await options.client.listVoices({ pageSize: 100 })).voices,
        commandGuildIds: config.discord.commandGuildIds,
        apiUrl: config.discord.apiUrl ?? undefined,
        logger,
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
    },
    async close() {
      await starting;
      await guilds.close();
      await bot?.close();
      await shards?.close();
    },
  };
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
