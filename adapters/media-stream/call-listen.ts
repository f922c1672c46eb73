/**
 * A flow's gather listening for the caller's spoken answer (the `listen` of the flow's port). The
 * caller's turns are the barge-in VAD's (an onset, the audio, a turn's end after `stt.endOfTurnMs` of
 * silence): from the first onset after the gather armed the listening, the turn's audio is kept (from
 * a little before the onset, so its first syllable is in: the VAD confirms speech 100–250 ms after it
 * began) and, once the turn ends, recognised against the gather's grammar by the process's one
 * recogniser (its worker threads). One listening at a time; a turn that began before it was armed is
 * not its answer.
 */
import type { Logger } from 'pino';
import type { SpeechTurn } from '../../src/barge-in/index.js';
import type { FlowHeard, FlowListening } from '../../src/flows/runner.js';
import type { MenuGrammar } from '../../src/recognition/grammar.js';
import type { Recognition, Recognizer } from '../../src/recognition/recognizer.js';
import { TurnRecorder } from '../../src/relay/turn-recorder.js';

/** What of the recogniser a call needs. */
export type TurnRecognizer = Pick<Recognizer, 'recognize'> & {
  /** Gets ready (a recogniser started on first use starts now), so the first answer does not wait for it. */
  prepare?: (() => void) | undefined;
};

export interface CallListenerOptions {
  recognizer: TurnRecognizer;
  /** The rate of the caller's audio as the call decodes it. */
  inboundRate: number;
  log: Logger;
  /** Wall clock (ms) for the result's latency; default `performance.now`. */
  now?: (() => number) | undefined;
}

/** The longest answer recognised: a longer turn keeps its last part (a menu answer is a few seconds). */
const MAX_ANSWER_MS = 20_000;

/** What answers when a turn could not be recognised: a no-match. */
const NOTHING_HEARD: Recognition = {
  text: '',
  key: undefined,
  digits: undefined,
  confidence: 0,
  words: [],
  cpuMs: 0,
};

/** One gather's listening: waiting for an onset, in a turn, recognising it, or done. */
type ListeningState =
  | { status: 'armed' }
  | { status: 'speaking'; onsetMs: number }
  | { status: 'recognizing' }
  | { status: 'done' };

class Listening implements FlowListening {
  readonly heard: Promise<FlowHeard>;
  state: ListeningState = { status: 'armed' };
  readonly recorder: TurnRecorder;
  readonly sampleRate: number;
  private readonly controller = new AbortController();
  private resolve!: (heard: FlowHeard) => void;
  private reject!: (error: Error) => void;

  constructor(
    readonly grammar: MenuGrammar,
    readonly minConfidence: number | undefined,
    inboundRate: number,
    private readonly onClose: (listening: Listening) => void,
  ) {
    // At the call's own rate: the recogniser decodes phone-band audio as it is.
    this.sampleRate = inboundRate;
    this.recorder = new TurnRecorder({
      sampleRate: inboundRate,
      outputRate: inboundRate,
      maxTurnMs: MAX_ANSWER_MS,
    });
    this.heard = new Promise<FlowHeard>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
    // Whoever closes it may not be waiting for it.
    this.heard.catch(() => undefined);
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get busy(): boolean {
    return this.state.status === 'speaking' || this.state.status === 'recognizing';
  }

  settle(heard: FlowHeard): void {
    this.state = { status: 'done' };
    this.resolve(heard);
    this.onClose(this);
  }

  close(): void {
    if (this.controller.signal.aborted) return;
    this.controller.abort();
    if (this.state.status !== 'done') {
      this.state = { status: 'done' };
      this.reject(new DOMException('the listening was closed', 'AbortError'));
    }
    this.onClose(this);
  }
}

export class CallListener {
  private current: Listening | undefined;
  /** Where the caller's audio received so far ends, on the inbound timeline (ms). */
  private audioEndMs = 0;
  private readonly now: () => number;

  constructor(private readonly options: CallListenerOptions) {
    this.now = options.now ?? (() => performance.now());
  }

  /** A gather is listening: a barge-in now is the caller answering, never one to take back. */
  get listening(): boolean {
    return this.current !== undefined;
  }

  /**
   * Listens for the caller's next turn; a listening still open is closed first. `minConfidence` is
   * what its answer will be held to (the recogniser's second pass is taken only when that decides).
   */
  listen(grammar: MenuGrammar, signal: AbortSignal, minConfidence?: number): FlowListening {
    this.current?.close();
    const listening = new Listening(grammar, minConfidence, this.options.inboundRate, (l) => {
      if (this.current === l) this.current = undefined;
    });
    if (signal.aborted) {
      listening.close();
      return listening;
    }
    const onAbort = (): void => listening.close();
    signal.addEventListener('abort', onAbort, { once: true });
    listening.signal.addEventListener('abort', () => signal.removeEventListener('abort', onAbort), {
      once: true,
    });
    this.current = listening;
    return listening;
  }

  /** The caller's audio as decoded, with its inbound time. */
  audio(samples: Int16Array, atMs: number): void {
    this.audioEndMs = atMs + (samples.length / this.options.inboundRate) * 1000;
    const l = this.current;
    if (l && (l.state.status === 'armed' || l.state.status === 'speaking')) l.recorder.push(samples, atMs);
  }

  /**
   * The VAD confirmed the caller's speech (from `onsetMs`, the run that confirmed it): the turn is the
   * listening's answer. Its audio starts there (less the recorder's pre-roll), not at the earlier start
   * the detector may give a turn (`SpeechTurn.startMs`, reaching back over shorter runs for a relay's
   * speech-to-text): over a prompt still playing those runs can be the prompt's own echo, and a
   * grammar's decoder takes echoed words for the caller's (a full test run measured it).
   */
  onset(onsetMs: number): void {
    const l = this.current;
    if (!l || (l.state.status !== 'armed' && l.state.status !== 'speaking')) return;
    l.recorder.onset(onsetMs);
    if (l.state.status === 'armed') l.state = { status: 'speaking', onsetMs };
  }

  /** A turn of the caller's ended: the one the listening heard begin is recognised. */
  turnEnd(turn: SpeechTurn): void {
    const l = this.current;
    if (!l || l.state.status !== 'speaking') return;
    // The VAD's answer comes after the audio that decided it: how far behind it is, on the inbound
    // timeline, counts toward the result's latency as the recognition does.
    const lagMs = Math.max(0, this.audioEndMs - turn.decidedMs);
    const startedAt = this.now();
    const { samples, fromMs } = l.recorder.takeTurn({
      startMs: Math.max(turn.startMs, l.state.onsetMs),
      endMs: turn.endMs,
    });
    l.state = { status: 'recognizing' };
    const done = (recognition: Recognition): void => {
      if (l.state.status !== 'recognizing') return;
      const words = recognition.words.map((w) => ({
        word: w.word,
        startMs: Math.round(fromMs + w.startMs),
        endMs: Math.round(fromMs + w.endMs),
      }));
      l.settle({ ...recognition, words, latencyMs: Math.round(lagMs + this.now() - startedAt) });
    };
    if (samples.length === 0) {
      done(NOTHING_HEARD);
      return;
    }
    this.options.recognizer
      .recognize(samples, l.sampleRate, l.grammar, {
        signal: l.signal,
        ...(l.minConfidence !== undefined ? { threshold: l.minConfidence } : {}),
      })
      .then(done, (error: unknown) => {
        if (l.signal.aborted) return;
        this.options.log.warn(
          { err: (error as Error).message, turnMs: turn.endMs - turn.startMs },
          'a spoken answer could not be recognised (taken as a no-match)',
        );
        done(NOTHING_HEARD);
      });
  }

  /** The call ended. */
  close(): void {
    this.current?.close();
  }
}
