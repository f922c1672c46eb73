import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { AsyncQueue } from '../../../src/async/queue.js';

/** Lets every pending continuation run. */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Resolves to whether `promise` has settled by now. */
async function isSettled(promise: Promise<unknown>): Promise<boolean> {
  let settled = false;
  promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  await settle();
  return settled;
}

describe('AsyncQueue', () => {
  it('hands items out in the order they were pushed', async () => {
    const q = new AsyncQueue<number>(10);
    for (let i = 0; i < 5; i++) expect(q.tryPush(i)).toBe(true);
    expect(q.size).toBe(5);
    const out: number[] = [];
    for (let i = 0; i < 5; i++) out.push((await q.shift())!);
    expect(out).toEqual([0, 1, 2, 3, 4]);
    expect(q.size).toBe(0);
  });

  it('wakes a waiting consumer when an item arrives, and serves waiting consumers in order', async () => {
    const q = new AsyncQueue<string>(4);
    const first = q.shift();
    const second = q.shift();
    expect(await isSettled(first)).toBe(false);
    q.tryPush('a');
    q.tryPush('b');
    expect(await first).toBe('a');
    expect(await second).toBe('b');
  });

  it('holds at most its capacity: tryPush refuses, push waits until a consumer takes one', async () => {
    const q = new AsyncQueue<number>(2);
    expect(await q.push(1)).toBe(true);
    expect(await q.push(2)).toBe(true);
    expect(q.tryPush(3)).toBe(false);
    const third = q.push(3);
    const fourth = q.push(4);
    expect(await isSettled(third)).toBe(false);
    expect(q.size).toBe(2);
    expect(await q.shift()).toBe(1);
    expect(await third).toBe(true);
    expect(await isSettled(fourth)).toBe(false);
    expect(q.size).toBe(2);
    expect(await q.shift()).toBe(2);
    expect(await fourth).toBe(true);
    expect([await q.shift(), await q.shift()]).toEqual([3, 4]);
  });

  it('rejects a waiting consumer or producer with the abort reason, losing no item', async () => {
    const q = new AsyncQueue<number>(1);
    const consumer = new AbortController();
    const waiting = q.shift(consumer.signal);
    consumer.abort(new Error('barge-in'));
    await expect(waiting).rejects.toThrow('barge-in');
    q.tryPush(1);
    const producer = new AbortController();
    const pushing = q.push(2, producer.signal);
    producer.abort(new Error('gone'));
    await expect(pushing).rejects.toThrow('gone');
    expect(q.size).toBe(1);
    expect(await q.shift()).toBe(1);
    // An aborted signal refuses at once, even with an item ready.
    q.tryPush(3);
    await expect(q.shift(AbortSignal.abort(new Error('late')))).rejects.toThrow('late');
    await expect(q.push(4, AbortSignal.abort(new Error('late')))).rejects.toThrow('late');
    expect(await q.shift()).toBe(3);
  });

  it('close() lets consumers take what is queued, then gives undefined; producers get false', async () => {
    const q = new AsyncQueue<number>(1);
    q.tryPush(1);
    const pushing = q.push(2);
    q.close();
    expect(await pushing).toBe(false);
    expect(q.closed).toBe(true);
    expect(q.tryPush(3)).toBe(false);
    expect(await q.push(3)).toBe(false);
    expect(await q.shift()).toBe(1);
    expect(await q.shift()).toBeUndefined();
    expect(await q.shift()).toBeUndefined();
  });

  it('close(error) wakes waiting consumers with the error once the queue is empty; only the first close counts', async () => {
    const q = new AsyncQueue<number>(4);
    const waiting = q.shift();
    q.close(new Error('worker exited'));
    await expect(waiting).rejects.toThrow('worker exited');
    const r = new AsyncQueue<number>(4);
    r.tryPush(7);
    r.close(new Error('failed'));
    r.close();
    expect(await r.shift()).toBe(7);
    await expect(r.shift()).rejects.toThrow('failed');
  });

  it('iterates until closed, and throws the close error', async () => {
    const q = new AsyncQueue<number>(2);
    const producing = (async () => {
      for (let i = 0; i < 6; i++) await q.push(i);
      q.close();
    })();
    const seen: number[] = [];
    for await (const n of q) seen.push(n);
    await producing;
    expect(seen).toEqual([0, 1, 2, 3, 4, 5]);

    const failing = new AsyncQueue<number>(2);
    failing.tryPush(1);
    failing.close(new Error('broken'));
    const got: number[] = [];
    await expect(
      (async () => {
        for await (const n of failing.values()) got.push(n);
      })(),
    ).rejects.toThrow('broken');
    expect(got).toEqual([1]);
  });

  it('values(signal) stops with the abort reason', async () => {
    const q = new AsyncQueue<number>(2);
    const ac = new AbortController();
    const reading = (async () => {
      for await (const _ of q.values(ac.signal)) ac.abort(new Error('stop'));
    })();
    q.tryPush(1);
    await expect(reading).rejects.toThrow('stop');
  });

  it('leaves no abort listener behind, whether a wait ends by an item, by close, or by abort', async () => {
    const q = new AsyncQueue<number>(1);
    const ac = new AbortController();
    const waiting = q.shift(ac.signal);
    expect(getEventListeners(ac.signal, 'abort')).toHaveLength(1);
    q.tryPush(1);
    await waiting;
    q.tryPush(2);
    const pushing = q.push(3, ac.signal);
    await settle();
    expect(getEventListeners(ac.signal, 'abort')).toHaveLength(1);
    await q.shift();
    await pushing;
    const closing = q.push(4, ac.signal);
    q.close();
    await closing;
    expect(getEventListeners(ac.signal, 'abort')).toHaveLength(0);
    // Many waits on one long-lived signal do not pile up listeners.
    const r = new AsyncQueue<number>(1);
    for (let i = 0; i < 100; i++) {
      const next = r.shift(ac.signal);
      r.tryPush(i);
      await next;
    }
    expect(getEventListeners(ac.signal, 'abort')).toHaveLength(0);
  });

  it('refuses a capacity that is not a whole number of at least 1', () => {
    expect(() => new AsyncQueue(0)).toThrow(RangeError);
    expect(() => new AsyncQueue(1.5)).toThrow(RangeError);
    expect(() => new AsyncQueue(Number.POSITIVE_INFINITY)).toThrow(RangeError);
  });
});
