import { beforeAll, describe, expect, it } from 'vitest';
import { concatInt16 } from '../../../src/audio/pcm.js';
import { Whisperer } from '../../../src/audio/whisper.js';
import { OUTPUT_SAMPLE_RATE } from '../../../src/service/engine/engine.js';
import { FliteEngine } from '../../../src/service/engine/flite/engine.js';
import { analyzeSpeech } from '../../../src/service/voices/analyze.js';
import { spectralCentroidHz } from '../../../testkit/spectrum.js';

const RATE = OUTPUT_SAMPLE_RATE;
const TEXTS = [
  'The old bridge creaks as the travellers cross the river at dawn, and the ferryman counts their coins.',
  'Turn back, travellers, while you still can.',
  'My name is Hush, and I will tell you a secret.',
];

let speech: Int16Array[];
beforeAll(async () => {
  const engine = await FliteEngine.load();
  speech = TEXTS.map((text) => {
    const parts: Int16Array[] = [];
    engine.synthesize(text, { engine: 'flite', voice: 'slt', f0Hz: 172, f0RangeHz: 27, rate: 1 }, false, {
      audio: (s) => parts.push(s) > 0,
      words: () => undefined,
    });
    return concatInt16(parts);
  });
});

const toFloat = (s: Int16Array): Float32Array => Float32Array.from(s, (v) => v / 32768);

function whisper(input: Int16Array, chunk: number): Int16Array {
  const w = new Whisperer(RATE);
  const out: Int16Array[] = [];
  for (let i = 0; i < input.length; i += chunk) out.push(w.push(input.subarray(i, i + chunk)));
  out.push(w.flush());
  return concatInt16(out);
}

describe('Whisperer', () => {
  it('leaves no voiced frame in speech, keeps its level within a few dB and brightens it', () => {
    for (const s of speech) {
      const out = whisper(s, 2400);
      const before = analyzeSpeech(toFloat(s), RATE);
      const after = analyzeSpeech(toFloat(out), RATE);
      expect(before.f0Hz).toBeGreaterThan(100);
      expect(after.voicedSeconds).toBe(0);
      expect(after.f0Hz).toBe(0);
      expect(Math.abs(after.rmsDb - before.rmsDb)).toBeLessThan(6);
      expect(spectralCentroidHz(toFloat(out), RATE)).toBeGreaterThan(spectralCentroidHz(toFloat(s), RATE));
    }
  });

  it('gives exactly the input length, the same samples however the input is chunked, and again after a flush', () => {
    const s = speech[1]!;
    const whole = whisper(s, s.length);
    expect(whole).toHaveLength(s.length);
    for (const chunk of [1, 255, 256, 4096]) expect(whisper(s, chunk)).toEqual(whole);
    const w = new Whisperer(RATE);
    concatInt16([w.push(s), w.flush()]);
    expect(concatInt16([w.push(s), w.flush()])).toEqual(whole);
  });

  it('keeps time: the whisper of a sound starts where the sound does', () => {
    const s = speech[2]!;
    const out = whisper(s, 1000);
    const onset = (x: Int16Array): number => x.findIndex((v) => Math.abs(v) > 1000);
    expect(Math.abs(onset(out) - onset(s)) / RATE).toBeLessThan(0.03);
  });
});
