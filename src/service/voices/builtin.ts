import type { EspeakVoiceParams, FliteVoiceParams } from '../engine/voice-params.js';
import type { StoredVoice } from './store.js';

/** The voice a fresh start can speak with before anyone has added one. */
export const BUILT_IN_VOICE_ID = 'voxbridge-default';

interface BuiltInVoice {
  readonly voice_id: string;
  readonly name: string;
  readonly description: string;
  readonly labels: Readonly<Record<'language' | 'gender' | 'age' | 'accent' | 'use_case', string>>;
  /** How Flite speaks it (English). */
  readonly engine: Readonly<FliteVoiceParams>;
  /** How eSpeak-NG speaks it, in the languages Flite lacks (its language set per request). */
  readonly espeak: Readonly<Omit<EspeakVoiceParams, 'engine'>>;
}

/**
 * The cast every key can use, on Flite's voices (four recorded speakers: `rms`, `awb`, `slt`, and the
 * diphone voice `kal16`), each moved to its own F0, intonation range and pace, and one whispered, so
 * that no two sound alike. In another language (`language_code`) each is eSpeak-NG with the settings
 * the cast had there before Flite: a stock variant, an accent, pitch, range and rate.
 * test/integration/builtin-voices.test.ts measures them on one sentence: every pair differs by at
 * least 15 % in median F0 or in spectral centroid, and every one speaks at a pace within the engine's
 * normal band. Ids are stable across releases (configs and scripts name them); change a voice's sound
 * if needed, never its id.
 */
const CAST: readonly BuiltInVoice[] = [
  {
    voice_id: BUILT_IN_VOICE_ID,
    name: 'Vox (built-in)',
    description: "The embedded engine's default voice: a plain, clear American man.",
    labels: { language: 'en', gender: 'male', age: 'middle_aged', accent: 'american', use_case: 'general' },
    engine: { engine: 'flite', voice: 'kal16', f0Hz: 95, f0RangeHz: 11, rate: 1 },
    espeak: { language: 'en-us', variant: 'm3', pitch: 50, range: 50, rateWpm: 175 },
  },
  {
    voice_id: 'voxbridge-narrator',
    name: 'Rowan (built-in)',
    description: 'A warm, unhurried American storyteller, for narration.',
    labels: { language: 'en', gender: 'male', age: 'middle_aged', accent: 'american', use_case: 'narration' },
    engine: { engine: 'flite', voice: 'rms', f0Hz: 98, f0RangeHz: 24, rate: 0.88 },
    espeak: { language: 'en-gb-x-rp', variant: 'm1', pitch: 35, range: 60, rateWpm: 160 },
  },
  {
    voice_id: 'voxbridge-deep',
    name: 'Magnus (built-in)',
    description: 'A very deep, slow, level voice: villains, giants, dragons.',
    labels: {
      language: 'en',
      gender: 'male',
      age: 'middle_aged',
      accent: 'american',
      use_case: 'characters',
    },
    engine: { engine: 'flite', voice: 'awb', f0Hz: 66, f0RangeHz: 8, rate: 0.85 },
    espeak: { language: 'en-us', variant: 'm2', pitch: 15, range: 25, rateWpm: 140 },
  },
  {
    voice_id: 'voxbridge-high',
    name: 'Lyra (built-in)',
    description: 'A high, bright, sing-song young woman: elves, fairies, young heroes.',
    labels: { language: 'en', gender: 'female', age: 'young', accent: 'american', use_case: 'characters' },
    engine: { engine: 'flite', voice: 'slt', f0Hz: 250, f0RangeHz: 55, rate: 1.05 },
    espeak: { language: 'en-gb-x-rp', variant: 'f4', pitch: 80, range: 85, rateWpm: 185 },
  },
  {
    voice_id: 'voxbridge-elder',
    name: 'Maud (built-in)',
    description: 'An old, unhurried woman with a level, weary voice: innkeepers, grandmothers, seers.',
    labels: { language: 'en', gender: 'female', age: 'old', accent: 'american', use_case: 'characters' },
    engine: { engine: 'flite', voice: 'slt', f0Hz: 170, f0RangeHz: 14, rate: 0.85 },
    espeak: { language: 'en-gb-x-gbclan', variant: 'grandma', pitch: 40, range: 60, rateWpm: 150 },
  },
  {
    voice_id: 'voxbridge-whisper',
    name: 'Hush (built-in)',
    description: 'A breathy whisper with no voiced pitch at all: ghosts, spies, secrets.',
    labels: {
      language: 'en',
      gender: 'female',
      age: 'middle_aged',
      accent: 'american',
      use_case: 'characters',
    },
    engine: { engine: 'flite', voice: 'slt', f0Hz: 172, f0RangeHz: 27, rate: 0.95, effect: 'whisper' },
    espeak: { language: 'en-us', variant: 'whisperf', pitch: 50, range: 50, rateWpm: 160 },
  },
  {
    voice_id: 'voxbridge-fast',
    name: 'Pip (built-in)',
    description: 'A quick, buzzy, excitable talker: goblins, imps, street urchins.',
    labels: { language: 'en', gender: 'male', age: 'young', accent: 'american', use_case: 'characters' },
    engine: { engine: 'flite', voice: 'kal16', f0Hz: 150, f0RangeHz: 30, rate: 1.4 },
    espeak: { language: 'en-us', variant: 'croak', pitch: 75, range: 70, rateWpm: 250 },
  },
  {
    voice_id: 'voxbridge-scottish',
    name: 'Fergus (built-in)',
    description: 'A gruff Scottish voice: dwarves, sailors, grumpy blacksmiths.',
    labels: {
      language: 'en',
      gender: 'male',
      age: 'middle_aged',
      accent: 'scottish',
      use_case: 'characters',
    },
    engine: { engine: 'flite', voice: 'awb', f0Hz: 132, f0RangeHz: 25, rate: 1 },
    espeak: { language: 'en-gb-scotland', variant: 'm7', pitch: 50, range: 50, rateWpm: 170 },
  },
];

/** Ids of the built-in voices, `voxbridge-default` first. */
export const BUILT_IN_VOICE_IDS: readonly string[] = CAST.map((v) => v.voice_id);

export function builtInVoices(): StoredVoice[] {
  return CAST.map((v) => ({
    ...v,
    labels: { ...v.labels },
    engine: { ...v.engine },
    espeak: { ...v.espeak, engine: 'espeak-ng' },
    owner: null,
    category: 'premade',
    created_at_unix: 0,
    samples: [],
  }));
}
