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
  ledger.beginSegment({ start: 0, end: 19, text: text.slice(0, 19) });
  for (let i = 0; i < 10; i++) ledger.addAudio(20);
  ledger.beginSegment({ start: 20, end: text.length, text: text.slice(20) });
  for (let i = 0; i < 10; i++) ledger.addAudio(20);

  it('without timings, spreads the text over the audio and cuts back to a whole word', () => {
    expect(ledger.heardOffset(0, text)).toBe(0);
    expect(text.slice(0, ledger.heardOffset(120, text))).toBe('Hello there');
    expect(text.slice(0, ledger.heardOffset(200, text))).toBe('Hello there friend.');
    expect(text.slice(0, ledger.heardOffset(320, text))).toBe('Hello there friend. How are');
    expect(ledger.heardOffset(400, text)).toBe(text.length);
    expect(ledger.aligned).toBe(false);
  });

  it('with timings, cuts at the last character whose audio had ended, counting code points', () => {
    // "Hi 👋 you": the emoji is one character of the timings and two UTF-16 units of the string.
    const said = 'Hi 👋 you.';
    const characters = [...said];
    const startMs = characters.map((_, i) => i * 50);
    const endMs = characters.map((_, i) => i * 50 + 50);
    const aligned = new TextLedger();
    aligned.beginSegment({ start: 0, end: said.length, text: said }, { characters, startMs, endMs });
    aligned.addAudio(characters.length * 50);
    expect(aligned.aligned).toBe(true);
    expect(said.slice(0, aligned.heardOffset(49, said))).toBe('');
    expect(said.slice(0, aligned.heardOffset(50, said))).toBe('H');
    expect(said.slice(0, aligned.heardOffset(160, said))).toBe('Hi ');
    expect(said.slice(0, aligned.heardOffset(200, said))).toBe('Hi 👋');
    expect(said.slice(0, aligned.heardOffset(349, said))).toBe('Hi 👋 y');
    expect(said.slice(0, aligned.heardOffset(350, said))).toBe('Hi 👋 yo');
    expect(aligned.heardOffset(10_000, said)).toBe(said.length);
  });

  it('with timings still arriving, counts only the characters timed so far', () => {
    const said = 'One two three.';
    const growing = { characters: [] as string[], startMs: [] as number[], endMs: [] as number[] };
    const l = new TextLedger();
    l.beginSegment({ start: 0, end: said.length, text: said }, growing);
    l.addAudio(1000);
    for (const [i, c] of [...'One '].entries()) {
      growing.characters.push(c);
      growing.startMs.push(i * 60);
      growing.endMs.push(i * 60 + 60);
    }
    expect(said.slice(0, l.heardOffset(900, said))).toBe('One ');
  });
});
