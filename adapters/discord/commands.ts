/**
 * The slash commands: their definitions (registered on start) and their handlers. Handlers see the
 * interaction through `SlashInteraction`, the part of discord.js's `ChatInputCommandInteraction` they
 * use, and the guild through `GuildAccess` (channels, permissions, the voice adapter), so tests drive
 * them with plain objects.
 *
 * Replies only the invoker needs are ephemeral; joining and leaving are said to everyone.
 */
import {
  ChannelType,
  InteractionContextType,
  MessageFlags,
  SlashCommandBuilder,
  type RESTPostAPIChatInputApplicationCommandsJSONBody,
} from 'discord.js';
import type { DiscordGatewayAdapterCreator } from '@discordjs/voice';
import type { Logger } from 'pino';
import { parseScript, ScriptError, type ScriptLine } from '../../src/speaker/script.js';
import type { RelayOutcome } from '../../src/relay/session.js';
import { SpeakerQueueFullError, type UtteranceResult } from '../../src/speaker/speaker.js';
import type { DiscordGuilds } from './guilds.js';
import type { GuildVoice } from './guild-voice.js';

/** Slash command string options are at most 6000 characters. */
const MAX_TEXT = 6000;
/** A message is at most 2000 characters. */
const MAX_MESSAGE = 2000;
/** `/relay name:stop` ends the guild's relay (a relay of that name is reached over HTTP only). */
const RELAY_STOP = 'stop';

export const COMMANDS: RESTPostAPIChatInputApplicationCommandsJSONBody[] = [
  new SlashCommandBuilder()
    .setName('join')
    .setDescription('Join your voice channel, or the one you name')
    .addChannelOption((o) =>
      o
        .setName('channel')
        .setDescription('The voice channel to join (default: yours)')
        .addChannelTypes(ChannelType.GuildVoice, ChannelType.GuildStageVoice),
    ),
  new SlashCommandBuilder().setName('leave').setDescription('Leave the voice channel'),
  new SlashCommandBuilder()
    .setName('say')
    .setDescription('Say something in the voice channel')
    .addStringOption((o) =>
      o.setName('text').setDescription('What to say').setRequired(true).setMaxLength(MAX_TEXT),
    )
    .addStringOption((o) => o.setName('voice').setDescription('Voice id (see /voices)').setMaxLength(100)),
  new SlashCommandBuilder().setName('stop').setDescription('Stop speaking now and drop everything queued'),
  new SlashCommandBuilder().setName('skip').setDescription('Skip what is being said now; the queue goes on'),
  new SlashCommandBuilder().setName('voices').setDescription('List the voices I can speak with'),
  new SlashCommandBuilder()
    .setName('narrate')
    .setDescription('Narrate a script with several characters: [Goblin] You shall not pass! [Narrator] …')
    .addStringOption((o) =>
      o
        .setName('script')
        .setDescription('The script, with [Character] tags')
        .setRequired(true)
        .setMaxLength(MAX_TEXT),
    ),
  new SlashCommandBuilder()
    .setName('relay')
    .setDescription('Hand this voice channel to an LLM app (a relay in my config), or stop it')
    .addStringOption((o) =>
      o
        .setName('name')
        .setDescription(`The relay to start, or ${RELAY_STOP} to end the one running`)
        .setRequired(true)
        .setMaxLength(40),
    ),
  new SlashCommandBuilder()
    .setName('bargein')
    .setDescription('Whether people talking interrupts me in this server')
    .addBooleanOption((o) =>
      o.setName('enabled').setDescription('On: I stop when someone talks').setRequired(true),
    ),
].map((b) => b.setContexts(InteractionContextType.Guild).toJSON());

/** The part of a `ChatInputCommandInteraction` the handlers use. */
export interface SlashInteraction {
  readonly commandName: string;
  readonly guildId: string | null;
  /** The text channel the command was used in. */
  readonly channelId: string | null;
  readonly user: { readonly id: string };
  readonly options: {
    getString(name: string): string | null;
    getBoolean(name: string): boolean | null;
    getChannel(name: string): { readonly id: string } | null;
  };
  readonly deferred: boolean;
  readonly replied: boolean;
  reply(options: { content: string; flags?: number }): Promise<unknown>;
  deferReply(options?: { flags?: number }): Promise<unknown>;
  editReply(options: { content: string }): Promise<unknown>;
}

export interface VoiceChannelInfo {
  readonly id: string;
  readonly name: string;
  /** Permissions the bot lacks there, by Discord's names ('Connect', 'Speak', 'ViewChannel'). */
  readonly missing: readonly string[];
  /** At its user limit (the bot could not get in). */
  readonly full: boolean;
}

/** The guild as the handlers see it. */
export interface GuildAccess {
  /** The voice channel the member is in, if any. */
  memberVoiceChannel(guildId: string, userId: string): VoiceChannelInfo | undefined;
  /** A channel by id; undefined when it is not a voice channel of that guild. */
  voiceChannel(guildId: string, channelId: string): VoiceChannelInfo | undefined;
  adapterCreator(guildId: string): DiscordGatewayAdapterCreator | undefined;
}

export interface CommandContext {
  guilds: DiscordGuilds;
  access: GuildAccess;
  listVoices(): Promise<Array<{ voiceId: string; name: string }>>;
  logger: Logger;
  /** Remembers where the guild's commands come from, to say there when the connection is lost. */
  onJoined?(guildId: string, textChannelId: string | null): void;
}

const EPHEMERAL = MessageFlags.Ephemeral;

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

function clip(text: string, max = MAX_MESSAGE): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** How an utterance ended, for a reply. */
export function describeResult(result: UtteranceResult): string {
  switch (result.status) {
    case 'played':
      return `Said it (${seconds(result.playedMs)}).`;
    case 'interrupted':
      return result.playedMs > 0
        ? `Interrupted after ${seconds(result.playedMs)}${result.heardText ? `: “${result.heardText}”` : ''}.`
        : 'Stopped before it started.';
    case 'failed':
      return `Could not say it: ${result.error instanceof Error ? result.error.message : String(result.error)}`;
  }
}

/** How a relay ended, for the reply that started it. */
export function describeRelayEnd(name: string, outcome: RelayOutcome): string {
  switch (outcome.reason) {
    case 'end':
      return `The relay ${name} ended the conversation. I'm still in the channel.`;
    case 'closed':
      return `The relay ${name} went away (${outcome.detail}). I'm still in the channel.`;
    case 'host-ended':
      return `The relay ${name} was stopped.`;
  }
}

class Reply {
  constructor(private readonly i: SlashInteraction) {}
  /** Answers, or edits the deferred answer. */
  async send(content: string, ephemeral = true): Promise<void> {
    const text = clip(content);
    if (this.i.deferred || this.i.replied) await this.i.editReply({ content: text });
    else await this.i.reply({ content: text, ...(ephemeral ? { flags: EPHEMERAL } : {}) });
  }
}

/** Why the bot cannot join this channel, or undefined when it can. */
function joinProblem(channel: VoiceChannelInfo): string | undefined {
  if (channel.missing.length > 0)
    return (
      `I can't join <#${channel.id}>: I'm missing the ${channel.missing.join(' and ')} permission` +
      `${channel.missing.length > 1 ? 's' : ''} there. Ask a server admin to let me Connect and Speak in it.`
    );
  if (channel.full) return `<#${channel.id}> is full.`;
  return undefined;
}

/**
 * The guild's voice: the one it is in, or a join of `channel` (or the invoker's channel). Replies with
 * the problem and returns undefined when it cannot.
 */
async function ensureVoice(
  i: SlashInteraction,
  guildId: string,
  ctx: CommandContext,
  reply: Reply,
  channelOption?: string,
): Promise<GuildVoice | undefined> {
  const current = ctx.guilds.get(guildId);
  if (current && channelOption === undefined) return current;
  const channel =
    channelOption !== undefined
      ? ctx.access.voiceChannel(guildId, channelOption)
      : ctx.access.memberVoiceChannel(guildId, i.user.id);
  if (!channel) {
    await reply.send(
      channelOption !== undefined
        ? `<#${channelOption}> is not a voice channel I can see.`
        : 'Join a voice channel first, or name one: `/join channel:`',
    );
    return undefined;
  }
  const problem = joinProblem(channel);
  if (problem) {
    await reply.send(problem);
    return undefined;
  }
  const adapterCreator = ctx.access.adapterCreator(guildId);
  if (!adapterCreator) {
    await reply.send('I am not connected to this server right now; try again in a moment.');
    return undefined;
  }
  if (!i.deferred && !i.replied) await i.deferReply(channelOption !== undefined ? {} : { flags: EPHEMERAL });
  try {
    const voice = await ctx.guilds.join(guildId, channel.id, adapterCreator);
    ctx.onJoined?.(guildId, i.channelId);
    return voice;
  } catch (error) {
    ctx.logger.warn({ err: error, guildId, channelId: channel.id }, 'join failed');
    await reply.send(`I couldn't connect to <#${channel.id}>: ${(error as Error).message}`);
    return undefined;
  }
}

/** Runs one slash command. Never throws: problems become replies. */
export async function handleCommand(i: SlashInteraction, ctx: CommandContext): Promise<void> {
  const reply = new Reply(i);
  const guildId = i.guildId;
  try {
    if (guildId === null) {
      await reply.send('Use me in a server, not in direct messages.');
      return;
    }
    switch (i.commandName) {
      case 'join': {
        const option = i.options.getChannel('channel');
        // Defer publicly: "joined" is news for the whole channel.
        const voice = await ensureVoice(i, guildId, ctx, reply, option?.id ?? joinTarget(i, guildId, ctx));
        if (voice) await reply.send(`Joined <#${voice.channelId ?? ''}>.`, false);
        return;
      }
      case 'leave': {
        const left = await ctx.guilds.leave(guildId);
        await reply.send(left ? 'Left the voice channel.' : "I'm not in a voice channel.", !left);
        return;
      }
      case 'say': {
        const text = i.options.getString('text') ?? '';
        if (text.trim() === '') {
          await reply.send('Give me something to say.');
          return;
        }
        const voiceId = i.options.getString('voice') ?? undefined;
        const voice = await ensureVoice(i, guildId, ctx, reply);
        if (!voice) return;
        if (!i.deferred) await i.deferReply({ flags: EPHEMERAL });
        let handle;
        try {
          handle = voice.say(text, voiceId ? { voiceId } : {});
        } catch (error) {
          if (!(error instanceof SpeakerQueueFullError)) throw error;
          await reply.send(`Not now: ${error.message}.`);
          return;
        }
        await reply.send(describeResult(await handle.result));
        return;
      }
      case 'stop': {
        const voice = ctx.guilds.get(guildId);
        await reply.send(voice?.stop() ? 'Stopped.' : 'Nothing to stop.');
        return;
      }
      case 'skip': {
        const voice = ctx.guilds.get(guildId);
        await reply.send(voice?.skip() ? 'Skipped.' : 'Nothing is playing.');
        return;
      }
      case 'voices': {
        await i.deferReply({ flags: EPHEMERAL });
        const voices = await ctx.listVoices();
        const lines = voices.map((v) => `• ${v.name} — \`${v.voiceId}\``);
        await reply.send(
          voices.length ? `Voices (use the id with /say voice:)\n${lines.join('\n')}` : 'No voices.',
        );
        return;
      }
      case 'narrate': {
        const script = i.options.getString('script') ?? '';
        const { cast, narrator } = ctx.guilds.settings.narration;
        // A typo in a character's name is answered before anything joins or speaks.
        let lines: ScriptLine[];
        try {
          lines = parseScript(script, cast, narrator);
        } catch (error) {
          if (!(error instanceof ScriptError)) throw error;
          await reply.send(
            `${error.message}. Characters: ${Object.keys(cast).join(', ')} (untagged text: ${narrator}).`,
          );
          return;
        }
        const voice = await ensureVoice(i, guildId, ctx, reply);
        if (!voice) return;
        let handles;
        try {
          handles = voice.narrate(lines);
        } catch (error) {
          if (!(error instanceof SpeakerQueueFullError)) throw error;
          await reply.send(`Not now: ${error.message}.`);
          return;
        }
        const characters = [...new Set(lines.map((l) => l.character))];
        if (!i.deferred) await i.deferReply({ flags: EPHEMERAL });
        await reply.send(`Narrating ${lines.length} line(s): ${characters.join(', ')}.`);
        const results = await Promise.all(handles.map((h) => h.result));
        const played = results.filter((r) => r.status === 'played').length;
        const failed = results.find((r) => r.status === 'failed');
        await reply.send(
          played === results.length
            ? `Narrated ${played} line(s).`
            : `Narrated ${played} of ${results.length} line(s)${failed ? `; ${describeResult(failed)}` : ' (stopped or skipped)'}.`,
        );
        return;
      }
      case 'relay': {
        await relayCommand(i, guildId, ctx, reply);
        return;
      }
      case 'bargein': {
        const enabled = i.options.getBoolean('enabled') ?? true;
        ctx.guilds.setBargeIn(guildId, enabled);
        await reply.send(
          enabled
            ? 'Barge-in is on: I stop talking when someone speaks.'
            : 'Barge-in is off: I keep talking when people speak (use /stop or /skip).',
        );
        return;
      }
      default:
        await reply.send(`I don't know the command /${i.commandName}.`);
    }
  } catch (error) {
    ctx.logger.error({ err: error, command: i.commandName, guildId }, 'command failed');
    await reply.send(`Something went wrong: ${(error as Error).message}`).catch(() => undefined);
  }
}

/**
 * /relay NAME hands the channel to a relay app (joining the invoker's channel first if needed);
 * /relay stop ends it. Both are said to everyone: what members say goes to the app while it runs.
 */
async function relayCommand(
  i: SlashInteraction,
  guildId: string,
  ctx: CommandContext,
  reply: Reply,
): Promise<void> {
  const name = (i.options.getString('name') ?? '').trim();
  const running = ctx.guilds.relayOf(guildId);
  if (name.toLowerCase() === RELAY_STOP) {
    if (!running) {
      await reply.send('No relay is running here.');
      return;
    }
    await ctx.guilds.stopRelay(guildId);
    await reply.send(`Stopped the relay ${running.name}. I'm still in the channel.`, false);
    return;
  }
  const names = ctx.guilds.relayNames();
  if (!names.includes(name)) {
    await reply.send(
      names.length === 0
        ? 'No relay is configured (add one under relays: in my config).'
        : `There is no relay named ${name}. Relays: ${names.join(', ')}.`,
    );
    return;
  }
  if (running) {
    await reply.send(
      `The relay ${running.name} is already running here: \`/relay name:${RELAY_STOP}\` first.`,
    );
    return;
  }
  // Publicly: the channel should know its words go to an app.
  await i.deferReply();
  const voice = await ensureVoice(i, guildId, ctx, reply);
  if (!voice) return;
  const relay = ctx.guilds.startRelay(guildId, name);
  await reply.send(
    relay.prompts
      ? `Relaying <#${relay.channelId}> to ${name}: what you say here goes to it, and I speak its answers. \`/relay name:${RELAY_STOP}\` ends it.`
      : `Relaying <#${relay.channelId}> to ${name}: I speak what it says (no speech-to-text is configured, so it cannot hear you).`,
    false,
  );
  // The reply then says how it ended (an interaction can be edited for 15 minutes; later, nothing is said).
  void relay.done.then((outcome) =>
    reply.send(describeRelayEnd(name, outcome), false).catch(() => undefined),
  );
}

/** /join with no channel: the invoker's channel (undefined lets ensureVoice say they are in none). */
function joinTarget(i: SlashInteraction, guildId: string, ctx: CommandContext): string | undefined {
  return ctx.access.memberVoiceChannel(guildId, i.user.id)?.id;
}
