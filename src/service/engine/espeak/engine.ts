/**
 * eSpeak-NG as an engine: `@echogarden/espeak-ng-emscripten` (WebAssembly, GPL-3.0, an optional
 * dependency: this module is imported only when a worker loads the engine, and only if the package is
 * installed). Audio comes in ~100 ms callbacks at 22 050 Hz, resampled to 24 kHz; word timings from
 * eSpeak's word and clause marks (`word-marks.ts`).
 */
import Init, { type ESpeakNGWorker } from '@echogarden/espeak-ng-emscripten';
import { Resampler } from '../../../audio/resampler.js';
import {
  OUTPUT_SAMPLE_RATE,
  type EngineDescriptor,
  type SpeechEngine,
  type SynthesisOutput,
} from '../engine.js';
import type { EspeakVoiceParams } from '../voice-params.js';
import { escapeSsml } from './ssml.js';
import { WordMarks } from './word-marks.js';

export const ESPEAK_PACKAGE = '@echogarden/espeak-ng-emscripten';
const ESPEAK_SAMPLE_RATE = 22_050;

export class EspeakEngine implements SpeechEngine<'espeak-ng'> {
  readonly descriptor: EngineDescriptor & { readonly id: 'espeak-ng' };
  readonly #engine: ESpeakNGWorker;
  readonly #resampler = new Resampler({ inputRate: ESPEAK_SAMPLE_RATE, outputRate: OUTPUT_SAMPLE_RATE });

  private constructor(engine: ESpeakNGWorker) {
    this.#engine = engine;
    const voices = engine.list_voices().map((v) => ({
      id: v.identifier,
      languages: [...new Set(v.languages.map((l) => l.name.toLowerCase()))],
      sampleRate: ESPEAK_SAMPLE_RATE,
    }));
    this.descriptor = {
      id: 'espeak-ng',
      name: 'eSpeak NG',
      licence: {
        spdx: 'GPL-3.0-only',
        copyleft: true,
        package: `${ESPEAK_PACKAGE} 0.3.5`,
        summary:
          'GNU GPL version 3 (its COPYING): a program distributed with it must be distributed under the GPL too',
      },
      languages: [...new Set(voices.flatMap((v) => v.languages))].sort(),
      voices,
    };
  }

  static async load(): Promise<EspeakEngine> {
    return new EspeakEngine(new (await Init()).eSpeakNGWorker());
  }

  synthesize(text: string, voice: EspeakVoiceParams, timings: boolean, out: SynthesisOutput): boolean {
    const engine = this.#engine;
    engine.set_voice(`${voice.language}+${voice.variant}`);
    engine.rate = voice.rateWpm;
    engine.pitch = voice.pitch;
    engine.range = voice.range;
    this.#resampler.reset();
    // Only a request for timings pays for them (reading the events, one backward scan of the samples).
    const marks = timings ? new WordMarks(text, ESPEAK_SAMPLE_RATE) : undefined;
    let cancelled = false;
    engine.synthesize(escapeSsml(text), (samples, events) => {
      if (marks) {
        const words = marks.push(samples, events);
        if (words.length > 0) out.words(words);
      }
      const resampled = this.#resampler.push(samples);
      if (resampled.length > 0 && !out.audio(resampled)) {
        cancelled = true;
        return true;
      }
      return false;
    });
    if (cancelled) return false;
    if (marks) {
      const words = marks.end();
      if (words.length > 0) out.words(words);
    }
    const tail = this.#resampler.flush();
    return tail.length === 0 || out.audio(tail);
  }
}
