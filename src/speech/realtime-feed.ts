/**
 * What a realtime session hears, in order, for one consumer: partial transcripts as the caller speaks,
 * and a committed transcript per commit. Bounded without backpressure (the server does not wait for
 * us): a partial supersedes the partial before it, so a slow or absent consumer holds at most one
 * partial between two committed transcripts, and a session has a bounded number of those.
 */
import { Waiters } from '../async/waiters.js';
import type { TranscriptBody } from './transcript.js';

/** A committed transcript of a realtime session. */
export interface RealtimeTranscript extends TranscriptBody {
  /** The session's audio sent when it came (ms): its words' times are within it. */
  readonly audioMs: number;
  /** `commit()` → this transcript, on the session's clock; `undefined` when the server committed by itself. */
  readonly commitLatencyMs: number | undefined;
  readonly sessionId: string | undefined;
}

export type RealtimeTranscriptEvent =
  | {
      readonly type: 'partial';
      /** The server's current guess at the words since the last commit (it may change). */
      readonly text: string;
      /** The session's audio sent when it came (ms). */
      readonly audioMs: number;
      /** When it came, on the session's clock. */
      readonly atMs: number;
    }
  | {
      readonly type: 'committed';
      readonly transcript: RealtimeTranscript;
      /** False when the server committed without being asked (its own 90 s cut). */
      readonly requested: boolean;
    };

export class TranscriptFeed {
  readonly #items: RealtimeTranscriptEvent[] = [];
  readonly #arrivals = new Waiters();
  #ended: { readonly error: unknown } | undefined;
  #taken = false;

  /** Events queued and not yet taken. */
  get size(): number {
    return this.#items.length;
  }

  push(event: RealtimeTranscriptEvent): void {
    if (this.#ended) return;
    const last = this.#items.at(-1);
    if (event.type === 'partial' && last?.type === 'partial') this.#items[this.#items.length - 1] = event;
    else this.#items.push(event);
    this.#arrivals.wakeAll();
  }

  /** No more events: the consumer takes what is queued, then the iteration ends (or throws `error`). */
  end(error?: unknown): void {
    if (this.#ended) return;
    this.#ended = { error };
    this.#arrivals.wakeAll();
  }

  /** The events as they come; one consumer only (a second call throws). Rejects with `signal.reason` on abort. */
  async *values(signal?: AbortSignal): AsyncGenerator<RealtimeTranscriptEvent, void, undefined> {
    if (this.#taken) throw new Error('a realtime session has one reader of its events');
    this.#taken = true;
    for (;;) {
      signal?.throwIfAborted();
      const item = this.#items.shift();
      if (item !== undefined) {
        yield item;
        continue;
      }
      if (this.#ended) {
        if (this.#ended.error !== undefined) throw this.#ended.error as Error;
        return;
      }
      await this.#arrivals.wait(signal);
    }
  }
}
