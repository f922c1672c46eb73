/**
 * One guild's voice: the connection to its channel, one audio player, one speaker whose sink feeds
 * that player, and barge-in from the members' own voices.
 *
 * Barge-in: the receiver's `speaking` 'start' (a member's first packet) subscribes to that member's
 * Opus packets; while the bot is audible each packet is decoded and its level goes to the
 * `SpeakingDetector`, which fires once a member has been audibly talking for `minSpeechMs`. Then the
 * speaker is interrupted: its HTTP stream aborted, its frames dropped, `player.stop()` (never
 * `stop(true)`, which would leak a prepared packet into the next utterance).
 *
 * A relay listening to the members (`listen`) gets every packet decoded, whether the bot speaks or
 * not. Each run of a member's packets has its own decoder: Opus decoding carries state from packet to
 * packet, so one member's stream must not be decoded with another's.
 */
import type { Aligner } from '../../src/speaker/word-alignment.js';
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
import {
  Speaker,
  SpeakerQueueFullError,
  type SayOptions,
  type UtteranceHandle,
} from '../../src/speaker/speaker.js';
import type { AudioInput } from '../../src/speaker/utterance.js';
import type { TurnGap } from '../../src/relay/host.js';
import {
  ConnectionKeeper,
  describeState,
  type EndReason,
  type ReconnectPolicy,
} from './connection-keeper.js';
import { logDave, e2eeOf, type E2eeState } from './dave.js';
import { DiscordSink } from './discord-sink.js';
import { createOpusDecoder, type OpusDecoder } from './opus.js';
import { SpeakingDetector } from '../../src/barge-in/member-speech.js';

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
  /** Times the words of speech that came without character timings; none: estimated. */
  aligner?: Aligner | undefined;
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
  /** The utterance that was speaking when the member cut in. */
  utteranceId: string | undefined;
  /** What the channel heard of it before the cut (0 and '' when nothing was cut). */
  playedMs: number;
  heardText: string;
}

/** Members' decoded audio, for a relay that hears what they say. */
export interface MemberAudioListener {
  /**
   * One packet of a member's as it arrived (`atMs`, performance.now()): 20 ms of 48 kHz interleaved
   * stereo (undefined when it did not decode), and its level in dBFS.
   */
  packet(userId: string, pcm: Int16Array | undefined, levelDbfs: number, atMs: number): void;
  /** The member's run of packets ended (the receiver ends one 100 ms after its last packet). */
  runEnd(userId: string): void;
}

interface Listening {
  readonly stream: AudioReceiveStream;
  readonly sinceMs: number;
  /** This run's decoder, made at its first packet that needs decoding. */
  decoder: OpusDecoder | undefined;
}

export interface GuildVoiceEvents {
  ready: [];
  reconnecting: [{ attempt: number; delayMs: number; problem: string }];
  bargeIn: [BargeInEvent];
  ended: [EndReason];
  /** A relay's turn answered (guild-relay.ts): its gap, for the metrics. */
  relayTurn: [TurnGap];
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
  private readonly listening = new Map<string, Listening>();
  private memberAudio: MemberAudioListener | undefined;
  private readonly logger: Logger;
  private readonly stopDaveLog: () => void;
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
      aligner: options.aligner,
    });

    this.connection = joinVoiceChannel({
      guildId: options.guildId,
      channelId: options.channelId,
      adapterCreator: options.adapterCreator,
      selfDeaf: false, // barge-in needs to hear the members
      selfMute: false,
    });
    this.connection.on('error', (error) => this.logger.warn({ err: error }, 'voice connection error'));
    this.stopDaveLog = logDave(this.connection, this.logger);
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

  /** End-to-end encryption (DAVE): the protocol version in use and the channel's voice privacy code. */
  get e2ee(): E2eeState {
    return e2eeOf(this.connection);
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

  say(text: string | AsyncIterable<string> | AudioInput, options: SayOptions = {}): UtteranceHandle {
    return this.speaker.say(text, options);
  }

  /**
   * Queues a script's lines in order, each in its character's voice: all of them, or none
   * (`SpeakerQueueFullError` when they do not fit in the queue).
   */
  narrate(
    lines: readonly ScriptLine[],
    options: Pick<SayOptions, 'interruptible' | 'priority'> = {},
  ): UtteranceHandle[] {
    const chars = lines.reduce((n, line) => n + line.text.length, 0);
    if (!this.speaker.fits(lines.length, chars)) throw new SpeakerQueueFullError(this.speaker.queueLimits);
    return lines.map((line, index) =>
      this.speaker.say(line.text, {
        voiceId: line.voiceId,
        voiceSettings: line.voiceSettings,
        ...(options.interruptible === undefined ? {} : { interruptible: options.interruptible }),
        // Only the first line cuts in; the rest follow it.
        ...(options.priority === 'now' && index === 0 ? { priority: 'now' as const } : {}),
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

  /**
   * Hands every member's decoded audio to `listener` (one at a time: the guild's relay) until the
   * returned function is called.
   */
  listen(listener: MemberAudioListener): () => void {
    if (this.memberAudio) throw new Error(`guild ${this.guildId}: members' audio already has a listener`);
    this.memberAudio = listener;
    return () => {
      if (this.memberAudio === listener) this.memberAudio = undefined;
    };
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
    const entry: Listening = { stream, sinceMs: performance.now(), decoder: undefined };
    this.listening.set(userId, entry);
    stream.on('data', (packet: Buffer) => this.onPacket(userId, packet, entry));
    stream.on('error', (error) => this.logger.debug({ err: error, userId }, 'receive stream error'));
    stream.once('close', () => {
      if (this.listening.get(userId)?.stream === stream) this.listening.delete(userId);
      this.detector.end(userId);
      if (!this.closed) this.memberAudio?.runEnd(userId);
    });
  }

  private onPacket(userId: string, packet: Buffer, entry: Listening): void {
    if (this.closed) return;
    const listener = this.memberAudio;
    const detecting = this.bargeInEnabled && this.speaker.audible;
    if (!detecting) this.detector.end(userId);
    // Decoding costs CPU: only while there is something to interrupt, or a relay listens.
    if (!detecting && !listener) return;
    const now = performance.now();
    let pcm: Int16Array | undefined;
    try {
      entry.decoder ??= createOpusDecoder();
      const bytes = entry.decoder.decode(packet);
      pcm = new Int16Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 2);
    } catch {
      pcm = undefined;
    }
    // An undecodable packet still means the member is sending audio.
    const level = pcm ? levelDbfs(pcm) : 0;
    listener?.packet(userId, pcm, level, now);
    if (!detecting || !this.detector.frame(userId, level, now)) return;
    const utteranceId = this.speaker.speakingId;
    const { interrupted, playedMs, heardText } = this.speaker.interrupt();
    this.logger.debug({ userId, interrupted }, 'barge-in');
    this.emit('bargeIn', {
      userId,
      speakingSinceMs: entry.sinceMs,
      decidedAtMs: now,
      interrupted,
      utteranceId: interrupted ? utteranceId : undefined,
      playedMs,
      heardText,
    });
  }

  /** Everything the guild holds, freed once (the connection itself is already destroyed). */
  private free(): void {
    if (this.closed) return;
    this.closed = true;
    this.stopDaveLog();
    void this.speaker.close();
    this.sink.close();
    this.player.stop(true);
    for (const { stream } of this.listening.values()) stream.destroy();
    this.listening.clear();
    this.memberAudio = undefined;
  }
}
