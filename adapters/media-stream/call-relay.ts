/**
 * A call handed to a relay app (flow node `{type: relay}`): the `RelaySession` speaks ConversationRelay
 * with the app, and this class is the call's side of it. The caller's turns (`VadTurns`: the VAD's
 * onsets and silences; batch speech-to-text after `stt.endOfTurnMs`, or realtime streaming ended by
 * the endpointing rule) become `prompt`s, in order, with partial ones (`last: false`) for an app that
 * asked; key presses become `dtmf`; a barge-in on the app's speech becomes an `interrupt` with exactly
 * what was heard.
 *
 * A relay with backchannels (`backchannels`, TwiML `ignorebackchannel`) holds a barge-in on the app's
 * answer instead: the answer stops at once, but the call's queue is held and the app told nothing
 * while the caller's turn is heard. When its words are only acknowledgements ("yeah", "uh-huh") or
 * none (a cough), the answer resumes from the first word the caller did not hear whole and the app
 * never hears of it; anything else (other words, a turn too long, a key, the window running out) makes
 * it real: the held queue is dropped and the app gets its `interrupt`, then the turn's prompt.
 */
import type { Logger } from 'pino';
import type { WireFormat } from '../../src/audio/framer.js';
import { int16ToBytes } from '../../src/audio/pcm.js';
import type { CallerSilence, SpeechTurn } from '../../src/barge-in/index.js';
import type { FlowRelayOutcome } from '../../src/flows/runner.js';
import {
  BACKCHANNEL_MAX_SPEECH_MS,
  BACKCHANNEL_WINDOW_MS,
  backchannelPhrases,
  cannotBeBackchannel,
  isBackchannel,
} from '../../src/relay/backchannel.js';
import { RelaySession, type RelayHost, type RelaySettings } from '../../src/relay/session.js';
import type { TranscribedTurn, TurnStt } from '../../src/relay/turn-stt.js';
import { VadTurns } from '../../src/relay/vad-turns.js';
import type { Clock } from '../../src/speaker/clock.js';
import type { InterruptResult } from '../../src/speaker/speaker.js';
import type { BargeIn } from './barge-in-chain.js';

/** What the calls part gives every call for its relay nodes. */
export interface CallRelays {
  /** By name, as `relays:` in the config has them (headers resolved). */
  readonly settings: Readonly<Record<string, RelaySettings>>;
  /** Speech-to-text for prompts; undefined: the relay runs without prompts. */
  readonly stt: TurnStt | undefined;
  /** `TWILIO_AUTH_TOKEN`, for relays a flow makes (a TwiML node signs its requests with it). */
  readonly twilioAuthToken?: string | undefined;
}

/** What of the call's speaker holding a barge-in needs. */
export interface HeldSpeaker {
  hold(): void;
  release(options?: { drop?: boolean }): void;
  interrupt(options?: { force?: boolean; keepQueue?: boolean }): InterruptResult;
}

export interface CallRelayOptions {
  name: string;
  settings: RelaySettings;
  stt: TurnStt | undefined;
  host: RelayHost;
  /** The caller's audio as the line carries it. */
  inbound: WireFormat;
  /** The call's speaker, held while a barge-in on the app's answer is judged. */
  speaker: HeldSpeaker;
  clock: Clock;
  log: Logger;
}

/** A barge-in on the app's answer, held while the caller's turn says whether it was a backchannel. */
interface Judging {
  readonly bargeIn: BargeIn;
  /** The caller's turn that began with it. */
  readonly turn: number | undefined;
  /** Stops the window's timer. */
  readonly window: AbortController;
}

export class CallRelay {
  private readonly session: RelaySession;
  private readonly turns: VadTurns | undefined;
  private readonly controller = new AbortController();
  private readonly log: Logger;
  private readonly backchannels: string[][];
  /** The line's payloads go to a realtime session as they are (μ-law, A-law); else decoded samples. */
  private readonly passThrough: boolean;
  /** The speaker is held by a barge-in that `bargeIn` has not been told of yet. */
  private holding = false;
  private judging: Judging | undefined;

  constructor(private readonly options: CallRelayOptions) {
    this.log = options.log.child({ relay: options.name });
    this.session = new RelaySession(options.host, options.settings, this.log);
    this.backchannels = backchannelPhrases(options.settings.backchannels ?? []);
    const { stt, inbound } = options;
    this.passThrough = lineFormat(inbound) === inbound;
    this.turns =
      stt &&
      new VadTurns({
        stt,
        sampleRate: inbound.sampleRate,
        line: lineFormat(inbound),
        language: () => this.session.transcriptionLanguage,
        signal: this.controller.signal,
        log: this.log,
        onSpeaking: (speaking) => this.session.callerSpeaking(speaking),
        onPartial: (turn, text) => this.partial(turn, text),
        onTranscript: (turn, t) => this.transcript(turn, t),
      });
  }

  get sessionId(): string {
    return this.session.sessionId;
  }

  /** Whether a barge-in on the app's answer is held for the caller's turn to decide (backchannels). */
  get holdsBargeIns(): boolean {
    return this.backchannels.length > 0 && this.turns !== undefined;
  }

  /** Runs the session until the app ends it, its socket closes, or `signal` aborts (the call ended). */
  async run(signal: AbortSignal): Promise<FlowRelayOutcome> {
    const onAbort = (): void => this.session.close();
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      const outcome = await this.session.start();
      signal.throwIfAborted();
      if (outcome.reason === 'host-ended') throw new Error('relay ended by its call');
      return outcome;
    } finally {
      signal.removeEventListener('abort', onAbort);
      this.controller.abort();
      this.turns?.close();
      this.settle();
    }
  }

  /** The caller's audio, decoded, with the payload it came in. */
  audio(samples: Int16Array, atMs: number, payload?: Uint8Array): void {
    const turns = this.turns;
    if (!turns) return;
    turns.audio(samples, atMs, this.passThrough ? payload : int16ToBytes(samples));
  }

  /** The caller began to speak: barge-in's onset, and where their speech began. */
  onset(_onsetMs: number, speechStartMs: number): void {
    if (this.turns) this.turns.onset(speechStartMs);
    else this.session.callerSpeaking(true);
  }

  /** The caller's silence after each chunk the VAD processed. */
  silence(silence: CallerSilence): void {
    this.turns?.silence(silence);
    // A barge-in whose turn goes on past an acknowledgement's length was the caller taking the floor.
    const open = this.turns?.openTurn;
    if (
      this.judging &&
      open !== undefined &&
      open.id === this.judging.turn &&
      open.spokenMs > BACKCHANNEL_MAX_SPEECH_MS
    )
      this.real('a long turn');
  }

  /** The VAD's own end of a turn (after `stt.endOfTurnMs`): batch mode's end. */
  turnEnd(turn: SpeechTurn): void {
    if (this.turns) this.turns.detectorTurnEnd(turn);
    else this.session.callerSpeaking(false);
  }

  dtmf(digit: string): void {
    // A key is the caller acting, never a backchannel.
    this.real('a key');
    this.session.dtmf(digit);
  }

  /**
   * The barge-in's interrupt, for a relay that holds barge-ins: the answer stops at once, the call's
   * queue is held (not dropped) until `bargeIn` is told what was cut.
   */
  interruptHeld(): InterruptResult {
    const { speaker } = this.options;
    // One barge-in at a time: while one is judged, nothing plays, and the caller's turn goes on.
    if (this.judging) return { interrupted: false, playedMs: 0, heardText: '' };
    speaker.hold();
    const r = speaker.interrupt({ keepQueue: true });
    if (!r.interrupted) {
      speaker.release();
      return speaker.interrupt();
    }
    this.holding = true;
    return r;
  }

  /** A barge-in cut something on the call: the app is told, or the barge-in is held for its turn. */
  bargeIn(b: BargeIn): void {
    if (this.holding) {
      this.holding = false;
      if (this.session.suspend(b)) {
        const window = new AbortController();
        this.judging = { bargeIn: b, turn: this.turns?.openTurn?.id, window };
        this.options.clock.sleepUntil(this.options.clock.now() + BACKCHANNEL_WINDOW_MS, window.signal).then(
          () => this.real('the window ran out'),
          () => undefined,
        );
        return;
      }
      // Not one of the app's answers (a play, the welcome of another): cut as any barge-in.
      this.options.speaker.release({ drop: true });
    }
    this.session.interrupted(b);
  }

  private partial(turn: number, text: string): void {
    if (this.judging?.turn === turn) {
      if (!cannotBeBackchannel(text, this.backchannels)) return;
      this.real('words that are no backchannel');
    }
    // Partial prompts go out only when the turns before this one have had theirs.
    if (this.options.settings.partialPrompts && this.turns?.pendingTranscripts === 0)
      this.session.prompt(text, this.session.transcriptionLanguage, undefined, { last: false });
  }

  private transcript(turn: number, t: TranscribedTurn & { endpointingMs: number; spokenMs: number }): void {
    if (this.judging?.turn === turn) {
      if (t.spokenMs <= BACKCHANNEL_MAX_SPEECH_MS && isBackchannel(t.text, this.backchannels)) {
        this.resume(t.text);
        return;
      }
      this.real('words that are no backchannel');
    }
    this.session.prompt(t.text, t.languageCode ?? this.session.transcriptionLanguage, undefined, {
      timing: { endpointingMs: t.endpointingMs, sttMs: t.sttMs, via: t.via },
    });
  }

  /** The held barge-in was a backchannel: the answer goes on, and the app hears of neither. */
  private resume(text: string): void {
    const judging = this.judging;
    if (!judging) return;
    this.judging = undefined;
    judging.window.abort();
    const resumed = this.session.bargeInWasBackchannel();
    this.options.speaker.release();
    this.log.info(
      { text: text.slice(0, 80), utteranceId: judging.bargeIn.utteranceId, resumedUtteranceId: resumed },
      'a backchannel: the answer resumes',
    );
  }

  /** The held barge-in was real (or the relay ended): the held queue goes, the app gets its interrupt. */
  private real(why: string): void {
    const judging = this.judging;
    if (!judging) return;
    this.judging = undefined;
    judging.window.abort();
    this.options.speaker.release({ drop: true });
    this.log.debug({ why, utteranceId: judging.bargeIn.utteranceId }, 'the barge-in was real');
    this.session.bargeInWasReal();
  }

  /** The relay is over: a barge-in still held is let go. */
  private settle(): void {
    if (this.holding) this.options.speaker.release({ drop: true });
    this.holding = false;
    const judging = this.judging;
    this.judging = undefined;
    if (!judging) return;
    judging.window.abort();
    this.options.speaker.release({ drop: true });
  }
}

/**
 * The line's audio as a realtime session takes it: μ-law or A-law mono as the gateway sent it (μ-law
 * byte for byte), else the decoded mono samples as 16-bit PCM at the line's rate.
 */
function lineFormat(inbound: WireFormat): WireFormat {
  if (inbound.channels === 1 && inbound.encoding !== 's16le') return inbound;
  return { encoding: 's16le', sampleRate: inbound.sampleRate, channels: 1 };
}
