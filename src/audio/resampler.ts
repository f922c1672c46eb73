/**
 * Streaming sample-rate conversion by any rational ratio L / M: a polyphase FIR lowpass, evaluated
 * from a table of coefficients per phase.
 *
 * Each output sample sits at an exact input time (output k at k / outputRate seconds) and is the
 * kernel-weighted sum of the input samples around that time. The kernel is centred on the output time,
 * so there is no group delay in the output: the price is a look-ahead of half the kernel (a few ms),
 * held back until more input arrives or `flush()` pads the end with silence.
 *
 * The lowpass cuts at the lower Nyquist frequency, which makes it a Nyquist filter: at the rate the
 * kernel is sampled (L × inputRate) every max(L, M)-th tap is exactly zero. For small L it is designed
 * equiripple (see `remez.ts`), with those zeros built in: shorter than a windowed sinc for the same
 * rejection, and the zeros are skipped. For large L (22.05 → 24 kHz is L = 160) an equiripple design
 * of thousands of taps would be slow to make, and the kernel is a Kaiser-windowed sinc.
 *
 * The two hot paths have loops of their own: 24 → 8 kHz (one symmetric phase, every third tap zero)
 * and 24 → 48 kHz (a half-band: every other output is a copy of an input sample). Every output sample
 * is computed by the same loop over the same taps in the same order whatever the input chunking, so
 * the output is bit-identical however the stream is split.
 */
import { concatInt16 } from './pcm.js';
import { filterFor, type ResamplerDesign } from './resampler-design.js';
import {
  COPY,
  SYMMETRIC,
  emit,
  symmetricSum,
  symmetricSums,
  thirdBandSum,
  thirdBandSums,
  toInt16,
  type Loop,
  type PhaseShapes,
} from './resampler-kernels.js';

export type { ResamplerDesign } from './resampler-design.js';
export { designResampler } from './resampler-design.js';

export interface ResamplerOptions {
  inputRate: number;
  outputRate: number;
  /** Input is always mono; 2 duplicates each output sample into interleaved stereo. Default 1. */
  outputChannels?: 1 | 2;
}

/** Input samples appended to the history per step: bounds the buffer whatever a push's size. */
const BLOCK_SAMPLES = 4096;
export class Resampler {
  readonly inputRate: number;
  readonly outputRate: number;
  readonly outputChannels: 1 | 2;
  /**
   * The filter's look-ahead in output samples (per channel): how far the output trails the input until
   * `flush()`. The output itself carries no delay (output k is input time k / outputRate).
   */
  readonly delaySamples: number;
  readonly design: ResamplerDesign;

  private readonly up: number;
  private readonly taps: number;
  /** Input positions and phase steps per output sample: M / L as a whole part and a remainder. */
  private readonly stepWhole: number;
  private readonly stepRemainder: number;
  private readonly table: Float64Array;
  private readonly loop: Loop;
  /** Input history; `pos` is the first tap of the next output sample. */
  private readonly history: Float64Array;
  /** Scratch for the loops that compute several sums at once. */
  private readonly sums = new Float64Array(4);
  private length = 0;
  private pos = 0;
  private phase = 0;
  private inputCount = 0;
  private outputCount = 0;

  constructor(options: ResamplerOptions) {
    this.inputRate = options.inputRate;
    this.outputRate = options.outputRate;
    this.outputChannels = options.outputChannels ?? 1;
    const filter = filterFor(options.inputRate, options.outputRate);
    this.design = filter.design;
    this.table = filter.table;
    this.loop = filter.loop;
    this.up = this.design.up;
    this.taps = this.design.tapsPerPhase;
    this.stepWhole = Math.floor(this.design.down / this.up);
    this.stepRemainder = this.design.down % this.up;
    this.history = new Float64Array(this.taps + BLOCK_SAMPLES + this.stepWhole + 1);
    this.delaySamples = Math.round(((this.taps / 2) * this.outputRate) / this.inputRate);
    this.reset();
  }

  /** Back to a fresh stream: history cleared, nothing pending (barge-in, or a new utterance). */
  reset(): void {
    // The first output sits at input 0 and its first tap H − 1 samples earlier: silence before the start.
    this.length = this.taps / 2 - 1;
    this.history.fill(0, 0, this.length);
    this.pos = 0;
    this.phase = 0;
    this.inputCount = 0;
    this.outputCount = 0;
  }

  /** Resamples mono `input`; returns the output samples it completes, in a new array. */
  push(input: Int16Array): Int16Array {
    const count = this.completable(this.length + input.length);
    const out = new Int16Array(count * this.outputChannels);
    let produced = 0;
    for (let offset = 0; offset < input.length; offset += BLOCK_SAMPLES) {
      const block = input.subarray(offset, offset + BLOCK_SAMPLES);
      this.compact();
      this.history.set(block, this.length);
      this.length += block.length;
      produced += this.run(out, produced, count - produced);
    }
    this.inputCount += input.length;
    this.outputCount += produced;
    return out;
  }

  /**
   * Ends the stream: the samples still held back, computed with silence after the end, so that the
   * whole stream yields round(inputSamples × outputRate / inputRate) samples per channel. The
   * resampler is then fresh again.
   */
  flush(): Int16Array {
    const { up, down } = this.design;
    const total = Math.floor((2 * this.inputCount * up + down) / (2 * down));
    const remaining = Math.max(0, total - this.outputCount);
    const out = new Int16Array(remaining * this.outputChannels);
    let produced = 0;
    while (produced < remaining) {
      this.compact();
      const room = Math.min(BLOCK_SAMPLES, this.history.length - this.length);
      this.history.fill(0, this.length, this.length + room);
      this.length += room;
      produced += this.run(out, produced, remaining - produced);
    }
    this.reset();
    return out;
  }

  /** How many output samples are complete once the history holds `length` samples. */
  private completable(length: number): number {
    const spare = length - this.taps - this.pos;
    if (spare < 0) return 0;
    const { up, down } = this.design;
    return Math.floor(((spare + 1) * up - this.phase + down - 1) / down);
  }

  /** Drops history no longer needed, so that a block fits after what remains. */
  private compact(): void {
    if (this.length + BLOCK_SAMPLES <= this.history.length) return;
    this.history.copyWithin(0, this.pos, this.length);
    this.length -= this.pos;
    this.pos = 0;
  }

  /**
   * Computes up to `limit` output samples into `out` from sample `at`, while the history holds all
   * their taps (`pos` ≤ length − taps); returns how many.
   */
  private run(out: Int16Array, at: number, limit: number): number {
    switch (this.loop.kind) {
      case 'third-band':
        return this.runThirdBand(this.loop, out, at, limit);
      case 'half-band':
        return this.runHalfBand(this.loop, out, at, limit);
      case 'general':
        return this.runGeneral(this.loop.shapes, out, at, limit);
    }
  }

  /** Two outputs at a time where both are due (see `thirdBandSums`), else one. */
  private runThirdBand(
    loop: Loop & { kind: 'third-band' },
    out: Int16Array,
    at: number,
    limit: number,
  ): number {
    const { history, stepWhole, outputChannels: channels, sums } = this;
    const { centre, centreCoefficient, pairs } = loop;
    const end = this.length - this.taps;
    let pos = this.pos;
    let o = at * channels;
    let n = 0;
    for (; limit - n >= 2 && pos + stepWhole <= end; n += 2, pos += 2 * stepWhole) {
      thirdBandSums(pairs, centreCoefficient, history, pos + centre, sums);
      o = emit(out, o, toInt16(sums[0]!), channels);
      o = emit(out, o, toInt16(sums[1]!), channels);
    }
    for (; n < limit && pos <= end; n++, pos += stepWhole)
      o = emit(out, o, toInt16(thirdBandSum(pairs, centreCoefficient, history, pos + centre)), channels);
    this.pos = pos;
    return n;
  }

  /**
   * Outputs alternate between a copy of input sample q and the symmetric phase 1 between q and q + 1:
   * four input positions at a time where all eight outputs are due (see `symmetricSums`), else one
   * output at a time.
   */
  private runHalfBand(
    loop: Loop & { kind: 'half-band' },
    out: Int16Array,
    at: number,
    limit: number,
  ): number {
    const { history: x, outputChannels: channels, sums } = this;
    const { copy, first, last, pairs } = loop;
    const end = this.length - this.taps;
    let pos = this.pos;
    let phase = this.phase;
    let o = at * channels;
    let n = 0;
    if (phase === 1 && n < limit && pos <= end) {
      o = emit(out, o, toInt16(symmetricSum(pairs, x, pos + first, pos + last)), channels);
      n++;
      phase = 0;
      pos++;
    }
    for (; limit - n >= 8 && pos + 3 <= end; n += 8, pos += 4) {
      symmetricSums(pairs, x, pos + first, pos + last, sums);
      for (let q = 0; q < 4; q++) {
        // Input samples are whole numbers within the int16 range: copied as they are.
        o = emit(out, o, x[pos + q + copy]!, channels);
        o = emit(out, o, toInt16(sums[q]!), channels);
      }
    }
    for (; n < limit && pos <= end; n++) {
      if (phase === 0) {
        o = emit(out, o, x[pos + copy]!, channels);
        phase = 1;
      } else {
        o = emit(out, o, toInt16(symmetricSum(pairs, x, pos + first, pos + last)), channels);
        phase = 0;
        pos++;
      }
    }
    this.pos = pos;
    this.phase = phase;
    return n;
  }

  private runGeneral(shapes: PhaseShapes, out: Int16Array, at: number, limit: number): number {
    const { table, history, taps, up, stepWhole, stepRemainder } = this;
    const { kind, first, last } = shapes;
    const channels = this.outputChannels;
    const end = this.length - taps;
    let pos = this.pos;
    let phase = this.phase;
    let o = at * channels;
    let n = 0;
    // Four independent sums throughout: with one, each addition would wait for the previous one.
    while (n < limit && pos <= end) {
      const base = phase * taps;
      const shape = kind[phase]!;
      let acc: number;
      if (shape === COPY) {
        acc = history[pos + first[phase]!]!;
      } else if (shape === SYMMETRIC) {
        const lo = pos + first[phase]!;
        const hi = pos + last[phase]!;
        const c = base + first[phase]!;
        const span = hi - lo;
        const pairs = (span + 1) >> 1;
        const pairs4 = pairs & ~3;
        let a0 = 0;
        let a1 = 0;
        let a2 = 0;
        let a3 = 0;
        let j = 0;
        for (; j < pairs4; j += 4) {
          a0 += table[c + j]! * (history[lo + j]! + history[hi - j]!);
          a1 += table[c + j + 1]! * (history[lo + j + 1]! + history[hi - j - 1]!);
          a2 += table[c + j + 2]! * (history[lo + j + 2]! + history[hi - j - 2]!);
          a3 += table[c + j + 3]! * (history[lo + j + 3]! + history[hi - j - 3]!);
        }
        for (; j < pairs; j++) a0 += table[c + j]! * (history[lo + j]! + history[hi - j]!);
        // An odd number of taps has a centre tap of its own.
        if ((span & 1) === 0) a1 += table[c + pairs]! * history[lo + pairs]!;
        acc = a0 + a1 + (a2 + a3);
      } else {
        let a0 = 0;
        let a1 = 0;
        let a2 = 0;
        let a3 = 0;
        let j = 0;
        for (; j + 3 < taps; j += 4) {
          const c = base + j;
          const x = pos + j;
          a0 += table[c]! * history[x]!;
          a1 += table[c + 1]! * history[x + 1]!;
          a2 += table[c + 2]! * history[x + 2]!;
          a3 += table[c + 3]! * history[x + 3]!;
        }
        // Equiripple tables need not have a multiple of 4 taps.
        for (; j < taps; j++) a0 += table[base + j]! * history[pos + j]!;
        acc = a0 + a1 + (a2 + a3);
      }
      const s = toInt16(acc);
      out[o++] = s;
      if (channels === 2) out[o++] = s;
      n++;
      pos += stepWhole;
      phase += stepRemainder;
      if (phase >= up) {
        phase -= up;
        pos++;
      }
    }
    this.pos = pos;
    this.phase = phase;
    return n;
  }
}

/** A whole signal resampled at once (pushed and flushed): for audio that is all there, not a stream. */
export function resampleWhole(input: Int16Array, inputRate: number, outputRate: number): Int16Array {
  const r = new Resampler({ inputRate, outputRate });
  return concatInt16([r.push(input), r.flush()]);
}
