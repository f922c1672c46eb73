/**
 * The members' turns in a voice channel, for a relay: what each member said, at 16 kHz mono, from
 * their first audible packet to `endOfTurnMs` after their last.
 *
 * A member's packets (48 kHz stereo, decoded by the guild) are mixed to mono and resampled to 16 kHz
 * as they arrive, by one streaming resampler per member, into the member's `TurnRecorder`: the end of
 * a turn then only joins what was kept, and never resamples seconds of audio at once on the event loop
 * that paces every guild's player. Discord clients stop sending when their user is silent, so a turn
 * ends on a timer, not on a packet: `endOfTurnMs` with no audible packet from that member. A turn
 * with less than `minSpeechMs` of audible packets (a cough, a click, a keyboard) is dropped.
 *
 * Each member's audio has a timeline of its own, 20 ms per packet, anchored to the packet's arrival
 * whenever a gap opens (they were silent): jitter does not stretch or squeeze their audio, and the
 * turn's start and end are read on the same timeline as its samples.
 *
 * Bounded: at most `maxTalkers` members are followed at once (a member past it is not heard until one
 * of them is done, and that is logged); a turn longer than `maxTurnMs` is cut there, and the rest is
 * the member's next turn. A member no longer sending and with no open turn is forgotten.
 */
import type { Logger } from 'pino';
import { downmixToMono } from '../../src/audio/channels.js';
import { Resampler } from '../../src/audio/resampler.js';
import { TURN_SAMPLE_RATE, TurnRecorder } from '../../src/relay/turn-recorder.js';
import type { MemberAudioListener } from './guild-voice.js';

/** Members' audio as the guild decodes it. */
const DISCORD_SAMPLE_RATE = 48_000;
const DISCORD_CHANNELS = 2;
/** Discord's packets carry 20 ms; an undecodable one is taken as that much silence. */
const PACKET_MS = 20;
/** A packet this much later than the member's timeline expects starts a new stretch of it (a gap). */
const MAX_LATE_MS = 100;
/** Members followed at once. */
export const DEFAULT_MAX_TALKERS = 8;
/** The longest turn: a member talking longer is heard in turns of this length. */
export const DEFAULT_MAX_TURN_MS = 30_000;

/** One member's turn. */
export interface MemberTurn {
  userId: string;
  /** 16 kHz mono, from a little before the turn's start to just after its end. */
  audio: Int16Array;
  /** On the member's timeline (performance.now() based), ms. */
  startMs: number;
  endMs: number;
  /** Audible packets in it (ms). */
  speechMs: number;
}

/**
 * A member's turns streamed as they are spoken (a relay's realtime speech-to-text): told when a turn
 * opens (with its pre-roll) and of its audio, asked whether it is over (the endpointing rule, which
 * reads the words so far), told when one too short to count is dropped.
 */
export interface MemberTurnStream {
  /** The audio sent first: from this long before the turn's first audible packet (ms). */
  readonly preRollMs: number;
  /** A member's turn opened; `preRoll` is their audio from `preRollMs` before it (16 kHz mono). */
  open(userId: string, preRoll: Int16Array): void;
  /** More of the member's audio while their turn is open (16 kHz mono). */
  audio(userId: string, samples: Int16Array): void;
  /** Whether the turn is over after `silenceMs` with no audible packet; else when to ask again (ms). */
  decide(userId: string, silenceMs: number): { end: boolean; recheckMs: number };
  /** The turn ended too short to count (`minSpeechMs`): `onTurn` will not have it. */
  dropped(userId: string): void;
}

/** How often an open turn's end is asked again while its member is silent, at most and at least (ms). */
const RECHECK_MS = [20, 100] as const;

export interface MemberTurnsOptions {
  /** Silence after a member's speech that ends their turn (ms). */
  endOfTurnMs: number;
  /** Audible audio a turn needs to count (ms). */
  minSpeechMs: number;
  /** A packet at or above this level (dBFS) is audible. */
  minLevelDbfs: number;
  /** Default `DEFAULT_MAX_TALKERS`. */
  maxTalkers?: number;
  /** Default `DEFAULT_MAX_TURN_MS`. */
  maxTurnMs?: number;
  onTurn(turn: MemberTurn): void;
  /** A member's turn opened (their first audible packet) or ended (short ones too, that `onTurn` drops). */
  onSpeaking?: ((userId: string, speaking: boolean) => void) | undefined;
  /** Turns streamed as they are spoken, and ended by `decide` instead of `endOfTurnMs`. */
  stream?: MemberTurnStream | undefined;
  logger: Logger;
}

interface OpenTurn {
  readonly startMs: number;
  endMs: number;
  speechMs: number;
  /** performance.now() of the last audible packet. */
  lastAudibleAt: number;
}

interface Talker {
  readonly userId: string;
  readonly resampler: Resampler;
  readonly recorder: TurnRecorder;
  /** Where the current stretch of the member's timeline began, and 16 kHz samples recorded in it. */
  stretchStartMs: number | undefined;
  stretchSamples: number;
  /** Where the member's next packet belongs on their timeline. */
  nextMs: number;
  /** Their packets are arriving (a run of the receiver's is open). */
  sending: boolean;
  turn: OpenTurn | undefined;
  timer: NodeJS.Timeout | undefined;
}

export class MemberTurns implements MemberAudioListener {
  private readonly talkers = new Map<string, Talker>();
  /** Members not followed (too many at once), each logged once per run of their packets. */
  private readonly ignored = new Set<string>();
  private readonly maxTalkers: number;
  private readonly maxTurnMs: number;
  private closed = false;

  constructor(private readonly options: MemberTurnsOptions) {
    this.maxTalkers = options.maxTalkers ?? DEFAULT_MAX_TALKERS;
    this.maxTurnMs = options.maxTurnMs ?? DEFAULT_MAX_TURN_MS;
  }

  /** Members followed now (sending, or with a turn open). */
  get talking(): number {
    return this.talkers.size;
  }

  packet(userId: string, pcm: Int16Array | undefined, levelDbfs: number, atMs: number): void {
    if (this.closed) return;
    const talker = this.talkers.get(userId) ?? this.follow(userId);
    if (!talker) return;
    talker.sending = true;
    const frames = pcm ? pcm.length / DISCORD_CHANNELS : (DISCORD_SAMPLE_RATE * PACKET_MS) / 1000;
    const ms = (frames * 1000) / DISCORD_SAMPLE_RATE;
    if (talker.stretchStartMs === undefined || atMs - talker.nextMs > MAX_LATE_MS)
      this.newStretch(talker, atMs);
    const at = talker.nextMs;
    talker.nextMs += ms;
    const mono = pcm ? downmixToMono(pcm, DISCORD_CHANNELS) : new Int16Array(frames);
    this.record(talker, talker.resampler.push(mono));

    if (levelDbfs < this.options.minLevelDbfs) return;
    let turn = talker.turn;
    if (!turn) {
      turn = talker.turn = { startMs: at, endMs: at, speechMs: 0, lastAudibleAt: atMs };
      talker.recorder.onset(at);
      this.options.onSpeaking?.(userId, true);
      const { stream } = this.options;
      stream?.open(userId, talker.recorder.audioSince(at - stream.preRollMs));
    }
    turn.endMs = at + ms;
    turn.speechMs += ms;
    turn.lastAudibleAt = atMs;
    if (turn.endMs - turn.startMs >= this.maxTurnMs) {
      this.endTurn(talker);
      return;
    }
    talker.timer ??= setTimeout(
      () => this.check(talker),
      this.options.stream ? RECHECK_MS[1] : this.options.endOfTurnMs,
    );
  }

  runEnd(userId: string): void {
    this.ignored.delete(userId);
    const talker = this.talkers.get(userId);
    if (!talker || this.closed) return;
    talker.sending = false;
    // The resampler's look-ahead: the last milliseconds of the run.
    this.endStretch(talker);
    if (!talker.turn) this.forget(talker);
  }

  /** Forgets every member; no turn ends after this. */
  close(): void {
    this.closed = true;
    for (const talker of this.talkers.values()) clearTimeout(talker.timer);
    this.talkers.clear();
    this.ignored.clear();
  }

  private follow(userId: string): Talker | undefined {
    if (this.talkers.size >= this.maxTalkers) {
      if (!this.ignored.has(userId)) {
        this.ignored.add(userId);
        this.options.logger.warn(
          { userId, maxTalkers: this.maxTalkers },
          'too many members talking at once: this one is not heard until another is done',
        );
      }
      return undefined;
    }
    const talker: Talker = {
      userId,
      resampler: new Resampler({ inputRate: DISCORD_SAMPLE_RATE, outputRate: TURN_SAMPLE_RATE }),
      recorder: new TurnRecorder({ sampleRate: TURN_SAMPLE_RATE, maxTurnMs: this.maxTurnMs }),
      stretchStartMs: undefined,
      stretchSamples: 0,
      nextMs: 0,
      sending: false,
      turn: undefined,
      timer: undefined,
    };
    this.talkers.set(userId, talker);
    return talker;
  }

  /** A gap in the member's packets: what the resampler holds is recorded, and a stretch starts at `atMs`. */
  private newStretch(talker: Talker, atMs: number): void {
    this.endStretch(talker);
    talker.stretchStartMs = atMs;
    talker.stretchSamples = 0;
    talker.nextMs = atMs;
  }

  private endStretch(talker: Talker): void {
    if (talker.stretchStartMs === undefined) return;
    this.record(talker, talker.resampler.flush());
    talker.stretchStartMs = undefined;
  }

  /** 16 kHz samples of the current stretch, placed on the member's timeline (the resampler adds no delay). */
  private record(talker: Talker, samples: Int16Array): void {
    if (samples.length === 0 || talker.stretchStartMs === undefined) return;
    const atMs = talker.stretchStartMs + (talker.stretchSamples * 1000) / TURN_SAMPLE_RATE;
    talker.recorder.push(samples, atMs);
    talker.stretchSamples += samples.length;
    if (talker.turn) this.options.stream?.audio(talker.userId, samples);
  }

  /** A member's open turn is asked about again now (its words changed): it may be over. */
  recheck(userId: string): void {
    const talker = this.talkers.get(userId);
    if (!talker?.turn || !this.options.stream || this.closed) return;
    clearTimeout(talker.timer);
    this.check(talker);
  }

  /** The end-of-turn timer: the turn ends once the member has been quiet for `endOfTurnMs`. */
  private check(talker: Talker): void {
    talker.timer = undefined;
    const turn = talker.turn;
    if (this.closed || !turn) return;
    const quietMs = performance.now() - turn.lastAudibleAt;
    const { stream } = this.options;
    if (stream) {
      const decision = stream.decide(talker.userId, quietMs);
      if (decision.end) this.endTurn(talker);
      else {
        const [min, max] = RECHECK_MS;
        talker.timer = setTimeout(() => this.check(talker), Math.min(max, Math.max(min, decision.recheckMs)));
      }
      return;
    }
    if (quietMs < this.options.endOfTurnMs) {
      talker.timer = setTimeout(() => this.check(talker), this.options.endOfTurnMs - quietMs);
      return;
    }
    this.endTurn(talker);
  }

  private endTurn(talker: Talker): void {
    clearTimeout(talker.timer);
    talker.timer = undefined;
    const turn = talker.turn;
    if (!turn) return;
    talker.turn = undefined;
    this.options.onSpeaking?.(talker.userId, false);
    const audio = talker.recorder.turnEnd(turn);
    if (!talker.sending) this.forget(talker);
    if (turn.speechMs < this.options.minSpeechMs) {
      this.options.stream?.dropped(talker.userId);
      return;
    }
    this.options.onTurn({
      userId: talker.userId,
      audio,
      startMs: turn.startMs,
      endMs: turn.endMs,
      speechMs: turn.speechMs,
    });
  }

  private forget(talker: Talker): void {
    clearTimeout(talker.timer);
    if (this.talkers.get(talker.userId) === talker) this.talkers.delete(talker.userId);
  }
}
