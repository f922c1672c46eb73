/**
 * The caller's audio of one turn, for speech-to-text: a short rolling look-back while nobody talks,
 * everything from a turn's first onset (less a pre-roll) to its end, bounded. Given the caller's audio
 * as it arrives (any rate, with its inbound time), it answers a turn's audio at 16 kHz (or the rate
 * asked for: a recogniser takes a phone's 8 kHz as it is).
 *
 * The bound is on the samples held, not only on their times (`TimedChunks`).
 */
import { concatInt16 } from '../audio/pcm.js';
import { resampleWhole } from '../audio/resampler.js';
import { MAX_SPEECH_LEAD_MS } from '../barge-in/index.js';
import { TimedChunks } from './timed-chunks.js';

/** Speech-to-text takes this rate. */
export const TURN_SAMPLE_RATE = 16_000;

/**
 * Audio kept before an onset by default (ms). The detector may place the caller's speech up to
 * `MAX_SPEECH_LEAD_MS` before the run that confirmed it, and confirms that run up to a second and a
 * half later over a talking bot (the 400 ms rule, a VAD worker's queue); with the pre-roll before it,
 * the first syllable is still here when the onset arrives. (It was 2 s: a caller confirmed late over
 * a welcome greeting reached speech-to-text from the confirmation on.)
 */
export const DEFAULT_LOOK_BACK_MS = MAX_SPEECH_LEAD_MS + 1500;

export interface TurnRecorderOptions {
  /** The rate of the samples pushed. */
  sampleRate: number;
  /** The rate of a turn's audio as `turnEnd` answers it. Default `TURN_SAMPLE_RATE` (speech-to-text's). */
  outputRate?: number;
  /** Audio kept before a turn's onset: its first syllable's attack (ms). Default 300. */
  preRollMs?: number;
  /** Audio kept after its end (ms). Default 150. */
  tailMs?: number;
  /** The longest turn kept (ms): a longer one keeps its last part. Default 30 000. */
  maxTurnMs?: number;
  /**
   * Audio kept while no turn is open (ms): an onset is reported this long after the caller's speech
   * began, at most. Default `DEFAULT_LOOK_BACK_MS`.
   */
  lookBackMs?: number;
}

export class TurnRecorder {
  private readonly kept: TimedChunks<Int16Array>;
  private readonly rate: number;
  private readonly outputRate: number;
  private readonly preRollMs: number;
  private readonly tailMs: number;
  private readonly maxTurnMs: number;
  private readonly lookBackMs: number;
  /** Where the open turn's audio starts (its onset less the pre-roll), while one is open. */
  private openFromMs: number | undefined;

  constructor(options: TurnRecorderOptions) {
    this.rate = options.sampleRate;
    this.outputRate = options.outputRate ?? TURN_SAMPLE_RATE;
    this.preRollMs = options.preRollMs ?? 300;
    this.tailMs = options.tailMs ?? 150;
    this.maxTurnMs = options.maxTurnMs ?? 30_000;
    this.lookBackMs = options.lookBackMs ?? DEFAULT_LOOK_BACK_MS;
    this.kept = new TimedChunks(this.rate / 1000);
  }

  /** Samples held now. */
  get held(): number {
    return this.kept.held;
  }

  /** Where the audio pushed so far ends (ms), once some was. */
  get endMs(): number | undefined {
    return this.kept.endMs;
  }

  /** The caller's audio, in order, with the inbound time of its first sample. */
  push(samples: Int16Array, atMs: number): void {
    const keepMs =
      this.openFromMs === undefined ? this.lookBackMs : this.maxTurnMs + this.preRollMs + this.tailMs;
    this.kept.push(samples, atMs, keepMs);
  }

  /** Speech began at `onsetMs`: the turn's audio is kept from a little before it. */
  onset(onsetMs: number): void {
    this.openFromMs ??= onsetMs - this.preRollMs;
  }

  /**
   * The audio kept from `fromMs` on, at the rate it was pushed (not the output rate), joined: what a
   * realtime session is sent first when a turn opens (its pre-roll). The recorder is unchanged.
   */
  audioSince(fromMs: number): Int16Array {
    const parts: Int16Array[] = [];
    for (const { atMs, data: samples } of this.kept.chunks) {
      const first = Math.max(0, Math.round(((fromMs - atMs) * this.rate) / 1000));
      if (first < samples.length) parts.push(samples.subarray(first));
    }
    return concatInt16(parts);
  }

  /** The turn ended: its audio at the output rate (with the tail that has arrived), and the recorder resets. */
  turnEnd(turn: { startMs: number; endMs: number }): Int16Array {
    return this.takeTurn(turn).samples;
  }

  /**
   * The turn ended: its audio at the output rate (with the tail that has arrived) and the inbound time its first
   * sample stands for (the onset less the pre-roll, or where the audio kept begins), and the recorder
   * resets.
   */
  takeTurn(turn: { startMs: number; endMs: number }): { samples: Int16Array; fromMs: number } {
    const fromMs = Math.max(
      Math.min(this.openFromMs ?? Infinity, turn.startMs - this.preRollMs),
      turn.endMs + this.tailMs - this.maxTurnMs,
    );
    const toMs = turn.endMs + this.tailMs;
    this.openFromMs = undefined;
    const parts: Int16Array[] = [];
    let firstMs: number | undefined;
    for (const { atMs, data: samples } of this.kept.chunks) {
      const first = Math.max(0, Math.round(((fromMs - atMs) * this.rate) / 1000));
      const last = Math.min(samples.length, Math.round(((toMs - atMs) * this.rate) / 1000));
      if (last <= first) continue;
      firstMs ??= atMs + (first / this.rate) * 1000;
      parts.push(samples.subarray(first, last));
    }
    const joined = concatInt16(parts);
    const samples =
      this.rate === this.outputRate ? joined : resampleWhole(joined, this.rate, this.outputRate);
    return { samples, fromMs: firstMs ?? fromMs };
  }
}
