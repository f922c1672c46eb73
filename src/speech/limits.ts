/**
 * Input limits shared by the client (which validates before sending) and the local service (which
 * answers 400). One table, so the two sides cannot drift apart.
 */
export const TEXT_MIN_CHARS = 1;
export const TEXT_MAX_CHARS = 5000;
export const DEFAULT_MODEL_ID = 'service_multilingual_v1';

/** Inner fields of `voice_settings` (docs/speech-service.md): all optional and nullable. */
export interface VoiceSettings {
  stability?: number | null;
  similarity_boost?: number | null;
  style?: number | null;
  use_speaker_boost?: boolean | null;
  speed?: number | null;
}

export const VOICE_SETTING_RANGES = {
  stability: { min: 0, max: 1, default: 0.5 },
  similarity_boost: { min: 0, max: 1, default: 0.75 },
  style: { min: 0, max: 1, default: 0 },
  speed: { min: 0.7, max: 1.2, default: 1 },
} as const;

export interface FieldProblem {
  /** The offending field, in the wire's snake_case, e.g. `voice_settings.speed`. */
  readonly field: string;
  readonly message: string;
}

/** Text length in characters as the service counts them (Unicode code points). */
export function textLength(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

export function checkText(text: unknown): FieldProblem | undefined {
  if (typeof text !== 'string') return { field: 'text', message: 'text must be a string' };
  const n = textLength(text);
  if (n < TEXT_MIN_CHARS || text.trim().length === 0)
    return { field: 'text', message: 'text must not be empty' };
  if (n > TEXT_MAX_CHARS)
    return { field: 'text', message: `text is ${n} characters; the limit is ${TEXT_MAX_CHARS}` };
  return undefined;
}

/** The most text either side of a request (`previous_text`, `next_text`) a request may carry. */
export const CONTEXT_MAX_CHARS = 1000;

/** `previous_text` or `next_text`: absent (undefined or null), or a string of at most `CONTEXT_MAX_CHARS`. */
export function checkContext(field: 'previous_text' | 'next_text', value: unknown): FieldProblem | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') return { field, message: `${field} must be a string` };
  const n = textLength(value);
  if (n > CONTEXT_MAX_CHARS)
    return { field, message: `${field} is ${n} characters; the limit is ${CONTEXT_MAX_CHARS}` };
  return undefined;
}

export function checkModelId(modelId: unknown): FieldProblem | undefined {
  if (modelId === undefined) return undefined;
  if (typeof modelId !== 'string' || modelId.length < 1)
    return { field: 'model_id', message: 'model_id must be a non-empty string' };
  return undefined;
}

export function checkVoiceSettings(settings: unknown): FieldProblem | undefined {
  if (settings === undefined || settings === null) return undefined;
  if (typeof settings !== 'object' || Array.isArray(settings))
    return { field: 'voice_settings', message: 'voice_settings must be an object' };
  const s = settings as Record<string, unknown>;
  for (const [name, range] of Object.entries(VOICE_SETTING_RANGES)) {
    const v = s[name];
    if (v === undefined || v === null) continue;
    if (typeof v !== 'number' || !Number.isFinite(v))
      return { field: `voice_settings.${name}`, message: `voice_settings.${name} must be a number` };
    if (v < range.min || v > range.max)
      return {
        field: `voice_settings.${name}`,
        message: `voice_settings.${name} must be between ${range.min} and ${range.max}, got ${v}`,
      };
  }
  const boost = s['use_speaker_boost'];
  if (boost !== undefined && boost !== null && typeof boost !== 'boolean')
    return {
      field: 'voice_settings.use_speaker_boost',
      message: 'voice_settings.use_speaker_boost must be a boolean',
    };
  return undefined;
}
