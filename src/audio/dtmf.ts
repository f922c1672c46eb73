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
