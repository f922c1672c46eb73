import { describe, expect, it } from 'vitest';
import { FrameQueue } from '../../../src/speaker/frame-queue.js';
import { TextLedger } from '../../../src/speaker/ledger.js';

describe('FrameQueue', () => {
  it('holds at most its capacity: the producer waits until the consumer takes', async () => {
    const q = new FrameQueue<number>(2);
    const signal = new AbortController().signal;
    await q.push(1, signal);
    await q.push(2, signal);
    let third = false;
    const pushing = q.push(3, signal).then(() => (third = true));
    await new Promise((r) => setImmediate(r));
    expect(third).toBe(false);
    expect(q.size).toBe(2);
    expect(await q.shift(signal)).toBe(1);
    await pushing;
    expect(third).toBe(true);
    q.close();
    expect([await q.shift(signal), await q.shift(signal), await q.shift(signal)]).toEqual([2, 3, undefined]);
  });

  it('tells the sender when it would have to wait, and abort rejects a waiting consumer', async () => {
    const q = new FrameQueue<number>(1);
    const ac = new AbortController();
    expect(q.empty).toBe(true);
    await q.push(1, ac.signal);
    expect(q.empty).toBe(false);
    expect(await q.shift(ac.signal)).toBe(1);
    const waiting = q.shift(ac.signal);
    ac.abort(new Error('barge-in'));
    await expect(waiting).rejects.toThrow('barge-in');
    q.close();
    expect(q.empty).toBe(false); // closed: the sender gets undefined at once
    expect(await q.shift()).toBeUndefined();
  });
});

describe('TextLedger', () => {
  const text = 'Hello there friend. How are you today?';
  const ledger = new TextLedger();
  ledger.beginSegment(0, 19);
  for (let i = 0; i < 10; i++) ledger.addFrame();
  ledger.beginSegment(20, text.length);
  for (let i = 0; i < 10; i++) ledger.addFrame();

  it('maps heard frames to text, cut back to a whole word', () => {
    expect(ledger.heardOffset(0, text)).toBe(0);
    expect(text.slice(0, ledger.heardOffset(6, text))).toBe('Hello there');
    expect(text.slice(0, ledger.heardOffset(10, text))).toBe('Hello there friend.');
    expect(text.slice(0, ledger.heardOffset(16, text))).toBe('Hello there friend. How are');
    expect(ledger.heardOffset(20, text)).toBe(text.length);
  });
});
