import type { SpeechAnalysis } from './analyze.js';

/** What a voice's samples measure, all of them together; undefined where they show nothing. */
export interface PooledMeasures {
  /** Geometric mean of the samples' median F0s, weighted by their voiced time. */
  readonly f0Hz: number | undefined;
  /** All syllable nuclei over all speaking time. */
  readonly syllablesPerSecond: number | undefined;
}

export function pooledMeasures(analyses: readonly SpeechAnalysis[]): PooledMeasures {
  let logF0Sum = 0;
  let voicedSeconds = 0;
  let syllables = 0;
  let speakingSeconds = 0;
  for (const a of analyses) {
    if (a.f0Hz > 0 && a.voicedSeconds > 0) {
      logF0Sum += Math.log(a.f0Hz) * a.voicedSeconds;
      voicedSeconds += a.voicedSeconds;
    }
    syllables += a.syllables;
    speakingSeconds += a.speakingSeconds;
  }
  return {
    f0Hz: voicedSeconds > 0 ? Math.exp(logF0Sum / voicedSeconds) : undefined,
    syllablesPerSecond: syllables > 0 && speakingSeconds > 0 ? syllables / speakingSeconds : undefined,
  };
}
