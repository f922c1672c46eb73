/**
 * Speech-to-text for a relay's turns, as the config sets it up (`stt`: batch or realtime, the
 * endpointing rule), and the queue that turns each ended turn into its transcript in order: a
 * realtime turn's committed transcript, or, when its session failed in a way batch can take over
 * (`canFallBackToBatch`), the batch API's for the turn's recorded audio (logged, with the error's code);
 * a batch turn's from the batch API. Shared by a call's relay and a guild's.
 */
import type { Logger } from 'pino';
import { wavFile } from '../audio/wav.js';
import type { EndpointingConfig } from '../barge-in/endpointing.js';
import { RealtimeSttError, type RealtimeSttClient } from '../speech/stt-realtime.js';
import type { SttClient } from '../speech/stt.js';
import type { RealtimeTurn } from './realtime-turn.js';
import { TURN_SAMPLE_RATE } from './turn-recorder.js';

/** The speech-to-text a relay's turns go through. */
export interface TurnStt {
  /** The batch API: every turn in batch mode, and a realtime turn whose session failed. */
  readonly batch: SttClient | undefined;
  /** The realtime API: set in realtime mode (`stt.mode: realtime`). */
  readonly realtime: RealtimeSttClient | undefined;
  /** When a realtime turn is over (src/barge-in/endpointing.ts). */
  readonly endpointing: EndpointingConfig;
  /** Audio sent to a realtime session from before the caller's speech began (ms). */
  readonly preRollMs: number;
  /** The longest realtime turn (ms): a caller who talks longer is cut there. */
  readonly maxTurnMs: number;
  /** Silence that ends a turn in batch mode (ms; the detector's). */
  readonly endOfTurnMs: number;
}

/**
 * Turns waiting for speech-to-text, the one being transcribed included: past this a turn is dropped, so
 * a stalled service (each turn held up to its deadline) cannot pile up a call's audio.
 */
export const MAX_QUEUED_TURNS = 4;

/** A turn that ended, for the queue. */
export interface EndedTurn {
  /** Its realtime session, in realtime mode (none when it could not open: batch then). */
  readonly realtime: RealtimeTurn | undefined;
  /** Its audio at `TURN_SAMPLE_RATE`, for batch. */
  readonly audio: Int16Array;
  /** When its end was decided (`performance.now()`): its transcript's time counts from there. */
  readonly endedAt: number;
  /** For the log. */
  readonly fields: Record<string, unknown>;
}

export interface TranscribedTurn {
  readonly text: string;
  readonly languageCode: string | undefined;
  readonly via: 'realtime' | 'batch' | 'fallback';
  /** The end of the turn decided to its transcript (ms). */
  readonly sttMs: number;
}

export interface TurnQueueOptions {
  stt: TurnStt;
  /** The language turns are transcribed in now (the relay app's `transcriptionLanguage`), if set. */
  language: () => string | undefined;
  /** Ends everything under way (the relay ended). */
  signal: AbortSignal;
  log: Logger;
}

export class TurnQueue {
  private chain: Promise<void> = Promise.resolve();
  private queued = 0;

  constructor(private readonly options: TurnQueueOptions) {}

  /** Turns waiting for their transcripts, or being delivered. */
  get pending(): number {
    return this.queued;
  }

  /**
   * Transcribes `turn` after the turns before it, and hands its transcript to `deliver` (not for a
   * turn that could not be transcribed, which is logged). False when too many wait: the turn is
   * dropped (and logged), its realtime session closed.
   */
  submit(turn: EndedTurn, deliver: (t: TranscribedTurn) => void): boolean {
    const { log } = this.options;
    if (this.queued >= MAX_QUEUED_TURNS) {
      log.warn({ queued: this.queued, ...turn.fields }, 'speech-to-text is behind: a turn was dropped');
      turn.realtime?.close();
      return false;
    }
    this.queued++;
    // The commit goes out now, not when the turns before are done.
    const streamed = turn.realtime?.finish();
    this.chain = this.chain.then(async () => {
      try {
        const t = await this.transcribe(turn, streamed);
        if (t && !this.options.signal.aborted) deliver(t);
      } finally {
        this.queued--;
      }
    });
    return true;
  }

  private async transcribe(
    turn: EndedTurn,
    streamed: ReturnType<RealtimeTurn['finish']> | undefined,
  ): Promise<TranscribedTurn | undefined> {
    const { log, signal } = this.options;
    const sttMs = (): number => performance.now() - turn.endedAt;
    let via: TranscribedTurn['via'] = 'batch';
    if (streamed) {
      const outcome = await streamed;
      if (outcome.status === 'transcribed')
        return { text: outcome.text, languageCode: outcome.languageCode, via: 'realtime', sttMs: sttMs() };
      if (signal.aborted) return undefined;
      if (outcome.status === 'failed') {
        log.warn(
          { err: (outcome.error as Error).message, ...turn.fields },
          'a turn was not transcribed: realtime speech-to-text failed',
        );
        return undefined;
      }
      const { error } = outcome;
      log.warn(
        {
          code: (error as { code?: unknown }).code,
          ...(error instanceof RealtimeSttError ? { phase: error.phase } : {}),
          err: error.message,
          ...turn.fields,
        },
        'realtime speech-to-text failed during a turn: this turn goes to batch',
      );
      via = 'fallback';
    }
    const { batch } = this.options.stt;
    if (!batch || turn.audio.length === 0) return undefined;
    const language = this.options.language();
    try {
      const transcript = await batch.transcribe(wavFile(turn.audio, TURN_SAMPLE_RATE), {
        signal,
        ...(language ? { languageCode: language } : {}),
      });
      if (transcript.warnings.length > 0)
        log.warn({ warnings: transcript.warnings }, 'the speech-to-text answer was trimmed');
      return { text: transcript.text, languageCode: transcript.languageCode, via, sttMs: sttMs() };
    } catch (error) {
      if (!signal.aborted)
        log.warn({ err: (error as Error).message, ...turn.fields }, 'a turn was not transcribed');
      return undefined;
    }
  }
}
