/**
 * In-place iterative radix-2 FFT of a power-of-two length: the one FFT of the project (the echo
 * estimator's band energies, the tests' spectral centroid). Twiddle factors are computed once per
 * length and kept.
 */
const twiddles = new Map<number, { cos: Float64Array; sin: Float64Array }>();

function twiddlesFor(n: number): { cos: Float64Array; sin: Float64Array } {
  let t = twiddles.get(n);
  if (!t) {
    t = { cos: new Float64Array(n / 2), sin: new Float64Array(n / 2) };
    for (let k = 0; k < n / 2; k++) {
      t.cos[k] = Math.cos((-2 * Math.PI * k) / n);
      t.sin[k] = Math.sin((-2 * Math.PI * k) / n);
    }
    twiddles.set(n, t);
  }
  return t;
}

/** Transforms `re` + i·`im` in place (forward, unscaled). Their length must be a power of two. */
export function fft(re: Float64Array, im: Float64Array): void {
  const n = re.length;
  if (n !== im.length || (n & (n - 1)) !== 0) throw new RangeError(`FFT length ${n} is not a power of two`);
  for (let i = 1, j = 0; i < n; i++) {
    let bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) {
      const r = re[i]!;
      re[i] = re[j]!;
      re[j] = r;
      const m = im[i]!;
      im[i] = im[j]!;
      im[j] = m;
    }
  }
  const { cos, sin } = twiddlesFor(n);
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
