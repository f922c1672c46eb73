/**
 * A call's answering-machine detection (src/barge-in/amd.ts) on the callee's audio, from the stream's
 * first media message on, whether barge-in is on or not: each payload is decoded here and pushed to the
 * detector, which decides on frame time. Its decision is reported once (`onDecision`), and a flow waits
 * on it (`decision`) and on the end of a machine's greeting (`greetingEnd`), each bounded on the call's
 * clock, so that a call whose audio never comes still goes on.
 */
import type { WireFormat } from '../../src/audio/framer.js';
import {
  createAnsweringMachineDetector,
  type AmdDecision,
  type AmdEvent,
  type AnsweringMachineDetector,
} from '../../src/barge-in/amd.js';
import type { FlowGreetingEnd } from '../../src/flows/port.js';
import type { Clock } from '../../src/speaker/clock.js';
import { decodeCallerAudio } from './caller-audio.js';

export interface CallAmdOptions {
  /** The callee's audio as the gateway sends it. */
  inbound: WireFormat;
  clock: Clock;
  /** The decision, once made. */
  onDecision: (decision: AmdDecision) => void;
}

type GreetingEvent = Extract<AmdEvent, { type: 'beep' | 'greeting-end' | 'greeting-timeout' }>;

function greetingOf(event: GreetingEvent): FlowGreetingEnd {
  switch (event.type) {
    case 'beep':
      return { end: 'beep', atMs: event.beep.endMs };
    case 'greeting-end':
      return { end: 'silence', atMs: event.atMs };
    case 'greeting-timeout':
      return { end: 'timeout', atMs: event.atMs };
  }
}

export class CallAmd {
  private readonly detector: AnsweringMachineDetector;
  private readonly decided = new Set<(decision: AmdDecision) => void>();
  private readonly greetingEnded = new Set<(end: FlowGreetingEnd) => void>();
  private closed = false;

  /** Throws a `RangeError` for an inbound rate the detector does not take (8–48 kHz). */
  constructor(private readonly options: CallAmdOptions) {
    this.detector = createAnsweringMachineDetector({ sampleRate: options.inbound.sampleRate });
  }

  get decision(): AmdDecision | undefined {
    return this.detector.decision;
  }

  /** One media payload of the callee's. */
  push(payload: Uint8Array): void {
    if (this.closed || payload.length === 0) return;
    for (const event of this.detector.push(decodeCallerAudio(payload, this.options.inbound))) {
      if (event.type === 'decision') {
        this.options.onDecision(event.decision);
        for (const resolve of this.decided) resolve(event.decision);
      } else for (const resolve of this.greetingEnded) resolve(greetingOf(event));
    }
  }

  /** The decision, at once when made; undefined after `timeoutMs` (call clock) without one. */
  async waitForDecision(timeoutMs: number, signal: AbortSignal): Promise<AmdDecision | undefined> {
    const made = this.detector.decision;
    if (made) return made;
    return this.race(this.decided, timeoutMs, signal, () => undefined);
  }

  /**
   * The end of the callee's greeting: the one a machine decision started waiting for (at once when it
   * ended already), else from now. `timeout` after `maxWaitMs` on the call's clock, whatever audio came.
   */
  async waitForGreetingEnd(maxWaitMs: number, signal: AbortSignal): Promise<FlowGreetingEnd> {
    const watch = this.detector.greeting;
    if (watch.status === 'ended') return greetingOf(watch.event);
    if (watch.status === 'idle') this.detector.waitForGreetingEnd({ maxWaitMs });
    return this.race(this.greetingEnded, maxWaitMs, signal, () => ({ end: 'timeout' }) as const);
  }

  /** The call ended: no more audio is looked at. */
  close(): void {
    this.closed = true;
  }

  private async race<T, U>(
    waiters: Set<(value: T) => void>,
    timeoutMs: number,
    signal: AbortSignal,
    onTimeout: () => U,
  ): Promise<T | U> {
    signal.throwIfAborted();
    const { clock } = this.options;
    const stop = new AbortController();
    let resolve!: (value: T) => void;
    const came = new Promise<T>((r) => (resolve = r));
    waiters.add(resolve);
    const timedOut = clock
      .sleepUntil(clock.now() + timeoutMs, AbortSignal.any([signal, stop.signal]))
      .then(onTimeout);
    try {
      return await Promise.race([came, timedOut]);
    } finally {
      waiters.delete(resolve);
      stop.abort();
      timedOut.catch(() => undefined);
    }
  }
}
