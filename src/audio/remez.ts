// Over 450 lines: one algorithm: the exchange, its barycentric interpolation and the extremal search.
/**
 * Equiripple (minimax) design of linear-phase FIR filters by the Remez exchange algorithm.
 * (Over 400 lines on purpose: one algorithm — the exchange, its barycentric interpolation and the
 * extremum search — whose steps only make sense together.)
 *
 * A linear-phase filter's zero-phase response is a sum of cosines, A(f) = constant + Σ cᵢ·cos(2π·dᵢ·f),
 * one per pair of mirrored taps dᵢ samples from the centre. `minimaxCosineSum` finds the coefficients
 * whose largest weighted error over the bands is the smallest possible: at the optimum the error peaks
 * with equal height and alternating sign at (at least) one more frequency than there are coefficients,
 * and the exchange iterates towards that set of peaks. Equal peaks are what makes it shorter than a
 * windowed design for the same attenuation: a window's ripples decay away from the transition band,
 * so all but the first are better than needed.
 *
 * The distances are a free list rather than 0…n−1 (as in Parks–McClellan's formulation), so that a
 * Nyquist filter's zero taps are simply left out of the basis: `nyquistLowpass` designs the half-band,
 * third-band… filters of a resampler, exactly zero at every N-th tap and exactly 1/N at the centre.
 * Without the classical basis the Haar condition (which guarantees the alternation) is not proven, so
 * each design reports whether it converged and callers keep a fallback.
 */

/** One band of the desired response. Frequencies are in cycles per sample: 0 ≤ from < to ≤ 0.5. */
export interface Band {
  readonly from: number;
  readonly to: number;
  /** Desired amplitude of A(f) throughout the band. */
  readonly gain: number;
  /** Weight of the error: the design makes weight × |gain − A(f)| ≤ deviation in every band. */
  readonly weight: number;
}

export interface MinimaxResult {
  /** cᵢ, the coefficient of cos(2π·dᵢ·f), in the order of the distances given. */
  readonly coefficients: Float64Array;
  /** The largest weighted error over the bands: the peak of the error, located between grid points. */
  readonly deviation: number;
  /** Where the error peaks, alternating in sign: a good start for a slightly different design. */
  readonly extremalFrequencies: readonly number[];
  /** False if the exchange lost its alternation or ran out of iterations: do not use the result. */
  readonly converged: boolean;
}

export interface MinimaxOptions {
  /** The fixed term of the sum (a Nyquist filter's centre tap). Default 0. */
  readonly constant?: number;
  /** Frequencies to start the exchange from, e.g. the extremal frequencies of a neighbouring design. */
  readonly start?: readonly number[];
}

/**
 * Grid points per period of the fastest cosine in the basis: about 16 per ripple of the error, and a
 * few even for the narrow ripples crowding at a band's edge. Enough to find every peak, which a
 * parabola through its neighbours then places between the grid points. (At half this density some
 * designs stalled short of the optimum.)
 */
const GRID_POINTS_PER_PERIOD = 32;
const MAX_ITERATIONS = 30;
/**
 * The exchange stops once the levelled error is within this fraction of the largest error, i.e. within
 * 0.09 dB of the optimum. `deviation` is the largest error, however far from the optimum.
 */
const CONVERGENCE_TOLERANCE = 1e-2;
/**
 * Peaks of the error on the grid may fall well short of the levelled error δ: the reference lies
 * between grid points, and next to a band's edge the ripples crowd to a grid step or two. Smaller
 * peaks than this are not candidates (and of the candidates, the smallest are dropped first).
 */
const LEVEL_TOLERANCE = 0.5;

/**
 * The coefficients cᵢ that minimise the largest weighted error of constant + Σ cᵢ·cos(2π·dᵢ·f) against
 * the bands: Remez's second algorithm, with a dense solve on the reference (any basis), the error's
 * peaks found on a grid and then placed between its points.
 */
export function minimaxCosineSum(
  distances: readonly number[],
  bands: readonly Band[],
  options: MinimaxOptions = {},
): MinimaxResult {
  const n = distances.length;
  const constant = options.constant ?? 0;
  const grid = designGrid(bands, 1 / (GRID_POINTS_PER_PERIOD * Math.max(1, ...distances)));
  const size = grid.frequency.length;
  if (n === 0 || size < n + 1)
    throw new RangeError(`${n} coefficients need a grid of more than ${size} points`);
  const basis = cosineTable(distances, grid.frequency);
  const error = new Float64Array(size);
  const errorAt = (coefficients: Float64Array, f: number, band: Band): number => {
    let a = constant;
    for (let i = 0; i < n; i++) a += coefficients[i]! * Math.cos(2 * Math.PI * distances[i]! * f);
    return band.weight * (band.gain - a);
  };

  const m = n + 1;
  let reference = startingReference(grid, m, options.start);
  const system = new Float64Array(m * m);
  const rhs = new Float64Array(m);
  for (let iteration = 0; iteration < MAX_ITERATIONS; iteration++) {
    // The levelled error δ and the coefficients that make the error exactly ±δ, alternating, at the
    // reference: Σ cᵢ·cos(2π·dᵢ·fₖ) + (−1)ᵏ·δ / wₖ = gainₖ − constant.
    reference.forEach(({ frequency, band }, k) => {
      for (let i = 0; i < n; i++) system[k * m + i] = Math.cos(2 * Math.PI * distances[i]! * frequency);
      system[k * m + n] = (k % 2 === 0 ? 1 : -1) / band.weight;
      rhs[k] = band.gain - constant;
    });
    const solution = solveLinear(system, rhs);
    const coefficients = solution.slice(0, n);
    const level = Math.abs(solution[n]!);
    if (!coefficients.every(Number.isFinite)) break;

    let largest = weightedErrors(basis, coefficients, constant, grid, error);
    const peaks = alternatingPeaks(error, grid.bandOf, level * (1 - LEVEL_TOLERANCE), m);
    if (peaks === undefined) break;
    reference = peaks.map((g) => {
      const point = { frequency: peakFrequency(grid, error, g), band: bands[grid.bandOf[g]!]! };
      largest = Math.max(largest, Math.abs(errorAt(coefficients, point.frequency, point.band)));
      return point;
    });
    if (largest - level <= CONVERGENCE_TOLERANCE * largest) {
      return {
        coefficients,
        deviation: largest,
        extremalFrequencies: reference.map((r) => r.frequency),
        converged: true,
      };
    }
  }
  return {
    coefficients: new Float64Array(n),
    deviation: Infinity,
    extremalFrequencies: [],
    converged: false,
  };
}

interface Grid {
  readonly frequency: Float64Array;
  /** Which band each point belongs to: points of different bands are not neighbours. */
  readonly bandOf: Int32Array;
  readonly bands: readonly Band[];
}

/** A point of the reference, where the error is to equal ±δ (and will peak, once converged). */
interface ReferencePoint {
  readonly frequency: number;
  readonly band: Band;
}

/** Points at most `spacing` apart across every band, both edges included. */
function designGrid(bands: readonly Band[], spacing: number): Grid {
  const counts = bands.map((band) => {
    if (!(band.from >= 0 && band.from < band.to && band.to <= 0.5 && band.weight > 0))
      throw new RangeError(`invalid band ${JSON.stringify(band)}`);
    return Math.max(1, Math.ceil((band.to - band.from) / spacing)) + 1;
  });
  const size = counts.reduce((a, c) => a + c, 0);
  const frequency = new Float64Array(size);
  const bandOf = new Int32Array(size);
  let g = 0;
  bands.forEach((band, b) => {
    const steps = counts[b]! - 1;
    for (let i = 0; i <= steps; i++, g++) {
      frequency[g] = band.from + ((band.to - band.from) * i) / steps;
      bandOf[g] = b;
    }
  });
  return { frequency, bandOf, bands };
}

/**
 * `count` grid points, in increasing order: nearest to the `start` frequencies (resampled to `count`
 * points) when given, else spread evenly over the grid.
 */
function startingReference(grid: Grid, count: number, start?: readonly number[]): ReferencePoint[] {
  const { frequency, bandOf, bands } = grid;
  const size = frequency.length;
  const reference: ReferencePoint[] = [];
  let previous = -1;
  for (let k = 0; k < count; k++) {
    let g = Math.round((k * (size - 1)) / (count - 1));
    if (start && start.length >= 2) {
      const at = (k * (start.length - 1)) / (count - 1);
      const below = Math.floor(at);
      const f = start[below]! + (at - below) * ((start[below + 1] ?? start[below]!) - start[below]!);
      g = nearestIndex(frequency, f);
    }
    // Strictly increasing, and room left for the points still to come.
    g = Math.min(Math.max(g, previous + 1), size - (count - k));
    previous = g;
    reference.push({ frequency: frequency[g]!, band: bands[bandOf[g]!]! });
  }
  return reference;
}

function nearestIndex(sorted: Float64Array, value: number): number {
  let lo = 0;
  let hi = sorted.length - 1;
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid]! <= value) lo = mid;
    else hi = mid;
  }
  return value - sorted[lo]! <= sorted[hi]! - value ? lo : hi;
}

/**
 * Where the error peaks near grid point `g`: the vertex of the parabola through it and its two
 * neighbours (the grid point itself at a band's edge).
 */
function peakFrequency(grid: Grid, error: Float64Array, g: number): number {
  const { frequency, bandOf } = grid;
  if (g === 0 || g === error.length - 1 || bandOf[g - 1] !== bandOf[g] || bandOf[g + 1] !== bandOf[g])
    return frequency[g]!;
  const before = error[g - 1]!;
  const after = error[g + 1]!;
  const curvature = before - 2 * error[g]! + after;
  if (curvature === 0) return frequency[g]!;
  // Between −½ and ½ a grid step, as the grid point is the largest of the three.
  const offset = (before - after) / (2 * curvature);
  return (
    frequency[g]! +
    offset * (offset < 0 ? frequency[g]! - frequency[g - 1]! : frequency[g + 1]! - frequency[g]!)
  );
}

/** cos(2π·dᵢ·f) for every grid frequency f (rows) and distance dᵢ (columns). */
function cosineTable(distances: readonly number[], frequency: Float64Array): Float64Array {
  const n = distances.length;
  const table = new Float64Array(frequency.length * n);
  for (let g = 0, row = 0; g < frequency.length; g++, row += n) {
    const omega = 2 * Math.PI * frequency[g]!;
    for (let i = 0; i < n; i++) table[row + i] = Math.cos(omega * distances[i]!);
  }
  return table;
}

/** Fills `error` with weight · (gain − constant − Σ cᵢ·cos(2π·dᵢ·f)) on the grid; returns its largest magnitude. */
function weightedErrors(
  basis: Float64Array,
  coefficients: Float64Array,
  constant: number,
  grid: Grid,
  error: Float64Array,
): number {
  const n = coefficients.length;
  const { bandOf, bands } = grid;
  let largest = 0;
  for (let g = 0; g < error.length; g++) {
    const a = constant + dot(coefficients, 0, basis, g * n, n);
    const band = bands[bandOf[g]!]!;
    const e = band.weight * (band.gain - a);
    error[g] = e;
    if (Math.abs(e) > largest) largest = Math.abs(e);
  }
  return largest;
}

/**
 * The next reference: the local peaks of |error| of at least `threshold`, alternating in sign (of two
 * neighbours with the same sign the larger is kept), thinned to `count` without breaking the
 * alternation. Undefined if fewer than `count` alternate.
 */
function alternatingPeaks(
  error: Float64Array,
  bandOf: Int32Array,
  threshold: number,
  count: number,
): number[] | undefined {
  const peaks: number[] = [];
  const size = error.length;
  for (let g = 0; g < size; g++) {
    const e = error[g]!;
    if (Math.abs(e) < threshold) continue;
    // Neighbours across a band gap are not neighbours: a band's edge is a candidate of its own.
    const before = g > 0 && bandOf[g - 1] === bandOf[g] ? error[g - 1]! : undefined;
    const after = g + 1 < size && bandOf[g + 1] === bandOf[g] ? error[g + 1]! : undefined;
    const isPeak =
      e > 0
        ? (before === undefined || e >= before) && (after === undefined || e > after)
        : (before === undefined || e <= before) && (after === undefined || e < after);
    if (!isPeak) continue;
    const last = peaks.at(-1);
    if (last !== undefined && error[last]! > 0 === e > 0) {
      if (Math.abs(e) > Math.abs(error[last]!)) peaks[peaks.length - 1] = g;
    } else peaks.push(g);
  }
  const height = (k: number): number => Math.abs(error[peaks[k]!]!);
  while (peaks.length > count) {
    if (peaks.length === count + 1) {
      // Dropping an end keeps the alternation.
      if (height(0) < height(peaks.length - 1)) peaks.shift();
      else peaks.pop();
      continue;
    }
    let smallest = 0;
    for (let k = 1; k < peaks.length; k++) if (height(k) < height(smallest)) smallest = k;
    if (smallest === 0 || smallest === peaks.length - 1) {
      peaks.splice(smallest, 1);
    } else {
      // Its two neighbours now have the same sign: keep the larger of them.
      const keep = height(smallest - 1) >= height(smallest + 1) ? smallest - 1 : smallest + 1;
      peaks.splice(smallest - 1, 3, peaks[keep]!);
    }
  }
  return peaks.length === count ? peaks : undefined;
}

/** Solves the dense n × n `system` (row-major) · x = `rhs` by Gaussian elimination with partial pivoting. */
function solveLinear(system: Float64Array, rhs: Float64Array): Float64Array {
  const n = rhs.length;
  const a = system.slice();
  const b = rhs.slice();
  for (let k = 0; k < n; k++) eliminateColumn(a, b, k);
  const x = new Float64Array(n);
  for (let i = n - 1; i >= 0; i--)
    x[i] = (b[i]! - dot(a, i * n + i + 1, x, i + 1, n - i - 1)) / a[i * n + i]!;
  return x;
}

/**
 * One step of the elimination: brings the largest entry of column k (from row k down) to row k, then
 * subtracts multiples of row k from the rows below to clear the column. (Small functions that run
 * often are compiled early, which is most of the speed of a design made once.)
 */
function eliminateColumn(a: Float64Array, b: Float64Array, k: number): void {
  const n = b.length;
  let pivot = k;
  for (let i = k + 1; i < n; i++) if (Math.abs(a[i * n + k]!) > Math.abs(a[pivot * n + k]!)) pivot = i;
  const rowK = k * n;
  if (pivot !== k) {
    const rowP = pivot * n;
    for (let j = k; j < n; j++) {
      const t = a[rowK + j]!;
      a[rowK + j] = a[rowP + j]!;
      a[rowP + j] = t;
    }
    const t = b[k]!;
    b[k] = b[pivot]!;
    b[pivot] = t;
  }
  const diagonal = a[rowK + k]!;
  for (let i = k + 1; i < n; i++) {
    const factor = a[i * n + k]! / diagonal;
    if (factor !== 0) {
      subtractScaled(a, i * n + k, rowK + k, n - k, factor);
      b[i] = b[i]! - factor * b[k]!;
    }
  }
}

/** a[to + j] −= factor · a[from + j] for j < count. */
function subtractScaled(a: Float64Array, to: number, from: number, count: number, factor: number): void {
  for (let j = 0; j < count; j++) a[to + j] = a[to + j]! - factor * a[from + j]!;
}

/** Σ a[i + j] · b[k + j] for j < count. */
function dot(a: Float64Array, i: number, b: Float64Array, k: number, count: number): number {
  let sum = 0;
  for (let j = 0; j < count; j++) sum += a[i + j]! * b[k + j]!;
  return sum;
}

/** A Nyquist (N-th band) lowpass: symmetric taps, 1/N at the centre, exactly 0 at every N-th tap. */
export interface NyquistFilter {
  /** N: the cutoff is at 1/(2N) cycles per sample, and the response is 1/2 there. */
  readonly band: number;
  /** 2 · halfLength + 1 taps; the centre is tap `halfLength`. */
  readonly taps: Float64Array;
  readonly halfLength: number;
  /** The stopband's peak |A(f)| (equal at every ripple); the passband's error is at most (N − 1) times it. */
  readonly stopbandRipple: number;
  /** Where the stopband error peaks. */
  readonly extremalFrequencies: readonly number[];
}

/**
 * The equiripple N-th band lowpass with taps up to `halfLength` from the centre, and its stopband from
 * `stopbandEdge` (cycles per sample, above the cutoff 1/(2N)) to 0.5. Undefined if the design did not
 * converge. `start`: the extremal frequencies of a neighbouring design, to converge in fewer steps.
 *
 * The N shifted copies of an N-th band filter's response add up to exactly 1 (that is what the zero
 * taps mean), so only the stopband is designed: wherever the passband is, the other copies are in the
 * stopband, and its error is at most N − 1 stopband ripples. With the cutoff at the lower Nyquist
 * frequency of a resampler, the polyphase branches of a Nyquist filter have exact zero taps (skipped),
 * and an upsampler's branch on the input samples is a plain copy.
 */
export function nyquistLowpass(
  band: number,
  halfLength: number,
  stopbandEdge: number,
  start?: readonly number[],
): NyquistFilter | undefined {
  if (!Number.isInteger(band) || band < 2) throw new RangeError(`band must be an integer ≥ 2, got ${band}`);
  if (!(stopbandEdge > 1 / (2 * band) && stopbandEdge < 0.5))
    throw new RangeError(`stopband edge ${stopbandEdge} must lie between the cutoff and 0.5`);
  const distances: number[] = [];
  for (let d = 1; d <= halfLength; d++) if (d % band !== 0) distances.push(d);
  if (distances.length === 0) return undefined;
  const design = minimaxCosineSum(distances, [{ from: stopbandEdge, to: 0.5, gain: 0, weight: 1 }], {
    constant: 1 / band,
    start: start ?? typicalStopbandPeaks(stopbandEdge, distances.length + 1),
  });
  if (!design.converged) return undefined;
  const taps = new Float64Array(2 * halfLength + 1);
  taps[halfLength] = 1 / band;
  distances.forEach((d, i) => {
    taps[halfLength - d] = taps[halfLength + d] = design.coefficients[i]! / 2;
  });
  return {
    band,
    taps,
    halfLength,
    stopbandRipple: design.deviation,
    extremalFrequencies: design.extremalFrequencies,
  };
}

/** Shapes the start of a stopband's exchange like the optimum, which then takes 1–3 steps instead of 5–7. */
const EDGE_CROWDING = 3;

/**
 * Where an equiripple stopband from `edge` to 0.5 typically peaks `count` times: evenly spaced, except
 * that the first peaks crowd towards the band edge (the k-th sits about √(k² + c²) − c spacings in).
 */
function typicalStopbandPeaks(edge: number, count: number): number[] {
  const n = count - 1;
  const position = (k: number): number => Math.sqrt(k * k + EDGE_CROWDING ** 2) - EDGE_CROWDING;
  return Array.from({ length: count }, (_, k) => edge + ((0.5 - edge) * position(k)) / position(n));
}

/**
 * The shortest N-th band lowpass whose stopband from `stopbandEdge` to 0.5 stays within
 * `stopbandRipple`, or undefined if none up to `maxHalfLength` taps from the centre does (or a design
 * fails to converge). The search starts from Kaiser's length estimate for equal ripples and steps one
 * tap at a time, each design starting from the previous one's extremal frequencies.
 */
export function shortestNyquistLowpass(
  band: number,
  stopbandEdge: number,
  stopbandRipple: number,
  maxHalfLength: number,
): NyquistFilter | undefined {
  const transition = 2 * (stopbandEdge - 1 / (2 * band));
  const estimate = (-20 * Math.log10(stopbandRipple) - 13) / (14.6 * transition);
  // A tap at a multiple of N is zero: such a half length is the same filter as one tap shorter.
  const usable = (halfLength: number): boolean => halfLength % band !== 0;
  let halfLength = Math.max(1, Math.min(maxHalfLength, Math.round(estimate / 2)));
  if (!usable(halfLength)) halfLength--;
  let filter = nyquistLowpass(band, halfLength, stopbandEdge);
  if (!filter) return undefined;
  const meets = (f: NyquistFilter): boolean => f.stopbandRipple <= stopbandRipple;
  if (meets(filter)) {
    for (let shorter = halfLength - 1; shorter >= 1; shorter--) {
      if (!usable(shorter)) continue;
      const candidate = nyquistLowpass(band, shorter, stopbandEdge, filter.extremalFrequencies);
      if (!candidate || !meets(candidate)) break;
      filter = candidate;
    }
    return filter;
  }
  for (let longer = halfLength + 1; longer <= maxHalfLength; longer++) {
    if (!usable(longer)) continue;
    const candidate: NyquistFilter | undefined = nyquistLowpass(
      band,
      longer,
      stopbandEdge,
      filter.extremalFrequencies,
    );
    if (!candidate) return undefined;
    if (meets(candidate)) return candidate;
    filter = candidate;
  }
  return undefined;
}
