/**
 * Which engine speaks a request: the voice's own, unless the language asked for (`language_code`,
 * or for a voice made in another language, that voice's) is one it lacks; then eSpeak-NG, with the
 * voice's eSpeak settings (same pitch and pace), in that language, when it is installed.
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

  constructor(engines: readonly EngineDescriptor[]) {
    this.#ids = new Set(engines.map((e) => e.id));
    this.#espeak = engines.find((e) => e.id === 'espeak-ng')?.languages ?? [];
  }

  has(id: EngineId): boolean {
    return this.#ids.has(id);
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
  /** An eSpeak voice spoken by Flite, in English, when eSpeak is not here. */
  const flite = (): EngineChoice => ({
    ok: true,
    params: primary.engine === 'espeak-ng' ? (fliteFromEspeak(primary) ?? DEFAULT_FLITE_PARAMS) : primary,
  });

  if (language === undefined) {
    if (engines.has(primary.engine)) return { ok: true, params: primary };
    if (primary.engine === 'espeak-ng' && fliteSpeaks(primary.language)) return flite();
    return {
      ok: false,
      message: `this voice speaks ${primary.engine === 'espeak-ng' ? primary.language : 'English'}, and ${NO_ESPEAK}`,
    };
  }
  if (primary.engine === 'flite' && fliteSpeaks(language)) return { ok: true, params: primary };
  const fromEspeak = espeak(language);
  if (fromEspeak) return fromEspeak;
  if (fliteSpeaks(language)) return flite();
  return {
    ok: false,
    message: `no engine here speaks ${JSON.stringify(language)}${engines.has('espeak-ng') ? '' : ` (${NO_ESPEAK})`}`,
  };
}
