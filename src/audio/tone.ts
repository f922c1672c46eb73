/**
 * Steady single tones in a stream of audio: the beep an answering machine plays before it records, a
 * fax's calling tone. Where `dtmf.ts` looks for eight known frequencies, a machine's beep may be at
 * any frequency (425, 850, 1000, 1400 Hz and more), so each block is looked at whole: its spectrum
 * (the one FFT, `fft.ts`) under a Hann window, and the share of its energy in the strongest peak's
 * main lobe. A pure tone puts nearly all of it there (line noise 10 dB under it leaves ~95 %); speech
 * spreads it over many harmonics and formants, a DTMF key over two peaks (~50 % each), so neither is
 * a tone. A tone is a run of such blocks whose frequency holds still: speech's pitch glides, a beep's
 * does not. Each is reported when it ends (a machine records from the end of its beep), with its
 * frequency (interpolated between bins), times and level.
 */
import { fftPlan, sqrtHannWindow, type FftPlan } from './fft.js';
import { levelDbfs } from './level.js';
import { BlockFiller } from './blocks.js';

/** A block is this long (ms): 256 samples at 8 kHz, 31 Hz between bins; a beep lasts ≥ 4 of them. */
export const TONE_BLOCK_MS = 32;

export interface ToneDetectorOptions {
  /**
   * Lowest frequency of a tone (Hz). Default 400: under it lie mains hum and the pitch of voices, whose
   * first harmonic can hold most of a block's energy for a syllable (eSpeak's high voices at ~300 Hz).
   */
  minHz?: number;
  /** Highest (Hz). Default 3000, never above 45 % of the sample rate. */
  maxHz?: number;
  /**
   * Share of a block's energy its peak must hold to be tonal. Default 0.7, within [0.5, 0.99]: a beep
   * 6 dB over white line noise keeps ~0.8; a voice's strongest harmonic reached 0.6 for 128–160 ms in
   * eSpeak's voices now and then, 0.7 never (≈ 450 greetings).
   */
  minShare?: number;
  /** A tonal block is at least this loud (dBFS). Default −45: faint tones in line noise are not beeps. */
  minLevelDbfs?: number;
  /** Shortest tone reported (ms). Default 120. */
  minToneMs?: number;
  /**
   * How far a block's frequency may stray from the tone's (Hz, or `maxDriftRatio` of it, whichever is
   * larger). Default 20 Hz / 2 %: a beep holds within a few Hz, speech's pitch moves more.
   */
  maxDriftHz?: number;
  maxDriftRatio?: number;
}

/**
 * A tone that has ended. Times are from the first sample the detector was given, in whole blocks: a
 * block the tone only partly fills counts, so a tone may seem up to a block longer than it was.
 */
export interface Tone {
  readonly frequencyHz: number;
  readonly startMs: number;
  readonly endMs: number;
  readonly durationMs: number;
  /** Its mean level over its blocks (dBFS). */
  readonly levelDbfs: number;
}

const DEFAULTS = {
  minHz: 400,
  maxHz: 3000,
  minShare: 0.7,
  minLevelDbfs: -45,
  minToneMs: 120,
  maxDriftHz: 20,
  maxDriftRatio: 0.02,
};

/** Bins either side of the peak that hold a Hann-windowed sine's main lobe (for a block not padded). */
const LOBE_BINS = 2;
const NO_TONES: readonly Tone[] = Object.freeze([]);

function checked(name: string, value: number, min: number, max: number): number {
  if (!Number.isFinite(value) || value < min || value > max)
    throw new RangeError(`tone detector: ${name} ${value} is not within [${min}, ${max}]`);
  return value;
}

interface Run {
  startBlock: number;
  blocks: number;
  /** Sums over its blocks, for the mean frequency and level. */
  frequencySum: number;
  levelSum: number;
}

export class ToneDetector {
  /** Samples per block: `TONE_BLOCK_MS` at the sample rate. */
  readonly blockSamples: number;
  readonly sampleRate: number;
  private readonly plan: FftPlan;
  private readonly window: Float64Array;
  private readonly re: Float64Array;
  private readonly im: Float64Array;
  private readonly binHz: number;
  private readonly minBin: number;
  private readonly maxBin: number;
  private readonly lobeBins: number;
  private readonly minShare: number;
  private readonly minLevelDbfs: number;
  private readonly minBlocks: number;
  private readonly maxDriftHz: number;
  private readonly maxDriftRatio: number;
  /** The audio, block by block. */
  private readonly blocks: BlockFiller;
  /** Tones ended by the push under way. */
  private ended: Tone[] | undefined;
  private readonly onBlock = (block: Int16Array): void => {
    const tone = this.block(block);
    if (tone) (this.ended ??= []).push(tone);
  };
  private blockIndex = 0;
  private run: Run | undefined;

  constructor(sampleRate: number, options: ToneDetectorOptions = {}) {
    this.sampleRate = checked('sampleRate', sampleRate, 4000, 192_000);
    const o = { ...DEFAULTS, ...options };
    const nyquistish = 0.45 * sampleRate;
    const minHz = checked('minHz', o.minHz, 50, nyquistish);
    const maxHz = Math.min(checked('maxHz', o.maxHz, minHz, 20_000), nyquistish);
    this.minShare = checked('minShare', o.minShare, 0.5, 0.99);
    this.minLevelDbfs = checked('minLevelDbfs', o.minLevelDbfs, -90, 0);
    this.maxDriftHz = checked('maxDriftHz', o.maxDriftHz, 1, 200);
    this.maxDriftRatio = checked('maxDriftRatio', o.maxDriftRatio, 0, 0.2);
    this.blockSamples = Math.round((sampleRate * TONE_BLOCK_MS) / 1000);
    // In whole blocks, to the nearest: a tone's first and last blocks count though it fills them only in part.
    this.minBlocks = Math.max(2, Math.round(checked('minToneMs', o.minToneMs, 40, 10_000) / TONE_BLOCK_MS));
    // A block zero-padded to a power of two: the bins are as fine as the block allows, or finer.
    let size = 1;
    while (size < this.blockSamples) size <<= 1;
    this.plan = fftPlan(size);
    this.re = new Float64Array(size);
    this.im = new Float64Array(size);
    // A Hann window: the square of the shared square-root one. Its main lobe is ±2 bins of the block
    // wide (more bins of a zero-padded transform) and its side lobes fall fast, so a tone between bins
    // keeps its energy near its peak.
    const root = sqrtHannWindow(this.blockSamples);
    this.window = Float64Array.from(root, (w) => w * w);
    this.binHz = sampleRate / size;
    this.lobeBins = Math.ceil((LOBE_BINS * size) / this.blockSamples);
    this.minBin = Math.max(this.lobeBins + 1, Math.ceil(minHz / this.binHz));
    this.maxBin = Math.min(size / 2 - this.lobeBins - 1, Math.floor(maxHz / this.binHz));
    this.blocks = new BlockFiller(this.blockSamples);
  }

  /** Tones that ended in `samples` (any length; the detector keeps what does not fill a block). */
  push(samples: Int16Array): readonly Tone[] {
    this.ended = undefined;
    this.blocks.push(samples, this.onBlock);
    return this.ended ?? NO_TONES;
  }

  /** Whether the latest block was tonal: a tone may be under way (not yet long enough to be one). */
  get inTone(): boolean {
    return this.run !== undefined;
  }

  /** Ends the stream: the tone still under way, if long enough (the part of a block left is dropped). */
  flush(): readonly Tone[] {
    const run = this.run;
    this.run = undefined;
    this.blocks.reset();
    return run && run.blocks >= this.minBlocks ? [this.toneOf(run)] : NO_TONES;
  }

  private ms(blocks: number): number {
    return (blocks * this.blockSamples * 1000) / this.sampleRate;
  }

  /** Judges one block; returns the tone it ended, if any. */
  private block(samples: Int16Array): Tone | undefined {
    const index = this.blockIndex++;
    const level = levelDbfs(samples);
    const frequency = level >= this.minLevelDbfs ? this.tonalFrequency(samples) : undefined;
    const run = this.run;
    if (frequency !== undefined && run) {
      const mean = run.frequencySum / run.blocks;
      if (Math.abs(frequency - mean) <= Math.max(this.maxDriftHz, this.maxDriftRatio * mean)) {
        run.blocks++;
        run.frequencySum += frequency;
        run.levelSum += level;
        return undefined;
      }
    }
    // The run (if any) ended before this block; a tonal block starts the next one.
    const ended = run && run.blocks >= this.minBlocks ? this.toneOf(run) : undefined;
    this.run =
      frequency === undefined
        ? undefined
        : { startBlock: index, blocks: 1, frequencySum: frequency, levelSum: level };
    return ended;
  }

  private toneOf(run: Run): Tone {
    const startMs = this.ms(run.startBlock);
    const durationMs = this.ms(run.blocks);
    return {
      frequencyHz: run.frequencySum / run.blocks,
      startMs,
      endMs: startMs + durationMs,
      durationMs,
      levelDbfs: run.levelSum / run.blocks,
    };
  }

  /** The block's peak frequency when that peak's main lobe holds `minShare` of its energy. */
  private tonalFrequency(samples: Int16Array): number | undefined {
    const { re, im, window } = this;
    for (let i = 0; i < samples.length; i++) re[i] = samples[i]! * window[i]!;
    re.fill(0, samples.length);
    im.fill(0);
    this.plan.transform(re, im);
    const half = re.length / 2;
    let total = 0;
    let peak = this.minBin;
    let peakPower = -1;
    // Power per bin, kept in `re` (its spectrum is no longer needed), DC left out.
    for (let k = 1; k < half; k++) {
      const p = re[k]! * re[k]! + im[k]! * im[k]!;
      re[k] = p;
      total += p;
      if (k >= this.minBin && k <= this.maxBin && p > peakPower) {
        peakPower = p;
        peak = k;
      }
    }
    if (total <= 0) return undefined;
    let lobe = 0;
    for (let k = peak - this.lobeBins; k <= peak + this.lobeBins; k++) lobe += re[k]!;
    if (lobe < this.minShare * total) return undefined;
    // Parabolic interpolation of the log power around the peak: within a few Hz for a Hann window.
    const a = Math.log(re[peak - 1]! + 1e-12);
    const b = Math.log(peakPower + 1e-12);
    const c = Math.log(re[peak + 1]! + 1e-12);
    const denominator = a - 2 * b + c;
    const offset = denominator < 0 ? (0.5 * (a - c)) / denominator : 0;
    return (peak + Math.max(-0.5, Math.min(0.5, offset))) * this.binHz;
  }
}
