/**
 * A speech request as callers write it (camelCase), checked against the shared limits before anything
 * goes on the wire, and translated to the service's snake_case JSON.
 */
import { SpeechInputError } from './errors.js';
import { DEFAULT_OUTPUT_FORMAT, isOutputFormat, type OutputFormat } from './formats.js';
import {
  checkContext,
  checkModelId,
  checkText,
  checkVoiceSettings,
  textLength,
  type FieldProblem,
  type VoiceSettings,
} from './limits.js';

export interface SpeechVoiceSettings {
  stability?: number;
  similarityBoost?: number;
  style?: number;
  useSpeakerBoost?: boolean;
  speed?: number;
}

export interface SpeechRequest {
  voiceId: string;
  text: string;
  /** Omitted on the wire when unset: the service picks its default model. */
  modelId?: string;
  /** Default `wav_24000`, as the service's. */
  outputFormat?: OutputFormat;
  voiceSettings?: SpeechVoiceSettings;
  /**
   * The text spoken before this request's and the text after it (`previous_text`, `next_text`): the
   * service keeps the prosody of one sentence across requests cut from it. Omitted when unset.
   */
  previousText?: string;
  nextText?: string;
}

/** What a checked request turns into. */
export interface PreparedSpeech {
  readonly voiceId: string;
  readonly outputFormat: OutputFormat;
  readonly body: string;
  /** The text's length in code points (as the service counts characters) and in UTF-16 units. */
  readonly textChars: number;
  readonly textUnits: number;
}

function toWireSettings(settings: SpeechVoiceSettings): VoiceSettings {
  const wire: VoiceSettings = {};
  if (settings.stability !== undefined) wire.stability = settings.stability;
  if (settings.similarityBoost !== undefined) wire.similarity_boost = settings.similarityBoost;
  if (settings.style !== undefined) wire.style = settings.style;
  if (settings.useSpeakerBoost !== undefined) wire.use_speaker_boost = settings.useSpeakerBoost;
  if (settings.speed !== undefined) wire.speed = settings.speed;
  return wire;
}

function fail(problem: FieldProblem): never {
  throw new SpeechInputError(problem.field, problem.message);
}

/** Checks `req` and builds its wire form; throws `SpeechInputError` naming the first bad field. */
export function prepareSpeech(req: SpeechRequest): PreparedSpeech {
  if (typeof req !== 'object' || req === null)
    fail({ field: 'body', message: 'the request must be an object' });
  if (typeof req.voiceId !== 'string' || req.voiceId.trim() === '')
    fail({ field: 'voice_id', message: 'voice_id must be a non-empty string' });
  const textProblem = checkText(req.text);
  if (textProblem) fail(textProblem);
  const modelProblem = checkModelId(req.modelId);
  if (modelProblem) fail(modelProblem);
  const outputFormat = req.outputFormat ?? DEFAULT_OUTPUT_FORMAT;
  if (!isOutputFormat(outputFormat))
    fail({
      field: 'output_format',
      message: `output_format must be one of pcm_24000, wav_24000, mp3_44100_192`,
    });
  let settings: VoiceSettings | undefined;
  if (req.voiceSettings !== undefined) {
    if (
      typeof req.voiceSettings !== 'object' ||
      req.voiceSettings === null ||
      Array.isArray(req.voiceSettings)
    )
      fail({ field: 'voice_settings', message: 'voice_settings must be an object' });
    settings = toWireSettings(req.voiceSettings);
    const settingsProblem = checkVoiceSettings(settings);
    if (settingsProblem) fail(settingsProblem);
    if (Object.keys(settings).length === 0) settings = undefined;
  }
  for (const [field, value] of [
    ['previous_text', req.previousText],
    ['next_text', req.nextText],
  ] as const) {
    const problem = checkContext(field, value);
    if (problem) fail(problem);
  }
  const body: {
    text: string;
    model_id?: string;
    voice_settings?: VoiceSettings;
    previous_text?: string;
    next_text?: string;
  } = { text: req.text };
  if (req.modelId !== undefined) body.model_id = req.modelId;
  if (settings !== undefined) body.voice_settings = settings;
  if (req.previousText !== undefined) body.previous_text = req.previousText;
  if (req.nextText !== undefined) body.next_text = req.nextText;
  return {
    voiceId: req.voiceId,
    outputFormat,
    body: JSON.stringify(body),
    textChars: textLength(req.text),
    textUnits: req.text.length,
  };
}

/** The speech paths (below the prefix), with `output_format` always explicit. */
export function speechPath(prepared: PreparedSpeech, streaming: boolean, timestamps = false): string {
  const query = new URLSearchParams({ output_format: prepared.outputFormat });
  const tail = (streaming ? '/stream' : '') + (timestamps ? '/with-timestamps' : '');
  return `/v1/text-to-speech/${encodeURIComponent(prepared.voiceId)}${tail}?${query.toString()}`;
}
