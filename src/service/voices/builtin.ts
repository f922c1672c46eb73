import { DEFAULT_ENGINE_PARAMS, type EngineVoiceParams } from './params.js';
import type { StoredVoice } from './store.js';

/** The voice a fresh start can speak with before anyone has added one. */
export const BUILT_IN_VOICE_ID = 'voxbridge-default';

interface BuiltInVoice {
  readonly voice_id: string;
  readonly name: string;
  readonly description: string;
  readonly labels: Readonly<Record<'language' | 'gender' | 'age' | 'accent' | 'use_case', string>>;
  readonly engine: Readonly<EngineVoiceParams>;
}

/**
 * The cast every key can use: eSpeak-NG's stock variants (each its own formants, voicing, breath and
 * flutter), accents the engine has, and pitch, pitch range and rate set so that no two sound alike.
 * test/integration/builtin-voices.test.ts measures them on one sentence: every pair differs by at
 * least 15 % in median F0 or in spectral centroid, and every one speaks at a pace within the engine's
 * normal band. Ids are stable across releases (configs and scripts name them); change a voice's sound
 * if needed, never its id.
 */
const CAST: readonly BuiltInVoice[] = [
  {
    voice_id: BUILT_IN_VOICE_ID,
    name: 'Vox (built-in)',
    description: "The embedded engine's default English voice.",
    labels: { language: 'en', gender: 'male', age: 'middle_aged', accent: 'american', use_case: 'general' },
    engine: DEFAULT_ENGINE_PARAMS,
  },
  {
    voice_id: 'voxbridge-narrator',
    name: 'Rowan (built-in)',
    description: 'A low, unhurried British storyteller with lively intonation, for narration.',
    labels: { language: 'en', gender: 'male', age: 'middle_aged', accent: 'british', use_case: 'narration' },
    engine: { language: 'en-gb-x-rp', variant: 'm1', pitch: 35, range: 60, rateWpm: 160 },
  },
  {
    voice_id: 'voxbridge-deep',
    name: 'Magnus (built-in)',
    description: 'A very deep, slow, level voice with a hint of echo: villains, giants, dragons.',
    labels: {
      language: 'en',
      gender: 'male',
      age: 'middle_aged',
      accent: 'american',
      use_case: 'characters',
    },
    engine: { language: 'en-us', variant: 'm2', pitch: 15, range: 25, rateWpm: 140 },
  },
  {
    voice_id: 'voxbridge-high',
    name: 'Lyra (built-in)',
    description: 'A high, bright, sing-song British voice: elves, fairies, young heroes.',
    labels: { language: 'en', gender: 'female', age: 'young', accent: 'british', use_case: 'characters' },
    engine: { language: 'en-gb-x-rp', variant: 'f4', pitch: 80, range: 85, rateWpm: 185 },
  },
  {
    voice_id: 'voxbridge-elder',
    name: 'Maud (built-in)',
    description: 'An old, quavering, unhurried Lancashire voice: innkeepers, grandmothers, seers.',
    labels: { language: 'en', gender: 'female', age: 'old', accent: 'lancashire', use_case: 'characters' },
    engine: { language: 'en-gb-x-gbclan', variant: 'grandma', pitch: 40, range: 60, rateWpm: 150 },
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
    engine: { language: 'en-us', variant: 'whisperf', pitch: 50, range: 50, rateWpm: 160 },
  },
  {
    voice_id: 'voxbridge-fast',
    name: 'Pip (built-in)',
    description: 'A quick, raspy, excitable talker: goblins, imps, street urchins.',
    labels: { language: 'en', gender: 'male', age: 'young', accent: 'american', use_case: 'characters' },
    engine: { language: 'en-us', variant: 'croak', pitch: 75, range: 70, rateWpm: 250 },
  },
  {
    voice_id: 'voxbridge-scottish',
    name: 'Fergus (built-in)',
    description: 'A dark, gruff Scottish voice: dwarves, sailors, grumpy blacksmiths.',
    labels: {
      language: 'en',
      gender: 'male',
      age: 'middle_aged',
      accent: 'scottish',
      use_case: 'characters',
    },
    engine: { language: 'en-gb-scotland', variant: 'm7', pitch: 50, range: 50, rateWpm: 170 },
  },
];

/** Ids of the built-in voices, `voxbridge-default` first. */
export const BUILT_IN_VOICE_IDS: readonly string[] = CAST.map((v) => v.voice_id);

export function builtInVoices(): StoredVoice[] {
  return CAST.map((v) => ({
    ...v,
    labels: { ...v.labels },
    engine: { ...v.engine },
    owner: null,
    category: 'premade',
    created_at_unix: 0,
    samples: [],
  }));
}
