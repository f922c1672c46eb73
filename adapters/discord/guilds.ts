/**
 * Every guild the bot speaks in: one `GuildVoice` per guild, created on join and freed when its
 * connection ends for any reason, and at most one relay app per guild (`GuildRelay`), which ends with
 * it. Holds the settings that outlive a connection (barge-in on or off per guild) and the guilds whose
 * connection was lost with their shard, to rejoin when it is back. Used by the slash commands and by
 * the `/discord` control API alike.
 */
import type { Aligner } from '../../src/speaker/word-alignment.js';
import { EventEmitter } from 'node:events';
import type { DiscordGatewayAdapterCreator } from '@discordjs/voice';
import type { Logger } from 'pino';
import type { RelaySettings } from '../../src/relay/session.js';
import type { PhraseCache } from '../../src/speaker/phrase-cache.js';
import { parseScript, type Cast, type ScriptLine } from '../../src/speaker/script.js';
import type { SpeechSource } from '../../src/speaker/segment-audio.js';
import type { UtteranceHandle } from '../../src/speaker/speaker.js';
import type { TurnStt } from '../../src/relay/turn-stt.js';
import type { EndReason, ReconnectPolicy } from './connection-keeper.js';
import { GuildRelay } from './guild-relay.js';
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

/** The relay apps a guild may be handed to (the config's `relays:`), as the app builds them once. */
export interface DiscordRelays {
  /** By name, headers resolved. */
  readonly settings: Readonly<Record<string, RelaySettings>>;
  /** Speech-to-text for members' turns; undefined: relays run without prompts. */
  readonly stt: TurnStt | undefined;
  /** Silence after a member's speech that ends their turn (ms): `stt.endOfTurnMs`. */
  readonly endOfTurnMs: number;
}

/** What the running bot knows of users, for a relay's `setup` and `prompt`s. */
export interface DiscordDirectory {
  /** The bot's own user id; undefined while it is not logged in here. */
  botUserId(): string | undefined;
  /** A member's display name, when the bot has seen it. */
  memberName(guildId: string, userId: string): string | undefined;
}

export interface DiscordGuildsOptions {
  settings: DiscordSettings;
  source: SpeechSource;
  cache?: PhraseCache | undefined;
  /** Times the words of speech that came without character timings; none: estimated. */
  aligner?: Aligner | undefined;
  /** None: no guild can be handed to a relay app. */
  relays?: DiscordRelays | undefined;
  directory?: DiscordDirectory | undefined;
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

/** `relay` names no relay of the config (answered 400, with the names there are). */
export class UnknownRelayError extends Error {
  override readonly name = 'UnknownRelayError';
  constructor(
    readonly relay: string,
    readonly relays: readonly string[],
  ) {
    super(
      relays.length === 0
        ? `no relay named "${relay}": none is configured (add one under relays: in the config)`
        : `no relay named "${relay}"; relays: ${relays.join(', ')}`,
    );
  }
}

/** The guild is already handed to a relay app (answered 409). */
export class RelayRunningError extends Error {
  override readonly name = 'RelayRunningError';
  constructor(
    readonly guildId: string,
    readonly relay: string,
  ) {
    super(`relay "${relay}" already runs in guild ${guildId}; stop it first`);
  }
}

export class DiscordGuilds extends EventEmitter<DiscordGuildsEvents> {
  private readonly voices = new Map<string, GuildVoice>();
  private readonly relays = new Map<string, GuildRelay>();
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

  /** The names of the relay apps a guild may be handed to. */
  relayNames(): string[] {
    return Object.keys(this.options.relays?.settings ?? {});
  }

  /** The relay app the guild is handed to, if any. */
  relayOf(guildId: string): GuildRelay | undefined {
    return this.relays.get(guildId);
  }

  /**
   * Hands the guild's channel to relay `name`: members' turns go to the app as prompts, its tokens are
   * spoken here. Throws `NotInVoiceError`, `UnknownRelayError` or `RelayRunningError`.
   */
  startRelay(guildId: string, name: string): GuildRelay {
    const voice = this.require(guildId);
    const relays = this.options.relays;
    const settings = relays && Object.hasOwn(relays.settings, name) ? relays.settings[name] : undefined;
    if (!relays || !settings) throw new UnknownRelayError(name, this.relayNames());
    const running = this.relays.get(guildId);
    if (running) throw new RelayRunningError(guildId, running.name);
    const { bargeIn } = this.options.settings;
    const directory = this.options.directory;
    const relay = new GuildRelay({
      name,
      voice,
      settings,
      stt: relays.stt,
      turns: {
        endOfTurnMs: relays.endOfTurnMs,
        minSpeechMs: bargeIn.minSpeechMs,
        minLevelDbfs: bargeIn.minLevelDbfs,
      },
      botUserId: directory?.botUserId(),
      memberName: (userId) => directory?.memberName(guildId, userId),
      logger: this.options.logger,
    });
    this.relays.set(guildId, relay);
    void relay.done.then(() => {
      if (this.relays.get(guildId) === relay) this.relays.delete(guildId);
    });
    return relay;
  }

  /** Stops the guild's relay; false when none runs. */
  async stopRelay(guildId: string): Promise<boolean> {
    const relay = this.relays.get(guildId);
    if (!relay) return false;
    await relay.stop();
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
    // Each relay ended with its guild's voice.
    await Promise.all([...this.relays.values()].map((r) => r.done));
  }

  private async connect(
    guildId: string,
    channelId: string,
    adapterCreator: DiscordGatewayAdapterCreator,
  ): Promise<GuildVoice> {
    const { settings, source, cache, aligner, logger } = this.options;
    const voice = new GuildVoice({
      guildId,
      channelId,
      adapterCreator,
      source,
      voiceId: settings.voiceId,
      modelId: settings.modelId,
      cache,
      aligner,
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
