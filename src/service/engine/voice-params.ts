/**
 * A voice's settings for the engine that speaks it: what a voice of the service (built-in, or made
 * from samples) stores, and what a job sends to an engine worker. One shape per engine, told apart by
 * `engine`.
 */
/**
 * Applied by the worker to any engine's output. `whisper` replaces the voice's excitation with noise
 * shaped by its spectral envelope (src/audio/whisper.ts): the words and the vocal tract stay, the
 * pitch goes.
 */
export type VoiceEffect = 'whisper';

/** Flite (CMU): a voice of its own, its F0 target and range, and a pace relative to the voice's own. */
export interface FliteVoiceParams {
  readonly engine: 'flite';
  /** One of Flite's compiled-in voices: `kal16`, `awb`, `rms`, `slt` (or `kal`, the same at 8 kHz). */
  readonly voice: string;
  /** Mean F0 the intonation is scaled to (Flite's `int_f0_target_mean`), Hz. */
  readonly f0Hz: number;
  /** Its spread (`int_f0_target_stddev`), Hz: the liveliness of the intonation. */
  readonly f0RangeHz: number;
  /** Pace relative to the voice's own: 1.25 speaks in 80 % of the time (`duration_stretch`). */
  readonly rate: number;
  readonly effect?: VoiceEffect | undefined;
}

/** eSpeak-NG: a language (its accent), a voice variant (formants, voicing, breath), pitch and rate. */
export interface EspeakVoiceParams {
  readonly engine: 'espeak-ng';
  /** eSpeak language, e.g. `en-us`, `de`, `pt-br`. */
  readonly language: string;
  /** Voice variant, appended to the language (`en-us+m3`). */
  readonly variant: string;
  /** Base pitch, 0–99. */
  readonly pitch: number;
  /** Pitch range (intonation), 0–99; 50 is the engine's default. */
  readonly range: number;
  /** Speaking rate in words per minute, 80–450. */
  readonly rateWpm: number;
  readonly effect?: VoiceEffect | undefined;
}

/**
 * A neural voice the operator brought (sherpa-onnx, `onnx/`): one speaker of one of the configured
 * models, at a pace relative to the model's own.
 */
export interface OnnxVoiceParams {
  readonly engine: 'onnx';
  /** The model's id (`model-dir.ts`: from its configured name). */
  readonly model: string;
  /** The model's speaker id (0 for a single-speaker model). */
  readonly speaker: number;
  /** Pace relative to the model's own: 1.25 speaks in 80 % of the time (sherpa-onnx's `speed`). */
  readonly rate: number;
  readonly effect?: VoiceEffect | undefined;
}

export type VoiceParams = FliteVoiceParams | EspeakVoiceParams | OnnxVoiceParams;

/** The engines this service knows (`engine.ts`), one per shape of parameters here. */
export type EngineId = VoiceParams['engine'];

/** The parameters of one engine. */
export type VoiceParamsOf<Id extends EngineId> = Extract<VoiceParams, { engine: Id }>;
