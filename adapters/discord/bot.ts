/**
 * The Discord bot: a discord.js client (intents Guilds and GuildVoiceStates) that registers the slash
 * commands when it is ready and hands each one to `handleCommand`. It says in the text channel a
 * guild's last /join came from when a voice connection could not be kept, and rejoins the channels a
 * shard disconnect took away once that shard is back.
 */
import { Client, Events, GatewayIntentBits, PermissionFlagsBits, type VoiceBasedChannel } from 'discord.js';
import type { DiscordGatewayAdapterCreator } from '@discordjs/voice';
import type { Logger } from 'pino';
import {
  COMMANDS,
  handleCommand,
  type CommandContext,
  type GuildAccess,
  type VoiceChannelInfo,
} from './commands.js';
import type { DiscordGuilds } from './guilds.js';

export interface DiscordBotOptions {
  token: string;
  guilds: DiscordGuilds;
  listVoices: CommandContext['listVoices'];
  /** Register the commands in these guilds only (instant), instead of globally (up to an hour to show). */
  commandGuildIds: readonly string[];
  /** Discord's REST API root (a proxy, a fake); undefined: Discord's own. */
  apiUrl?: string | undefined;
  logger: Logger;
}

const NEEDED = ['ViewChannel', 'Connect', 'Speak'] as const;

function channelInfo(channel: VoiceBasedChannel): VoiceChannelInfo {
  const me = channel.guild.members.me;
  const permissions = me ? channel.permissionsFor(me) : null;
  return {
    id: channel.id,
    name: channel.name,
    missing: NEEDED.filter((p) => !permissions?.has(PermissionFlagsBits[p])),
    full: channel.full && !permissions?.has(PermissionFlagsBits.MoveMembers),
  };
}

function guildAccess(client: Client): GuildAccess {
  return {
    memberVoiceChannel(guildId, userId) {
      const channel = client.guilds.cache.get(guildId)?.voiceStates.cache.get(userId)?.channel;
      return channel ? channelInfo(channel) : undefined;
    },
    voiceChannel(guildId, channelId) {
      const channel = client.guilds.cache.get(guildId)?.channels.cache.get(channelId);
      return channel?.isVoiceBased() ? channelInfo(channel) : undefined;
    },
    adapterCreator(guildId) {
      // discord.js types its creator with its own copy of the gateway types; the shape is the same.
      return client.guilds.cache.get(guildId)?.voiceAdapterCreator;
    },
  };
}

export class DiscordBot {
  readonly client: Client;
  private readonly access: GuildAccess;
  /** Where each guild's last /join came from. */
  private readonly textChannels = new Map<string, string>();

  private constructor(private readonly options: DiscordBotOptions) {
    const { guilds, logger } = options;
    this.client = new Client({
      intents: [GatewayIntentBits.Guilds, GatewayIntentBits.GuildVoiceStates],
      ...(options.apiUrl === undefined ? {} : { rest: { api: options.apiUrl } }),
    });
    const client = this.client;
    const access = (this.access = guildAccess(client));
    const context: CommandContext = {
      guilds,
      access,
      listVoices: options.listVoices,
      logger,
      onJoined: (guildId, textChannelId) => {
        if (textChannelId) this.textChannels.set(guildId, textChannelId);
      },
    };

    client.on(Events.Error, (error) => logger.error({ err: error }, 'Discord client error'));
    client.on(Events.Warn, (message) => logger.warn({ message }, 'Discord client warning'));
    client.on(Events.ShardError, (error, shardId) =>
      logger.warn({ err: error, shardId }, 'Discord shard error'),
    );
    client.on(Events.ShardDisconnect, (event, shardId) =>
      logger.warn({ code: event.code, shardId }, 'Discord shard disconnected'),
    );
    const rejoin = (shardId: number): void => {
      for (const [guildId, channelId] of guilds.lostGuilds()) {
        const guild = client.guilds.cache.get(guildId);
        if (!guild || guild.shardId !== shardId) continue;
        guilds.forgetLost(guildId);
        const adapter = access.adapterCreator(guildId);
        if (!adapter) continue;
        logger.info({ guildId, channelId }, 'rejoining after the shard came back');
        guilds.join(guildId, channelId, adapter).catch((error: unknown) => {
          logger.warn({ err: error, guildId }, 'rejoin after shard reconnect failed');
          void this.tell(
            guildId,
            `I lost <#${channelId}> when my connection to Discord dropped. Use /join to bring me back.`,
          );
        });
      }
    };
    client.on(Events.ShardReady, rejoin);
    client.on(Events.ShardResume, rejoin);
    guilds.on('ended', ({ guildId, channelId, reason }) => {
      if (reason.kind === 'gave-up')
        void this.tell(
          guildId,
          `I lost the voice connection${channelId ? ` to <#${channelId}>` : ''} (${reason.lastProblem}) and stopped ` +
            `retrying after ${reason.attempts} attempts. Use /join to bring me back.`,
        );
    });
    client.on(Events.InteractionCreate, (interaction) => {
      if (!interaction.isChatInputCommand()) return;
      void handleCommand(interaction, context);
    });
  }

  /** Logs in and resolves when the client is ready and the commands are registered. */
  static async start(options: DiscordBotOptions): Promise<DiscordBot> {
    const bot = new DiscordBot(options);
    const ready = new Promise<void>((resolve, reject) => {
      bot.client.once(Events.ClientReady, (client) => {
        bot.registerCommands().then(() => {
          options.logger.info(
            { user: client.user.tag, guilds: client.guilds.cache.size, commands: COMMANDS.length },
            'Discord bot ready',
          );
          resolve();
        }, reject);
      });
    });
    try {
      await bot.client.login(options.token);
      await ready;
    } catch (error) {
      await bot.client.destroy();
      throw error;
    }
    return bot;
  }

  /** The voice adapter of a guild the bot is in. */
  adapterCreator(guildId: string): DiscordGatewayAdapterCreator | undefined {
    return this.access.adapterCreator(guildId);
  }

  /** The bot's own user id. */
  get userId(): string | undefined {
    return this.client.user?.id;
  }

  /**
   * A member's name as the guild shows it, when the bot has seen them: voice states carry their member
   * (intent GuildVoiceStates), so whoever is in a voice channel with the bot is known.
   */
  memberName(guildId: string, userId: string): string | undefined {
    const member = this.client.guilds.cache.get(guildId)?.members.cache.get(userId);
    return member?.displayName ?? this.client.users.cache.get(userId)?.displayName;
  }

  async close(): Promise<void> {
    await this.client.destroy();
  }

  private async registerCommands(): Promise<void> {
    const { commandGuildIds } = this.options;
    if (commandGuildIds.length === 0) {
      await this.client.application!.commands.set(COMMANDS);
      return;
    }
    for (const id of commandGuildIds) await this.client.application!.commands.set(COMMANDS, id);
  }

  /** A message in the text channel the guild's last /join came from. */
  private async tell(guildId: string, message: string): Promise<void> {
    const channelId = this.textChannels.get(guildId);
    const channel = channelId ? this.client.channels.cache.get(channelId) : undefined;
    if (!channel?.isSendable()) return;
    await channel
      .send(message)
      .catch((error: unknown) =>
        this.options.logger.warn({ err: error, guildId }, 'could not post to the text channel'),
      );
  }
}
