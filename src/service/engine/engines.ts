/**
 * The engines a worker can load, each from its own module, imported only here and only when loaded:
 * an engine whose package is not installed (eSpeak-NG after `npm ci --omit=optional`) is reported
 * unavailable, with the reason, and the others work. An engine the configuration does not ask for (ONNX,
 * with no models named) is not loaded at all.
 */
import type { EngineId, SpeechEngine } from './engine.js';
import type { OnnxModelSpec } from './onnx/model-dir.js';

/** What the engines are given (the same in every worker): the ONNX models that passed their checks. */
export interface EngineOptions {
  readonly onnxModels: readonly OnnxModelSpec[];
}

interface EngineLoader {
  /** False when the configuration asks nothing of it: it is then neither loaded nor reported. */
  wanted(options: EngineOptions): boolean;
  load(options: EngineOptions): Promise<SpeechEngine>;
}

export const ENGINE_LOADERS: Readonly<Record<EngineId, EngineLoader>> = {
  flite: { wanted: () => true, load: async () => (await import('./flite/engine.js')).FliteEngine.load() },
  'espeak-ng': {
    wanted: () => true,
    load: async () => (await import('./espeak/engine.js')).EspeakEngine.load(),
  },
  onnx: {
    wanted: (options) => options.onnxModels.length > 0,
    load: async (options) => (await import('./onnx/engine.js')).OnnxEngine.load(options.onnxModels),
  },
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
export async function loadEngines(
  options: EngineOptions,
): Promise<{ engines: SpeechEngine[]; unavailable: EngineUnavailable[] }> {
  const engines: SpeechEngine[] = [];
  const unavailable: EngineUnavailable[] = [];
  for (const [id, loader] of Object.entries(ENGINE_LOADERS) as Array<[EngineId, EngineLoader]>) {
    if (!loader.wanted(options)) continue;
    try {
      engines.push(await loader.load(options));
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
