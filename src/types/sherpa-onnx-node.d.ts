/**
 * The part of `sherpa-onnx-node` (Apache-2.0, an optional dependency: a native addon and ONNX Runtime
 * in its platform package, e.g. `sherpa-onnx-linux-x64`) that the local service's ONNX engine uses.
 * The package is CommonJS and ships no declarations of its own.
 */
declare module 'sherpa-onnx-node' {
  export interface OfflineTtsVitsModelConfig {
    model: string;
    tokens: string;
    lexicon?: string;
    /** espeak-ng-data, for Piper-style models (phonemes from the addon's own eSpeak NG). */
    dataDir?: string;
    noiseScale?: number;
    noiseScaleW?: number;
    lengthScale?: number;
  }
  export interface OfflineTtsConfig {
    model: {
      vits: OfflineTtsVitsModelConfig;
      numThreads?: number;
      provider?: string;
      debug?: boolean | number;
    };
    /** Sentences synthesized in one run of the model (and one progress callback). */
    maxNumSentences?: number;
    /** Silences in the output are shortened to this fraction (sherpa-onnx's default: 0.2). */
    silenceScale?: number;
  }
  export interface GeneratedAudio {
    /** Mono, −1 to 1. */
    samples: Float32Array;
    sampleRate: number;
  }
  export class OfflineTts {
    constructor(config: OfflineTtsConfig);
    readonly numSpeakers: number;
    readonly sampleRate: number;
    /**
     * Synthesizes `text` in this thread. The text must yield at least one token: text that yields
     * none (empty, or only words a lexicon lacks) crashes the process in 1.13.8.
     */
    generate(request: {
      text: string;
      sid: number;
      speed: number;
      /**
       * Its settings for this call. Without it the addon's legacy path runs, which shortens silences
       * to 0.2 of their length whatever the config's `silenceScale` says (1.13.8).
       */
      generationConfig?: { sid?: number; speed?: number; silenceScale?: number };
    }): GeneratedAudio;
  }
  export const version: string;
  const sherpa: { OfflineTts: typeof OfflineTts; version: string };
  export default sherpa;
}
