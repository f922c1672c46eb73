/** A call's event history: numbered in order, bounded, and replayed from any seq for a late subscriber. */
import { describe, expect, it } from 'vitest';
import { EVENT_HISTORY, EventLog } from '../../../adapters/media-stream/event-log.js';

describe('EventLog', () => {
  it('numbers the events from 1, stamps them with the call id and an ISO time', () => {
    const log = new EventLog();
    const a = log.append({ type: 'dtmf', digit: '1' }, 'CA1');
    const b = log.append({ type: 'call.ended', reason: 'hung up' }, 'CA1');
    expect(a).toMatchObject({ seq: 1, callId: 'CA1', type: 'dtmf', digit: '1' });
    expect(b.seq).toBe(2);
    expect(new Date(a.at).toISOString()).toBe(a.at);
  });

  it('replays the events after a seq, oldest first; nothing after the last, everything before the first', () => {
    const log = new EventLog();
    for (const digit of '12345') log.append({ type: 'dtmf', digit }, 'c');
    expect(log.after(3).map((e) => e.seq)).toEqual([4, 5]);
    expect(log.after(5)).toEqual([]);
    expect(log.after(0).map((e) => e.seq)).toEqual([1, 2, 3, 4, 5]);
    expect(log.after(-10)).toHaveLength(5);
    expect(new EventLog().after(0)).toEqual([]);
  });

  it(`keeps only the latest ${EVENT_HISTORY} by default (a subscriber older than that gets what is kept)`, () => {
    const log = new EventLog();
    for (let i = 0; i < EVENT_HISTORY + 5; i++) log.append({ type: 'dtmf', digit: '1' }, 'c');
    const kept = log.after(0);
    expect(kept).toHaveLength(EVENT_HISTORY);
    expect(kept[0]!.seq).toBe(6);
    expect(log.after(EVENT_HISTORY + 3).map((e) => e.seq)).toEqual([EVENT_HISTORY + 4, EVENT_HISTORY + 5]);
  });
});
