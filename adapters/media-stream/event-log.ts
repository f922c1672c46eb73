/**
 * A call's events in order: numbers them (`seq`), stamps them, and keeps the latest for subscribers of
 * the event stream that join late or reconnect (`after(seq)`).
 */
import type { CallEvent, EventBody } from './call-events.js';

/** Events a call keeps for late subscribers: enough for a reconnect, bounded per call. */
export const EVENT_HISTORY = 1000;

export class EventLog {
  private seq = 0;
  /** The latest events, oldest first, at most `capacity`; their seqs are consecutive. */
  private readonly history: CallEvent[] = [];

  constructor(private readonly capacity = EVENT_HISTORY) {}

  /** Numbers and stamps `body` as the call's next event, and keeps it. */
  append(body: EventBody, callId: string): CallEvent {
    const event: CallEvent = { ...body, seq: ++this.seq, at: new Date().toISOString(), callId };
    this.history.push(event);
    if (this.history.length > this.capacity) this.history.shift();
    return event;
  }

  /** The kept events after `seq`, oldest first (all of them for a seq before the oldest kept). */
  after(seq: number): CallEvent[] {
    const first = this.history[0];
    if (first === undefined) return [];
    return this.history.slice(Math.max(0, Math.floor(seq) - first.seq + 1));
  }
}
