/**
 * In-place iterative radix-2 FFT of a power-of-two length: the one FFT of the project (the echo
 * estimator's band energies, the noise suppressor's, the tests' spectral centroid). What a length
 * needs (twiddle factors, the bit-reversal swaps) is worked out once, as its `FftPlan`.
 */
export class FftPlan {
  readonly size: number;
  private readonly cos: Float64Array;
  private readonly sin: Float64Array;
  /** The bit-reversal permutation as the pairs it swaps (i < j), flat. */
  private readonly swaps: Uint32Array;

  constructor(n: number) {
    if ((n & (n - 1)) !== 0) throw new RangeError(`FFT length ${n} is not a power of two`);
    this.size = n;
    this.cos = new Float64Array(n / 2);
    this.sin = new Float64Array(n / 2);
    for (let k = 0; k < n / 2; k++) {
      this.cos[k] = Math.cos((-2 * Math.PI * k) / n);
      this.sin[k] = Math.sin((-2 * Math.PI * k) / n);
    }
    const swaps: number[] = [];
    for (let i = 1, j = 0; i < n; i++) {
      let bit = n >> 1;
      for (; j & bit; bit >>= 1) j ^= bit;
      j ^= bit;
      if (i < j) swaps.push(i, j);
    }
    this.swaps = Uint32Array.from(swaps);
  }

  /** Transforms `re` + i·`im` in place (forward, unscaled); both `size` long. */
  transform(re: Float64Array, im: Float64Array): void {
    const n = this.size;
    if (re.length !== n || im.length !== n) throw new RangeError(`FFT length ${re.length} is not ${n}`);
    const { cos, sin, swaps } = this;
    for (let s = 0; s < swaps.length; s += 2) {
      const i = swaps[s]!;
      const j = swaps[s + 1]!;
      const r = re[i]!;
      re[i] = re[j]!;
      re[j] = r;
      const m = im[i]!;
      im[i] = im[j]!;
      im[j] = m;
    }
    for (let size = 2; size <= n; size <<= 1) {
      const half = size >> 1;
      const stride = n / size;
      for (let k = 0; k < half; k++) {
        const wr = cos[k * stride]!;
        const wi = sin[k * stride]!;
        for (let start = 0; start < n; start += size) {
          const a = start + k;
          const b = a + half;
          const tr = re[b]! * wr - im[b]! * wi;
          const ti = re[b]! * wi + im[b]! * wr;
          re[b] = re[a]! - tr;
          im[b] = im[a]! - ti;
          re[a] = re[a]! + tr;
          im[a] = im[a]! + ti;
        }
      }
    }
  }
}

const plans = new Map<number, FftPlan>();

/** The plan for length `n` (a power of two), worked out once and shared: keep it where it is used often. */
export function fftPlan(n: number): FftPlan {
  let plan = plans.get(n);
  if (!plan) {
    plan = new FftPlan(n);
    plans.set(n, plan);
  }
  return plan;
}

const sqrtHanns = new Map<number, Float64Array>();

/**
 * The square root of a Hann window of length `n` (sampled half a step in), shared: applied at analysis and again at
 * synthesis, its square overlap-adds to a constant at half-frame hops (the spectral suppressors').
 */
export function sqrtHannWindow(n: number): Float64Array {
  let window = sqrtHanns.get(n);
  if (!window) {
    window = Float64Array.from({ length: n }, (_, i) =>
      Math.sqrt(0.5 - 0.5 * Math.cos((2 * Math.PI * (i + 0.5)) / n)),
    );
    sqrtHanns.set(n, window);
  }
  return window;
}

/** Transforms `re` + i·`im` in place (forward, unscaled). Their length must be a power of two. */
export function fft(re: Float64Array, im: Float64Array): void {
  const n = re.length;
  if (n !== im.length || (n & (n - 1)) !== 0) throw new RangeError(`FFT length ${n} is not a power of two`);
  fftPlan(n).transform(re, im);
}
