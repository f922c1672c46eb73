/**
 * Barge-in on the caller's voice: each media payload is decoded and handed to the VAD as it arrives
 * (the detector processes its pushes in order), and a confirmed onset interrupts the bot. One per
 * started call, when it has a detector.
 */
import type { Logger } from 'pino';
import type { WireFormat } from '../../src/audio/framer.js';
import { MAX_ECHO_DELAY_MS } from '../../src/barge-in/index.js';
import type { Clock } from '../../src/speaker/clock.js';
import type { InterruptResult } from '../../src/speaker/speaker.js';
import { decodeCallerAudio, type DetectedOnset, type OnsetDetector } from './caller-audio.js';
import { EchoReference, type ReferenceSpan } from './echo-reference.js';

/**
 * Caller audio waiting for the VAD before newer audio is skipped: a memory bound only (in audio, not in
 * messages, whose size the gateway picks), since the detector falls back to its energy gate when
 * inference lags.
 */
export const MAX_VAD_BACKLOG_MS = 10_000;

/** What of the speaker barge-in needs: what speaks now, and the interrupt. */
export interface Interruptible {
  readonly speakingId: string | undefined;
  interrupt(): InterruptResult;
}

/** What of the sink barge-in needs: whether the caller can hear the bot right now. */
export interface Playout {
  playedMs(): number;
  writtenMs(): number;
}

/** The sink's played audio, for the detector's echo reference (the phone sink emits it). */
export interface PlayedAudio {
  readonly format: WireFormat;
  readonly clock: Clock;
  on(event: 'frame', listener: (frame: { payload: Uint8Array; playAtMs: number }) => void): unknown;
  on(event: 'cleared', listener: (clear: { atMs: number }) => void): unknown;
}

/** The reference is worth sending while the bot played this recently (ms): any echo of it may remain. */
const ECHO_REACH_MS = MAX_ECHO_DELAY_MS + 300;

export interface BargeIn {
  /** The utterance cut, if the speaker knew it. */
  utteranceId: string | undefined;
  /** Speech onset on the inbound timeline, and when it was confirmed there. */
  onsetMs: number;
  detectedMs: number;
  playedMs: number;
  heardText: string;
}

export interface BargeInChainOptions {
  detector: OnsetDetector;
  /** The caller's audio as the gateway sends it. */
  inbound: WireFormat;
  speaker: Interruptible;
  sink: Playout;
  /** What the sink played, for a detector that tells the caller from the bot's echo. */
  played?: PlayedAudio | undefined;
  /** An onset that interrupted something. */
  onBargeIn: (bargeIn: BargeIn) => void;
  /**
   * Every onset, interrupting or not, with where the caller's speech began (a relay's turn recording
   * starts there, its pre-roll before it).
   */
  onOnset?: ((onsetMs: number, speechStartMs: number) => void) | undefined;
  /**
   * The caller's audio as decoded, with its inbound time and the payload it came in (a relay records
   * turns from it, and streams the payload as it is to a realtime speech-to-text).
   */
  onAudio?: ((samples: Int16Array, atMs: number, payload: Uint8Array) => void) | undefined;
  log: Logger;
}

export class BargeInChain {
  /** Samples received so far: the inbound timeline where the gateway gives no timestamps. */
  private inboundSamples = 0;
  /** Samples handed to the VAD and not yet through it. */
  private backlog = 0;
  private closed = false;
  private readonly reference: EchoReference | undefined;

  constructor(private readonly options: BargeInChainOptions) {
    const { played, detector } = options;
    if (played && detector.referenceRate !== undefined) {
      const reference = new EchoReference(played.format, detector.referenceRate, played.clock);
      played.on('frame', ({ payload, playAtMs }) => reference.onFrame(payload, playAtMs));
      played.on('cleared', ({ atMs }) => reference.onClear(atMs));
      this.reference = reference;
    }
  }

  /** Samples waiting for the VAD, for tests and diagnostics. */
  get backlogSamples(): number {
    return this.backlog;
  }

  /**
   * One media payload of the caller's. False when it was skipped because the VAD is too far behind
   * (the call counts it as dropped); an empty payload is no audio, and accepted.
   */
  push(payload: Uint8Array, timestampMs?: number): boolean {
    if (this.closed || payload.length === 0) return true;
    const { detector, inbound, sink } = this.options;
    const samples = decodeCallerAudio(payload, inbound);
    const rate = inbound.sampleRate;
    const atMs = timestampMs ?? (this.inboundSamples / rate) * 1000;
    this.inboundSamples += samples.length;
    this.options.onAudio?.(samples, atMs, payload);
    if (this.backlog + samples.length > (MAX_VAD_BACKLOG_MS * rate) / 1000) return false;
    this.backlog += samples.length;
    const botAudible = sink.playedMs() < sink.writtenMs();
    const span = this.referenceFor(samples.length, rate, atMs);
    // Handed over at once, not after the previous push resolved: the detector keeps its pushes in
    // order, and one in a VAD worker would otherwise cost the call a round trip per payload.
    let pushed: Promise<DetectedOnset | undefined>;
    try {
      pushed = detector.push(samples, {
        timestampMs: atMs,
        botAudible,
        reference: span?.samples,
        referenceMoved: span?.moved,
      });
    } catch (error) {
      pushed = Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
    pushed.then(
      (onset) => {
        this.backlog -= samples.length;
        if (!onset || this.closed) return;
        this.options.onOnset?.(onset.onsetMs, onset.speechStartMs ?? onset.onsetMs);
        // Confirmed where the deciding window ended; a detector that does not say: this chunk's end.
        this.interrupt(onset.onsetMs, onset.detectedMs ?? atMs + (samples.length / rate) * 1000);
      },
      (error: unknown) => {
        this.backlog -= samples.length;
        this.options.log.error({ err: error }, 'voice activity detection failed');
      },
    );
    return true;
  }

  /** The call ended: audio still queued is not looked at, and the detector forgets the call. */
  close(): void {
    this.closed = true;
    const { detector } = this.options;
    if (detector.close) detector.close();
    else detector.reset();
  }

  /**
   * The bot's played audio for this chunk of the caller's, read now (the ring only holds seconds) at
   * the detector's rate; none while the bot has been quiet for longer than an echo lasts.
   */
  private referenceFor(n: number, rate: number, atMs: number): ReferenceSpan | undefined {
    const reference = this.reference;
    if (!reference) return undefined;
    const durationMs = (n / rate) * 1000;
    const fromMs = reference.arrived(atMs + durationMs, durationMs);
    if (!reference.playedWithin(fromMs, ECHO_REACH_MS)) {
      reference.skip();
      return undefined;
    }
    return reference.read(fromMs, Math.round((n * reference.sampleRate) / rate));
  }

  private interrupt(onsetMs: number, detectedMs: number): void {
    const { speaker } = this.options;
    const utteranceId = speaker.speakingId;
    const r = speaker.interrupt();
    if (!r.interrupted) return;
    this.options.onBargeIn({
      utteranceId,
      onsetMs,
      detectedMs,
      playedMs: r.playedMs,
      heardText: r.heardText,
    });
  }
}
