/**
 * The engines a worker can load, each from its own module, imported only here and only when loaded:
 * an engine whose package is not installed (eSpeak-NG after `npm ci --omit=optional`) is reported
 * unavailable, with the reason, and the others work. A new engine (sherpa-onnx, …) is one more entry.
 */
import type { EngineId, SpeechEngine } from './engine.js';

export const ENGINE_LOADERS: Readonly<Record<EngineId, () => Promise<SpeechEngine>>> = {
  flite: async () => (await import('./flite/engine.js')).FliteEngine.load(),
  'espeak-ng': async () => (await import('./espeak/engine.js')).EspeakEngine.load(),
};

/** Flite: in the package's dependencies, BSD-style, English. Every other engine is optional. */
export const DEFAULT_ENGINE: EngineId = 'flite';

export interface EngineUnavailable {
  readonly id: EngineId;
  readonly reason: string;
}

function missingPackage(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND';
}

/**
 * Loads every engine: those that load, and why the others did not. A missing optional package is a
 * reason; any other failure of the default engine is thrown (the service cannot speak without it).
 */
export async function loadEngines(): Promise<{ engines: SpeechEngine[]; unavailable: EngineUnavailable[] }> {
  const engines: SpeechEngine[] = [];
  const unavailable: EngineUnavailable[] = [];
  for (const [id, load] of Object.entries(ENGINE_LOADERS) as Array<[EngineId, () => Promise<SpeechEngine>]>) {
    try {
      engines.push(await load());
    } catch (error) {
      if (id === DEFAULT_ENGINE) throw error;
      unavailable.push({
        id,
        reason: missingPackage(error)
          ? 'its package is not installed (an optional dependency)'
          : `it failed to load: ${error instanceof Error ? error.message : String(error)}`,
      });
    }
  }
  return { engines, unavailable };
}
