/**
 * Neural voices the operator brings, as an engine: VITS models (Piper's voices among them) run by
 * `sherpa-onnx-node` (Apache-2.0; an optional dependency: this module is imported only when a worker
 * loads the engine, and only if models are configured). Every model that `model-dir.ts` passed is
 * loaded in every engine worker, one ONNX Runtime thread each (the workers are the parallelism).
 *
 * sherpa-onnx makes a text's audio in one call, so a piece is cut into sentences (long ones at their
 * clauses) and each goes out as soon as it is made: the first audio waits for the first sentence only.
 * The model rate (22 050 Hz for Piper's medium voices) is resampled to 24 kHz as one stream per piece.
 * VITS gives no word timings: with timings wanted, each sentence's words are spread over its sound
 * (from its first to its last audible sample) in proportion to their letters (`word-estimate.ts`),
 * sent ahead of the sentence's audio.
 */
import { readFileSync } from 'node:fs';
import { Resampler } from '../../../audio/resampler.js';
import {
  OUTPUT_SAMPLE_RATE,
  type EngineDescriptor,
  type SpeechEngine,
  type SynthesisOutput,
} from '../engine.js';
import type { OnnxVoiceParams } from '../voice-params.js';
import type { OnnxModelSpec, OnnxSkipped } from './model-dir.js';
import { sentencesOf, speakable } from './sentences.js';
import { estimateWords } from './word-estimate.js';

export const SHERPA_PACKAGE = 'sherpa-onnx-node';
const SHERPA_VERSION = '1.13.8';

/**
 * The model's own pauses, as it makes them (sherpa-onnx shortens them to 0.2 by default: Piper does
 * not, and a pause shortened in the middle of a sentence sounds rushed).
 */
const SILENCE_SCALE = 1;

type Sherpa = typeof import('sherpa-onnx-node').default;
type OfflineTts = InstanceType<Sherpa['OfflineTts']>;

interface LoadedModel {
  readonly spec: OnnxModelSpec;
  readonly tts: OfflineTts;
  /** Words of its lexicon, lower case (a lexicon model speaks only these). */
  readonly words: ReadonlySet<string> | undefined;
  readonly resampler: Resampler | undefined;
}

/** Lines of a lexicon: `word token token …`; its words, as sherpa-onnx lowercases them. */
function lexiconWords(path: string): Set<string> {
  const words = new Set<string>();
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    const word = line.trim().split(/\s+/, 1)[0];
    if (word) words.add(word.toLowerCase());
  }
  return words;
}

function toInt16(samples: Float32Array): Int16Array {
  const out = new Int16Array(samples.length);
  for (let i = 0; i < samples.length; i++) {
    const v = Math.round(samples[i]! * 32767);
    out[i] = v > 32767 ? 32767 : v < -32768 ? -32768 : v;
  }
  return out;
}

export class OnnxEngine implements SpeechEngine<'onnx'> {
  readonly descriptor: EngineDescriptor & { readonly id: 'onnx' };
  readonly #models: ReadonlyMap<string, LoadedModel>;
  static readonly #none = new Int16Array(0);

  private constructor(models: readonly LoadedModel[], skipped: readonly OnnxSkipped[]) {
    this.#models = new Map(models.map((m) => [m.spec.id, m]));
    const voices = models.flatMap(({ spec }) =>
      spec.speakers.map((speaker) => ({
        id: `${spec.id}/${speaker.sid}`,
        name:
          spec.speakers.length > 1 ? `${speaker.name ?? `Speaker ${speaker.sid}`} (${spec.name})` : spec.name,
        languages: spec.languages,
        sampleRate: spec.sampleRate,
        params: { engine: 'onnx', model: spec.id, speaker: speaker.sid, rate: 1 } as const,
      })),
    );
    this.descriptor = {
      id: 'onnx',
      name: `sherpa-onnx ${SHERPA_VERSION} (VITS, Piper)`,
      licence: {
        spdx: 'Apache-2.0',
        copyleft: false,
        package: `${SHERPA_PACKAGE} ${SHERPA_VERSION}`,
        summary:
          'Apache License 2.0 (the engine; ONNX Runtime inside it is MIT): free use, keeping the notices. ' +
          'Each model has its own licence, from where the operator got it',
      },
      languages: [...new Set(models.flatMap((m) => m.spec.languages))].sort(),
      voices,
      skipped,
    };
  }

  /** Loads every model; one that sherpa-onnx refuses is skipped, with its reason. */
  static async load(specs: readonly OnnxModelSpec[]): Promise<OnnxEngine> {
    const sherpa = (await import('sherpa-onnx-node')).default;
    const models: LoadedModel[] = [];
    const skipped: OnnxSkipped[] = [];
    for (const spec of specs) {
      try {
        const tts = new sherpa.OfflineTts({
          model: {
            vits: {
              model: spec.modelFile,
              tokens: spec.tokensFile,
              ...(spec.lexiconFile ? { lexicon: spec.lexiconFile } : {}),
              ...(spec.dataDir ? { dataDir: spec.dataDir } : {}),
              noiseScale: spec.noiseScale,
              noiseScaleW: spec.noiseScaleW,
              lengthScale: spec.lengthScale,
            },
            numThreads: 1,
            provider: 'cpu',
            debug: false,
          },
          maxNumSentences: 1,
          silenceScale: SILENCE_SCALE,
        });
        models.push({
          spec,
          tts,
          words: spec.lexiconFile ? lexiconWords(spec.lexiconFile) : undefined,
          resampler:
            tts.sampleRate === OUTPUT_SAMPLE_RATE
              ? undefined
              : new Resampler({ inputRate: tts.sampleRate, outputRate: OUTPUT_SAMPLE_RATE }),
        });
      } catch (error) {
        skipped.push({
          what: `ONNX model ${spec.dir}`,
          reason: `sherpa-onnx could not load it: ${error instanceof Error ? error.message : String(error)}`,
        });
      }
    }
    return new OnnxEngine(models, skipped);
  }

  synthesize(text: string, voice: OnnxVoiceParams, timings: boolean, out: SynthesisOutput): boolean {
    const model = this.#models.get(voice.model);
    if (!model) throw new Error(`no ONNX model ${JSON.stringify(voice.model)} is loaded`);
    const { tts, resampler, spec } = model;
    resampler?.reset();
    let samplesBefore = 0;
    for (const sentence of sentencesOf(text)) {
      // Polls for cancellation before a sentence's work (an empty chunk is not sent).
      if (!out.audio(OnnxEngine.#none)) return false;
      const input = speakable(sentence.text, spec.frontend, model.words);
      if (input === undefined) continue;
      const made = tts.generate({
        text: input,
        sid: voice.speaker,
        speed: voice.rate,
        generationConfig: { sid: voice.speaker, speed: voice.rate, silenceScale: SILENCE_SCALE },
      });
      const audio = toInt16(made.samples);
      if (timings)
        out.words(estimateWords(sentence, audio, made.sampleRate, (samplesBefore * 1000) / made.sampleRate));
      samplesBefore += audio.length;
      const pcm = resampler ? resampler.push(audio) : audio;
      if (pcm.length > 0 && !out.audio(pcm)) return false;
    }
    const tail = resampler?.flush();
    return !tail || tail.length === 0 || out.audio(tail);
  }
}
