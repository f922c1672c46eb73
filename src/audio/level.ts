/**
 * The loudness of a stretch of 16-bit audio, one formula for every caller (the phone barge-in's energy
 * gate, Discord's speaking detector): the RMS of the samples relative to full scale (32768), in dBFS.
 * A full-scale square wave is 0 dBFS, a full-scale sine −3 dBFS.
 */

/**
 * The level of digital silence and of an empty stretch: an RMS of 1e-6 of full scale. A finite floor,
 * not −Infinity, so levels can be compared, averaged and kept in a Float64Array; every threshold in
 * use (the gate's −50, the config's `minLevelDbfs` ≥ −96) is above it.
 */
export const SILENT_DBFS = -120;
const FLOOR_RMS = 10 ** (SILENT_DBFS / 20);
const FULL_SCALE = 32768;

/** RMS level of s16 samples (interleaved channels count alike), in dBFS, never below `SILENT_DBFS`. */
export function levelDbfs(samples: Int16Array): number {
  let sum = 0;
  for (let i = 0; i < samples.length; i++) sum += samples[i]! * samples[i]!;
  const rms = Math.sqrt(sum / Math.max(1, samples.length)) / FULL_SCALE;
  return 20 * Math.log10(Math.max(rms, FLOOR_RMS));
}

/**
 * Whether most of a stretch's energy lies in one burst of `burstSamples` or fewer: a click (a plug, a
 * line's crackle, a handset knock), not speech, whose energy is spread over tens of milliseconds even
 * in a plosive. True when the loudest run of `burstSamples` holds `share` or more of the energy.
 */
export function isClick(samples: Int16Array, burstSamples: number, share = 0.5): boolean {
  let total = 0;
  let run = 0;
  let loudest = 0;
  for (let i = 0; i < samples.length; i++) {
    const e = samples[i]! * samples[i]!;
    total += e;
    run += e;
    if (i >= burstSamples) run -= samples[i - burstSamples]! * samples[i - burstSamples]!;
    if (run > loudest) loudest = run;
  }
  return total > 0 && loudest >= share * total;
}
