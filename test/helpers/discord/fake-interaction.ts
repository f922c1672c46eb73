/**
 * A slash-command interaction as discord.js hands it to the handlers, recording every answer with
 * whether only the invoker could see it.
 */
import { MessageFlags } from 'discord.js';
import type { GuildAccess, SlashInteraction, VoiceChannelInfo } from '../../../adapters/discord/commands.js';
import type { DiscordGatewayAdapterCreator } from '@discordjs/voice';

export interface Answer {
  content: string;
  ephemeral: boolean;
}

export interface FakeInteractionInput {
  guildId?: string | null;
  channelId?: string;
  userId?: string;
  strings?: Record<string, string>;
  booleans?: Record<string, boolean>;
  channel?: string;
}

export class FakeInteraction implements SlashInteraction {
  readonly guildId: string | null;
  readonly channelId: string | null;
  readonly user: { id: string };
  deferred = false;
  replied = false;
  readonly answers: Answer[] = [];
  private deferredEphemeral = false;
  readonly options: SlashInteraction['options'];

  constructor(
    readonly commandName: string,
    input: FakeInteractionInput = {},
  ) {
    this.guildId = input.guildId === undefined ? '100000000000000001' : input.guildId;
    this.channelId = input.channelId ?? '300000000000000001';
    this.user = { id: input.userId ?? '400000000000000001' };
    this.options = {
      getString: (name) => input.strings?.[name] ?? null,
      getBoolean: (name) => input.booleans?.[name] ?? null,
      getChannel: (name) => (name === 'channel' && input.channel ? { id: input.channel } : null),
    };
  }

  reply(options: { content: string; flags?: number }): Promise<unknown> {
    if (this.replied || this.deferred) throw new Error('already replied');
    this.replied = true;
    this.answers.push({ content: options.content, ephemeral: options.flags === MessageFlags.Ephemeral });
    return Promise.resolve();
  }
  deferReply(options: { flags?: number } = {}): Promise<unknown> {
    if (this.replied || this.deferred) throw new Error('already replied');
    this.deferred = true;
    this.deferredEphemeral = options.flags === MessageFlags.Ephemeral;
    return Promise.resolve();
  }
  editReply(options: { content: string }): Promise<unknown> {
    if (!this.replied && !this.deferred) throw new Error('nothing to edit');
    this.answers.push({ content: options.content, ephemeral: this.deferredEphemeral });
    return Promise.resolve();
  }

  get last(): Answer | undefined {
    return this.answers.at(-1);
  }
}

/** A guild's channels as `GuildAccess` sees them: voice channels by id, members' channels by user id. */
export class FakeGuildAccess implements GuildAccess {
  readonly channels = new Map<string, VoiceChannelInfo>();
  readonly members = new Map<string, string>();
  adapter: DiscordGatewayAdapterCreator | undefined;

  addChannel(info: Partial<VoiceChannelInfo> & { id: string }): this {
    this.channels.set(info.id, { name: `voice-${info.id}`, missing: [], full: false, ...info });
    return this;
  }
  memberVoiceChannel(_guildId: string, userId: string): VoiceChannelInfo | undefined {
    const id = this.members.get(userId);
    return id === undefined ? undefined : this.channels.get(id);
  }
  voiceChannel(_guildId: string, channelId: string): VoiceChannelInfo | undefined {
    return this.channels.get(channelId);
  }
  adapterCreator(): DiscordGatewayAdapterCreator | undefined {
    return this.adapter;
  }
}
