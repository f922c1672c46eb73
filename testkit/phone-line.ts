/**
 * Speech as a caller's turn arrives from a phone line: at 8 kHz through G.711 μ-law, with white line
 * noise at a chosen SNR (none: digital silence around the speech, as a synthetic or muted line has),
 * and the margins a turn recorder keeps around it (src/relay/turn-recorder.ts: 300 ms of pre-roll, a
 * short tail). Shared by the recognition tests and the menu benchmark.
 */
import { decodeMulaw, encodeMulaw } from '../src/audio/g711.js';
import { resampleWhole } from '../src/audio/resampler.js';
import { seeded } from './random.js';

export const LINE_RATE = 8000;

export interface LineOptions {
  /** Signal-to-noise ratio of the speech to the line's noise (dB); undefined: no noise. */
  snrDb?: number | undefined;
  /** Seeds the noise. */
  seed?: number;
  /** Audio before the speech (ms). Default 300. */
  leadMs?: number;
  /** Audio after it (ms). Default 300. */
  tailMs?: number;
}

function rms(x: Int16Array): number {
  let sum = 0;
  for (const s of x) sum += s * s;
  return Math.sqrt(sum / Math.max(1, x.length));
}

/** `speech` (mono, at `sampleRate`) as the line delivers it: 8 kHz samples decoded from μ-law. */
export function onPhoneLine(speech: Int16Array, sampleRate: number, options: LineOptions = {}): Int16Array {
  const voice = sampleRate === LINE_RATE ? speech : resampleWhole(speech, sampleRate, LINE_RATE);
  const lead = Math.round(((options.leadMs ?? 300) * LINE_RATE) / 1000);
  const tail = Math.round(((options.tailMs ?? 300) * LINE_RATE) / 1000);
  const out = new Int16Array(lead + voice.length + tail);
  out.set(voice, lead);
  if (options.snrDb !== undefined) {
    const random = seeded(options.seed ?? 1);
    // Uniform noise in [-a, a] has RMS a / √3.
    const amplitude = (rms(voice) / 10 ** (options.snrDb / 20)) * Math.sqrt(3);
    for (let i = 0; i < out.length; i++)
      out[i] = Math.max(-32768, Math.min(32767, Math.round(out[i]! + (random() * 2 - 1) * amplitude)));
  }
  return decodeMulaw(encodeMulaw(out));
}
