/**
 * Which engine speaks a request: the voice's own, unless the language asked for (`language_code`,
 * or for a voice made in another language, that voice's) is one it lacks; then eSpeak-NG, with the
 * voice's eSpeak settings (same pitch and pace), in that language, when it is installed. An ONNX
 * voice speaks its model's languages; another is eSpeak's (or Flite's, for English) default voice.
 */
import type { EngineDescriptor, EngineId } from '../engine/engine.js';
import { fliteSpeaks } from '../engine/flite/voices.js';
import type { EspeakVoiceParams, VoiceParams } from '../engine/voice-params.js';
import { DEFAULT_ESPEAK_PARAMS } from './espeak-params.js';
import { DEFAULT_FLITE_PARAMS, fliteFromEspeak } from './flite-params.js';
import type { VoiceEngines } from './params.js';

/** A language tag as requests carry it (`en`, `pt-BR`, `zh-Hans`): checked before it is looked up. */
export const LANGUAGE_CODE = /^[a-z]{2,3}(-[a-z0-9]{2,8}){0,3}$/i;

/** The engines the workers loaded. */
export class EngineCatalog {
  readonly #ids: ReadonlySet<EngineId>;
  /** eSpeak's language names, lower case. */
  readonly #espeak: readonly string[];

  /** Each loaded ONNX model's languages, by its id. */
  readonly #onnx = new Map<string, readonly string[]>();

  constructor(engines: readonly EngineDescriptor[]) {
    this.#ids = new Set(engines.map((e) => e.id));
    this.#espeak = engines.find((e) => e.id === 'espeak-ng')?.languages ?? [];
    for (const v of engines.find((e) => e.id === 'onnx')?.voices ?? [])
      if (v.params?.engine === 'onnx') this.#onnx.set(v.params.model, v.languages);
  }

  has(id: EngineId): boolean {
    return this.#ids.has(id);
  }

  /** The ONNX model is loaded. */
  hasOnnxModel(model: string): boolean {
    return this.#onnx.has(model);
  }

  /** The ONNX model speaks `tag`: its language (`en` for `en-gb` too), or the variant it names. */
  onnxSpeaks(model: string, tag: string): boolean {
    const wanted = tag.toLowerCase();
    const primary = wanted.split('-')[0]!;
    const languages = this.#onnx.get(model) ?? [];
    // A model whose metadata names no language we know is taken at its word for any.
    return languages.length === 0 || languages.some((l) => l === wanted || l === primary);
  }

  /** eSpeak's name for `tag` (itself, or its first more specific variant: `zh` → `zh-…`), if it has one. */
  espeakLanguage(tag: string): string | undefined {
    const wanted = tag.toLowerCase();
    return this.#espeak.find((l) => l === wanted) ?? this.#espeak.find((l) => l.startsWith(`${wanted}-`));
  }
}

export type EngineChoice =
  { readonly ok: true; readonly params: VoiceParams } | { readonly ok: false; readonly message: string };

const NO_ESPEAK = 'eSpeak-NG, the optional engine for languages other than English, is not installed';

/** The settings to speak `voice` in `language` (undefined: the voice's own language). */
export function chooseEngine(
  voice: VoiceEngines,
  language: string | undefined,
  engines: EngineCatalog,
): EngineChoice {
  const primary = voice.engine;
  const espeak = (tag: string): EngineChoice | undefined => {
    const name = engines.has('espeak-ng') ? engines.espeakLanguage(tag) : undefined;
    if (name === undefined) return undefined;
    const base: EspeakVoiceParams =
      primary.engine === 'espeak-ng' ? primary : (voice.espeak ?? DEFAULT_ESPEAK_PARAMS);
    return { ok: true, params: { ...base, language: name } };
  };
  /** The voice spoken by Flite, in English: an eSpeak voice when eSpeak is not here, or an ONNX one. */
  const flite = (): EngineChoice => ({
    ok: true,
    params:
      primary.engine === 'flite'
        ? primary
        : primary.engine === 'espeak-ng'
          ? (fliteFromEspeak(primary) ?? DEFAULT_FLITE_PARAMS)
          : DEFAULT_FLITE_PARAMS,
  });

  if (primary.engine === 'onnx') {
    if (!engines.hasOnnxModel(primary.model))
      return { ok: false, message: `this voice's ONNX model ${primary.model} is not loaded here` };
    if (language === undefined || engines.onnxSpeaks(primary.model, language))
      return { ok: true, params: primary };
  } else if (language === undefined) {
    if (engines.has(primary.engine)) return { ok: true, params: primary };
    if (primary.engine === 'espeak-ng' && fliteSpeaks(primary.language)) return flite();
    return {
      ok: false,
      message: `this voice speaks ${primary.engine === 'espeak-ng' ? primary.language : 'English'}, and ${NO_ESPEAK}`,
    };
  }
  if (language === undefined) return { ok: false, message: 'no engine here speaks this voice' };
  if (primary.engine === 'flite' && fliteSpeaks(language)) return { ok: true, params: primary };
  const fromEspeak = espeak(language);
  if (fromEspeak) return fromEspeak;
  if (fliteSpeaks(language)) return flite();
  return {
    ok: false,
    message: `no engine here speaks ${JSON.stringify(language)}${engines.has('espeak-ng') ? '' : ` (${NO_ESPEAK})`}`,
  };
}
