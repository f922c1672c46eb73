/**
 * One guild's voice: the connection to its channel, one audio player, one speaker whose sink feeds
 * that player, and barge-in from the members' own voices.
 *
 * Barge-in: the receiver's `speaking` 'start' (a member's first packet) subscribes to that member's
 * Opus packets; while the bot is audible each packet is decoded and its level goes to the
 * `SpeakingDetector`, which fires once a member has been audibly talking for `minSpeechMs`. Then the
 * speaker is interrupted: its HTTP stream aborted, its frames dropped, `player.stop()` (never
 * `stop(true)`, which would leak a prepared packet into the next utterance).
 */
import { EventEmitter } from 'node:events';
import {
  createAudioPlayer,
  EndBehaviorType,
  entersState,
  joinVoiceChannel,
  NoSubscriberBehavior,
  VoiceConnectionStatus,
  type AudioPlayer,
  type AudioReceiveStream,
  type DiscordGatewayAdapterCreator,
  type VoiceConnection,
} from '@discordjs/voice';
import type { Logger } from 'pino';
import { levelDbfs } from '../../src/audio/level.js';
import type { PhraseCache } from '../../src/speaker/phrase-cache.js';
import type { ScriptLine } from '../../src/speaker/script.js';
import type { SpeechSource } from '../../src/speaker/segment-audio.js';
import { Speaker, type SayOptions, type UtteranceHandle } from '../../src/speaker/speaker.js';
import {
  ConnectionKeeper,
  describeState,
  type EndReason,
  type ReconnectPolicy,
} from './connection-keeper.js';
import { DiscordSink } from './discord-sink.js';
import { createOpusDecoder, type OpusDecoder } from './opus.js';
import { SpeakingDetector } from './speaking-detector.js';

/** Barge-in on members' voices (the config's `discord.bargeIn`); a call's is in media-stream/barge-in.ts. */
export interface DiscordBargeInSettings {
  enabled: boolean;
  /** A member talking this long interrupts (ms). */
  minSpeechMs: number;
  /** Silences within speech shorter than this do not reset it (ms). */
  maxGapMs: number;
  /** Decoded frames quieter than this (dBFS) are not speech. */
  minLevelDbfs: number;
}

export interface GuildVoiceOptions {
  guildId: string;
  channelId: string;
  adapterCreator: DiscordGatewayAdapterCreator;
  source: SpeechSource;
  /** The guild's default voice. */
  voiceId: string;
  modelId?: string | undefined;
  cache?: PhraseCache | undefined;
  bargeIn: DiscordBargeInSettings;
  reconnect: ReconnectPolicy;
  logger: Logger;
  /**
   * Missing packets before the player gives up on a resource (default 50 = 1 s): a stall in the speech
   * stream is heard as a gap, not as the end of the utterance (the library's default is 5).
   */
  maxMissedFrames?: number;
}

export interface BargeInEvent {
  userId: string;
  /** performance.now() of the member's first packet in this run of speech, and of the decision. */
  speakingSinceMs: number;
  decidedAtMs: number;
  /** Whether something interruptible was cut (false: the bot was silent or the utterance was not interruptible). */
  interrupted: boolean;
}

export interface GuildVoiceEvents {
  ready: [];
  reconnecting: [{ attempt: number; delayMs: number; problem: string }];
  bargeIn: [BargeInEvent];
  ended: [EndReason];
}

export class GuildVoice extends EventEmitter<GuildVoiceEvents> {
  readonly guildId: string;
  readonly connection: VoiceConnection;
  readonly player: AudioPlayer;
  readonly speaker: Speaker;
  /** Barge-in on members' voices; off for narration to a noisy table. */
  bargeInEnabled: boolean;

  private readonly sink: DiscordSink;
  private readonly keeper: ConnectionKeeper;
  private readonly detector: SpeakingDetector;
  private decoder: OpusDecoder | undefined;
  private readonly listening = new Map<string, { stream: AudioReceiveStream; sinceMs: number }>();
  private readonly logger: Logger;
  private closed = false;
  private readonly endedPromise: Promise<EndReason>;

  constructor(options: GuildVoiceOptions) {
    super();
    this.guildId = options.guildId;
    this.logger = options.logger.child({ guildId: options.guildId });
    this.bargeInEnabled = options.bargeIn.enabled;
    this.detector = new SpeakingDetector({
      minSpeechMs: options.bargeIn.minSpeechMs,
      maxGapMs: options.bargeIn.maxGapMs,
      minLevelDbfs: options.bargeIn.minLevelDbfs,
    });

    // Play: a player keeps real time while the connection reconnects (Pause would make speech late).
    this.player = createAudioPlayer({
      behaviors: { noSubscriber: NoSubscriberBehavior.Play, maxMissedFrames: options.maxMissedFrames ?? 50 },
    });
    this.player.on('error', (error) => this.logger.warn({ err: error }, 'audio player error'));
    this.sink = new DiscordSink(this.player);
    this.speaker = new Speaker({
      source: options.source,
      sink: this.sink,
      voiceId: options.voiceId,
      modelId: options.modelId,
      cache: options.cache,
    });

    this.connection = joinVoiceChannel({
      guildId: options.guildId,
      channelId: options.channelId,
      adapterCreator: options.adapterCreator,
      selfDeaf: false, // barge-in needs to hear the members
      selfMute: false,
    });
    this.connection.on('error', (error) => this.logger.warn({ err: error }, 'voice connection error'));
    this.connection.subscribe(this.player);
    this.connection.receiver.speaking.on('start', (userId) => this.onSpeakingStart(userId));

    this.keeper = new ConnectionKeeper(this.connection, options.reconnect);
    this.keeper.on('ready', () => {
      this.logger.info({ channelId: this.channelId }, 'voice connection ready');
      this.emit('ready');
    });
    this.keeper.on('reconnecting', (e) => {
      this.logger.warn(e, 'voice connection lost; rejoining');
      this.emit('reconnecting', e);
    });
    this.endedPromise = new Promise((resolve) =>
      this.keeper.once('ended', (reason) => {
        this.free();
        this.logger.info({ reason }, 'voice connection ended');
        resolve(reason);
        this.emit('ended', reason);
      }),
    );
  }

  /** The channel the bot is in (it follows moves). */
  get channelId(): string | null {
    return this.connection.joinConfig.channelId;
  }

  get status(): VoiceConnectionStatus {
    return this.connection.state.status;
  }

  /** Resolves once connected; rejects with the connection's state after `timeoutMs`. */
  async ready(timeoutMs: number): Promise<void> {
    try {
      await entersState(this.connection, VoiceConnectionStatus.Ready, timeoutMs);
    } catch {
      throw new Error(
        `voice connection not ready after ${timeoutMs} ms (${describeState(this.connection.state)})`,
      );
    }
  }

  /** Resolves when the connection has ended, with why. */
  whenEnded(): Promise<EndReason> {
    return this.endedPromise;
  }

  say(text: string | AsyncIterable<string>, options: SayOptions = {}): UtteranceHandle {
    return this.speaker.say(text, options);
  }

  /** Queues a script's lines in order, each in its character's voice. */
  narrate(lines: readonly ScriptLine[], options: Pick<SayOptions, 'interruptible'> = {}): UtteranceHandle[] {
    return lines.map((line) =>
      this.speaker.say(line.text, {
        voiceId: line.voiceId,
        voiceSettings: line.voiceSettings,
        ...options,
      }),
    );
  }

  /** Cuts what plays now; the queue goes on. */
  skip(): boolean {
    return this.speaker.interrupt({ force: true, keepQueue: true }).interrupted;
  }

  /** Cuts what plays now and drops the queue. True when something was playing or queued. */
  stop(): boolean {
    const had = this.speaker.audible || this.speaker.queued > 0;
    this.speaker.interrupt({ force: true });
    return had;
  }

  /** Moves to another channel of the guild. */
  moveTo(channelId: string): void {
    this.connection.rejoin({ channelId, selfDeaf: false, selfMute: false });
  }

  /** Leaves the channel and frees everything. */
  async leave(): Promise<EndReason> {
    this.keeper.leave();
    return this.endedPromise;
  }

  private onSpeakingStart(userId: string): void {
    if (this.closed || this.listening.has(userId)) return;
    const stream = this.connection.receiver.subscribe(userId, {
      end: { behavior: EndBehaviorType.AfterSilence, duration: 100 },
    });
    const entry = { stream, sinceMs: performance.now() };
    this.listening.set(userId, entry);
    stream.on('data', (packet: Buffer) => this.onPacket(userId, packet, entry.sinceMs));
    stream.on('error', (error) => this.logger.debug({ err: error, userId }, 'receive stream error'));
    stream.once('close', () => {
      if (this.listening.get(userId)?.stream === stream) this.listening.delete(userId);
      this.detector.end(userId);
    });
  }

  private onPacket(userId: string, packet: Buffer, sinceMs: number): void {
    if (this.closed) return;
    // Decoding costs CPU: only while there is something to interrupt.
    if (!this.bargeInEnabled || !this.speaker.audible) {
      this.detector.end(userId);
      return;
    }
    const now = performance.now();
    let level: number;
    try {
      this.decoder ??= createOpusDecoder();
      const pcm = this.decoder.decode(packet);
      level = levelDbfs(new Int16Array(pcm.buffer, pcm.byteOffset, pcm.byteLength / 2));
    } catch {
      level = 0; // an undecodable packet still means the member is sending audio
    }
    if (!this.detector.frame(userId, level, now)) return;
    const { interrupted } = this.speaker.interrupt();
    this.logger.debug({ userId, interrupted }, 'barge-in');
    this.emit('bargeIn', { userId, speakingSinceMs: sinceMs, decidedAtMs: now, interrupted });
  }

  /** Everything the guild holds, freed once (the connection itself is already destroyed). */
  private free(): void {
    if (this.closed) return;
    this.closed = true;
    void this.speaker.close();
    this.sink.close();
    this.player.stop(true);
    for (const { stream } of this.listening.values()) stream.destroy();
    this.listening.clear();
    this.decoder = undefined;
  }
}
