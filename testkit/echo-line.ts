/**
 * A phone line that echoes the bot, for judging barge-in: what the caller's side sends back is the
 * bot's audio as the caller heard it, delayed by the echo path, attenuated by its echo return loss
 * (ERL) and smeared by a short impulse response (a 2-wire hybrid's, or a speakerphone's), plus the
 * caller's own speech, plus line noise, through G.711 mu-law. Deterministic for a seed.
 *
 * Use it sample-synchronously: each call to `next()` takes the n samples of bot audio that played
 * during those n samples of the caller's time (silence when the bot was quiet) and returns the n
 * samples the gateway sends inbound.
 */
import { decodeMulaw, encodeMulaw } from '../src/audio/g711.js';
import { seeded } from './random.js';
import { FRAME_MS } from '../src/audio/framer.js';

export interface EchoPath {
  /** The echo's delay behind the bot's audio at the caller's ear (ms). */
  delayMs: number;
  /** Echo return loss (dB): how much quieter the echo is than the bot. */
  erlDb: number;
}

export interface EchoLineOptions extends EchoPath {
  sampleRate: number;
  /** Line noise level (dBFS RMS); undefined: none. Against speech at −20 dBFS, −40 is 20 dB SNR. */
  noiseDbfs?: number | undefined;
  /** Through mu-law and back. Default true. */
  mulaw?: boolean;
  seed?: number;
}

/** A short, decaying echo impulse response (taps at the line's rate, before the ERL gain). */
const IMPULSE = [1, 0.45, -0.25, 0.12, -0.05];

export class EchoLine {
  private readonly sampleRate: number;
  private readonly mulaw: boolean;
  private readonly random: () => number;
  private readonly noiseAmplitude: number;
  /** The bot's audio heard so far, long enough for the longest delay. */
  private history: Float32Array;
  private written = 0;
  private path: EchoPath;
  private gain = 0;
  private delaySamples = 0;

  constructor(options: EchoLineOptions) {
    this.sampleRate = options.sampleRate;
    this.mulaw = options.mulaw ?? true;
    this.random = seeded(options.seed ?? 1);
    // Uniform noise of amplitude a has RMS a/√3.
    this.noiseAmplitude =
      options.noiseDbfs === undefined ? 0 : 32768 * 10 ** (options.noiseDbfs / 20) * Math.sqrt(3);
    this.history = new Float32Array(options.sampleRate * 2);
    this.path = { delayMs: options.delayMs, erlDb: options.erlDb };
    this.setPath(this.path);
  }

  /** A new echo path from the next sample on (a transfer, a speakerphone switched on). */
  setPath(path: EchoPath): void {
    this.path = { ...path };
    this.delaySamples = Math.round((path.delayMs * this.sampleRate) / 1000);
    const energy = Math.sqrt(IMPULSE.reduce((s, h) => s + h * h, 0));
    this.gain = 10 ** (-path.erlDb / 20) / energy;
    if (this.delaySamples + IMPULSE.length + this.sampleRate > this.history.length) {
      const longer = new Float32Array(this.delaySamples + IMPULSE.length + this.sampleRate * 2);
      longer.set(this.history.subarray(0, Math.min(this.written, this.history.length)));
      this.history = longer;
    }
  }

  get currentPath(): EchoPath {
    return { ...this.path };
  }

  /**
   * `played`: the bot's audio during these samples (silence when it was quiet); `caller`: the
   * caller's own sound (speech, a cough), same length, or none. Returns what the line sends.
   */
  next(played: Int16Array | undefined, n: number, caller?: Int16Array): Int16Array {
    const out = new Int16Array(n);
    const size = this.history.length;
    for (let i = 0; i < n; i++) {
      const at = this.written + i;
      this.history[at % size] = played ? played[i]! : 0;
      let echo = 0;
      for (let k = 0; k < IMPULSE.length; k++) {
        const from = at - this.delaySamples - k;
        if (from >= 0 && from > at - size) echo += IMPULSE[k]! * this.history[from % size]!;
      }
      let v = echo * this.gain + (caller ? caller[i]! : 0);
      if (this.noiseAmplitude > 0) v += (this.random() * 2 - 1) * this.noiseAmplitude;
      out[i] = Math.max(-32768, Math.min(32767, Math.round(v)));
    }
    this.written += n;
    return this.mulaw ? decodeMulaw(encodeMulaw(out)) : out;
  }
}

/** Scales `samples` to an RMS level (dBFS) over its loud part: how test speech is levelled. */
export function atLevel(samples: Int16Array, dbfs: number): Int16Array {
  let sum = 0;
  let count = 0;
  for (const s of samples)
    if (Math.abs(s) > 100) {
      sum += s * s;
      count++;
    }
  if (count === 0) return samples.slice();
  const rms = Math.sqrt(sum / count);
  const g = (32768 * 10 ** (dbfs / 20)) / rms;
  return Int16Array.from(samples, (s) => Math.max(-32768, Math.min(32767, Math.round(s * g))));
}

/**
 * What a gateway played, on the wall clock, as an ideal gateway plays it: each message right after
 * the one before, or on arrival when its buffer had run dry; a clear drops what had not played. The
 * echoing callers of the tests and benchmarks read the bot's audio from here (a ring of 4 s).
 */
export class GatewayPlayedAudio {
  private readonly ring: Int16Array;
  private readonly origin = performance.now();
  /** Where playout is up to (samples since `origin`). */
  private cursor = 0;

  constructor(private readonly sampleRate: number) {
    this.ring = new Int16Array(sampleRate * 4);
  }

  /** A media message's audio, arrived at `atMs` (performance.now()). */
  media(samples: Int16Array, atMs: number): void {
    const from = Math.max(this.cursor, this.index(atMs));
    for (let i = 0; i < samples.length; i++) this.ring[(from + i) % this.ring.length] = samples[i]!;
    this.cursor = from + samples.length;
  }

  /** A clear at `atMs`: what had not played is dropped. */
  clear(atMs: number): void {
    const at = this.index(atMs);
    for (let i = Math.max(0, at); i < this.cursor; i++) this.ring[i % this.ring.length] = 0;
    this.cursor = Math.min(this.cursor, at);
  }

  /** When (performance.now()) everything received so far has played. */
  get playedToMs(): number {
    return this.origin + (this.cursor * 1000) / this.sampleRate;
  }

  /** `n` samples of what played from `fromMs` on (silence where nothing did). */
  read(fromMs: number, n: number): Int16Array {
    const out = new Int16Array(n);
    const from = this.index(fromMs);
    for (let i = 0; i < n; i++) {
      const k = from + i;
      if (k >= 0 && k < this.cursor && k > this.cursor - this.ring.length)
        out[i] = this.ring[k % this.ring.length]!;
    }
    return out;
  }

  private index(ms: number): number {
    return Math.round(((ms - this.origin) * this.sampleRate) / 1000);
  }
}

/**
 * The caller's side of a line that echoes, for the tests and benchmarks: every 20 ms, on a drift-free
 * schedule as a gateway's own clock sends, `send` gets the caller's next frame (mu-law): the echo of
 * what played (`played`, fed by the caller's transport) one frame earlier, plus the caller's speech when
 * it talks, plus the line's noise. `beforeFrame` runs first, for a transport that feeds `played` then.
 */
export class EchoingCaller {
  readonly played: GatewayPlayedAudio;
  /** performance.now() when the frame carrying the speech onset of the latest talk went out. */
  onsetSentAt: number | undefined;
  /** Where that frame ends on the caller's timeline (ms from the first frame's start): when it went out. */
  onsetFrameEndMs: number | undefined;
  private readonly line: EchoLine;
  private readonly frameSamples: number;
  private readonly startedAt = performance.now();
  private frames = 0;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private speech: Int16Array | undefined;
  private speechAt = 0;
  private onset = 0;

  constructor(
    line: EchoLineOptions,
    private readonly send: (mulaw: Uint8Array) => void,
    private readonly beforeFrame?: () => void,
  ) {
    this.line = new EchoLine(line);
    this.played = new GatewayPlayedAudio(line.sampleRate);
    this.frameSamples = (line.sampleRate * FRAME_MS) / 1000;
    this.schedule();
  }

  /** The caller starts talking: `samples` at the line's rate, whose speech begins at sample `onset`. */
  talk(samples: Int16Array, onset: number): void {
    this.speech = samples;
    this.speechAt = 0;
    this.onset = onset;
    this.onsetSentAt = undefined;
    this.onsetFrameEndMs = undefined;
  }

  get talking(): boolean {
    return this.speech !== undefined;
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private schedule(): void {
    if (this.stopped) return;
    const due = this.startedAt + (this.frames + 1) * FRAME_MS;
    this.timer = setTimeout(
      () => {
        this.tick();
        this.schedule();
      },
      Math.max(0, due - performance.now()),
    );
  }

  private tick(): void {
    this.beforeFrame?.();
    const n = this.frameSamples;
    // What played during the frame before this one (the echo path's delay comes on top, in the line).
    const heard = this.played.read(this.startedAt + (this.frames - 1) * FRAME_MS, n);
    this.frames++;
    let caller: Int16Array | undefined;
    if (this.speech) {
      caller = new Int16Array(n);
      caller.set(this.speech.subarray(this.speechAt, this.speechAt + n));
      if (this.onsetSentAt === undefined && this.speechAt + n > this.onset) {
        this.onsetSentAt = performance.now();
        this.onsetFrameEndMs = this.frames * FRAME_MS;
      }
      this.speechAt += n;
      if (this.speechAt >= this.speech.length) this.speech = undefined;
    }
    this.send(encodeMulaw(this.line.next(heard, n, caller)));
  }
}

/**
 * The echo paths the barge-in benchmarks run (bench echo-lines end to end, bench echo-offline in this
 * thread): 40 to 300 ms and 6 to 30 dB of echo return loss, and a line without echo.
 */
export const ECHO_PATHS: ReadonlyArray<EchoPath | undefined> = [
  { delayMs: 40, erlDb: 6 },
  { delayMs: 300, erlDb: 6 },
  { delayMs: 150, erlDb: 12 },
  { delayMs: 80, erlDb: 20 },
  { delayMs: 250, erlDb: 30 },
  undefined,
];
/** Line noise (dBFS) against a caller's −20 dBFS speech: none, 20 dB and 10 dB SNR. */
export const LINE_NOISES_DBFS: ReadonlyArray<number | undefined> = [undefined, -40, -30];
