import { DEFAULT_ENGINE_PARAMS } from './params.js';
import type { StoredVoice } from './store.js';

/** The voice a fresh start can speak with before anyone has added one. */
export const BUILT_IN_VOICE_ID = 'voxbridge-default';

export function builtInVoices(): StoredVoice[] {
  return [
    {
      voice_id: BUILT_IN_VOICE_ID,
      name: 'Vox (built-in)',
      owner: null,
      category: 'premade',
      description: "The embedded engine's default English voice.",
      labels: { language: 'en', accent: 'american', use_case: 'general' },
      created_at_unix: 0,
      engine: DEFAULT_ENGINE_PARAMS,
      samples: [],
    },
  ];
}
