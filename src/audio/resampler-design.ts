/**
 * The filter behind each rate pair of the resampler: its specification (passband, stopband), the
 * equiripple or Kaiser kernel, and its table of coefficients per phase, designed once per process.
 */
import { shortestNyquistLowpass, type NyquistFilter } from './remez.js';
import { chooseLoop, type Loop } from './resampler-kernels.js';

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
 * of up to that many unknowns, in a few ms (about 10 for the first design of a process, before V8 has
 * compiled the designer). Longer needs (large M) get the Kaiser design.
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
/** Rate pairs whose filter is kept for the next Resampler: designing one takes a few ms. */
const MAX_CACHED_FILTERS = 16;
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
export function filterFor(inputRate: number, outputRate: number): Filter {
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
  // (N = 1 is no resampling at all: the Kaiser kernel is then a single tap of 1.)
  const band = Math.max(up, down);
  const stopbandEdge = spec.stopbandHz / (up * inputRate);
  const nyquist =
    up <= MAX_EQUIRIPPLE_UP && band >= 2 && stopbandEdge > 1 / (2 * band) && stopbandEdge < 0.5
      ? shortestNyquistLowpass(
          band,
          stopbandEdge,
          10 ** (-EQUIRIPPLE_ATTENUATION_DB / 20),
          MAX_EQUIRIPPLE_HALF_LENGTH,
        )
      : undefined;
  if (nyquist) {
    const table = tableFromKernel(nyquist, up);
    const loop = chooseLoop(table, table.length / up, up, down);
    return {
      design: Object.freeze({
        method: 'equiripple',
        ...spec,
        attenuationDb: -20 * Math.log10(nyquist.stopbandRipple),
        tapsPerPhase: table.length / up,
        multipliesPerOutput: loop.multipliesPerOutput,
      }),
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
    design: Object.freeze({
      method: 'kaiser',
      ...spec,
      attenuationDb: KAISER_ATTENUATION_DB,
      kaiserBeta: beta,
      tapsPerPhase: taps,
      multipliesPerOutput: loop.multipliesPerOutput,
    }),
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
