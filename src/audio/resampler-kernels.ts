/**
 * The inner loops of the resampler: the general polyphase loop and the dedicated third-band and
 * half-band ones, with the sums they share. Each output is summed in a fixed order, whatever the chunking.
 */

const INT16_MAX = 32767;
const INT16_MIN = -32768;
/** Shifts an in-range sum to positive, plus one half: truncating it then rounds half up. */
const ROUND_OFFSET = 32768.5;

/** How the inner loop computes one phase. */
export const GENERAL = 0;
/** Taps first..last mirror each other: add the mirrored inputs first, half the multiplications. */
export const SYMMETRIC = 1;
/** A single tap of 1 (first = last): the output is a copy of one input sample. */
export const COPY = 2;

export interface PhaseShapes {
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
export type Loop = (
  | {
      /** Any table, phase by phase (`phaseShapes`). */
      readonly kind: 'general';
      readonly shapes: PhaseShapes;
    }
  | {
      /**
       * L = 1, M = 3 and a single symmetric phase, zero at every third tap from its centre (a
       * third-band filter: 24 → 8 kHz): the centre tap, then the pairs of mirrored taps at 1, 2, 4, 5…
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

export function chooseLoop(table: Float64Array, taps: number, up: number, down: number): Loop {
  const shapes = phaseShapes(table, taps);
  const { kind, first, last } = shapes;
  // The third-band loop computes outputs in pairs 3 inputs apart, sharing the inputs of both: M = 3.
  if (up === 1 && down === 3 && kind[0] === SYMMETRIC && (last[0]! - first[0]!) % 2 === 0) {
    const centre = (first[0]! + last[0]!) / 2;
    const reach = centre - first[0]!;
    const pairs: number[] = [];
    let thirdBand = true;
    for (let d = 1; d <= reach; d++) {
      const c = table[centre + d]!;
      if (d % 3 === 0) thirdBand &&= c === 0;
      else pairs.push(c);
    }
    if (thirdBand) {
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
export function toInt16(acc: number): number {
  return acc >= INT16_MAX ? INT16_MAX : acc <= INT16_MIN ? INT16_MIN : ((acc + ROUND_OFFSET) | 0) + INT16_MIN;
}

/**
 * Σ c[k] · (x[lo + k] + x[hi − k]) over the pairs, in one running sum: the half-band loop's phase 1
 * (which `symmetricSums` computes four at a time).
 */
export function symmetricSum(c: Float64Array, x: Float64Array, lo: number, hi: number): number {
  const pairs = c.length;
  let a = 0;
  for (let k = 0; k < pairs; k++) a += c[k]! * (x[lo + k]! + x[hi - k]!);
  return a;
}

/**
 * The third-band loop's output around x[centre]: the centre tap plus the pairs at distances 1, 2, 4,
 * 5, 7, 8… (two of every three), in four sums.
 */
export function thirdBandSum(
  c: Float64Array,
  centreCoefficient: number,
  x: Float64Array,
  centre: number,
): number {
  const pairs = c.length;
  let a0 = centreCoefficient * x[centre]!;
  let a1 = 0;
  let a2 = 0;
  let a3 = 0;
  // Pairs k…k+3 are at distances d, d + 1, d + 3, d + 4: x[lo], x[lo − 1]… and x[hi], x[hi + 1]…
  let lo = centre - 1;
  let hi = centre + 1;
  let k = 0;
  for (; k + 3 < pairs; k += 4, lo -= 6, hi += 6) {
    a0 += c[k]! * (x[lo]! + x[hi]!);
    a1 += c[k + 1]! * (x[lo - 1]! + x[hi + 1]!);
    a2 += c[k + 2]! * (x[lo - 3]! + x[hi + 3]!);
    a3 += c[k + 3]! * (x[lo - 4]! + x[hi + 4]!);
  }
  if (k < pairs) a0 += c[k]! * (x[lo]! + x[hi]!);
  if (k + 1 < pairs) a1 += c[k + 1]! * (x[lo - 1]! + x[hi + 1]!);
  if (k + 2 < pairs) a2 += c[k + 2]! * (x[lo - 3]! + x[hi + 3]!);
  return a0 + a1 + (a2 + a3);
}

/**
 * `thirdBandSum` around x[centre] and x[centre + 3] (the next output of a decimation by 3) at once,
 * into `sums`: the second sum's input d taps to the left is the first's d − 3 taps to the left, and
 * d taps to the right the first's d + 3, so that each input is loaded once for both. Each sum is added
 * up exactly as `thirdBandSum` adds it, to the bit.
 */
export function thirdBandSums(
  c: Float64Array,
  centreCoefficient: number,
  x: Float64Array,
  centre: number,
  sums: Float64Array,
): void {
  const pairs = c.length;
  let a0 = centreCoefficient * x[centre]!;
  let a1 = 0;
  let a2 = 0;
  let a3 = 0;
  let b0 = centreCoefficient * x[centre + 3]!;
  let b1 = 0;
  let b2 = 0;
  let b3 = 0;
  let lo = centre - 1;
  let hi = centre + 1;
  // Carried over from the previous step: the second sum's left inputs and the first sum's right ones.
  let secondLeft0 = x[lo + 3]!;
  let secondLeft1 = x[lo + 2]!;
  let firstRight0 = x[hi]!;
  let firstRight1 = x[hi + 1]!;
  let k = 0;
  for (; k + 3 < pairs; k += 4, lo -= 6, hi += 6) {
    const c0 = c[k]!;
    const c1 = c[k + 1]!;
    const c2 = c[k + 2]!;
    const c3 = c[k + 3]!;
    const left0 = x[lo]!;
    const left1 = x[lo - 1]!;
    const left3 = x[lo - 3]!;
    const left4 = x[lo - 4]!;
    const right3 = x[hi + 3]!;
    const right4 = x[hi + 4]!;
    const right6 = x[hi + 6]!;
    const right7 = x[hi + 7]!;
    a0 += c0 * (left0 + firstRight0);
    a1 += c1 * (left1 + firstRight1);
    a2 += c2 * (left3 + right3);
    a3 += c3 * (left4 + right4);
    b0 += c0 * (secondLeft0 + right3);
    b1 += c1 * (secondLeft1 + right4);
    b2 += c2 * (left0 + right6);
    b3 += c3 * (left1 + right7);
    secondLeft0 = left3;
    secondLeft1 = left4;
    firstRight0 = right6;
    firstRight1 = right7;
  }
  if (k < pairs) {
    a0 += c[k]! * (x[lo]! + x[hi]!);
    b0 += c[k]! * (x[lo + 3]! + x[hi + 3]!);
  }
  if (k + 1 < pairs) {
    a1 += c[k + 1]! * (x[lo - 1]! + x[hi + 1]!);
    b1 += c[k + 1]! * (x[lo + 2]! + x[hi + 4]!);
  }
  if (k + 2 < pairs) {
    a2 += c[k + 2]! * (x[lo - 3]! + x[hi + 3]!);
    b2 += c[k + 2]! * (x[lo]! + x[hi + 6]!);
  }
  sums[0] = a0 + a1 + (a2 + a3);
  sums[1] = b0 + b1 + (b2 + b3);
}

/**
 * `symmetricSum` over (lo + q, hi + q) for q = 0…3 (the next four outputs of the half-band's phase 1)
 * at once, into `sums`: the four sums slide over the same inputs, so each step loads one new input on
 * either side and one coefficient for four multiply-adds. Each sum is added up exactly as
 * `symmetricSum` adds it, to the bit.
 */
export function symmetricSums(
  c: Float64Array,
  x: Float64Array,
  lo: number,
  hi: number,
  sums: Float64Array,
): void {
  const pairs = c.length;
  let a0 = 0;
  let a1 = 0;
  let a2 = 0;
  let a3 = 0;
  // At pair k, sum q adds x[lo + k + q] (left q) and x[hi − k + q] (right q).
  let left0 = x[lo]!;
  let left1 = x[lo + 1]!;
  let left2 = x[lo + 2]!;
  let left3 = x[lo + 3]!;
  let right0 = x[hi]!;
  let right1 = x[hi + 1]!;
  let right2 = x[hi + 2]!;
  let right3 = x[hi + 3]!;
  let k = 0;
  // Two pairs a step, so that the window moves half as often.
  for (; k + 1 < pairs; k += 2) {
    const c0 = c[k]!;
    const c1 = c[k + 1]!;
    const left4 = x[lo + k + 4]!;
    const rightBefore = x[hi - k - 1]!;
    a0 += c0 * (left0 + right0);
    a1 += c0 * (left1 + right1);
    a2 += c0 * (left2 + right2);
    a3 += c0 * (left3 + right3);
    a0 += c1 * (left1 + rightBefore);
    a1 += c1 * (left2 + right0);
    a2 += c1 * (left3 + right1);
    a3 += c1 * (left4 + right2);
    left0 = left2;
    left1 = left3;
    left2 = left4;
    left3 = x[lo + k + 5]!;
    right3 = right1;
    right2 = right0;
    right1 = rightBefore;
    right0 = x[hi - k - 2]!;
  }
  if (k < pairs) {
    const ck = c[k]!;
    a0 += ck * (left0 + right0);
    a1 += ck * (left1 + right1);
    a2 += ck * (left2 + right2);
    a3 += ck * (left3 + right3);
  }
  sums[0] = a0;
  sums[1] = a1;
  sums[2] = a2;
  sums[3] = a3;
}

/** Writes `s` to `out` at `o`, twice for stereo; returns the next position. */
export function emit(out: Int16Array, o: number, s: number, channels: 1 | 2): number {
  out[o] = s;
  if (channels === 1) return o + 1;
  out[o + 1] = s;
  return o + 2;
}
