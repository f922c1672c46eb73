/**
 * A guild handed to a relay app (`POST /discord/guilds/{id}/relay`, `/relay`): the `RelaySession`
 * speaks ConversationRelay with the app, and this class is the guild's side of it, as `CallRelay` is
 * a call's. Each member's turn (`MemberTurns`) goes to speech-to-text and comes back as a `prompt`
 * naming the member: in batch mode as 16 kHz WAV once `stt.endOfTurnMs` of silence ended it; in
 * realtime mode streamed as it is spoken (partial prompts for an app that asked), and ended by the
 * endpointing rule, a turn whose socket failed going to batch. A member cutting in on the app's speech
 * (the guild's barge-in) becomes an `interrupt` with exactly what the channel heard; the app's tokens
 * are spoken in the channel as they arrive. Transcripts reach the app in the order of the turns.
 *
 * It ends when the app says `end` or its socket closes (the bot stays in the channel, and what the app
 * already said is spoken to its end), when it is stopped (its speech is cut), or when the guild's
 * voice connection ends. `done` says which; nothing of it is left listening, timing or transcribing.
 */
import type { Logger } from 'pino';
import { int16ToBytes } from '../../src/audio/pcm.js';
import { decideEndOfTurn } from '../../src/barge-in/endpointing.js';
import { RealtimeTurn } from '../../src/relay/realtime-turn.js';
import { TURN_SAMPLE_RATE } from '../../src/relay/turn-recorder.js';
import {
  RelaySession,
  type RelayHost,
  type RelayOutcome,
  type RelaySettings,
} from '../../src/relay/session.js';
import { TurnQueue, type TranscribedTurn, type TurnStt } from '../../src/relay/turn-stt.js';
import type { BargeInEvent, GuildVoice } from './guild-voice.js';
import { MemberTurns, type MemberTurn, type MemberTurnStream } from './member-turns.js';

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
  /** Members' turns to their transcripts, in order. */
  private readonly queue: TurnQueue | undefined;
  /** Each member's open turn streamed to realtime speech-to-text (realtime mode). */
  private readonly streamed = new Map<string, RealtimeTurn>();
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
      turnGap: (gap) => {
        this.log.debug({ ...gap }, 'turn answered');
        voice.emit('relayTurn', gap);
      },
    };
    this.session = new RelaySession(host, settings, this.log);
    this.queue =
      stt &&
      new TurnQueue({
        stt,
        language: () => this.session.transcriptionLanguage,
        signal: this.controller.signal,
        log: this.log,
      });
    // Members are listened to for their prompts, or for an app that asked who is speaking.
    this.turns =
      stt || settings.events?.has('speaker-events')
        ? new MemberTurns({
            ...options.turns,
            onTurn: (turn) => this.onTurn(turn),
            onSpeaking: (userId, speaking) => this.onSpeaking(userId, speaking),
            stream: stt?.realtime ? this.streamTo(stt) : undefined,
            logger: this.log,
          })
        : undefined;
    this.done = this.run();
  }

  /**
   * Realtime mode: each member's turn streams to its own session as it is spoken (16 kHz PCM, from a
   * pre-roll before their first audible packet), partial transcripts become partial prompts for an app
   * that asked, and the turn ends by the endpointing rule (its words so far, and the silence since the
   * member's last audible packet), the decision logged with its reason.
   */
  private streamTo(stt: TurnStt): MemberTurnStream {
    const client = stt.realtime!;
    const format = { encoding: 's16le', sampleRate: TURN_SAMPLE_RATE, channels: 1 } as const;
    return {
      preRollMs: stt.preRollMs,
      open: (userId, preRoll) => {
        this.streamed.get(userId)?.close();
        const turn = new RealtimeTurn({
          client,
          format,
          languageCode: this.session.transcriptionLanguage,
          signal: this.controller.signal,
          log: this.log,
          onPartial: (text) => this.onPartial(userId, turn, text),
        });
        this.streamed.set(userId, turn);
        if (preRoll.length > 0) turn.send(int16ToBytes(preRoll));
      },
      audio: (userId, samples) => this.streamed.get(userId)?.send(int16ToBytes(samples)),
      decide: (userId, silenceMs) => {
        const turn = this.streamed.get(userId);
        const decision = decideEndOfTurn({ transcript: turn?.text ?? '', silenceMs }, stt.endpointing);
        if (decision.action === 'end')
          this.log.info(
            {
              userId,
              cue: decision.cue,
              waitMs: decision.waitMs,
              silenceMs: Math.round(silenceMs),
              reason: decision.reason,
            },
            'end of turn',
          );
        return { end: decision.action === 'end', recheckMs: decision.remainingMs };
      },
      dropped: (userId) => {
        this.streamed.get(userId)?.close();
        this.streamed.delete(userId);
      },
    };
  }

  /** A member's words so far: a partial prompt, when the app asked and their earlier turns are in. */
  private onPartial(userId: string, turn: RealtimeTurn, text: string): void {
    if (this.streamed.get(userId) !== turn) return;
    if (this.options.settings.partialPrompts && this.queue?.pending === 0)
      this.session.prompt(
        text,
        this.session.transcriptionLanguage,
        { member: this.member(userId) },
        { last: false },
      );
    // The words changed: the member's silence so far may end the turn now.
    this.turns?.recheck(userId);
  }

  private member(userId: string): { id: string; name?: string } {
    const name = this.options.memberName(userId);
    return { id: userId, ...(name === undefined ? {} : { name }) };
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
    const queue = this.queue;
    const realtime = this.streamed.get(turn.userId);
    this.streamed.delete(turn.userId);
    if (!queue || this.controller.signal.aborted) {
      realtime?.close();
      return;
    }
    const member = this.member(turn.userId);
    const endedAt = performance.now();
    // The silence that ended it: since the end of the member's last audible packet (their timeline
    // is performance.now()'s).
    const endpointingMs = Math.max(0, endedAt - turn.endMs);
    queue.submit(
      {
        realtime,
        audio: turn.audio,
        endedAt,
        fields: { userId: turn.userId, turnMs: Math.round(turn.endMs - turn.startMs) },
      },
      (t: TranscribedTurn) =>
        this.session.prompt(
          t.text,
          t.languageCode ?? this.session.transcriptionLanguage,
          { member },
          {
            timing: { endpointingMs, sttMs: t.sttMs, via: t.via },
          },
        ),
    );
  }
}
