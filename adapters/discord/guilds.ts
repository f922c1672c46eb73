/**
 * Every guild the bot speaks in: one `GuildVoice` per guild, created on join and freed when its
 * connection ends for any reason. Holds the settings that outlive a connection (barge-in on or off per
 * guild) and the guilds whose connection was lost with their shard, to rejoin when it is back. Used by
 * the slash commands and by the `/discord` control API alike.
 */
import { EventEmitter } from 'node:events';
import type { DiscordGatewayAdapterCreator } from '@discordjs/voice';
import type { Logger } from 'pino';
import type { PhraseCache } from '../../src/speaker/phrase-cache.js';
import { parseScript, type Cast, type ScriptLine } from '../../src/speaker/script.js';
import type { SpeechSource } from '../../src/speaker/segment-audio.js';
import type { UtteranceHandle } from '../../src/speaker/speaker.js';
import type { EndReason, ReconnectPolicy } from './connection-keeper.js';
import { GuildVoice, type DiscordBargeInSettings } from './guild-voice.js';

export interface DiscordSettings {
  voiceId: string;
  modelId?: string | undefined;
  bargeIn: DiscordBargeInSettings;
  reconnect: ReconnectPolicy;
  /** Per-guild overrides, by guild id. */
  guilds: Readonly<Record<string, { bargeIn?: boolean | undefined }>>;
  narration: { narrator: string; cast: Cast };
  /** How long a join may take to be ready (ms). */
  joinTimeoutMs: number;
}

export interface DiscordGuildsOptions {
  settings: DiscordSettings;
  source: SpeechSource;
  cache?: PhraseCache | undefined;
  logger: Logger;
}

export interface DiscordGuildsEvents {
  joined: [GuildVoice];
  ended: [{ guildId: string; channelId: string | null; reason: EndReason }];
}

export class NotInVoiceError extends Error {
  override readonly name = 'NotInVoiceError';
  constructor(readonly guildId: string) {
    super(`not in a voice channel in guild ${guildId}`);
  }
}

export class DiscordGuilds extends EventEmitter<DiscordGuildsEvents> {
  private readonly voices = new Map<string, GuildVoice>();
  private readonly joining = new Map<string, Promise<GuildVoice>>();
  private readonly bargeIn = new Map<string, boolean>();
  /** Guilds whose connection went with their shard: channel to rejoin. */
  private readonly lost = new Map<string, string>();
  private closed = false;

  constructor(private readonly options: DiscordGuildsOptions) {
    super();
  }

  get settings(): DiscordSettings {
    return this.options.settings;
  }

  get(guildId: string): GuildVoice | undefined {
    return this.voices.get(guildId);
  }

  list(): GuildVoice[] {
    return [...this.voices.values()];
  }

  /** The guild's voice, or a `NotInVoiceError`. */
  require(guildId: string): GuildVoice {
    const voice = this.voices.get(guildId);
    if (!voice) throw new NotInVoiceError(guildId);
    return voice;
  }

  bargeInEnabled(guildId: string): boolean {
    return (
      this.bargeIn.get(guildId) ??
      this.options.settings.guilds[guildId]?.bargeIn ??
      this.options.settings.bargeIn.enabled
    );
  }

  setBargeIn(guildId: string, enabled: boolean): void {
    this.bargeIn.set(guildId, enabled);
    const voice = this.voices.get(guildId);
    if (voice) voice.bargeInEnabled = enabled;
  }

  /**
   * Joins (or moves to) a channel and resolves once connected. A second join of the same guild while the
   * first is under way gets the same connection.
   */
  async join(
    guildId: string,
    channelId: string,
    adapterCreator: DiscordGatewayAdapterCreator,
  ): Promise<GuildVoice> {
    if (this.closed) throw new Error('Discord voice is shutting down');
    const pending = this.joining.get(guildId);
    if (pending) {
      const voice = await pending;
      if (voice.channelId !== channelId) voice.moveTo(channelId);
      return voice;
    }
    const existing = this.voices.get(guildId);
    if (existing) {
      if (existing.channelId !== channelId) {
        existing.moveTo(channelId);
        await existing.ready(this.options.settings.joinTimeoutMs);
      }
      return existing;
    }
    const attempt = this.connect(guildId, channelId, adapterCreator);
    this.joining.set(guildId, attempt);
    try {
      return await attempt;
    } finally {
      this.joining.delete(guildId);
    }
  }

  /** Leaves a guild's channel; false when the bot was not in one. */
  async leave(guildId: string): Promise<boolean> {
    this.lost.delete(guildId);
    const voice = this.voices.get(guildId);
    if (!voice) return false;
    await voice.leave();
    return true;
  }

  /** Parses a script with the configured cast and queues it in the guild. */
  narrate(guildId: string, script: string, options: { interruptible?: boolean } = {}): NarrationQueued {
    const voice = this.require(guildId);
    const { cast, narrator } = this.options.settings.narration;
    const lines = parseScript(script, cast, narrator);
    return { lines, handles: voice.narrate(lines, options) };
  }

  /** Guilds lost with a shard, to rejoin once it is back (their channel ids). */
  lostGuilds(): ReadonlyMap<string, string> {
    return this.lost;
  }

  forgetLost(guildId: string): void {
    this.lost.delete(guildId);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.lost.clear();
    await Promise.allSettled([...this.joining.values()]);
    await Promise.all(this.list().map((v) => v.leave()));
  }

  private async connect(
    guildId: string,
    channelId: string,
    adapterCreator: DiscordGatewayAdapterCreator,
  ): Promise<GuildVoice> {
    const { settings, source, cache, logger } = this.options;
    const voice = new GuildVoice({
      guildId,
      channelId,
      adapterCreator,
      source,
      voiceId: settings.voiceId,
      modelId: settings.modelId,
      cache,
      bargeIn: { ...settings.bargeIn, enabled: this.bargeInEnabled(guildId) },
      reconnect: settings.reconnect,
      logger,
    });
    this.voices.set(guildId, voice);
    this.lost.delete(guildId);
    voice.once('ended', (reason) => {
      if (this.voices.get(guildId) === voice) this.voices.delete(guildId);
      const lastChannel = voice.channelId;
      if (reason.kind === 'lost' && lastChannel && !this.closed) this.lost.set(guildId, lastChannel);
      this.emit('ended', { guildId, channelId: lastChannel, reason });
    });
    try {
      await voice.ready(settings.joinTimeoutMs);
    } catch (error) {
      await voice.leave();
      throw error;
    }
    this.emit('joined', voice);
    return voice;
  }
}

export interface NarrationQueued {
  lines: ScriptLine[];
  handles: UtteranceHandle[];
}
