/**
 * A call's detector as its call sees it, its work done in a VAD worker (pool.ts): the pushes go to the
 * pool, their outcomes come back, and what an older stream of it brings back after a `reset()` is
 * dropped.
 */
import type {
  CallerSilence,
  DetectorOptions,
  PushInfo,
  SpeechDetector,
  SpeechOnset,
  SpeechTurn,
} from './detector.js';
import type { HostedDetectorOptions } from './protocol.js';
import type { VadSampleRate } from './silero.js';

/** A push no worker could run: its worker died, none was ready, or the pool is closed. */
export class VadWorkerError extends Error {
  override readonly name = 'VadWorkerError';
}

/** What a push comes back with: the onset it completed, the turns that ended in it, the silence after it. */
export interface PushOutcome {
  onset: SpeechOnset | undefined;
  turns: readonly SpeechTurn[];
  /** The detector's `callerSilence` once the push was processed (none before the caller's first onset). */
  silence?: CallerSilence | undefined;
}

/** The pool's side of a pooled detector: its streams and their pushes (`VadWorkerPool`). */
export interface DetectorHost {
  /** A new stream's id (a detector's, or the fresh one its reset starts). */
  openStream(): number;
  /** One chunk of `stream`'s audio; rejects with `VadWorkerError` when no worker could run it. */
  push(
    stream: number,
    options: HostedDetectorOptions,
    samples: Int16Array,
    info: PushInfo,
  ): Promise<PushOutcome>;
  /** Frees `stream`'s detector once the pushes already given have been run. */
  closeStream(stream: number): void;
}

/**
 * A call's detector in a VAD worker. Pushes resolve in order, with the onset the worker's detector
 * found; one its worker could not run (it died, or none was ready) resolves without an onset and is
 * counted in `stats.failed`: the caller then goes unheard until the stream's next push starts a fresh
 * detector on a ready worker. `reset()` starts a new stream (a fresh detector) and drops the old one
 * after the pushes it was given.
 */
export class PooledDetector implements SpeechDetector {
  readonly sampleRate: VadSampleRate;
  readonly stats = { pushes: 0, failed: 0 };
  private stream: number;
  private readonly options: HostedDetectorOptions;
  private readonly onTurnEnd: ((turn: SpeechTurn) => void) | undefined;
  private readonly onSilence: ((silence: CallerSilence) => void) | undefined;
  /** Bumped by reset() and close(): what pushes before it bring back is dropped. */
  private epoch = 0;
  private closed = false;

  constructor(
    private readonly pool: DetectorHost,
    options: DetectorOptions,
  ) {
    // The clock stays behind (the worker's own times its windows), and the hooks are called from here.
    const { now: _now, onTurnEnd, onSilence, ...rest } = options;
    this.sampleRate = options.sampleRate;
    this.onTurnEnd = onTurnEnd;
    this.onSilence = onSilence;
    this.options = { ...rest, turns: onTurnEnd !== undefined };
    this.stream = pool.openStream();
  }

  /** The pool's key for this detector's stream (it changes on `reset()`), for diagnostics. */
  get streamId(): number {
    return this.stream;
  }

  /** Not `async`: a call pushes fifty times a second, and each await is another promise on the event loop. */
  push(samples: Int16Array, info: PushInfo): Promise<SpeechOnset | undefined> {
    if (this.closed) return Promise.resolve(undefined);
    if (info.reference && info.reference.length !== samples.length)
      return Promise.reject(new RangeError('the reference must be as long as the samples'));
    const epoch = this.epoch;
    this.stats.pushes++;
    return this.pool.push(this.stream, this.options, samples, info).then(
      (outcome) => {
        if (epoch !== this.epoch) return undefined;
        for (const turn of outcome.turns) this.onTurnEnd?.(turn);
        if (outcome.silence) this.onSilence?.(outcome.silence);
        return outcome.onset;
      },
      (error: unknown) => {
        if (!(error instanceof VadWorkerError)) throw error;
        this.stats.failed++;
        return undefined;
      },
    );
  }

  reset(): void {
    if (this.closed) return;
    this.epoch++;
    this.pool.closeStream(this.stream);
    this.stream = this.pool.openStream();
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.epoch++;
    this.pool.closeStream(this.stream);
  }
}
