/**
 * The barge-in detector of each call, from the process's one detector source (the VAD workers, or a
 * model in this thread): at the gateway's rate when the model runs at it (8 or 16 kHz), else resampled
 * to 16 kHz first (jambonz or Telnyx at 24 kHz).
 */
import { Resampler } from '../../src/audio/resampler.js';
import type { DetectorSource, VadSampleRate } from '../../src/barge-in/index.js';
import type { WireFormat } from '../../src/audio/framer.js';
import type { DetectorHooks, OnsetDetector } from './caller-audio.js';

export interface BargeInSettings {
  minSpeechMs: number;
  minSpeechWhileAudibleMs: number;
  /** Tell the caller from the bot's echo, with the bot's played audio as the reference. */
  echo?: boolean | undefined;
  /** Silence that ends a caller's turn (a relay's prompts), ms. */
  endOfTurnMs?: number | undefined;
}

const MODEL_RATES: ReadonlySet<number> = new Set([8000, 16_000]);
const FALLBACK_RATE: VadSampleRate = 16_000;

export function bargeInDetectors(
  source: DetectorSource,
  settings: BargeInSettings,
): (inbound: WireFormat, hooks?: DetectorHooks) => OnsetDetector {
  return (inbound, hooks) => {
    const direct = MODEL_RATES.has(inbound.sampleRate);
    const sampleRate = direct ? (inbound.sampleRate as VadSampleRate) : FALLBACK_RATE;
    const { endOfTurnMs, echo, ...rest } = settings;
    const detector = source.detector({
      sampleRate,
      ...rest,
      echo: echo === true,
      ...(endOfTurnMs === undefined ? {} : { endOfTurnMs }),
      onTurnEnd: hooks?.onTurnEnd,
      onSilence: hooks?.onSilence,
    });
    const referenceRate = echo === true ? sampleRate : undefined;
    if (direct)
      return {
        referenceRate,
        push: (samples, info) => detector.push(samples, info),
        reset: () => detector.reset(),
        close: () => detector.close(),
      };
    const resampler = new Resampler({ inputRate: inbound.sampleRate, outputRate: FALLBACK_RATE });
    return {
      referenceRate,
      push: (samples, info) => {
        const resampled = resampler.push(samples);
        return detector.push(resampled, { ...info, reference: fitted(info.reference, resampled.length) });
      },
      reset: () => {
        resampler.reset();
        detector.reset();
      },
      close: () => detector.close(),
    };
  };
}

/** The reference cut or padded to `n` samples: the resampler's output length varies by a sample. */
function fitted(reference: Int16Array | undefined, n: number): Int16Array | undefined {
  if (!reference || reference.length === n) return reference;
  const out = new Int16Array(n);
  out.set(reference.subarray(0, n));
  return out;
}
