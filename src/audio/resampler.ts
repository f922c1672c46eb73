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
import { shortestNyquistLowpass, type NyquistFilter } from './remez.js';

export interface ResamplerOptions {
  inputRate: number;
  outputRate: number;
  /** Input is always mono; 2 duplicates each output sample into interleaved stereo. Default 1. */
  outputChannels?: 1 | 2;
}

/**
 * Stopband attenuation of the equiripple designs: aliases and images of passband content ≥ 80 dB down.
 * The design meets it exactly (every stopband ripple is at most this high), hence a margin of 4 dB.
 */
const EQUIRIPPLE_ATTENUATION_DB = 84;
/** Kaiser's length and β formulas are approximate: aimed 5 dB above the 80 dB needed. */
const KAISER_ATTENUATION_DB = 85;
/** Equiripple designs for upsampling by up to 4: a handful of phases, each a few dozen taps. */
const MAX_EQUIRIPPLE_UP = 4;
/**
 * Longest equiripple kernel, in taps from the centre at the kernel's rate: its design solves systems
 * of about that many unknowns, for a few ms. Longer needs (large M) get the Kaiser design.
 */
const MAX_EQUIRIPPLE_HALF_LENGTH = 80;
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
/** Rate pairs whose filter is kept for the next Resampler (designing one takes a few ms). */
const MAX_CACHED_FILTERS = 16;
const INT16_MAX = 32767;
const INT16_MIN = -32768;
/** Shifts an in-range sum to positive, plus one half: truncating it then rounds half up. */
const ROUND_OFFSET = 32768.5;

interface DesignSpec {
  /** Upsampling factor L and downsampling factor M after reducing outputRate / inputRate. */
  readonly up: number;
  readonly down: number;
  readonly passbandHz: number;
  /** Where the stopband starts: content there is attenuated by ≥ `attenuationDb`. */
  readonly stopbandHz: number;
  /** The lower Nyquist frequency, where the response is one half. */
  readonly cutoffHz: number;
}

/** The filter behind one rate pair, for tests and diagnostics. */
export type ResamplerDesign = DesignSpec & {
  /**
   * Stopband attenuation: 'equiripple' as achieved (every stopband ripple of the design is that low),
   * 'kaiser' as designed for (the measured attenuation is a few dB better).
   */
  readonly attenuationDb: number;
  /** Taps per phase: the table's stride, and the input samples each output sample spans. */
  readonly tapsPerPhase: number;
  /** Multiplications per output sample, averaged over the phases: zero taps skipped, mirrored taps paired. */
  readonly multipliesPerOutput: number;
} & ({ readonly method: 'equiripple' } | { readonly method: 'kaiser'; readonly kaiserBeta: number });

function gcd(a: number, b: number): number {
  while (b !== 0) [a, b] = [b, a % b];
  return a;
}

function designSpec(inputRate: number, outputRate: number): DesignSpec {
  if (
    !Number.isSafeInteger(inputRate) ||
    inputRate <= 0 ||
    !Number.isSafeInteger(outputRate) ||
    outputRate <= 0
  ) {
    throw new RangeError(`sample rates must be positive integers, got ${inputRate} → ${outputRate}`);
  }
  const g = gcd(inputRate, outputRate);
  // The cutoff sits at the lower Nyquist frequency with a symmetric transition band, so that whatever
  // folds back (the alias of a downsampler, the image of an upsampler) from the stopband edge lands
  // exactly on the passband edge: aliases and images of passband content are all in the stopband.
  const lowerRate = Math.min(inputRate, outputRate);
  const cutoffHz = lowerRate / 2;
  const passbandHz =
    TELEPHONE_PASSBAND_HZ.get(lowerRate) ?? Math.min(MAX_PASSBAND_HZ, PASSBAND_FRACTION * cutoffHz);
  return {
    up: outputRate / g,
    down: inputRate / g,
    passbandHz,
    stopbandHz: 2 * cutoffHz - passbandHz,
    cutoffHz,
  };
}

/** A designed filter: shared by every Resampler of its rate pair, and never written to. */
interface Filter {
  readonly design: ResamplerDesign;
  /** `design.tapsPerPhase` coefficients per phase, phase after phase (see `tableFromKernel`). */
  readonly table: Float64Array;
  readonly loop: Loop;
}

const filters = new Map<string, Filter>();

/** The filter for a rate pair, designed on first use. */
function filterFor(inputRate: number, outputRate: number): Filter {
  const key = `${inputRate}/${outputRate}`;
  let filter = filters.get(key);
  if (!filter) {
    filter = designFilter(inputRate, outputRate);
    if (filters.size >= MAX_CACHED_FILTERS) filters.delete(filters.keys().next().value!);
    filters.set(key, filter);
  }
  return filter;
}

export function designResampler(inputRate: number, outputRate: number): ResamplerDesign {
  return filterFor(inputRate, outputRate).design;
}

function designFilter(inputRate: number, outputRate: number): Filter {
  const spec = designSpec(inputRate, outputRate);
  const { up, down } = spec;
  // The kernel runs at L × inputRate, where the cutoff is 1/(2N) of the rate with N = max(L, M).
  const kernelRate = up * inputRate;
  const nyquist =
    up <= MAX_EQUIRIPPLE_UP
      ? shortestNyquistLowpass(
          Math.max(up, down),
          spec.stopbandHz / kernelRate,
          10 ** (-EQUIRIPPLE_ATTENUATION_DB / 20),
          MAX_EQUIRIPPLE_HALF_LENGTH,
        )
      : undefined;
  if (nyquist) {
    const table = tableFromKernel(nyquist, up);
    const loop = chooseLoop(table, table.length / up, up, down);
    return {
      design: {
        method: 'equiripple',
        ...spec,
        attenuationDb: -20 * Math.log10(nyquist.stopbandRipple),
        tapsPerPhase: table.length / up,
        multipliesPerOutput: loop.multipliesPerOutput,
      },
      table,
      loop,
    };
  }
  const beta = kaiserBeta(KAISER_ATTENUATION_DB);
  // Kaiser's length formula, as a kernel width in input samples; the window spans 2·H − 2/L of them.
  const transition = (2 * Math.PI * (spec.stopbandHz - spec.passbandHz)) / inputRate;
  const width = (KAISER_ATTENUATION_DB - 7.95) / (2.285 * transition);
  // Taps per phase (2·H) a multiple of 4, for the unrolled inner loop.
  const taps = 4 * Math.ceil((width + 2 / up) / 4);
  const table = kaiserTable(spec, inputRate, taps, beta);
  const loop = chooseLoop(table, taps, up, down);
  return {
    design: {
      method: 'kaiser',
      ...spec,
      attenuationDb: KAISER_ATTENUATION_DB,
      kaiserBeta: beta,
      tapsPerPhase: taps,
      multipliesPerOutput: loop.multipliesPerOutput,
    },
    table,
    loop,
  };
}

/**
 * The layout of every table: for phase p (output time = input index q + p/L), tap j weighs input
 * q − H + 1 + j, at distance τ = p/L + H − 1 − j input samples before the output time (H = half the
 * taps per phase). The kernel's tap at distance τ is its tap L·τ from the centre at L × inputRate.
 *
 * An equiripple kernel is taken as designed, times L (each phase then has a DC gain within the
 * passband ripple of 1): H is the least that holds every non-zero tap.
 */
function tableFromKernel(kernel: NyquistFilter, up: number): Float64Array {
  const { taps: h, halfLength } = kernel;
  // Tap n of the kernel (from −halfLength to halfLength) falls in phase p = n mod L, at j = H − 1 − k
  // with k = (n − p) / L: 0 ≤ j < 2H needs H ≥ k + 1 and H ≥ −k.
  let half = 1;
  for (let n = -halfLength; n <= halfLength; n++) {
    if (h[halfLength + n] === 0) continue;
    const k = Math.floor(n / up);
    half = Math.max(half, k + 1, -k);
  }
  const taps = 2 * half;
  const table = new Float64Array(up * taps);
  for (let p = 0; p < up; p++) {
    for (let j = 0; j < taps; j++) {
      const n = p + up * (half - 1 - j);
      if (Math.abs(n) <= halfLength) table[p * taps + j] = up * h[halfLength + n]!;
    }
  }
  return table;
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

/**
 * A Kaiser-windowed sinc in the layout of `tableFromKernel`. Each phase is normalized to unit DC gain,
 * which removes the images of DC that small per-phase gain differences would create.
 */
function kaiserTable(spec: DesignSpec, inputRate: number, taps: number, beta: number): Float64Array {
  const half = taps / 2;
  const windowHalfWidth = half - 1 / spec.up;
  const bandwidth = (2 * spec.cutoffHz) / inputRate;
  const i0Beta = besselI0(beta);
  const table = new Float64Array(spec.up * taps);
  for (let p = 0; p < spec.up; p++) {
    let sum = 0;
    for (let j = 0; j < taps; j++) {
      // The kernel is even: computing it from |τ| makes mirrored taps exactly equal (see `phaseShapes`).
      const distance = Math.abs(p / spec.up + half - 1 - j);
      const r = distance / windowHalfWidth;
      if (r > 1 + 1e-12) continue;
      const w = besselI0(beta * Math.sqrt(Math.max(0, 1 - r * r))) / i0Beta;
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

/**
 * Which loop computes the output, and what it needs beyond the table. The special loops are chosen
 * from the table itself (not from the rate pair), so they only ever run on the shape they assume.
 */
type Loop = (
  | {
      /** Any table, phase by phase (`phaseShapes`). */
      readonly kind: 'general';
      readonly shapes: PhaseShapes;
    }
  | {
      /**
       * L = 1 and a single symmetric phase, zero at every third tap from its centre (a third-band
       * filter: 24 → 8 kHz): the centre tap, then the pairs of mirrored taps at 1, 2, 4, 5, 7, 8…
       */
      readonly kind: 'third-band';
      /** The centre tap's index in the phase, and its coefficient. */
      readonly centre: number;
      readonly centreCoefficient: number;
      /** The coefficients of the non-zero pairs, nearest the centre first. */
      readonly pairs: Float64Array;
    }
  | {
      /**
       * L = 2, M = 1 and a half-band kernel (24 → 48 kHz): phase 0 copies the input sample at tap
       * `copy`, phase 1 is symmetric over taps first..last (an even number).
       */
      readonly kind: 'half-band';
      readonly copy: number;
      readonly first: number;
      readonly last: number;
      /** Coefficients of the pairs of taps (first + k, last − k). */
      readonly pairs: Float64Array;
    }
) & { readonly multipliesPerOutput: number };

function chooseLoop(table: Float64Array, taps: number, up: number, down: number): Loop {
  const shapes = phaseShapes(table, taps);
  const { kind, first, last } = shapes;
  if (up === 1 && kind[0] === SYMMETRIC && (last[0]! - first[0]!) % 2 === 0) {
    const centre = (first[0]! + last[0]!) / 2;
    const reach = centre - first[0]!;
    const pairs: number[] = [];
    let thirdBand = true;
    for (let d = 1; d <= reach; d++) {
      const c = table[centre + d]!;
      if (d % 3 === 0) thirdBand &&= c === 0;
      else pairs.push(c);
    }
    // Reaching past a tap at a multiple of 3 would need a pair the loop has no place for.
    if (thirdBand && reach % 3 !== 0) {
      return {
        kind: 'third-band',
        centre,
        centreCoefficient: table[centre]!,
        pairs: Float64Array.from(pairs),
        multipliesPerOutput: pairs.length + 1,
      };
    }
  }
  if (
    up === 2 &&
    down === 1 &&
    kind[0] === COPY &&
    kind[1] === SYMMETRIC &&
    (last[1]! - first[1]!) % 2 === 1
  ) {
    const pairs = table.slice(taps + first[1]!, taps + first[1]! + (last[1]! - first[1]! + 1) / 2);
    return {
      kind: 'half-band',
      copy: first[0]!,
      first: first[1]!,
      last: last[1]!,
      pairs,
      multipliesPerOutput: pairs.length / 2,
    };
  }
  let multiplies = 0;
  for (let p = 0; p < up; p++) {
    const span = last[p]! - first[p]! + 1;
    multiplies += kind[p] === COPY ? 0 : kind[p] === SYMMETRIC ? Math.ceil(span / 2) : taps;
  }
  return { kind: 'general', shapes, multipliesPerOutput: multiplies / up };
}

/** Clips to the int16 range, then rounds half up (as Math.round) by truncating a positive number. */
function toInt16(acc: number): number {
  return acc >= INT16_MAX ? INT16_MAX : acc <= INT16_MIN ? INT16_MIN : ((acc + ROUND_OFFSET) | 0) + INT16_MIN;
}

/**
 * Σ c[k] · (x[lo + k] + x[hi − k]) over the pairs, even k in one sum and odd k in another (so that
 * additions need not wait for each other): the half-band loop's phase 1.
 */
function symmetricSum(c: Float64Array, x: Float64Array, lo: number, hi: number): number {
  const pairs = c.length;
  let a0 = 0;
  let a1 = 0;
  let k = 0;
  for (; k + 1 < pairs; k += 2) {
    a0 += c[k]! * (x[lo + k]! + x[hi - k]!);
    a1 += c[k + 1]! * (x[lo + k + 1]! + x[hi - k - 1]!);
  }
  if (k < pairs) a0 += c[k]! * (x[lo + k]! + x[hi - k]!);
  return a0 + a1;
}

/**
 * The third-band loop's output around x[centre]: the centre tap plus the pairs at distances 1, 2, 4,
 * 5, 7, 8… (two of every three), four sums at a time.
 */
function thirdBandSum(c: Float64Array, centreCoefficient: number, x: Float64Array, centre: number): number {
  const pairs = c.length;
  let a0 = centreCoefficient * x[centre]!;
  let a1 = 0;
  let a2 = 0;
  let a3 = 0;
  let k = 0;
  // Pairs k…k+3 are at distances d, d + 1, d + 3, d + 4.
  let d = 1;
  for (; k + 3 < pairs; k += 4, d += 6) {
    a0 += c[k]! * (x[centre - d]! + x[centre + d]!);
    a1 += c[k + 1]! * (x[centre - d - 1]! + x[centre + d + 1]!);
    a2 += c[k + 2]! * (x[centre - d - 3]! + x[centre + d + 3]!);
    a3 += c[k + 3]! * (x[centre - d - 4]! + x[centre + d + 4]!);
  }
  if (k < pairs) a0 += c[k]! * (x[centre - d]! + x[centre + d]!);
  if (k + 1 < pairs) a1 += c[k + 1]! * (x[centre - d - 1]! + x[centre + d + 1]!);
  if (k + 2 < pairs) a2 += c[k + 2]! * (x[centre - d - 3]! + x[centre + d + 3]!);
  return a0 + a1 + (a2 + a3);
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
  private readonly loop: Loop;
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

  private runThirdBand(loop: Loop & { kind: 'third-band' }, out: Int16Array, at: number, limit: number): number {
    const { history, stepWhole, outputChannels: channels } = this;
    const { centre, centreCoefficient, pairs } = loop;
    const end = this.length - this.taps;
    let pos = this.pos;
    let o = at * channels;
    let n = 0;
    for (; n < limit && pos <= end; n++, pos += stepWhole) {
      const s = toInt16(thirdBandSum(pairs, centreCoefficient, history, pos + centre));
      out[o++] = s;
      if (channels === 2) out[o++] = s;
    }
    this.pos = pos;
    return n;
  }

  /**
   * Outputs alternate between a copy of input sample q and the symmetric phase 1 between q and q + 1.
   * Two input positions at a time, their two phase-1 sums share most loads (each computed exactly as
   * `symmetricSum` computes it alone, so where the chunking splits the pairs does not matter).
   */
  private runHalfBand(loop: Loop & { kind: 'half-band' }, out: Int16Array, at: number, limit: number): number {
    const { history: x, outputChannels: channels } = this;
    const { copy, first, last, pairs: c } = loop;
    const count = c.length;
    const end = this.length - this.taps;
    let pos = this.pos;
    let phase = this.phase;
    let o = at * channels;
    let n = 0;
    const emit = (s: number): void => {
      out[o++] = s;
      if (channels === 2) out[o++] = s;
    };
    if (phase === 1 && n < limit && pos <= end) {
      emit(toInt16(symmetricSum(c, x, pos + first, pos + last)));
      n++;
      phase = 0;
      pos++;
    }
    for (; limit - n >= 4 && pos + 1 <= end; n += 4, pos += 2) {
      // Phase 1 at pos (sums a0, a1) and at pos + 1 (b0, b1): x[lo + k + 1] and x[hi − k] serve both.
      const lo = pos + first;
      const hi = pos + last;
      let a0 = 0;
      let a1 = 0;
      let b0 = 0;
      let b1 = 0;
      let left = x[lo]!;
      let right = x[hi + 1]!;
      let k = 0;
      for (; k + 1 < count; k += 2) {
        const c0 = c[k]!;
        const c1 = c[k + 1]!;
        const left1 = x[lo + k + 1]!;
        const left2 = x[lo + k + 2]!;
        const right0 = x[hi - k]!;
        const right1 = x[hi - k - 1]!;
        a0 += c0 * (left + right0);
        b0 += c0 * (left1 + right);
        a1 += c1 * (left1 + right1);
        b1 += c1 * (left2 + right0);
        left = left2;
        right = right1;
      }
      if (k < count) {
        a0 += c[k]! * (left + x[hi - k]!);
        b0 += c[k]! * (x[lo + k + 1]! + right);
      }
      emit(x[pos + copy]!);
      emit(toInt16(a0 + a1));
      emit(x[pos + 1 + copy]!);
      emit(toInt16(b0 + b1));
    }
    for (; n < limit && pos <= end; n++) {
      if (phase === 0) {
        emit(x[pos + copy]!);
        phase = 1;
      } else {
        emit(toInt16(symmetricSum(c, x, pos + first, pos + last)));
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
