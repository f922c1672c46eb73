/**
 * Model ids the local service accepts. The engine is the same for all of them; the vendor's ids are
 * accepted so that clients written for it work unchanged.
 */
export const MODEL_IDS: ReadonlySet<string> = new Set([
  'service_multilingual_v1',
  'eleven_multilingual_v2',
  'eleven_flash_v2_5',
  'eleven_turbo_v2_5',
  'eleven_flash_v2',
  'eleven_turbo_v2',
  'eleven_monolingual_v1',
  'eleven_multilingual_v1',
  'eleven_v3',
]);
