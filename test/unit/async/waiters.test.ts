import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { Waiters } from '../../../src/async/waiters.js';
import { FakeClock } from '../../helpers/fake-clock.js';

const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('Waiters', () => {
  it('wakeAll() resolves every task waiting, in the order they began, and only those', async () => {
    const waiters = new Waiters();
    const order: number[] = [];
    const a = waiters.wait().then(() => order.push(1));
    const b = waiters.wait().then(() => order.push(2));
    expect(waiters.size).toBe(2);
    await settle();
    expect(order).toEqual([]);
    waiters.wakeAll();
    expect(waiters.size).toBe(0);
    await Promise.all([a, b]);
    expect(order).toEqual([1, 2]);
    // A wake with nobody waiting is not remembered.
    waiters.wakeAll();
    let late = false;
    void waiters.wait().then(() => (late = true));
    await settle();
    expect(late).toBe(false);
    waiters.wakeAll();
    await settle();
    expect(late).toBe(true);
  });

  it('a task that waits again while being woken waits for the next wake', async () => {
    const waiters = new Waiters();
    let rounds = 0;
    const loop = (async () => {
      while (rounds < 3) {
        await waiters.wait();
        rounds++;
      }
    })();
    for (let i = 1; i <= 3; i++) {
      await settle();
      waiters.wakeAll();
      await settle();
      expect(rounds).toBe(i);
    }
    await loop;
  });

  it('wait(signal) rejects with the reason, at once if already aborted, and removes its listener', async () => {
    const waiters = new Waiters();
    await expect(waiters.wait(AbortSignal.abort(new Error('already')))).rejects.toThrow('already');
    const ac = new AbortController();
    const waiting = waiters.wait(ac.signal);
    expect(getEventListeners(ac.signal, 'abort')).toHaveLength(1);
    ac.abort(new Error('gone'));
    await expect(waiting).rejects.toThrow('gone');
    expect(waiters.size).toBe(0);
    const other = new AbortController();
    for (let i = 0; i < 50; i++) {
      const w = waiters.wait(other.signal);
      waiters.wakeAll();
      await w;
    }
    expect(getEventListeners(other.signal, 'abort')).toHaveLength(0);
  });

  describe('waitOr (a timed wait on an injected clock)', () => {
    it('resolves false when the sleep ends by itself, leaving no timer and no listener', async () => {
      const clock = new FakeClock();
      const waiters = new Waiters();
      const ac = new AbortController();
      let result: boolean | undefined;
      const waiting = waiters
        .waitOr((s) => clock.sleepUntil(100, s), ac.signal)
        .then((woken) => (result = woken));
      await clock.advance(99);
      expect(result).toBeUndefined();
      await clock.advance(1);
      await waiting;
      expect(result).toBe(false);
      expect(clock.pending).toBe(0);
      expect(waiters.size).toBe(0);
      expect(getEventListeners(ac.signal, 'abort')).toHaveLength(0);
    });

    it('resolves true when woken first, cancelling the sleep', async () => {
      const clock = new FakeClock();
      const waiters = new Waiters();
      const waiting = waiters.waitOr((s) => clock.sleepUntil(5000, s));
      await settle();
      expect(clock.pending).toBe(1);
      waiters.wakeAll();
      expect(await waiting).toBe(true);
      expect(clock.pending).toBe(0);
      expect(clock.now()).toBe(0);
    });

    it('rejects with the abort reason, cancelling the sleep and removing its listener', async () => {
      const clock = new FakeClock();
      const waiters = new Waiters();
      const ac = new AbortController();
      const waiting = waiters.waitOr((s) => clock.sleepUntil(5000, s), ac.signal);
      ac.abort(new Error('hung up'));
      await expect(waiting).rejects.toThrow('hung up');
      expect(clock.pending).toBe(0);
      expect(waiters.size).toBe(0);
      expect(getEventListeners(ac.signal, 'abort')).toHaveLength(0);
      await expect(
        waiters.waitOr(() => Promise.resolve(), AbortSignal.abort(new Error('before'))),
      ).rejects.toThrow('before');
    });

    it("passes on the task's own error", async () => {
      const waiters = new Waiters();
      await expect(waiters.waitOr(() => Promise.reject(new Error('clock broke')))).rejects.toThrow(
        'clock broke',
      );
      expect(waiters.size).toBe(0);
    });
  });
});
