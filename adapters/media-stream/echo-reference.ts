/**
 * The bot's audio as the caller heard it, for echo-aware barge-in: every frame the phone sink writes
 * is decoded, brought to the detector's rate and placed on the wall clock where the playout clock says
 * it plays (after everything written before it); a clear silences what had not played. The caller's
 * audio is put on the same clock by its arrival: the smallest (arrival − inbound time) over the last
 * two seconds, so that network and event-loop delays, which only ever make audio later, drop out.
 *
 * What the detector gets for a chunk of the caller's audio is the reference for the same span,
 * `REFERENCE_ADVANCE_MS` ahead (the echo estimator searches lags from there on), and how far the
 * reference moved in that span while the bot talked: a frame placed afresh by the playout clock (a
 * returned mark showed that the far end plays later than we thought: its buffer ran dry) or the
 * caller's audio re-timed. The echo estimator moves its delay with it rather than taking the echo,
 * suddenly off the delay, for the caller.
 */
import { Resampler } from '../../src/audio/resampler.js';
import type { WireFormat } from '../../src/audio/framer.js';
import { REFERENCE_ADVANCE_MS } from '../../src/barge-in/index.js';
import type { Clock } from '../../src/speaker/clock.js';
import { LeastDelay } from '../../src/speaker/least-delay.js';
import { decodeCallerAudio } from './caller-audio.js';

/** The ring holds this much around now (ms): the sink's lead ahead, the longest echo behind. */
const RING_MS = 4000;
/** The arrival offset is the minimum over two blocks of this long (ms). */
const OFFSET_BLOCK_MS = 1000;
/**
 * Both clocks are kept smooth: a frame is placed right after the one before it, and an offset moves
 * by this share of its error each time (a loop filter), unless the error passes `RESYNC_MS` (the
 * bot went quiet and starts again, a clear, a stalled line): then it jumps. The playout clock takes
 * returned marks by their least delay, but still moves by what jitter is left, and the echo estimator
 * wants the path's delay to hold still.
 */
const LOOP_GAIN = 0.02;
const RESYNC_MS = 80;
/**
 * On both sides the audio stays whole, sample after sample, while the smoothed clock is within this of
 * where it is written or read (ms): the echo canceller (echo.ts) needs the path to hold still to the
 * sample, and a smoothed clock rounded afresh for every frame and chunk moved it by a sample or two
 * every few frames, which left the echo above 1.5 kHz uncancelled. Past it, the position steps to the
 * clock (drift between the gateway's clock and ours builds up slowly, a step every few seconds at most).
 */
const STEP_MS = 2;
/** Seams kept for the reader (a few a second at most while it reads). */
const MAX_SEAMS = 64;

/** A read of the reference: its samples, and how far it moved (see `EchoReference.read`). */
export interface ReferenceSpan {
  samples: Int16Array;
  moved: number;
}

export class EchoReference {
  private readonly ring: Int16Array;
  private readonly samplesPerMs: number;
  private readonly resampler: Resampler | undefined;
  /** The ring is indexed by wall time (sample = ms × rate, modulo its length). The arrival offset: */
  private readonly arrival = new LeastDelay(OFFSET_BLOCK_MS);
  /** Where the next frame goes if it follows on (ms), and the smoothed arrival offset. */
  private nextPlayAtMs: number | undefined;
  private offsetMs: number | undefined;
  /** The newest wall time written (ms): nothing past it is audio. */
  private writtenToMs = Number.NEGATIVE_INFINITY;
  /** The ring index where the next frame goes if it follows on, and where the next read starts. */
  private writeIndex: number | undefined;
  private readIndex: number | undefined;
  private readonly stepSamples: number;
  /**
   * Where a frame was placed afresh while audio written before it had not been read yet (ring index
   * of the seam), and by how much later than straight after it (samples): the reader reports each as
   * it passes.
   */
  private readonly seams: Array<{ at: number; samples: number }> = [];

  constructor(
    private readonly outbound: WireFormat,
    readonly sampleRate: number,
    private readonly clock: Clock,
  ) {
    this.samplesPerMs = sampleRate / 1000;
    this.stepSamples = Math.round(STEP_MS * this.samplesPerMs);
    this.ring = new Int16Array(Math.ceil((RING_MS * sampleRate) / 1000));
    this.resampler =
      outbound.sampleRate === sampleRate
        ? undefined
        : new Resampler({ inputRate: outbound.sampleRate, outputRate: sampleRate });
  }

  /** A frame of the bot's, in the sink's wire format, that plays from `playAtMs` on. */
  onFrame(payload: Uint8Array, estimatedMs: number): void {
    let samples = decodeCallerAudio(payload, this.outbound);
    const durationMs = (samples.length / this.outbound.sampleRate) * 1000;
    const next = this.nextPlayAtMs;
    const playAtMs =
      next !== undefined && Math.abs(estimatedMs - next) < RESYNC_MS
        ? next + LOOP_GAIN * (estimatedMs - next)
        : estimatedMs;
    this.nextPlayAtMs = playAtMs + durationMs;
    if (this.resampler) samples = this.resampler.push(samples);
    let index = this.follow(this.writeIndex, Math.round(playAtMs * this.samplesPerMs));
    // Placed afresh while what came before it was still to play: the playout clock was corrected (a
    // returned mark showed the far end plays later), and the echo moves against the reference. After
    // the sink ran dry, the far end heard the same gap: nothing moves.
    const whole = this.writeIndex;
    const queued = whole !== undefined && whole > this.clock.now() * this.samplesPerMs;
    if (queued && index !== whole && this.readIndex !== undefined && whole > this.readIndex) {
      // Bounded: a caller whose audio stopped coming reads nothing while the bot goes on.
      if (this.seams.length >= MAX_SEAMS) this.seams.shift();
      this.seams.push({ at: Math.min(whole, index), samples: index - whole });
    }
    // Silence between the end of what was written and this frame (the bot was quiet).
    const from = Math.round(this.writtenToMs * this.samplesPerMs);
    if (Number.isFinite(from) && from < index) this.zero(from, Math.min(index, from + this.ring.length));
    for (let i = 0; i < samples.length; i++, index++) this.ring[index % this.ring.length] = samples[i]!;
    this.writeIndex = index;
    this.writtenToMs = Math.max(this.writtenToMs, index / this.samplesPerMs);
  }

  /** The sink cleared at `atMs`: nothing written plays after it. */
  onClear(atMs: number): void {
    const from = Math.round(atMs * this.samplesPerMs);
    const to = Math.round(this.writtenToMs * this.samplesPerMs);
    if (to > from) this.zero(from, Math.min(to, from + this.ring.length));
    this.writtenToMs = Math.min(this.writtenToMs, atMs);
    this.nextPlayAtMs = undefined;
    this.writeIndex = undefined;
    this.seams.length = 0;
    this.resampler?.reset();
  }

  /**
   * A chunk of the caller's audio ending at inbound time `endMs` has just arrived: updates the arrival
   * offset, and returns the wall time its first sample (of `durationMs`) stands for.
   */
  arrived(endMs: number, durationMs: number): number {
    const now = this.clock.now();
    const measured = this.arrival.add(now - endMs, now);
    const smoothed = this.offsetMs;
    this.offsetMs =
      smoothed !== undefined && Math.abs(measured - smoothed) < RESYNC_MS
        ? smoothed + LOOP_GAIN * (measured - smoothed)
        : measured;
    return endMs - durationMs + this.offsetMs;
  }

  /**
   * `n` samples of the bot's audio from wall time `fromMs` + the reference advance (silence where
   * none), and how many samples later the bot's echo comes against them than against the last read's
   * (`moved`: a frame placed afresh within them, or the read itself stepped).
   */
  read(fromMs: number, n: number): ReferenceSpan {
    const out = new Int16Array(n);
    const start = this.follow(
      this.readIndex,
      Math.round((fromMs + REFERENCE_ADVANCE_MS) * this.samplesPerMs),
    );
    // Reading further on than straight after the last read: the echo comes that much later against it.
    let moved = this.readIndex === undefined ? 0 : start - this.readIndex;
    // A frame placed later than straight after the one before: the echo of what follows comes sooner.
    while (this.seams.length > 0 && this.seams[0]!.at < start + n) moved -= this.seams.shift()!.samples;
    this.readIndex = start + n;
    const written = Math.round(this.writtenToMs * this.samplesPerMs);
    const oldest = written - this.ring.length;
    for (let i = 0; i < n; i++) {
      const at = start + i;
      if (at >= written || at < oldest || at < 0) continue;
      out[i] = this.ring[at % this.ring.length]!;
    }
    return { samples: out, moved };
  }

  /**
   * A chunk of the caller's audio went by without a read (the bot had been quiet for longer than an
   * echo lasts): the next read starts where the clock says and moves nothing. Its distance from the
   * last read is the bot's silence, not a move of the echo against the reference; taken for one, it
   * threw the echo canceller's taps seconds off at the start of every reply.
   */
  skip(): void {
    this.readIndex = undefined;
    this.seams.length = 0;
  }

  /** Whether the bot's audio played (or plays) later than `spanMs` before wall time `atMs` + the advance. */
  playedWithin(atMs: number, spanMs: number): boolean {
    return this.writtenToMs > atMs + REFERENCE_ADVANCE_MS - spanMs;
  }

  /** Where the audio goes on from: `whole` (right after the last), unless `clock` is further off than a step. */
  private follow(whole: number | undefined, clock: number): number {
    return whole !== undefined && Math.abs(clock - whole) <= this.stepSamples ? whole : clock;
  }

  private zero(from: number, to: number): void {
    for (let i = Math.max(0, from); i < to; i++) this.ring[i % this.ring.length] = 0;
  }
}
