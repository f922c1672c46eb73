/**
 * Barge-in on the caller's voice: each media payload is decoded, handed to the VAD in order (one
 * inference at a time), and a confirmed onset interrupts the bot. One per started call, when it has a
 * detector.
 */
import type { Logger } from 'pino';
import type { WireFormat } from '../../src/audio/framer.js';
import type { InterruptResult } from '../../src/speaker/speaker.js';
import { decodeCallerAudio, type OnsetDetector } from './caller-audio.js';

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
  /** An onset that interrupted something. */
  onBargeIn: (bargeIn: BargeIn) => void;
  /** Every onset, interrupting or not (a relay's turn recording starts there). */
  onOnset?: ((onsetMs: number) => void) | undefined;
  /** The caller's audio as decoded, with its inbound time (a relay records turns from it). */
  onAudio?: ((samples: Int16Array, atMs: number) => void) | undefined;
  log: Logger;
}

export class BargeInChain {
  /** Samples received so far: the inbound timeline where the gateway gives no timestamps. */
  private inboundSamples = 0;
  /** Samples handed to the VAD and not yet through it. */
  private backlog = 0;
  private chain: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(private readonly options: BargeInChainOptions) {}

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
    this.options.onAudio?.(samples, atMs);
    if (this.backlog + samples.length > (MAX_VAD_BACKLOG_MS * rate) / 1000) return false;
    this.backlog += samples.length;
    const botAudible = sink.playedMs() < sink.writtenMs();
    this.chain = this.chain
      .then(async () => {
        if (this.closed) return;
        const onset = await detector.push(samples, { timestampMs: atMs, botAudible });
        if (onset && !this.closed) {
          this.options.onOnset?.(onset.onsetMs);
          this.interrupt(onset.onsetMs, atMs);
        }
      })
      .catch((error: unknown) => this.options.log.error({ err: error }, 'voice activity detection failed'))
      .finally(() => (this.backlog -= samples.length));
    return true;
  }

  /** The call ended: audio still queued is not looked at, and the detector forgets the call. */
  close(): void {
    this.closed = true;
    this.options.detector.reset();
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
