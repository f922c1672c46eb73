/**
 * One thread's soundswallower decoder: the model loaded once, menu grammars compiled once and kept
 * (an LRU of `MAX_CACHED_GRAMMARS` by id), and each utterance decoded whole, at the model's 8 kHz.
 *
 * Settings, each measured on a development menu (eight choices with carriers, seven eSpeak voices × 18
 * answers through μ-law at 8 kHz), then checked on bench/menus.ts:
 * - cepstral mean normalisation per utterance (`cmn current`, the model's own): `live` was better on
 *   clean audio only because its mean carried over from the utterances before, i.e. from other calls,
 *   which no result may depend on; reset per utterance it was far worse (44 of 126 right at 20 dB).
 * - a faint noise floor added to the audio (`NOISE_FLOOR_DB` under its loud frames, seeded, so a
 *   result depends on nothing else): digital silence (exact zeros, what μ-law carries for a muted or
 *   synthetic line) throws the utterance's cepstral mean off: 82 of 126 menu answers right without,
 *   119 with a floor of ±128.
 * - `silprob 0.1` (silence between words, default 0.005): 115 vs 113 of 126 right at 20 dB.
 */
import type { Decoder } from 'soundswallower';
import { resampleWhole } from '../audio/resampler.js';
import { denoise } from './denoise.js';
import { DECODER_SAMPLE_RATE, DICTIONARY_PATH, FRAMES_PER_SECOND, MODEL_DIR } from './model.js';
import {
  bestScore,
  buildFsg,
  releaseFsg,
  segments,
  useFsg,
  type NativeModule,
  type Segment,
} from './native.js';
import { UNKNOWN_WORD } from './protocol.js';

export const MAX_CACHED_GRAMMARS = 32;

/** The floor's level under the audio's loud frames (dB), and its cap (RMS, 16-bit units). */
const NOISE_FLOOR_DB = -35;
const NOISE_FLOOR_MAX_RMS = 74;
/** 20 ms at 8 kHz: the frames whose level finds the loud ones. */
const LEVEL_FRAME = 160;
/** The share of frames counted as loud (the top 10 %). */
const LOUD_SHARE = 0.1;

const DECODER_CONFIG = {
  hmm: MODEL_DIR,
  dict: DICTIONARY_PATH,
  samprate: DECODER_SAMPLE_RATE,
  // The wasm build's default FFT (2048) is for 44.1 kHz; 256 covers the 25.6 ms window at 8 kHz.
  nfft: 256,
  silprob: 0.1,
  loglevel: 'FATAL',
};

export interface Decoded {
  /** The best path, fillers included; empty when none reached the grammar's end. */
  readonly segments: readonly Segment[];
  /** The best path's total score (acoustic and grammar); undefined with no path. */
  readonly score: number | undefined;
  /** Frames decoded (10 ms each). */
  readonly frames: number;
}

/** The loudness (RMS) of the loud frames of `x`. */
function loudRms(x: Int16Array): number {
  const levels: number[] = [];
  for (let i = 0; i + LEVEL_FRAME <= x.length; i += LEVEL_FRAME) {
    let sum = 0;
    for (let j = i; j < i + LEVEL_FRAME; j++) sum += x[j]! * x[j]!;
    levels.push(Math.sqrt(sum / LEVEL_FRAME));
  }
  if (levels.length === 0) return 0;
  levels.sort((a, b) => b - a);
  return levels[Math.floor(levels.length * LOUD_SHARE)]!;
}

/**
 * The decoder's input: at 8 kHz, the line's noise taken out (denoise.ts), as floats in [-1, 1), with
 * the noise floor (xorshift32, a fixed seed).
 */
export function decoderInput(samples: Int16Array, sampleRate: number): Float32Array {
  const x = denoise(
    sampleRate === DECODER_SAMPLE_RATE ? samples : resampleWhole(samples, sampleRate, DECODER_SAMPLE_RATE),
  );
  const floorRms = Math.min(NOISE_FLOOR_MAX_RMS, loudRms(x) * 10 ** (NOISE_FLOOR_DB / 20));
  // Uniform noise of this amplitude has the floor's RMS.
  const amplitude = floorRms * Math.sqrt(3);
  const out = new Float32Array(x.length);
  let state = 0x9e3779b9;
  for (let i = 0; i < x.length; i++) {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    const noise = ((state >>> 0) / 0x1_0000_0000) * 2 - 1;
    out[i] = (x[i]! + noise * amplitude) / 32768;
  }
  return out;
}

export class SphinxDecoder {
  /** Compiled grammars by id, least recently used first. */
  private readonly grammars = new Map<string, number>();
  /** The grammar the decoder's search was made from (undefined after an alignment). */
  private current: string | undefined;

  private constructor(
    private readonly module: NativeModule,
    private readonly decoder: Decoder,
  ) {}

  static async create(): Promise<SphinxDecoder> {
    const { default: load } = await import('soundswallower');
    const module = (await load()) as NativeModule;
    const decoder = new module.Decoder(DECODER_CONFIG);
    await decoder.initialize();
    // A word for what an alignment's text holds that the dictionary lacks: the spoken-noise phone.
    decoder.add_words([UNKNOWN_WORD, '+SPN+']);
    return new SphinxDecoder(module, decoder);
  }

  /** Decodes `input` (from `decoderInput`) with the grammar (compiled on first use, then cached). */
  recognize(grammarId: string, jsgf: string, input: Float32Array): Decoded {
    if (this.current !== grammarId) {
      useFsg(this.module, this.decoder, this.grammar(grammarId, jsgf));
      this.current = grammarId;
    }
    return this.decode(input);
  }

  /** Force-aligns `words` (dictionary words or `UNKNOWN_WORD`) to `input`. */
  align(words: readonly string[], input: Float32Array): Decoded {
    this.current = undefined;
    this.decoder.set_align_text(words.join(' '));
    return this.decode(input);
  }

  private decode(input: Float32Array): Decoded {
    this.decoder.start();
    // Whole: the cepstral mean is the utterance's, so the audio must come in one call.
    if (input.length > 0) this.decoder.process_audio(input, false, true);
    this.decoder.stop();
    const frames = Math.floor((input.length * FRAMES_PER_SECOND) / DECODER_SAMPLE_RATE);
    return {
      segments: segments(this.module, this.decoder),
      score: bestScore(this.module, this.decoder),
      frames,
    };
  }

  private grammar(id: string, jsgf: string): number {
    const cached = this.grammars.get(id);
    if (cached !== undefined) {
      this.grammars.delete(id);
      this.grammars.set(id, cached);
      return cached;
    }
    const fsg = buildFsg(this.module, this.decoder, jsgf, Number(this.decoder.get_config('lw')));
    this.grammars.set(id, fsg);
    if (this.grammars.size > MAX_CACHED_GRAMMARS) {
      const [oldest, pointer] = this.grammars.entries().next().value!;
      this.grammars.delete(oldest);
      releaseFsg(this.module, pointer);
    }
    return fsg;
  }
}
