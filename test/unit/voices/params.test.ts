import Init, { type ESpeakNGWorker } from '@echogarden/espeak-ng-emscripten';
import { beforeAll, describe, expect, it } from 'vitest';
import { analyzeSpeech, type SpeechAnalysis } from '../../../src/service/voices/analyze.js';
import type { EspeakVoiceParams } from '../../../src/service/engine/voice-params.js';
import {
  calibratedF0Hz,
  DEFAULT_ESPEAK_PARAMS as DEFAULT_ENGINE_PARAMS,
  deriveEspeakParams as deriveEngineParams,
  MAX_DERIVED_RATE_WPM,
  MIN_DERIVED_RATE_WPM,
  pitchForF0,
  rateForSyllableRate,
  VARIANT_CROSSOVER_HZ,
} from '../../../src/service/voices/espeak-params.js';

type EngineVoiceParams = EspeakVoiceParams;

const ENGINE_RATE = 22_050;
/** What a user might read into the microphone. */
const SAMPLE_TEXT =
  'Every sample needs a few seconds of clear speech, spoken at an even pace. ' +
  'Please call Stella and ask her to bring these things with her from the store.';
/** What the new voice is then asked to say: different words from the sample's. */
const TEST_TEXT =
  'Is this voice deep or high? Listen closely to how it sounds. ' +
  'The weather will be cold and windy tomorrow, with rain in the afternoon.';

let engine: ESpeakNGWorker;
beforeAll(async () => {
  engine = new (await Init()).eSpeakNGWorker();
});

function speak(params: EngineVoiceParams, text: string): Float32Array {
  engine.set_voice(`${params.language}+${params.variant}`);
  engine.pitch = params.pitch;
  engine.range = params.range;
  engine.rate = params.rateWpm;
  const parts: Int16Array[] = [];
  engine.synthesize(text, (samples) => {
    parts.push(samples.slice());
    return false;
  });
  const out = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
  let offset = 0;
  for (const part of parts) {
    for (let i = 0; i < part.length; i++) out[offset + i] = part[i]! / 32768;
    offset += part.length;
  }
  return out;
}

function analysis(overrides: Partial<SpeechAnalysis>): SpeechAnalysis {
  return {
    f0Hz: 120,
    syllablesPerSecond: 4.8,
    syllables: 48,
    speakingSeconds: 10,
    voicedSeconds: 6,
    durationSeconds: 11,
    rmsDb: -20,
    ...overrides,
  };
}

describe("eSpeak's calibrated mapping (a voice's settings for the languages Flite lacks)", () => {
  it('starts from the engine defaults', () => {
    expect(DEFAULT_ENGINE_PARAMS).toEqual({
      engine: 'espeak-ng',
      variant: 'm3',
      pitch: 50,
      range: 50,
      rateWpm: 175,
      language: 'en-us',
    });
    expect(Object.isFrozen(DEFAULT_ENGINE_PARAMS)).toBe(true);
  });

  it('maps F0 to a variant and pitch whose output F0 never falls as the input rises, and lands within 1.5 %', () => {
    let previous = 0;
    for (let f0 = 40; f0 <= 450; f0 += 0.5) {
      const choice = pitchForF0(f0);
      expect(choice.pitch).toBeGreaterThanOrEqual(0);
      expect(choice.pitch).toBeLessThanOrEqual(99);
      expect(Number.isInteger(choice.pitch)).toBe(true);
      const out = calibratedF0Hz(choice)!;
      expect(out).toBeGreaterThanOrEqual(previous);
      previous = out;
      // Inside what the engine can reach (m3 pitch 0 to f3 pitch 99) the voice matches the sample.
      if (f0 >= 70 && f0 <= 336) expect(Math.abs(out / f0 - 1)).toBeLessThan(0.015);
    }
    expect(pitchForF0(VARIANT_CROSSOVER_HZ - 1).variant).toBe('m3');
    expect(pitchForF0(VARIANT_CROSSOVER_HZ).variant).toBe('f3');
    expect(pitchForF0(30)).toEqual({ variant: 'm3', pitch: 0 });
    expect(pitchForF0(600)).toEqual({ variant: 'f3', pitch: 99 });
  });

  it('maps syllable rate to a rate in wpm that never falls as the input rises, within the derived band', () => {
    let previous = 0;
    for (let rate = 0; rate <= 15; rate += 0.05) {
      const wpm = rateForSyllableRate(rate);
      expect(wpm).toBeGreaterThanOrEqual(previous);
      expect(wpm).toBeGreaterThanOrEqual(MIN_DERIVED_RATE_WPM);
      expect(wpm).toBeLessThanOrEqual(MAX_DERIVED_RATE_WPM);
      previous = wpm;
    }
    expect(rateForSyllableRate(4.8)).toBe(175);
    expect(rateForSyllableRate(3.6)).toBeLessThan(rateForSyllableRate(6));
  });

  it('pools the samples: F0 weighted by voiced time, syllables over all speaking time', () => {
    const params = deriveEngineParams([
      analysis({ f0Hz: 100, voicedSeconds: 9, syllables: 30, speakingSeconds: 10 }),
      analysis({ f0Hz: 200, voicedSeconds: 1, syllables: 60, speakingSeconds: 10 }),
    ]);
    // exp((9 ln 100 + ln 200) / 10) ≈ 107.2 Hz; 90 syllables in 20 s.
    expect(params).toMatchObject({ language: 'en-us', range: 50 });
    expect(params).toMatchObject(pitchForF0(107.18));
    expect(params.rateWpm).toBe(rateForSyllableRate(4.5));
  });

  it('keeps the built-in values for what the samples do not show', () => {
    expect(deriveEngineParams([])).toEqual(DEFAULT_ENGINE_PARAMS);
    const whispered = deriveEngineParams([
      analysis({ f0Hz: 0, voicedSeconds: 0, syllables: 0, syllablesPerSecond: 0 }),
    ]);
    expect(whispered).toEqual(DEFAULT_ENGINE_PARAMS);
    const unvoiced = deriveEngineParams([
      analysis({ f0Hz: 0, voicedSeconds: 0, syllables: 20, speakingSeconds: 5 }),
    ]);
    expect(unvoiced).toMatchObject({ variant: 'm3', pitch: 50, rateWpm: rateForSyllableRate(4) });
  });
});

describe('a voice derived from samples, end to end through the engine', () => {
  function clone(sample: Float32Array): {
    params: EngineVoiceParams;
    input: SpeechAnalysis;
    output: SpeechAnalysis;
  } {
    const input = analyzeSpeech(sample, ENGINE_RATE);
    const params = deriveEngineParams([input]);
    const output = analyzeSpeech(speak(params, TEST_TEXT), ENGINE_RATE);
    return { params, input, output };
  }
  const voice = (variant: string, pitch: number, rateWpm = 175): EngineVoiceParams => ({
    ...DEFAULT_ENGINE_PARAMS,
    variant,
    pitch,
    rateWpm,
  });

  it('deeper sample, deeper voice', () => {
    const deep = clone(speak(voice('m3', 5), SAMPLE_TEXT));
    const high = clone(speak(voice('f3', 85), SAMPLE_TEXT));
    expect(deep.params.variant).toBe('m3');
    expect(high.params.variant).toBe('f3');
    expect(deep.output.f0Hz).toBeLessThan(high.output.f0Hz * 0.5);
    // Each voice speaks other words at (nearly) the F0 of its sample.
    for (const v of [deep, high]) expect(Math.abs(v.output.f0Hz / v.input.f0Hz - 1)).toBeLessThan(0.06);
  });

  it('orders voices made from a ladder of speakers the way their samples are ordered', () => {
    const ladder = [
      voice('m1', 10),
      voice('m7', 40),
      voice('m2', 80),
      voice('f4', 40),
      voice('f2', 70),
      voice('f5', 95),
    ];
    const outputs = ladder.map((v) => clone(speak(v, SAMPLE_TEXT)));
    for (let i = 1; i < outputs.length; i++) {
      expect(outputs[i]!.input.f0Hz).toBeGreaterThan(outputs[i - 1]!.input.f0Hz);
      expect(outputs[i]!.output.f0Hz).toBeGreaterThan(outputs[i - 1]!.output.f0Hz);
    }
  });

  it('faster talker, faster voice', () => {
    const slow = clone(speak(voice('m3', 50, 130), SAMPLE_TEXT));
    const fast = clone(speak(voice('m3', 50, 240), SAMPLE_TEXT));
    expect(fast.params.rateWpm).toBeGreaterThan(slow.params.rateWpm + 60);
    expect(fast.output.syllablesPerSecond).toBeGreaterThan(slow.output.syllablesPerSecond * 1.3);
    for (const [v, wpm] of [
      [slow, 130],
      [fast, 240],
    ] as const)
      expect(Math.abs(v.params.rateWpm / wpm - 1)).toBeLessThan(0.15);
  });

  it('follows a sample that is not eSpeak: a deep and a high hummed vowel at 4 syllables per second', () => {
    const hum = (f0Hz: number): Float32Array => {
      const out = new Float32Array(ENGINE_RATE * 4);
      for (let i = 0; i < out.length; i++) {
        const t = i / ENGINE_RATE;
        const phase = (t * 4) % 1;
        const envelope = phase < 0.7 ? Math.sin((Math.PI * phase) / 0.7) ** 2 : 0;
        let v = 0;
        for (let h = 1; h <= 12; h++) v += Math.sin(2 * Math.PI * h * f0Hz * t) / h;
        out[i] = 0.2 * envelope * v;
      }
      return out;
    };
    const deep = clone(hum(90));
    const high = clone(hum(240));
    expect(Math.abs(deep.output.f0Hz / 90 - 1)).toBeLessThan(0.1);
    expect(Math.abs(high.output.f0Hz / 240 - 1)).toBeLessThan(0.1);
    expect(deep.params.rateWpm).toBe(high.params.rateWpm);
  });
});
