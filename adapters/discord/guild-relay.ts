/**
 * A guild handed to a relay app (`POST /discord/guilds/{id}/relay`, `/relay`): the `RelaySession`
 * speaks ConversationRelay with the app, and this class is the guild's side of it, as `CallRelay` is
 * a call's. Each member's turn (`MemberTurns`) goes to speech-to-text as 16 kHz WAV and comes back as
 * a `prompt` naming the member; a member cutting in on the app's speech (the guild's barge-in) becomes
 * an `interrupt` with exactly what the channel heard; the app's tokens are spoken in the channel as
 * they arrive. Transcriptions run one at a time, in order.
 *
 * It ends when the app says `end` or its socket closes (the bot stays in the channel, and what the app
 * already said is spoken to its end), when it is stopped (its speech is cut), or when the guild's
 * voice connection ends. `done` says which; nothing of it is left listening, timing or transcribing.
 */
import type { Logger } from 'pino';
import { wavFile } from '../../src/audio/wav.js';
import { TURN_SAMPLE_RATE } from '../../src/relay/turn-recorder.js';
import {
  RelaySession,
  type RelayHost,
  type RelayOutcome,
  type RelaySettings,
} from '../../src/relay/session.js';
import type { TurnStt } from '../../src/relay/turn-stt.js';
import type { BargeInEvent, GuildVoice } from './guild-voice.js';
import { MemberTurns, type MemberTurn } from './member-turns.js';

/** Turns waiting for speech-to-text, at most: past it a new turn is dropped (and logged). */
const MAX_QUEUED_TURNS = 4;

export interface GuildRelayOptions {
  /** The relay's name in the config. */
  name: string;
  voice: GuildVoice;
  settings: RelaySettings;
  /** Speech-to-text for prompts; undefined: the relay runs without prompts. */
  stt: TurnStt | undefined;
  /** How members' turns are cut: `stt.endOfTurnMs`, and the guild's barge-in level and length. */
  turns: { endOfTurnMs: number; minSpeechMs: number; minLevelDbfs: number };
  /** The bot's user id, when the bot runs in this process. */
  botUserId: string | undefined;
  /** A member's display name, when known. */
  memberName: (userId: string) => string | undefined;
  logger: Logger;
}

export class GuildRelay {
  readonly name: string;
  readonly guildId: string;
  /** The channel it started in. */
  readonly channelId: string;
  /** Whether members' turns reach the app (speech-to-text is configured). */
  readonly prompts: boolean;
  /** Settles once, with why the relay ended. */
  readonly done: Promise<RelayOutcome>;
  private readonly session: RelaySession;
  private readonly turns: MemberTurns | undefined;
  private readonly log: Logger;
  /** Aborts the transcriptions under way once the relay ends. */
  private readonly controller = new AbortController();
  private transcribing: Promise<void> = Promise.resolve();
  private queuedTurns = 0;
  /** The app's utterances still speaking or queued: cut when the relay is stopped. */
  private readonly utterances = new Map<string, AbortController>();
  /** Members whose turn is open: the channel's `clientSpeaking` is on while any is. */
  private readonly talking = new Set<string>();

  constructor(private readonly options: GuildRelayOptions) {
    const { voice, settings, stt } = options;
    this.name = options.name;
    this.guildId = voice.guildId;
    this.channelId = voice.channelId ?? '';
    this.prompts = stt !== undefined;
    this.log = options.logger.child({ guildId: this.guildId, relay: options.name });
    const host: RelayHost = {
      setup: {
        callSid: this.guildId,
        from: this.channelId,
        to: options.botUserId ?? '',
        direction: 'inbound',
        callType: 'discord',
        customParameters: {},
        voxbridge: {
          gateway: 'discord',
          guildId: this.guildId,
          channelId: this.channelId,
          prompts: this.prompts,
        },
      },
      say: (text, o) => {
        // One controller per utterance, forgotten when it ends: nothing accumulates over a long session.
        const stop = new AbortController();
        const handle = voice.say(text, {
          interruptible: o.interruptible,
          ...(o.voiceId === undefined ? {} : { voiceId: o.voiceId }),
          signal: stop.signal,
        });
        this.utterances.set(handle.id, stop);
        void handle.result.then(() => this.utterances.delete(handle.id));
        return handle;
      },
      interrupt: () => voice.speaker.interrupt({ force: true, keepQueue: true }),
    };
    this.session = new RelaySession(host, settings, this.log);
    // Members are listened to for their prompts, or for an app that asked who is speaking.
    this.turns =
      stt || settings.events?.has('speaker-events')
        ? new MemberTurns({
            ...options.turns,
            onTurn: (turn) => this.onTurn(turn),
            onSpeaking: (userId, speaking) => this.onSpeaking(userId, speaking),
            logger: this.log,
          })
        : undefined;
    this.done = this.run();
  }

  get sessionId(): string {
    return this.session.sessionId;
  }

  /** Ends the relay: the app's socket is closed and what it was saying is cut. */
  stop(): Promise<RelayOutcome> {
    for (const stop of this.utterances.values()) stop.abort();
    this.session.close();
    return this.done;
  }

  private async run(): Promise<RelayOutcome> {
    const { voice } = this.options;
    const onBargeIn = (e: BargeInEvent): void => {
      if (e.interrupted) this.session.interrupted(e);
    };
    const onEnded = (): void => this.session.close();
    voice.on('bargeIn', onBargeIn);
    voice.once('ended', onEnded);
    const unlisten = this.turns ? voice.listen(this.turns) : undefined;
    this.log.info(
      { sessionId: this.sessionId, channelId: this.channelId, prompts: this.prompts },
      'relay started',
    );
    try {
      const outcome = await this.session.start();
      const fields = { sessionId: this.sessionId, ...this.session.stats, ...outcome };
      if (outcome.reason === 'host-ended') this.log.info(fields, 'relay stopped');
      else this.log.info(fields, 'relay ended; the bot stays in the channel');
      return outcome;
    } finally {
      voice.off('bargeIn', onBargeIn);
      voice.off('ended', onEnded);
      unlisten?.();
      this.turns?.close();
      this.controller.abort();
    }
  }

  /** Someone in the channel speaks while any member's turn is open. */
  private onSpeaking(userId: string, speaking: boolean): void {
    if (speaking) this.talking.add(userId);
    else this.talking.delete(userId);
    this.session.callerSpeaking(this.talking.size > 0);
  }

  /** A member's turn ended: its transcript goes to the app as a `prompt` naming them. */
  private onTurn(turn: MemberTurn): void {
    const stt = this.options.stt?.batch;
    if (!stt || this.controller.signal.aborted) return;
    if (this.queuedTurns >= MAX_QUEUED_TURNS) {
      this.log.warn(
        { userId: turn.userId, queued: this.queuedTurns },
        'speech-to-text is behind: a turn was dropped',
      );
      return;
    }
    const wav = wavFile(turn.audio, TURN_SAMPLE_RATE);
    const name = this.options.memberName(turn.userId);
    const member = { id: turn.userId, ...(name === undefined ? {} : { name }) };
    const language = this.session.transcriptionLanguage;
    const { signal } = this.controller;
    this.queuedTurns++;
    this.transcribing = this.transcribing.then(async () => {
      try {
        const transcript = await stt.transcribe(wav, {
          signal,
          ...(language ? { languageCode: language } : {}),
        });
        if (transcript.warnings.length > 0)
          this.log.warn({ warnings: transcript.warnings }, 'the speech-to-text answer was trimmed');
        this.session.prompt(transcript.text, transcript.languageCode ?? language, { member });
      } catch (error) {
        if (!signal.aborted)
          this.log.warn(
            {
              err: (error as Error).message,
              userId: turn.userId,
              turnMs: Math.round(turn.endMs - turn.startMs),
            },
            'a turn was not transcribed',
          );
      } finally {
        this.queuedTurns--;
      }
    });
  }
}
