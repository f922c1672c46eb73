/**
 * A false barge-in taken back. A barge-in cuts the bot at once (the caller must not wait to be heard),
 * but what cut it may be a cough, an "uh-huh" or a door: the call then holds its queue and waits for
 * the caller's turn that began with the barge-in to end. A short turn (`maxSpeechMs` of speech at
 * most) that ends within `windowMs` of the barge-in was not the caller taking the floor: the cut
 * utterance is spoken again from the first word the caller did not hear whole, before anything else
 * queued. Anything else (the window runs out, a longer turn, a key, the app interrupting or speaking
 * with priority `now`, the call ending) makes it real: the held queue is dropped as a barge-in drops it.
 *
 * Only a plain text can be resumed (a streamed text has no rest to speak again, audio no words), and
 * only while no relay runs (a relay's app owns its talk cycle).
 */
import { EventEmitter } from 'node:events';
import type { SpeechTurn } from '../../src/barge-in/index.js';
import type { Clock } from '../../src/speaker/clock.js';
import type { InterruptResult, SayOptions, Speaker, UtteranceHandle } from '../../src/speaker/speaker.js';
import { resumeFrom } from '../../src/speaker/resume-text.js';
import type { Interruptible } from './barge-in-chain.js';

export interface FalseBargeInSettings {
  enabled: boolean;
  /**
   * Wall time after the barge-in within which the caller's turn must have ended (ms). A turn ends the
   * detector's `endOfTurnMs` after its speech, so this must exceed that plus `maxSpeechMs`.
   */
  windowMs: number;
  /** The most speech (ms, the turn's start to the end of its speech) a false barge-in holds. */
  maxSpeechMs: number;
}

/**
 * How many times one utterance is resumed, counting the resumes of its resumes. A resumed rest cut
 * again is taken back again (a second cough), but past this the barge-in is real: on a line whose echo
 * cuts every rest a few hundred ms in, taking it back without end spoke and cut the same words a
 * thousand times in five minutes (`bench talkers` under load), each one synthesised afresh.
 */
export const MAX_RESUMES = 2;

/** Why a barge-in was not taken back. */
export type RealReason = 'window' | 'long-turn' | 'dtmf' | 'interrupt' | 'priority' | 'relay' | 'ended';

/** How a pending barge-in was decided: resumed (the rest is `handle`), or real. */
export type BargeInDecision =
  { status: 'resumed'; handle: UtteranceHandle; fromText: string } | { status: 'real'; reason: RealReason };

/** The cut utterance, and what of it is left to say. */
export interface CutUtterance {
  utteranceId: string;
  text: string;
  options: SayOptions;
  heardText: string;
  /** The text to resume with: from the first word not heard whole. */
  fromText: string;
  /** How many resumes deep the cut utterance is (0: said by the app). */
  resumes: number;
}

export type FalseBargeInState =
  | { status: 'idle' }
  | {
      status: 'pending';
      cut: CutUtterance;
      /** The clock's time at the barge-in. */
      sinceMs: number;
      /** Aborts the window's timer. */
      controller: AbortController;
      settle: (decision: BargeInDecision) => void;
    }
  | { status: 'closed' };

export interface BargeInResumed {
  /** The utterance the barge-in cut. */
  utteranceId: string;
  resumedUtteranceId: string;
  fromText: string;
}

export interface FalseBargeInOptions {
  speaker: Speaker;
  settings: FalseBargeInSettings;
  clock: Clock;
  /** Speaks on the call (the call's `say`, so the resumed utterance is reported like any other). */
  say: (text: string, options: SayOptions) => UtteranceHandle;
  /** Whether the call may resume now (false while a relay runs). */
  canResume: () => boolean;
  onResumed: (resumed: BargeInResumed) => void;
}

interface FalseBargeInEvents {
  /** Every change of `state`, after its teardown. */
  stateChange: [oldState: FalseBargeInState, newState: FalseBargeInState];
}

/** A plain text as it was said. */
interface Said {
  text: string;
  options: SayOptions;
}

const NOT_INTERRUPTED: InterruptResult = { interrupted: false, playedMs: 0, heardText: '' };

/** Re-exported: where a resumed utterance starts (src/speaker/resume-text.ts). */
export { resumeFrom } from '../../src/speaker/resume-text.js';

/**
 * The call's barge-in, with the decision whether it was false. It stands for the speaker in the
 * barge-in chain (`Interruptible`), and is told of the caller's turns, keys and the app's interrupts.
 */
export class FalseBargeIn extends EventEmitter<FalseBargeInEvents> implements Interruptible {
  #state: FalseBargeInState = { status: 'idle' };
  /** Plain texts said on the call and not yet ended: what a barge-in could resume. */
  private readonly texts = new Map<string, Said>();
  /** Utterances that are resumes, with how many resumes deep they are (`MAX_RESUMES`). */
  private readonly resumes = new Map<string, number>();
  /** The last cut utterance and its decision, for the flow that said it (`decisionFor`). */
  private last: { utteranceId: string; decision: Promise<BargeInDecision> } | undefined;

  constructor(private readonly options: FalseBargeInOptions) {
    super();
    options.speaker.on('utteranceEnd', ({ id }) => {
      this.texts.delete(id);
      this.resumes.delete(id);
    });
  }

  get state(): FalseBargeInState {
    return this.#state;
  }

  /** The one place the state changes: leaving pending stops the window's timer. */
  private setState(next: FalseBargeInState): void {
    const old = this.#state;
    if (old.status === 'closed') return;
    this.#state = next;
    if (old.status === 'pending') old.controller.abort();
    this.emit('stateChange', old, next);
  }

  get speakingId(): string | undefined {
    return this.options.speaker.speakingId;
  }

  /** A plain text said on the call, which a barge-in may resume. */
  track(utteranceId: string, text: string, options: SayOptions): void {
    this.texts.set(utteranceId, { text, options });
  }

  /**
   * The barge-in's interrupt. Cuts what plays as the speaker's own `interrupt()` does; when the cut
   * utterance could be resumed, the queue is held instead of dropped until the decision.
   */
  interrupt(): InterruptResult {
    const { speaker, settings } = this.options;
    // Nothing plays while a decision is pending: the caller's turn goes on, and it decides.
    if (this.#state.status === 'pending') return NOT_INTERRUPTED;
    if (this.#state.status === 'closed' || !settings.enabled || !this.options.canResume())
      return speaker.interrupt();
    // Each cut utterance with its text, read before its end forgets it.
    const cuts: Array<{ id: string; heardText: string; said: Said | undefined; resumes: number }> = [];
    const onCut = ({ id, heardText }: { id: string; heardText: string }): number =>
      cuts.push({ id, heardText, said: this.texts.get(id), resumes: this.resumes.get(id) ?? 0 });
    speaker.hold();
    speaker.on('interrupted', onCut);
    let result: InterruptResult;
    try {
      result = speaker.interrupt({ keepQueue: true });
    } finally {
      speaker.off('interrupted', onCut);
    }
    if (!result.interrupted) {
      // As without a hold: nothing audible drops the queue, an uninterruptible utterance keeps it.
      speaker.interrupt();
      speaker.release();
      return result;
    }
    const only = cuts.length === 1 ? cuts[0]! : undefined;
    // Past `MAX_RESUMES` of one utterance, as if it could not be resumed: the queue is dropped.
    const said = only !== undefined && only.resumes < MAX_RESUMES ? only.said : undefined;
    const fromText = only && said && resumeFrom(said.text, only.heardText);
    if (!only || !said || !fromText) {
      speaker.release({ drop: true });
      return result;
    }
    let settle!: (decision: BargeInDecision) => void;
    const decision = new Promise<BargeInDecision>((resolve) => (settle = resolve));
    const controller = new AbortController();
    const { clock } = this.options;
    const sinceMs = clock.now();
    this.last = { utteranceId: only.id, decision };
    this.setState({
      status: 'pending',
      cut: { utteranceId: only.id, ...said, heardText: only.heardText, fromText, resumes: only.resumes },
      sinceMs,
      controller,
      settle,
    });
    clock.sleepUntil(sinceMs + settings.windowMs, controller.signal).then(
      () => this.real('window'),
      () => undefined,
    );
    return result;
  }

  /** The decision on utterance `utteranceId`'s barge-in, when it was the last one cut. */
  decisionFor(utteranceId: string): Promise<BargeInDecision> | undefined {
    return this.last?.utteranceId === utteranceId ? this.last.decision : undefined;
  }

  /** A turn of the caller's ended: the one that began with a pending barge-in decides it. */
  turnEnded(turn: SpeechTurn): void {
    const state = this.#state;
    if (state.status !== 'pending') return;
    const { settings, clock } = this.options;
    if (turn.endMs - turn.startMs > settings.maxSpeechMs) this.real('long-turn');
    else if (clock.now() - state.sinceMs > settings.windowMs) this.real('window');
    else if (!this.options.canResume()) this.real('relay');
    else this.resume(state);
  }

  /** The barge-in counts (a key, the app's interrupt, …): the held queue is dropped. */
  real(reason: RealReason): void {
    const state = this.#state;
    if (state.status !== 'pending') return;
    this.setState({ status: 'idle' });
    this.options.speaker.release({ drop: true });
    state.settle({ status: 'real', reason });
  }

  /** The call ended: a pending barge-in was real, and nothing is resumed any more. */
  close(): void {
    this.real('ended');
    this.setState({ status: 'closed' });
    this.texts.clear();
  }

  private resume(state: Extract<FalseBargeInState, { status: 'pending' }>): void {
    const { cut } = state;
    // Idle first: the call's `say` with priority 'now' would otherwise count as the app's.
    this.setState({ status: 'idle' });
    let handle: UtteranceHandle;
    try {
      handle = this.options.say(cut.fromText, { ...cut.options, priority: 'now' });
    } catch {
      // The call is no longer active: nothing to resume on.
      this.options.speaker.release({ drop: true });
      state.settle({ status: 'real', reason: 'ended' });
      return;
    }
    this.resumes.set(handle.id, cut.resumes + 1);
    this.options.speaker.release();
    state.settle({ status: 'resumed', handle, fromText: cut.fromText });
    this.options.onResumed({
      utteranceId: cut.utteranceId,
      resumedUtteranceId: handle.id,
      fromText: cut.fromText,
    });
  }
}
