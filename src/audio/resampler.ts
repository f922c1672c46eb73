/**
 * Streaming sample-rate conversion by any rational ratio: a polyphase FIR whose kernel is a
 * Kaiser-windowed sinc, evaluated from a table precomputed per phase.
 *
 * Each output sample sits at an exact input time (output k at k / outputRate seconds) and is the
 * kernel-weighted sum of the input samples around that time. The kernel is centred on the output time,
 * so there is no group delay in the output: the price is a look-ahead of half the kernel (a few ms),
 * held back until more input arrives or `flush()` pads the end with silence.
 *
 * Every output sample is computed by the same loop over the same taps in the same order whatever the
 * input chunking, so the output is bit-identical however the stream is split.
 */

export interface ResamplerOptions {
  inputRate: number;
  outputRate: number;
  /** Input is always mono; 2 duplicates each output sample into interleaved stereo. Default 1. */
  outputChannels?: 1 | 2;
}

/** Stopband attenuation designed for: aliases and images of passband content ≥ 80 dB down, with margin. */
const STOPBAND_ATTENUATION_DB = 85;
/** Speech carries next to nothing above 10 kHz; a wider passband would only cost taps. */
const MAX_PASSBAND_HZ = 10_000;
/** Passband edge as a fraction of the lower Nyquist frequency: 7 kHz at 16 kHz, 9.65 kHz at 22.05 kHz. */
const PASSBAND_FRACTION = 0.875;
/**
 * Telephone bands are fixed by the standards, and every hertz of passband costs taps: 300–3400 Hz at
 * 8 kHz (G.711), 50–7000 Hz at 16 kHz (G.722).
 */
const TELEPHONE_PASSBAND_HZ: ReadonlyMap<number, number> = new Map([
  [8000, 3400],
  [16_000, 7000],
]);
/** Input samples appended to the history per step: bounds the buffer whatever a push's size. */
const BLOCK_SAMPLES = 4096;
const INT16_MAX = 32767;
const INT16_MIN = -32768;
/** Shifts an in-range sum to positive, plus one half: truncating it then rounds half up. */
const ROUND_OFFSET = 32768.5;

/** The filter behind one rate pair, for tests and diagnostics. */
export interface ResamplerDesign {
  /** Upsampling factor L and downsampling factor M after reducing outputRate / inputRate. */
  readonly up: number;
  readonly down: number;
  readonly passbandHz: number;
  /** Where the stopband starts: content there is attenuated by ≥ `attenuationDb`. */
  readonly stopbandHz: number;
  readonly cutoffHz: number;
  readonly attenuationDb: number;
  readonly kaiserBeta: number;
  /** Taps per phase: the table's stride, and the multiply-adds per output sample (half for symmetric phases). */
  readonly tapsPerPhase: number;
}

function gcd(a: number, b: number): number {
  while (b !== 0) [a, b] = [b, a % b];
  return a;
}

/** Zeroth-order modified Bessel function of the first kind (power series; converges fast for β < 20). */
function besselI0(x: number): number {
  const q = (x * x) / 4;
  let term = 1;
  let sum = 1;
  for (let k = 1; term > sum * 1e-17; k++) {
    term *= q / (k * k);
    sum += term;
  }
  return sum;
}

/** sin(πx)/(πx), exactly 0 at non-zero integers so that Nyquist kernels keep their exact zeros. */
function sinc(x: number): number {
  if (x === 0) return 1;
  if (Number.isInteger(x)) return 0;
  return Math.sin(Math.PI * x) / (Math.PI * x);
}

/** Kaiser's β for a stopband attenuation in dB. */
function kaiserBeta(attenuationDb: number): number {
  if (attenuationDb > 50) return 0.1102 * (attenuationDb - 8.7);
  if (attenuationDb >= 21) return 0.5842 * (attenuationDb - 21) ** 0.4 + 0.07886 * (attenuationDb - 21);
  return 0;
}

export function designResampler(inputRate: number, outputRate: number): ResamplerDesign {
  if (
    !Number.isSafeInteger(inputRate) ||
    inputRate <= 0 ||
    !Number.isSafeInteger(outputRate) ||
    outputRate <= 0
  ) {
    throw new RangeError(`sample rates must be positive integers, got ${inputRate} → ${outputRate}`);
  }
  const g = gcd(inputRate, outputRate);
  const up = outputRate / g;
  const down = inputRate / g;
  // The cutoff sits at the lower Nyquist frequency with a symmetric transition band, so that whatever
  // folds back (the alias of a downsampler, the image of an upsampler) from the stopband edge lands
  // exactly on the passband edge: aliases and images of passband content are all in the stopband.
  const lowerRate = Math.min(inputRate, outputRate);
  const cutoffHz = lowerRate / 2;
  const passbandHz =
    TELEPHONE_PASSBAND_HZ.get(lowerRate) ?? Math.min(MAX_PASSBAND_HZ, PASSBAND_FRACTION * cutoffHz);
  const stopbandHz = 2 * cutoffHz - passbandHz;
  // Kaiser's length formula, as a kernel width in input samples; the window spans 2·H − 2/L of them.
  const transition = (2 * Math.PI * (stopbandHz - passbandHz)) / inputRate;
  const width = (STOPBAND_ATTENUATION_DB - 7.95) / (2.285 * transition);
  // Taps per phase (2·H) a multiple of 4, for the unrolled inner loop.
  const half = 2 * Math.ceil((width + 2 / up) / 4);
  return {
    up,
    down,
    passbandHz,
    stopbandHz,
    cutoffHz,
    attenuationDb: STOPBAND_ATTENUATION_DB,
    kaiserBeta: kaiserBeta(STOPBAND_ATTENUATION_DB),
    tapsPerPhase: 2 * half,
  };
}

/**
 * Coefficients per phase p (output time = input index q + p/L): tap j weighs input q − H + 1 + j, at
 * distance τ = p/L + H − 1 − j input samples from the output time. Each phase is normalized to unit DC
 * gain, which removes the images of DC that small per-phase gain differences would create.
 */
function buildTable(d: ResamplerDesign, inputRate: number): Float64Array {
  const taps = d.tapsPerPhase;
  const half = taps / 2;
  const windowHalfWidth = half - 1 / d.up;
  const bandwidth = (2 * d.cutoffHz) / inputRate;
  const i0Beta = besselI0(d.kaiserBeta);
  const table = new Float64Array(d.up * taps);
  for (let p = 0; p < d.up; p++) {
    let sum = 0;
    for (let j = 0; j < taps; j++) {
      // The kernel is even: computing it from |τ| makes mirrored taps exactly equal (see `phaseShapes`).
      const distance = Math.abs(p / d.up + half - 1 - j);
      const r = distance / windowHalfWidth;
      if (r > 1 + 1e-12) continue;
      const w = besselI0(d.kaiserBeta * Math.sqrt(Math.max(0, 1 - r * r))) / i0Beta;
      const c = bandwidth * sinc(bandwidth * distance) * w;
      table[p * taps + j] = c;
      sum += c;
    }
    for (let j = 0; j < taps; j++) table[p * taps + j]! /= sum;
  }
  return table;
}

/** How the inner loop computes one phase. */
const GENERAL = 0;
/** Taps first..last mirror each other: add the mirrored inputs first, half the multiplications. */
const SYMMETRIC = 1;
/** A single tap of 1 (first = last): the output is a copy of one input sample. */
const COPY = 2;

interface PhaseShapes {
  kind: Uint8Array;
  /** The span of non-zero taps of each phase. */
  first: Int32Array;
  last: Int32Array;
}

/**
 * Phase 0 (outputs on whole input samples) and phase L/2 (outputs halfway between) have symmetric
 * taps, which is every phase of a decimator and of 24 → 16 kHz. An upsampler's cutoff is the input's
 * Nyquist frequency, so its kernel is zero at every non-zero whole input sample: phase 0 just copies
 * (half the outputs at 2×).
 */
function phaseShapes(table: Float64Array, taps: number): PhaseShapes {
  const phases = table.length / taps;
  const kind = new Uint8Array(phases);
  const first = new Int32Array(phases);
  const last = new Int32Array(phases);
  for (let p = 0; p < phases; p++) {
    const c = table.subarray(p * taps, (p + 1) * taps);
    let f = 0;
    while (f < taps - 1 && c[f] === 0) f++;
    let l = taps - 1;
    while (l > f && c[l] === 0) l--;
    let symmetric = true;
    for (let j = 0; f + j <= l; j++) if (c[f + j] !== c[l - j]) symmetric = false;
    first[p] = f;
    last[p] = l;
    kind[p] = f === l && c[f] === 1 ? COPY : symmetric ? SYMMETRIC : GENERAL;
  }
  return { kind, first, last };
}

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
  private readonly kind: Uint8Array;
  private readonly first: Int32Array;
  private readonly last: Int32Array;
  /** Input history; `pos` is the first tap of the next output sample. */
  private readonly history: Float64Array;
  private length = 0;
  private pos = 0;
  private phase = 0;
  private inputCount = 0;
  private outputCount = 0;

  constructor(options: ResamplerOptions) {
    this.inputRate = options.inputRate;
    this.outputRate = options.outputRate;
    this.outputChannels = options.outputChannels ?? 1;
    this.design = designResampler(options.inputRate, options.outputRate);
    this.up = this.design.up;
    this.taps = this.design.tapsPerPhase;
    this.stepWhole = Math.floor(this.design.down / this.up);
    this.stepRemainder = this.design.down % this.up;
    this.table = buildTable(this.design, options.inputRate);
    const shapes = phaseShapes(this.table, this.taps);
    this.kind = shapes.kind;
    this.first = shapes.first;
    this.last = shapes.last;
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

  /** Computes up to `limit` output samples into `out` from sample `at`; returns how many. */
  private run(out: Int16Array, at: number, limit: number): number {
    const { table, kind, first, last, history, taps, up, stepWhole, stepRemainder } = this;
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
        for (let j = 0; j < taps; j += 4) {
          const c = base + j;
          const x = pos + j;
          a0 += table[c]! * history[x]!;
          a1 += table[c + 1]! * history[x + 1]!;
          a2 += table[c + 2]! * history[x + 2]!;
          a3 += table[c + 3]! * history[x + 3]!;
        }
        acc = a0 + a1 + (a2 + a3);
      }
      // Clip, then round half up (as Math.round) by truncating a positive number.
      const s =
        acc >= INT16_MAX ? INT16_MAX : acc <= INT16_MIN ? INT16_MIN : ((acc + ROUND_OFFSET) | 0) + INT16_MIN;
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
