/**
 * Interleaved channels to one: the mean of every frame's samples. Discord members' voices decode as
 * 48 kHz stereo, and speech-to-text (and the resampler, which takes mono) wants one channel.
 */

/** Mono from `channels`-channel interleaved s16 samples, in a new array (whole frames only). */
export function downmixToMono(interleaved: Int16Array, channels: number): Int16Array {
  if (!Number.isInteger(channels) || channels < 1)
    throw new RangeError(`downmixToMono: bad channels ${channels}`);
  if (channels === 1) return interleaved.slice();
  const frames = Math.floor(interleaved.length / channels);
  const out = new Int16Array(frames);
  for (let f = 0, i = 0; f < frames; f++) {
    let sum = 0;
    for (let c = 0; c < channels; c++, i++) sum += interleaved[i]!;
    // The mean of int16 samples is within int16: no clipping.
    out[f] = Math.round(sum / channels);
  }
  return out;
}
