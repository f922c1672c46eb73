/**
 * Calibrates the voice-cloning mappings (src/service/voices/espeak-params.ts and flite-params.ts):
 * synthesizes a reference passage with each engine across its pitch and rate settings and measures
 * each result with the same analyzer that measures uploaded samples, so that the analyzer's own biases
 * cancel out.
 *
 *   npm run build && node dist/bench/calibrate-voices.js [espeak|flite]
 *
 * Prints Markdown tables and the constants to paste into those files.
 */
import Init, { type ESpeakNGWorker } from '@echogarden/espeak-ng-emscripten';
import { FliteEngine } from '../src/service/engine/flite/engine.js';
import { fliteVoice } from '../src/service/engine/flite/voices.js';
import { OUTPUT_SAMPLE_RATE } from '../src/service/engine/engine.js';
import { analyzeSpeech, type SpeechAnalysis } from '../src/service/voices/analyze.js';

/**
 * The first paragraph of the "Rainbow Passage" (Fairbanks 1960), the phonetically balanced text speech
 * clinics have people read aloud: about 110 syllables, ~25 s at 175 wpm.
 */
const PASSAGE =
  'When the sunlight strikes raindrops in the air, they act as a prism and form a rainbow. ' +
  'The rainbow is a division of white light into many beautiful colors. ' +
  'These take the shape of a long round arch, with its path high above, and its two ends apparently beyond the horizon. ' +
  'There is, according to legend, a boiling pot of gold at one end. People look, but no one ever finds it. ' +
  'When a man looks for something beyond his reach, his friends say he is looking for the pot of gold at the end of the rainbow.';
const LANGUAGE = 'en-us';
const ENGINE_SAMPLE_RATE = 22_050;
const RANGE = 50;
const DEFAULT_RATE_WPM = 175;
const DEFAULT_PITCH = 50;
/** Variants the mapping uses (a male one below the crossover, a female one above), then others for reference. */
const PITCH_VARIANTS = ['m3', 'f3'] as const;
const REFERENCE_VARIANTS = ['m1', 'm2', 'm7', 'f1', 'f2', 'f4', 'f5'] as const;
const PITCHES = [0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 99] as const;
const RATES_WPM = [80, 100, 125, 150, 175, 200, 225, 250, 300, 350, 400, 450] as const;

function synthesize(w: ESpeakNGWorker, variant: string, pitch: number, rateWpm: number): Float32Array {
  w.set_voice(`${LANGUAGE}+${variant}`);
  w.pitch = pitch;
  w.rate = rateWpm;
  w.range = RANGE;
  const parts: Int16Array[] = [];
  let length = 0;
  w.synthesize(PASSAGE, (samples) => {
    parts.push(samples.slice());
    length += samples.length;
    return false;
  });
  const out = new Float32Array(length);
  let offset = 0;
  for (const part of parts) {
    for (let i = 0; i < part.length; i++) out[offset + i] = part[i]! / 32768;
    offset += part.length;
  }
  return out;
}

function measure(w: ESpeakNGWorker, variant: string, pitch: number, rateWpm: number): SpeechAnalysis {
  return analyzeSpeech(synthesize(w, variant, pitch, rateWpm), ENGINE_SAMPLE_RATE);
}

async function calibrateEspeak(): Promise<void> {
  const engine = new (await Init()).eSpeakNGWorker();
  const started = performance.now();

  console.log(
    `# eSpeak-NG calibration of the voice analyzer (${LANGUAGE}, range ${RANGE}, Rainbow Passage)\n`,
  );
  console.log(`## Median F0 (Hz) by variant and pitch, at ${DEFAULT_RATE_WPM} wpm\n`);
  console.log(`| variant | ${PITCHES.join(' | ')} |`);
  console.log(`|---|${PITCHES.map(() => '---').join('|')}|`);
  const pitchTables = new Map<string, number[]>();
  for (const variant of [...PITCH_VARIANTS, ...REFERENCE_VARIANTS]) {
    const f0s = PITCHES.map((p) => Math.round(measure(engine, variant, p, DEFAULT_RATE_WPM).f0Hz * 10) / 10);
    pitchTables.set(variant, f0s);
    console.log(`| ${variant} | ${f0s.map((f) => f.toFixed(1)).join(' | ')} |`);
  }

  console.log(`\n## Syllables per second of speaking time by rate, at pitch ${DEFAULT_PITCH}\n`);
  console.log(`| wpm | ${PITCH_VARIANTS.join(' | ')} | mean |`);
  console.log(`|---|${PITCH_VARIANTS.map(() => '---').join('|')}|---|`);
  const rateTable: Array<[number, number]> = [];
  for (const wpm of RATES_WPM) {
    const rates = PITCH_VARIANTS.map((v) => measure(engine, v, DEFAULT_PITCH, wpm).syllablesPerSecond);
    const mean = rates.reduce((a, b) => a + b, 0) / rates.length;
    rateTable.push([wpm, Math.round(mean * 100) / 100]);
    console.log(`| ${wpm} | ${rates.map((r) => r.toFixed(2)).join(' | ')} | ${mean.toFixed(2)} |`);
  }

  console.log('\n## Constants for src/service/voices/espeak-params.ts\n');
  console.log('```ts');
  console.log('const PITCH_CALIBRATION = {');
  for (const variant of PITCH_VARIANTS) {
    const f0s = pitchTables.get(variant)!;
    console.log(`  ${variant}: [${PITCHES.map((p, i) => `[${p}, ${f0s[i]!}]`).join(', ')}],`);
  }
  console.log('};');
  console.log(`const RATE_CALIBRATION = [${rateTable.map(([w, r]) => `[${w}, ${r}]`).join(', ')}];`);
  console.log('```');
  console.log(`\n(${((performance.now() - started) / 1000).toFixed(1)} s)`);
}

/** Flite's voices the mapping uses: a man's below the crossover F0, a woman's from it up. */
const FLITE_VOICES = ['kal16', 'slt'] as const;
const FLITE_F0_TARGETS = {
  kal16: [55, 65, 75, 85, 95, 110, 125, 140, 155, 170, 185],
  slt: [140, 155, 170, 185, 200, 220, 240, 260, 280, 310, 340],
} as const;
const FLITE_RATES = [0.5, 0.6, 0.7, 0.8, 0.9, 1, 1.15, 1.3, 1.45, 1.6, 1.8, 2] as const;

async function calibrateFlite(): Promise<void> {
  const engine = await FliteEngine.load();
  const measure = (voice: string, f0Hz: number, rate: number): SpeechAnalysis => {
    const parts: Int16Array[] = [];
    engine.synthesize(
      PASSAGE,
      { engine: 'flite', voice, f0Hz, f0RangeHz: fliteVoice(voice)!.f0RangeHz, rate },
      false,
      {
        audio: (samples) => parts.push(samples) > 0,
        words: () => undefined,
      },
    );
    const out = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
    let offset = 0;
    for (const part of parts) {
      for (let i = 0; i < part.length; i++) out[offset + i] = part[i]! / 32768;
      offset += part.length;
    }
    return analyzeSpeech(out, OUTPUT_SAMPLE_RATE);
  };
  const started = performance.now();
  console.log('# Flite calibration of the voice analyzer (Rainbow Passage)\n');
  console.log('## Median F0 (Hz) by voice and int_f0_target_mean, at rate 1\n');
  const f0Tables = new Map<string, Array<[number, number]>>();
  for (const voice of FLITE_VOICES) {
    const targets = FLITE_F0_TARGETS[voice];
    const f0s = targets.map((t) => Math.round(measure(voice, t, 1).f0Hz * 10) / 10);
    f0Tables.set(
      voice,
      targets.map((t, i) => [t, f0s[i]!]),
    );
    console.log(`| ${voice} target | ${targets.join(' | ')} |`);
    console.log(`|---|${targets.map(() => '---').join('|')}|`);
    console.log(`| measured | ${f0s.map((f) => f.toFixed(1)).join(' | ')} |\n`);
  }
  console.log("## Syllables per second of speaking time by rate, at each voice's own F0\n");
  console.log(`| rate | ${FLITE_VOICES.join(' | ')} | mean |`);
  console.log(`|---|${FLITE_VOICES.map(() => '---').join('|')}|---|`);
  const rateTable: Array<[number, number]> = [];
  for (const rate of FLITE_RATES) {
    const rates = FLITE_VOICES.map((v) => measure(v, fliteVoice(v)!.f0Hz, rate).syllablesPerSecond);
    const mean = rates.reduce((a, b) => a + b, 0) / rates.length;
    rateTable.push([rate, Math.round(mean * 100) / 100]);
    console.log(`| ${rate} | ${rates.map((r) => r.toFixed(2)).join(' | ')} | ${mean.toFixed(2)} |`);
  }
  console.log('\n## Constants for src/service/voices/flite-params.ts\n');
  console.log('```ts');
  console.log('const F0_CALIBRATION = {');
  for (const [voice, table] of f0Tables)
    console.log(`  ${voice}: [${table.map(([t, m]) => `[${t}, ${m}]`).join(', ')}],`);
  console.log('};');
  console.log(`const RATE_CALIBRATION = [${rateTable.map(([r, m]) => `[${r}, ${m}]`).join(', ')}];`);
  console.log('```');
  console.log(`\n(${((performance.now() - started) / 1000).toFixed(1)} s)`);
}

const which = process.argv[2];
if (which === undefined || which === 'espeak') await calibrateEspeak();
if (which === undefined || which === 'flite') await calibrateFlite();
