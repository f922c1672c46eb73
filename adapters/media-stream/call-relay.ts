/**
 * A call handed to a relay app (flow node `{type: relay}`): the `RelaySession` speaks ConversationRelay
 * with the app, and this class is the call's side of it. The caller's turns (cut by the VAD: speech,
 * then `stt.endOfTurnMs` of silence) are recorded, sent to speech-to-text as 16 kHz WAV, and each
 * transcript becomes a `prompt`; key presses become `dtmf`; a barge-in on the app's speech becomes an
 * `interrupt` with exactly what was heard. Transcriptions run one at a time, in order.
 */
import type { Logger } from 'pino';
import { wavFile } from '../../src/audio/wav.js';
import type { SpeechTurn } from '../../src/barge-in/index.js';
import type { FlowRelayOutcome } from '../../src/flows/runner.js';
import { TURN_SAMPLE_RATE, TurnRecorder } from '../../src/relay/turn-recorder.js';
import { RelaySession, type RelayHost, type RelaySettings } from '../../src/relay/session.js';
import type { SttClient } from '../../src/speech/stt.js';

/**
 * Turns waiting for speech-to-text, the one being transcribed included: past this a turn is dropped, so
 * a stalled service (each turn held up to its deadline) cannot pile up a call's audio.
 */
const MAX_QUEUED_TURNS = 4;

/** What the calls part gives every call for its relay nodes. */
export interface CallRelays {
  /** By name, as `relays:` in the config has them (headers resolved). */
  readonly settings: Readonly<Record<string, RelaySettings>>;
  /** Speech-to-text for prompts; undefined: the relay runs without prompts. */
  readonly stt: SttClient | undefined;
  /** `TWILIO_AUTH_TOKEN`, for relays a flow makes (a TwiML node signs its requests with it). */
  readonly twilioAuthToken?: string | undefined;
}

export interface CallRelayOptions {
  name: string;
  settings: RelaySettings;
  stt: SttClient | undefined;
  host: RelayHost;
  /** The rate of the caller's audio as the call decodes it. */
  inboundRate: number;
  log: Logger;
}

export class CallRelay {
  private readonly session: RelaySession;
  private readonly recorder: TurnRecorder;
  private transcribing: Promise<void> = Promise.resolve();
  private queuedTurns = 0;
  private readonly controller = new AbortController();

  constructor(private readonly options: CallRelayOptions) {
    this.session = new RelaySession(
      options.host,
      options.settings,
      options.log.child({ relay: options.name }),
    );
    this.recorder = new TurnRecorder({ sampleRate: options.inboundRate });
  }

  get sessionId(): string {
    return this.session.sessionId;
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
    }
  }

  audio(samples: Int16Array, atMs: number, _payload?: Uint8Array): void {
    this.recorder.push(samples, atMs);
  }

  /** The caller began to speak (the VAD's onset; a turn may have several). */
  onset(_onsetMs: number, speechStartMs: number): void {
    this.recorder.onset(speechStartMs);
    this.session.callerSpeaking(true);
  }

  /** A turn of the caller's ended: its transcript goes to the app as a `prompt`. */
  turnEnd(turn: SpeechTurn): void {
    this.session.callerSpeaking(false);
    const audio = this.recorder.turnEnd(turn);
    const { stt, log } = this.options;
    if (!stt || audio.length === 0) return;
    if (this.queuedTurns >= MAX_QUEUED_TURNS) {
      log.warn({ queued: this.queuedTurns }, 'speech-to-text is behind: a turn was dropped');
      return;
    }
    this.queuedTurns++;
    const wav = wavFile(audio, TURN_SAMPLE_RATE);
    const language = this.session.transcriptionLanguage;
    this.transcribing = this.transcribing.then(async () => {
      try {
        const transcript = await stt.transcribe(wav, {
          signal: this.controller.signal,
          ...(language ? { languageCode: language } : {}),
        });
        if (transcript.warnings.length > 0)
          log.warn({ warnings: transcript.warnings }, 'the speech-to-text answer was trimmed');
        this.session.prompt(transcript.text, transcript.languageCode ?? language);
      } catch (error) {
        if (!this.controller.signal.aborted)
          log.warn(
            { err: (error as Error).message, turnMs: turn.endMs - turn.startMs },
            'a turn was not transcribed',
          );
      } finally {
        this.queuedTurns--;
      }
    });
  }

  dtmf(digit: string): void {
    this.session.dtmf(digit);
  }

  bargeIn(b: { utteranceId: string | undefined; playedMs: number; heardText: string }): void {
    this.session.interrupted(b);
  }
}
