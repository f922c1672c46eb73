/**
 * G.711 mu-law and A-law, the codecs of every phone gateway, by table lookup: one byte per sample each way.
 *
 * Decoding follows ITU-T G.711 (each code to the midpoint of its quantization interval, on the 16-bit
 * scale): bit-exact with ffmpeg, the ITU-T G.191 reference software and Sun's `g711.c` for all 256 codes.
 *
 * Encoding follows the ITU-T G.191 reference software (`g711.c`, `ulaw_compress` / `alaw_compress`):
 * the G.711 decision levels, with a negative sample x read as the magnitude -x - 1 (ones' complement),
 * so that x and -1 - x always get mirrored codes. That reference reads only the top 14 bits of a
 * sample for mu-law and the top 12 for A-law, so one 16 384-entry table indexed by the sample's top 14
 * bits is exact for both. Other encoders settle the samples on a decision level differently, and pick
 * the neighbouring level there: the classic Sun `g711.c` negates negative samples instead (mu-law
 * differs on 127 of the 65 536 inputs, A-law on 896, plus its slip that sends -7..-1 to -248), and
 * ffmpeg rounds to the nearest level (964 inputs each). Every decoder reads all of these codes alike.
 */

/** Mu-law code of a zero sample: what a gateway plays as silence. */
export const MULAW_SILENCE = 0xff;
/** A-law code of a zero sample (0x80 with its even bits toggled). */
export const ALAW_SILENCE = 0xd5;

/** Mu-law's bias: 33 on the 14-bit scale, which makes the segment edges powers of two. */
const MULAW_BIAS = 0x84;
/** Largest biased 14-bit mu-law magnitude: 8159 + 33; louder samples clip to the top code. */
const MULAW_BIASED_MAX = 0x1fff;
/** A-law inverts every even bit of the code, so that idle lines still carry transitions. */
const ALAW_TOGGLE = 0x55;
const SIGN_BIT = 0x80;
/** The encode tables read a sample's top 14 bits: `(sample >> 2) & ENCODE_INDEX_MASK`. */
const ENCODE_INDEX_BITS = 14;
const ENCODE_INDEX_MASK = (1 << ENCODE_INDEX_BITS) - 1;

function ulawDecode(code: number): number {
  const u = ~code & 0xff;
  const exponent = (u >> 4) & 0x07;
  const magnitude = ((((u & 0x0f) << 3) + MULAW_BIAS) << exponent) - MULAW_BIAS;
  return u & SIGN_BIT ? -magnitude : magnitude;
}

function alawDecode(code: number): number {
  const a = code ^ ALAW_TOGGLE;
  const exponent = (a >> 4) & 0x07;
  const mantissa = a & 0x0f;
  const magnitude = exponent === 0 ? (mantissa << 4) + 8 : (((mantissa + 16) << 4) + 8) << (exponent - 1);
  return a & SIGN_BIT ? magnitude : -magnitude;
}

/** Index of the segment holding `value`, segments starting at `firstEdge` and doubling: 0 below it. */
function segmentOf(value: number, firstEdge: number): number {
  let segment = 0;
  for (let edge = firstEdge; value >= edge && segment < 7; edge <<= 1) segment++;
  return segment;
}

/** `sample` (int16) to its mu-law code, as G.191's `ulaw_compress`. */
function ulawEncode(sample: number): number {
  const magnitude14 = (sample < 0 ? ~sample : sample) >> 2;
  const biased = Math.min(magnitude14 + (MULAW_BIAS >> 2), MULAW_BIASED_MAX);
  const segment = segmentOf(biased, 64);
  const mantissa = (biased >> (segment + 1)) & 0x0f;
  const code = ~((segment << 4) | mantissa) & 0x7f;
  return sample < 0 ? code : code | SIGN_BIT;
}

/** `sample` (int16) to its A-law code, as G.191's `alaw_compress`. */
function alawEncode(sample: number): number {
  const magnitude12 = (sample < 0 ? ~sample : sample) >> 4;
  const segment = segmentOf(magnitude12, 16);
  const mantissa = (magnitude12 >> Math.max(segment - 1, 0)) & 0x0f;
  const code = (segment << 4) | mantissa;
  return (sample < 0 ? code : code | SIGN_BIT) ^ ALAW_TOGGLE;
}

function buildDecodeTable(decode: (code: number) => number): Int16Array {
  const table = new Int16Array(256);
  for (let code = 0; code < 256; code++) table[code] = decode(code);
  return table;
}

function buildEncodeTable(encode: (sample: number) => number): Uint8Array {
  const table = new Uint8Array(1 << ENCODE_INDEX_BITS);
  // Entry i stands for the samples whose top 14 bits are i: the lowest of them, sign-extended.
  for (let i = 0; i < table.length; i++) table[i] = encode((i << 18) >> 16);
  return table;
}

const MULAW_TO_LINEAR = buildDecodeTable(ulawDecode);
const ALAW_TO_LINEAR = buildDecodeTable(alawDecode);
const LINEAR_TO_MULAW = buildEncodeTable(ulawEncode);
const LINEAR_TO_ALAW = buildEncodeTable(alawEncode);

/** `out` cut to `length`: itself when it already fits (no allocation), else a view. */
function fit<T extends Uint8Array | Int16Array>(
  out: T | undefined,
  length: number,
  create: (n: number) => T,
): T {
  if (out === undefined) return create(length);
  if (out.length < length) throw new RangeError(`output holds ${out.length} samples, need ${length}`);
  return out.length === length ? out : (out.subarray(0, length) as T);
}

const newBytes = (n: number): Uint8Array => new Uint8Array(n);
const newSamples = (n: number): Int16Array => new Int16Array(n);

function encodeWith(table: Uint8Array, samples: Int16Array, out: Uint8Array | undefined): Uint8Array {
  const n = samples.length;
  const codes = fit(out, n, newBytes);
  for (let i = 0; i < n; i++) codes[i] = table[(samples[i]! >> 2) & ENCODE_INDEX_MASK]!;
  return codes;
}

function decodeWith(table: Int16Array, codes: Uint8Array, out: Int16Array | undefined): Int16Array {
  const n = codes.length;
  const samples = fit(out, n, newSamples);
  for (let i = 0; i < n; i++) samples[i] = table[codes[i]!]!;
  return samples;
}

/**
 * Mu-law codes of `samples`. With `out` (at least as long as `samples`), writes into it and allocates
 * nothing when the lengths are equal; a longer `out` gets its first `samples.length` bytes written and
 * a view of them returned.
 */
export function encodeMulaw(samples: Int16Array, out?: Uint8Array): Uint8Array {
  return encodeWith(LINEAR_TO_MULAW, samples, out);
}

/** Samples of mu-law `codes`; `out` as for {@link encodeMulaw}. */
export function decodeMulaw(codes: Uint8Array, out?: Int16Array): Int16Array {
  return decodeWith(MULAW_TO_LINEAR, codes, out);
}

/** A-law codes of `samples`; `out` as for {@link encodeMulaw}. */
export function encodeAlaw(samples: Int16Array, out?: Uint8Array): Uint8Array {
  return encodeWith(LINEAR_TO_ALAW, samples, out);
}

/** Samples of A-law `codes`; `out` as for {@link encodeMulaw}. */
export function decodeAlaw(codes: Uint8Array, out?: Int16Array): Int16Array {
  return decodeWith(ALAW_TO_LINEAR, codes, out);
}
