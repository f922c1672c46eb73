/**
 * Turns speech into a whisper: what a whisper is, acoustically, is the vocal tract's resonances
 * excited by breath noise instead of the vocal folds' pulses. Each frame (~21 ms, overlapping by three
 * quarters) is analysed by linear prediction (its spectral envelope: formants, not harmonics), and
 * white noise is shaped by that envelope, brought to the frame's own energy and overlap-added, the
 * frames weighted so that their independent noises add up to the input's level. The words stay
 * intelligible; no pitch is left.
 *
 * Streaming, as the other DSP here: `push()` returns what is complete (output sample k is input time
 * k; the last frames wait for more input), `flush()` the rest, so the output has exactly the input's
 * length however it is chunked. The noise is pseudo-random from a fixed seed, restarted by `reset()`
 * and `flush()`: the same input whispers the same way.
 */

/** Whispered speech is quieter than voiced speech at the same effort: a bit under −3 dB. */
const WHISPER_GAIN = 0.7;
/** Added to the zero-lag autocorrelation (−30 dB white noise) so the envelope's filter stays stable. */
const NOISE_FLOOR = 1e-3;
/**
 * Each pole pulled in towards the origin by this factor (a_k × γ^k), widening every resonance by
 * about 150 Hz at 24 kHz: a resonance left razor-sharp rings like a sine in the noise, and a pitch
 * tracker hears a tone.
 */
const BANDWIDTH_EXPANSION = 0.98;
const SEED = 0x9e3779b9;
/**
 * Frames overlap by three quarters: each frame's level fades into the next over 5 ms steps, not
 * 10 ms ones, so the noise is not modulated at a rate a pitch tracker takes for a low voice.
 */
const OVERLAP = 4;

export class Whisperer {
  readonly #frame: number;
  readonly #hop: number;
  readonly #order: number;
  readonly #analysis: Float64Array;
  readonly #synthesis: Float64Array;
  /** Input not yet consumed by a frame, and the start of the frame in progress. */
  #input: Float64Array;
  #inputLength: number;
  /** Output being overlap-added: its first `#hop` samples are complete once the frame over them is in. */
  readonly #output: Float64Array;
  readonly #autocorrelation: Float64Array;
  readonly #lpc: Float64Array;
  readonly #scratch: Float64Array;
  readonly #noise: Float64Array;
  #state = SEED;
  /** Input samples received and output samples released, to release exactly as many in the end. */
  #received = 0;
  #released = 0;
  /** Output samples still to drop: those of the silence put before the stream. */
  #lead = 0;

  constructor(sampleRate: number) {
    let frame = 1;
    while (frame < sampleRate * 0.02) frame <<= 1;
    this.#frame = frame;
    this.#hop = frame / OVERLAP;
    this.#order = Math.round(sampleRate / 1000) + 4;
    // Periodic Hann. The frames' noises are independent, so their powers add: the squares of copies
    // shifted by a quarter of its length sum to exactly 1.5, and each frame is weighted to make that 1.
    this.#analysis = Float64Array.from(
      { length: frame },
      (_, i) => 0.5 - 0.5 * Math.cos((2 * Math.PI * i) / frame),
    );
    this.#synthesis = this.#analysis.map((w) => w / Math.sqrt((3 / 8) * OVERLAP));
    this.#input = new Float64Array(frame * 4);
    this.#output = new Float64Array(frame);
    this.#autocorrelation = new Float64Array(this.#order + 1);
    this.#lpc = new Float64Array(this.#order + 1);
    this.#scratch = new Float64Array(this.#order + 1);
    // The filter runs over a lead-in before the frame, so its start-up transient falls outside it.
    this.#noise = new Float64Array(frame + this.#order * 4);
    this.#inputLength = 0;
    this.reset();
  }

  /** Forgets the stream: the next push starts a new one. */
  reset(): void {
    this.#input.fill(0);
    this.#output.fill(0);
    // The first frame starts before the first sample, so that every sample has all its frames.
    this.#inputLength = this.#frame - this.#hop;
    this.#state = SEED;
    this.#received = 0;
    this.#released = 0;
    this.#lead = this.#frame - this.#hop;
  }

  push(samples: Int16Array): Int16Array {
    this.#append(samples);
    this.#received += samples.length;
    return this.#drain();
  }

  /** The rest: the last frames padded with silence, cut to the input's length. */
  flush(): Int16Array {
    this.#append(new Int16Array(this.#frame));
    const out = this.#drain();
    this.reset();
    return out;
  }

  #append(samples: Int16Array): void {
    if (this.#inputLength + samples.length > this.#input.length) {
      const grown = new Float64Array(Math.max(this.#input.length * 2, this.#inputLength + samples.length));
      grown.set(this.#input.subarray(0, this.#inputLength));
      this.#input = grown;
    }
    for (let i = 0; i < samples.length; i++) this.#input[this.#inputLength + i] = samples[i]! / 32768;
    this.#inputLength += samples.length;
  }

  #drain(): Int16Array {
    const frames =
      this.#inputLength >= this.#frame ? Math.floor((this.#inputLength - this.#frame) / this.#hop) + 1 : 0;
    const out = new Int16Array(frames * this.#hop);
    let written = 0;
    for (let f = 0; f < frames; f++) {
      this.#whisperFrame(this.#input.subarray(f * this.#hop, f * this.#hop + this.#frame));
      for (let i = 0; i < this.#hop; i++) {
        // The silence put before the stream has no input sample to stand for.
        if (this.#lead > 0) {
          this.#lead--;
          continue;
        }
        if (this.#released + written >= this.#received) break;
        const v = Math.round(this.#output[i]! * 32768);
        out[written++] = v > 32767 ? 32767 : v < -32768 ? -32768 : v;
      }
      this.#output.copyWithin(0, this.#hop);
      this.#output.fill(0, this.#frame - this.#hop);
    }
    const consumed = frames * this.#hop;
    this.#input.copyWithin(0, consumed, this.#inputLength);
    this.#inputLength -= consumed;
    this.#released += written;
    return written === out.length ? out : out.slice(0, written);
  }

  /** Adds the whisper of one frame of input into `#output`. */
  #whisperFrame(frame: Float64Array): void {
    const n = this.#frame;
    const p = this.#order;
    const r = this.#autocorrelation;
    const w = this.#analysis;
    for (let lag = 0; lag <= p; lag++) {
      let sum = 0;
      for (let i = lag; i < n; i++) sum += frame[i]! * w[i]! * frame[i - lag]! * w[i - lag]!;
      r[lag] = sum;
    }
    if (r[0]! <= 0) return;
    r[0] = r[0]! * (1 + NOISE_FLOOR);
    if (this.#levinson() <= 0) return;
    const a = this.#lpc;
    for (let k = 1, g = BANDWIDTH_EXPANSION; k <= p; k++, g *= BANDWIDTH_EXPANSION) a[k] = a[k]! * g;
    // White noise (uniform, unit variance) through 1 / A(z).
    const y = this.#noise;
    const lead = y.length - n;
    for (let i = 0; i < y.length; i++) {
      let v = this.#random() * 3.4641016151377544 - 1.7320508075688772;
      for (let k = 1; k <= p && k <= i; k++) v -= a[k]! * y[i - k]!;
      y[i] = v;
    }
    // Scaled to the frame's own energy under the same window: the whisper is as loud as the speech
    // it replaces, less WHISPER_GAIN.
    let energy = 0;
    for (let i = 0; i < n; i++) energy += (y[lead + i]! * w[i]!) ** 2;
    const gain = energy > 0 ? WHISPER_GAIN * Math.sqrt(r[0] / (1 + NOISE_FLOOR) / energy) : 0;
    const out = this.#output;
    const s = this.#synthesis;
    for (let i = 0; i < n; i++) out[i] = out[i]! + gain * y[lead + i]! * s[i]!;
  }

  /** Levinson–Durbin on `#autocorrelation` into `#lpc` (a[0] = 1); returns the prediction error power. */
  #levinson(): number {
    const r = this.#autocorrelation;
    const a = this.#lpc;
    const previous = this.#scratch;
    a.fill(0);
    a[0] = 1;
    let error = r[0]!;
    for (let i = 1; i <= this.#order; i++) {
      let acc = r[i]!;
      for (let k = 1; k < i; k++) acc += a[k]! * r[i - k]!;
      const reflection = -acc / error;
      previous.set(a);
      for (let k = 1; k < i; k++) a[k] = previous[k]! + reflection * previous[i - k]!;
      a[i] = reflection;
      error *= 1 - reflection * reflection;
      if (error <= 0) return 0;
    }
    return error;
  }

  /** xorshift32, in [0, 1). */
  #random(): number {
    let x = this.#state;
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    this.#state = x >>> 0;
    return this.#state / 4294967296;
  }
}
