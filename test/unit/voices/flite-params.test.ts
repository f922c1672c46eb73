import { beforeAll, describe, expect, it } from 'vitest';
import { OUTPUT_SAMPLE_RATE } from '../../../src/service/engine/engine.js';
import { FliteEngine } from '../../../src/service/engine/flite/engine.js';
import type { FliteVoiceParams } from '../../../src/service/engine/voice-params.js';
import { analyzeSpeech, type SpeechAnalysis } from '../../../src/service/voices/analyze.js';
import { VARIANT_CROSSOVER_HZ } from '../../../src/service/voices/espeak-params.js';
import {
  DEFAULT_FLITE_PARAMS,
  deriveFliteParams,
  fliteCalibratedF0Hz,
  flitePitchForF0,
  fliteRateForSyllableRate,
  MAX_DERIVED_RATE,
  MIN_DERIVED_RATE,
} from '../../../src/service/voices/flite-params.js';
import { applySettings } from '../../../src/service/voices/params.js';
import { espeakSpeech } from '../../../testkit/audio.js';

const ESPEAK_RATE = 22_050;
const SAMPLE_TEXT =
  'Every sample needs a few seconds of clear speech, spoken at an even pace. ' +
  'Please call Stella and ask her to bring these things with her from the store.';
const TEST_TEXT =
  'Is this voice deep or high? Listen closely to how it sounds. ' +
  'The weather will be cold and windy tomorrow, with rain in the afternoon.';

let engine: FliteEngine;
beforeAll(async () => {
  engine = await FliteEngine.load();
});

function speak(params: FliteVoiceParams, text: string): Float32Array {
  const parts: Int16Array[] = [];
  engine.synthesize(text, params, false, { audio: (s) => parts.push(s) > 0, words: () => undefined });
  const out = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) for (const v of part) out[at++] = v / 32768;
  return out;
}

function toFloat(samples: Int16Array): Float32Array {
  return Float32Array.from(samples, (v) => v / 32768);
}

describe("Flite's calibrated mapping", () => {
  it('maps F0 to a voice and target whose measured F0 never falls as the input rises, and lands within 2 %', () => {
    let previous = 0;
    for (let f0 = 60; f0 <= 330; f0 += 0.5) {
      const choice = flitePitchForF0(f0);
      expect(choice.voice).toBe(f0 < VARIANT_CROSSOVER_HZ ? 'kal16' : 'slt');
      const out = fliteCalibratedF0Hz(choice)!;
      expect(out).toBeGreaterThanOrEqual(previous - 0.01);
      previous = out;
      expect(Math.abs(out / f0 - 1)).toBeLessThan(0.02);
      // The intonation's spread moves with the F0: the voice keeps its liveliness at any pitch.
      expect(choice.f0RangeHz / choice.f0Hz).toBeCloseTo(choice.voice === 'kal16' ? 11 / 95 : 27 / 172, 2);
    }
  });

  it('maps syllable rate to a pace that never falls as the input rises, within the derived band', () => {
    let previous = 0;
    for (let rate = 0; rate <= 12; rate += 0.05) {
      const pace = fliteRateForSyllableRate(rate);
      expect(pace).toBeGreaterThanOrEqual(previous);
      expect(pace).toBeGreaterThanOrEqual(MIN_DERIVED_RATE);
      expect(pace).toBeLessThanOrEqual(MAX_DERIVED_RATE);
      previous = pace;
    }
    expect(fliteRateForSyllableRate(4.05)).toBe(1);
  });

  it("keeps the default voice's values for what the samples do not show", () => {
    expect(deriveFliteParams([])).toEqual(DEFAULT_FLITE_PARAMS);
    const unvoiced: SpeechAnalysis = {
      f0Hz: 0,
      syllablesPerSecond: 4,
      syllables: 20,
      speakingSeconds: 5,
      voicedSeconds: 0,
      durationSeconds: 6,
      rmsDb: -20,
    };
    expect(deriveFliteParams([unvoiced])).toMatchObject({
      voice: 'kal16',
      f0Hz: 95,
      rate: fliteRateForSyllableRate(4),
    });
  });

  it("moves with the request's voice_settings: speed scales the pace, stability and style the intonation", () => {
    const base = DEFAULT_FLITE_PARAMS;
    expect(applySettings(base, {})).toEqual(base);
    expect(applySettings(base, { speed: 1.2 }).rate).toBeCloseTo(1.2, 5);
    expect(applySettings(base, { speed: 0.7 }).rate).toBeCloseTo(0.7, 5);
    expect(applySettings(base, { stability: 0 }).f0RangeHz).toBeCloseTo(base.f0RangeHz * 1.5, 5);
    expect(applySettings(base, { stability: 1 }).f0RangeHz).toBeCloseTo(base.f0RangeHz * 0.5, 5);
    expect(applySettings(base, { style: 1 }).f0RangeHz).toBeGreaterThan(base.f0RangeHz * 1.5);
    expect(applySettings(base, { stability: 1, speed: 1 })).toMatchObject({
      voice: 'kal16',
      f0Hz: base.f0Hz,
    });
  });
});

describe('a voice derived from samples, end to end through Flite', () => {
  function clone(sample: Int16Array): {
    params: FliteVoiceParams;
    input: SpeechAnalysis;
    output: SpeechAnalysis;
  } {
    const input = analyzeSpeech(toFloat(sample), ESPEAK_RATE);
    const params = deriveFliteParams([input]);
    const output = analyzeSpeech(speak(params, TEST_TEXT), OUTPUT_SAMPLE_RATE);
    return { params, input, output };
  }

  it('deeper sample, deeper voice: each speaks other words near the F0 of its sample', async () => {
    const deep = clone(await espeakSpeech(SAMPLE_TEXT, 'en-us+m3', 10));
    const high = clone(await espeakSpeech(SAMPLE_TEXT, 'en-us+f3', 85));
    expect(deep.params.voice).toBe('kal16');
    expect(high.params.voice).toBe('slt');
    expect(deep.output.f0Hz).toBeLessThan(high.output.f0Hz * 0.5);
    // Within 10 %: Flite's intonation model moves the median with the text (these are questions, which
    // rise; the calibration passage is statements), which the calibration cannot know in advance.
    for (const v of [deep, high]) expect(Math.abs(v.output.f0Hz / v.input.f0Hz - 1)).toBeLessThan(0.1);
  });

  it('faster talker, faster voice', async () => {
    const slow = clone(await espeakSpeech(SAMPLE_TEXT, 'en-us+m3', 50, 120));
    const fast = clone(await espeakSpeech(SAMPLE_TEXT, 'en-us+m3', 50, 220));
    expect(fast.params.rate).toBeGreaterThan(slow.params.rate * 1.3);
    expect(fast.output.syllablesPerSecond).toBeGreaterThan(slow.output.syllablesPerSecond * 1.2);
  });
});
