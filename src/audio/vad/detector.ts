/**
 * Finds where a caller starts talking, for barge-in: the energy gate decides which windows deserve a
 * look, Silero decides whether they are speech, and a run of speech long enough (longer while the bot
 * is audible, so its own echo does not interrupt it) is reported once, with the time it began on the
 * inbound timeline. Re-armed after a silence.
 */
import { EnergyGate } from './energy-gate.js';
import type { SileroModel, SileroStream, VadSampleRate } from './silero.js';

export interface DetectorOptions {
  sampleRate: VadSampleRate;
  /** Speech needed before it counts (ms). Default 160. */
  minSpeechMs?: number;
  /** Speech needed while the bot is audible (ms): its echo must not barge in. Default 400. */
  minSpeechWhileAudibleMs?: number;
  /** Silero probability at which a window is speech. Default 0.5. */
  threshold?: number;
}

export interface SpeechOnset {
  /** Where the speech began, on the inbound timeline (ms). */
  onsetMs: number;
  /** Where it was confirmed (the end of the deciding window), same timeline. */
  detectedMs: number;
}

/** A window under this probability ends a run of speech once enough of them follow. */
const SILENCE_BELOW = 0.35;
/** Non-speech within a run that does not end it (ms): gaps between syllables and a comma's pause. */
const RUN_GAP_MS = 250;
/** Silence that re-arms detection after an onset was reported (ms). */
const REARM_SILENCE_MS = 300;
/** Windows kept before the gate opens and checked first, so the onset is not missed by the gate. */
const PREROLL_WINDOWS = 2;
/** Silero idle this long starts over from a fresh state. */
const RESET_AFTER_IDLE_MS = 1000;
/** Windows waiting for inference beyond which older ones are decided by the gate alone. */
const MAX_BACKLOG_WINDOWS = 16;

export class SpeechOnsetDetector {
  private readonly silero: SileroStream;
  private readonly gate = new EnergyGate();
  private readonly windowSamples: number;
  private readonly windowMs: number;
  private readonly minSpeechMs: number;
  private readonly minSpeechWhileAudibleMs: number;
  private readonly threshold: number;
  /** Samples not yet making a whole window, and the inbound time of the first of them. */
  private readonly partial: Int16Array;
  private partialLength = 0;
  private partialStartMs = 0;
  private readonly preroll: Array<{ window: Int16Array; startMs: number }> = [];
  /** Since Silero last ran, and since the gate last opened (ms). */
  private idleMs = Number.POSITIVE_INFINITY;
  private gateClosedMs = Number.POSITIVE_INFINITY;
  private runStartMs: number | undefined;
  private runSpeechMs = 0;
  private runGapMs = 0;
  private reported = false;
  private silenceMs = 0;
  private backlog = 0;
  private chain: Promise<unknown> = Promise.resolve();

  constructor(model: SileroModel, options: DetectorOptions) {
    this.silero = model.stream(options.sampleRate);
    this.windowSamples = this.silero.windowSamples;
    this.windowMs = (this.windowSamples / options.sampleRate) * 1000;
    this.minSpeechMs = options.minSpeechMs ?? 160;
    this.minSpeechWhileAudibleMs = options.minSpeechWhileAudibleMs ?? 400;
    this.threshold = options.threshold ?? 0.5;
    this.partial = new Int16Array(this.windowSamples);
  }

  /**
   * The caller's audio, in order, with the inbound time of its first sample. Resolves with an onset
   * when this chunk completed a long enough run of speech.
   */
  push(
    samples: Int16Array,
    info: { timestampMs: number; botAudible: boolean },
  ): Promise<SpeechOnset | undefined> {
    const windows: Array<{ window: Int16Array; startMs: number }> = [];
    const msPerSample = this.windowMs / this.windowSamples;
    let offset = 0;
    if (this.partialLength === 0) this.partialStartMs = info.timestampMs;
    while (offset < samples.length) {
      const take = Math.min(this.windowSamples - this.partialLength, samples.length - offset);
      this.partial.set(samples.subarray(offset, offset + take), this.partialLength);
      this.partialLength += take;
      offset += take;
      if (this.partialLength === this.windowSamples) {
        windows.push({ window: this.partial.slice(), startMs: this.partialStartMs });
        this.partialLength = 0;
        this.partialStartMs = info.timestampMs + offset * msPerSample;
      }
    }
    if (windows.length === 0) return Promise.resolve(undefined);
    this.backlog += windows.length;
    const result = this.chain.then(() => this.process(windows, info.botAudible));
    this.chain = result.catch(() => undefined);
    return result;
  }

  reset(): void {
    this.partialLength = 0;
    this.preroll.length = 0;
    this.idleMs = Number.POSITIVE_INFINITY;
    this.gateClosedMs = Number.POSITIVE_INFINITY;
    this.endRun();
    this.reported = false;
    this.silenceMs = 0;
    this.gate.reset();
    this.silero.reset();
  }

  private async process(
    windows: Array<{ window: Int16Array; startMs: number }>,
    botAudible: boolean,
  ): Promise<SpeechOnset | undefined> {
    let onset: SpeechOnset | undefined;
    for (const w of windows) {
      this.backlog--;
      const open = this.gate.open(w.window);
      this.gateClosedMs = open ? 0 : this.gateClosedMs + this.windowMs;
      // Silero keeps listening through a run of speech and briefly after the gate closes (the gaps
      // between syllables); otherwise it sleeps.
      const running = this.runStartMs !== undefined || this.gateClosedMs <= RUN_GAP_MS;
      let p: number;
      if ((open || running) && this.backlog < MAX_BACKLOG_WINDOWS) {
        if (this.idleMs >= RESET_AFTER_IDLE_MS) {
          this.silero.reset();
          // The windows just before the gate opened may hold the first syllable.
          for (const earlier of this.preroll) {
            const pe = await this.silero.probability(earlier.window);
            onset ??= this.judge(pe, earlier.startMs, botAudible);
          }
        }
        this.idleMs = 0;
        p = await this.silero.probability(w.window);
      } else {
        this.idleMs += this.windowMs;
        p = open ? this.threshold : 0; // over backlog: the gate alone decides
      }
      onset ??= this.judge(p, w.startMs, botAudible);
      this.preroll.push(w);
      if (this.preroll.length > PREROLL_WINDOWS) this.preroll.shift();
    }
    return onset;
  }

  /** Folds one window's probability into the current run; an onset when the run is long enough. */
  private judge(p: number, startMs: number, botAudible: boolean): SpeechOnset | undefined {
    if (p >= this.threshold) {
      this.silenceMs = 0;
      this.runGapMs = 0;
      this.runStartMs ??= startMs;
      this.runSpeechMs += this.windowMs;
      const needed = botAudible ? this.minSpeechWhileAudibleMs : this.minSpeechMs;
      if (!this.reported && this.runSpeechMs >= needed) {
        this.reported = true;
        return { onsetMs: this.runStartMs, detectedMs: startMs + this.windowMs };
      }
      return undefined;
    }
    if (p < SILENCE_BELOW) {
      this.silenceMs += this.windowMs;
      if (this.silenceMs >= REARM_SILENCE_MS) this.reported = false;
    }
    if (this.runStartMs !== undefined) {
      this.runGapMs += this.windowMs;
      if (this.runGapMs > RUN_GAP_MS) this.endRun();
    }
    return undefined;
  }

  private endRun(): void {
    this.runStartMs = undefined;
    this.runSpeechMs = 0;
    this.runGapMs = 0;
  }
}
