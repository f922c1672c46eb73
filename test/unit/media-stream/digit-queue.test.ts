import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { DigitQueue } from '../../../adapters/media-stream/digit-queue.js';
import { FakeClock } from '../../helpers/fake-clock.js';

describe('DigitQueue', () => {
  it('hands out keys pressed earlier first, then waits for the next one until the timeout', async () => {
    const clock = new FakeClock();
    const q = new DigitQueue(clock);
    q.push('1');
    q.push('2');
    const signal = new AbortController().signal;
    expect(await q.next(1000, signal)).toBe('1');
    expect(await q.next(1000, signal)).toBe('2');
    const waiting = q.next(1000, signal);
    await clock.advance(400);
    q.push('#');
    expect(await waiting).toBe('#');
    const none = q.next(1000, signal);
    await clock.advance(1000);
    expect(await none).toBeUndefined();
    expect(clock.pending).toBe(0);
  });

  it('rejects on abort and keeps no timer', async () => {
    const clock = new FakeClock();
    const q = new DigitQueue(clock);
    const controller = new AbortController();
    const waiting = q.next(5000, controller.signal);
    controller.abort(new Error('call ended'));
    await expect(waiting).rejects.toThrow('call ended');
    expect(clock.pending).toBe(0);
    // A key pressed afterwards waits for the next reader.
    q.push('5');
    expect(await q.next(10, new AbortController().signal)).toBe('5');
  });

  it('keeps at most 64 unread keys', async () => {
    const q = new DigitQueue(new FakeClock());
    for (let i = 0; i < 100; i++) q.push(String(i % 10));
    const signal = new AbortController().signal;
    let read = 0;
    while ((await q.next(0, signal)) !== undefined) read++;
    expect(read).toBe(64);
  });

  it("leaves no listener on the call's signal and no timer, however each wait ends", async () => {
    const clock = new FakeClock();
    const q = new DigitQueue(clock);
    const call = new AbortController();
    for (let i = 0; i < 20; i++) {
      const waiting = q.next(1000, call.signal);
      if (i % 2 === 0) q.push(String(i % 10));
      else await clock.advance(1000);
      await waiting;
    }
    expect(getEventListeners(call.signal, 'abort')).toHaveLength(0);
    expect(clock.pending).toBe(0);
  });
});
