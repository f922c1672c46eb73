/**
 * A voice's engine settings: made from samples (`POST /v1/voices/add`), moved by a request's
 * `voice_settings`, and read back from voices stored before engines had names. Each engine's own
 * mapping is in its module (`flite-params.ts`, `espeak-params.ts`).
 */
import type { EspeakVoiceParams, FliteVoiceParams, VoiceParams } from '../engine/voice-params.js';
import { VOICE_SETTING_RANGES, type VoiceSettings } from '../../speech/limits.js';
import type { SpeechAnalysis } from './analyze.js';
import { deriveEspeakParams } from './espeak-params.js';
import { deriveFliteParams, fliteFromEspeak } from './flite-params.js';

/** A voice's settings: those of the engine that speaks it, and eSpeak's for the languages it lacks. */
export interface VoiceEngines {
  readonly engine: VoiceParams;
  readonly espeak?: EspeakVoiceParams | undefined;
}

/** Both engines' settings for a voice made from these samples: same F0, same pace. */
export function deriveVoiceParams(analyses: readonly SpeechAnalysis[]): VoiceEngines {
  return { engine: deriveFliteParams(analyses), espeak: deriveEspeakParams(analyses) };
}

const FLITE_MIN_RATE = 0.5;
const FLITE_MAX_RATE = 2.2;
/** VITS stays intelligible over about this span of its length scale. */
const ONNX_MIN_RATE = 0.5;
const ONNX_MAX_RATE = 2;

/**
 * How the vendor's settings move a parametric voice: `speed` scales the speaking rate; lower
 * `stability` and higher `style` widen the pitch range (livelier intonation). `similarity_boost` and
 * `use_speaker_boost` are accepted and have no effect here. A neural (ONNX) voice takes `speed` only:
 * its intonation is the model's.
 */
export function applySettings<P extends VoiceParams>(base: P, settings: VoiceSettings): P {
  const speed = settings.speed ?? VOICE_SETTING_RANGES.speed.default;
  const stability = settings.stability ?? VOICE_SETTING_RANGES.stability.default;
  const style = settings.style ?? VOICE_SETTING_RANGES.style.default;
  if (base.engine === 'onnx')
    return { ...base, rate: Math.min(ONNX_MAX_RATE, Math.max(ONNX_MIN_RATE, base.rate * speed)) };
  if (base.engine === 'espeak-ng') {
    const range = base.range * (1.5 - stability) + style * 30;
    return {
      ...base,
      rateWpm: Math.round(Math.min(450, Math.max(80, base.rateWpm * speed))),
      range: Math.round(Math.min(99, Math.max(0, range))),
    };
  }
  const flite: FliteVoiceParams = base;
  return {
    ...flite,
    rate: Math.min(FLITE_MAX_RATE, Math.max(FLITE_MIN_RATE, flite.rate * speed)),
    // The same movement as eSpeak's 0–99 range, in proportion to the voice's own spread (50 ↔ 1×).
    f0RangeHz: Math.min(flite.f0Hz, Math.max(0, flite.f0RangeHz * (1.5 - stability + (style * 30) / 50))),
  } as P;
}

function isFlite(raw: Record<string, unknown>): boolean {
  return (
    raw['engine'] === 'flite' &&
    typeof raw['voice'] === 'string' &&
    typeof raw['f0Hz'] === 'number' &&
    typeof raw['f0RangeHz'] === 'number' &&
    typeof raw['rate'] === 'number'
  );
}

/** eSpeak settings, with `engine: 'espeak-ng'` or (stored before engines had names) without. */
function isEspeak(raw: Record<string, unknown>): boolean {
  return (
    (raw['engine'] === 'espeak-ng' || raw['engine'] === undefined) &&
    typeof raw['language'] === 'string' &&
    typeof raw['variant'] === 'string' &&
    typeof raw['pitch'] === 'number' &&
    typeof raw['range'] === 'number' &&
    typeof raw['rateWpm'] === 'number'
  );
}

function asRecord(raw: unknown): Record<string, unknown> | undefined {
  return typeof raw === 'object' && raw !== null ? (raw as Record<string, unknown>) : undefined;
}

/**
 * A stored voice's `engine` and `espeak` as this version reads them; undefined when `engine` is not
 * settings of a known engine. Voices stored before engines had names hold eSpeak settings with no
 * `engine` field: English ones made from the stock variants are given to Flite at the pitch and pace
 * those settings were calibrated to (Flite speaks English far more clearly), and eSpeak keeps them
 * for other languages.
 */
export function readStoredEngines(engine: unknown, espeak: unknown): VoiceEngines | undefined {
  const primary = asRecord(engine);
  const alternate = asRecord(espeak);
  const stored =
    alternate && isEspeak(alternate)
      ? ({ ...alternate, engine: 'espeak-ng' } as EspeakVoiceParams)
      : undefined;
  if (!primary) return undefined;
  if (isFlite(primary))
    return { engine: primary as unknown as FliteVoiceParams, ...(stored ? { espeak: stored } : {}) };
  if (!isEspeak(primary)) return undefined;
  const params = { ...primary, engine: 'espeak-ng' } as EspeakVoiceParams;
  if (primary['engine'] === undefined && /^en(-|$)/.test(params.language)) {
    const flite = fliteFromEspeak(params);
    if (flite) return { engine: flite, espeak: stored ?? params };
  }
  return { engine: params, espeak: stored ?? params };
}
