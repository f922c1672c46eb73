/**
 * DTMF as audio (ITU-T Q.23 tone pairs), for sending key presses in-band through any line that carries
 * the bot's voice: every gateway's media stream can, where none has a message for it. Each digit is a
 * 100 ms tone pair with 5 ms ramps (no clicks), then 100 ms of silence; `w` is a 500 ms pause. Q.24
 * receivers need ≥ 40 ms of tone and pause: these are well past it, and the levels (two tones at
 * −9 dBFS each) sit in the range receivers accept.
 */
const LOW: Readonly<Record<string, number>> = {};
const HIGH: Readonly<Record<string, number>> = {};
const ROWS = [697, 770, 852, 941];
const COLUMNS = [1209, 1336, 1477, 1633];
const KEYS = ['123A', '456B', '789C', '*0#D'];
for (const [r, keys] of KEYS.entries())
  for (const [c, key] of [...keys].entries()) {
    (LOW as Record<string, number>)[key] = ROWS[r]!;
    (HIGH as Record<string, number>)[key] = COLUMNS[c]!;
  }

export const DTMF_TONE_MS = 100;
export const DTMF_GAP_MS = 100;
export const DTMF_PAUSE_MS = 500;
const RAMP_MS = 5;
/** Each tone's peak: −9 dBFS, so the pair never clips. */
const AMPLITUDE = 32767 * 0.355;

/** Whether every character is a DTMF key (0-9, *, #, A-D) or `w` (a pause). */
export function isDtmfString(digits: string): boolean {
  return /^[0-9*#A-Dw]+$/.test(digits);
}

/** The tones of `digits` as Int16 samples at `sampleRate`; throws on a character that is not a key. */
export function dtmfTones(digits: string, sampleRate: number): Int16Array {
  if (!isDtmfString(digits)) throw new RangeError(`not DTMF digits: ${JSON.stringify(digits.slice(0, 40))}`);
  const per = (ms: number): number => Math.round((ms * sampleRate) / 1000);
  let total = 0;
  for (const d of digits) total += d === 'w' ? per(DTMF_PAUSE_MS) : per(DTMF_TONE_MS) + per(DTMF_GAP_MS);
  const out = new Int16Array(total);
  const ramp = per(RAMP_MS);
  const tone = per(DTMF_TONE_MS);
  let at = 0;
  for (const d of digits) {
    if (d === 'w') {
      at += per(DTMF_PAUSE_MS);
      continue;
    }
    const low = (2 * Math.PI * LOW[d]!) / sampleRate;
    const high = (2 * Math.PI * HIGH[d]!) / sampleRate;
    for (let i = 0; i < tone; i++) {
      const gain = Math.min(1, i / ramp, (tone - 1 - i) / ramp);
      out[at + i] = Math.round(AMPLITUDE * gain * (Math.sin(low * i) + Math.sin(high * i)));
    }
    at += tone + per(DTMF_GAP_MS);
  }
  return out;
}

/** A key's tone as heard: blocks of this length (ms), one every `TONE_HOP_MS`, are judged one by one. */
const TONE_BLOCK_MS = 16;
const TONE_HOP_MS = 8;
/**
 * A block holds a key's tone when its strongest row frequency and its strongest column frequency
 * together hold this share of its energy, neither under `TONE_MIN_SHARE` (a twist of up to 10 dB, where
 * Q.24 asks receivers for 4–8). Speech spreads its energy over many harmonics and formants; the bot's
 * echo and the line's noise under a key are some 10 dB under its tones.
 */
const TONE_SHARE = 0.6;
const TONE_MIN_SHARE = 0.06;

/**
 * Finds DTMF key tones in a caller's audio (for barge-in: a key pressed over the bot is not the caller
 * talking). Goertzel powers at the eight Q.23 frequencies over 16 ms blocks, 8 ms apart: a 16 ms block
 * is wide enough that a key ±1.5 % off frequency (Q.24) keeps most of its power, and narrow enough that
 * the tone's first and last 16 ms are found.
 */
export class DtmfToneDetector {
  private readonly block: number;
  private readonly hop: number;
  private readonly coefficients: Float64Array;

  constructor(sampleRate: number) {
    this.block = Math.round((sampleRate * TONE_BLOCK_MS) / 1000);
    this.hop = Math.round((sampleRate * TONE_HOP_MS) / 1000);
    this.coefficients = Float64Array.from(
      [...ROWS, ...COLUMNS],
      (f) => 2 * Math.cos((2 * Math.PI * f) / sampleRate),
    );
  }

  /** Whether any 16 ms block of `samples` holds a key's tone. */
  holdsTone(samples: Int16Array): boolean {
    for (let start = 0; start + this.block <= samples.length; start += this.hop)
      if (this.blockHoldsTone(samples, start)) return true;
    return false;
  }

  private blockHoldsTone(samples: Int16Array, start: number): boolean {
    const n = this.block;
    let energy = 0;
    for (let i = start; i < start + n; i++) energy += samples[i]! * samples[i]!;
    if (energy === 0) return false;
    let row = 0;
    let column = 0;
    for (let k = 0; k < this.coefficients.length; k++) {
      const c = this.coefficients[k]!;
      let s1 = 0;
      let s2 = 0;
      for (let i = start; i < start + n; i++) {
        const s0 = samples[i]! + c * s1 - s2;
        s2 = s1;
        s1 = s0;
      }
      // A sine of amplitude A at the frequency gives (A·n/2)²; the block's energy is A²·n/2.
      const share = (2 * (s1 * s1 + s2 * s2 - c * s1 * s2)) / (n * energy);
      if (k < ROWS.length) row = Math.max(row, share);
      else column = Math.max(column, share);
    }
    return row + column >= TONE_SHARE && Math.min(row, column) >= TONE_MIN_SHARE;
  }
}
