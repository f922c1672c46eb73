/**
 * A streamed answer's later segments cut before their sentence ends when the audio queued would run
 * out first (segmenter.ts, `runway`): at a clause, else a phrase boundary, else a word.
 */
import { describe, expect, it } from 'vitest';
import { segmentStream, type RunwayOptions, type Segment } from '../../../src/speaker/segmenter.js';
import { TokenSource } from '../../../testkit/tokens.js';

const eagerFirst = { minChars: 8, maxChars: 100, waitMs: 60 };
const texts = (segments: readonly Segment[]): string[] => segments.map((s) => s.text);
const until = async (done: () => boolean, ms = 2000): Promise<void> => {
  const deadline = Date.now() + ms;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${done.toString()}`);
    await new Promise((r) => setTimeout(r, 5));
  }
};

/** A runway the test sets by hand: the audio queued (ms), and what a segment takes to start. */
function runway(minChars = 12): RunwayOptions & { remaining: number; segments: number } {
  const r = {
    remaining: Number.POSITIVE_INFINITY,
    // The first segment's audio has begun (the tests start after it).
    segments: 1,
    remainingMs: () => r.remaining,
    begun: () => r.segments,
    leadMs: () => 300,
    minChars,
  };
  return r;
}

/** The segment cut last begins to arrive, is all in, and has nearly played out. */
function nextSegmentRead(r: { remaining: number; segments: number }): void {
  r.segments++;
  r.remaining = 0;
}

/**
 * An answer streamed into the segmenter with a hand-set runway, its first segment (`first`) already
 * out; `reading` resolves when the stream ends.
 */
async function answer(
  first: string,
  minChars = 12,
): Promise<{ source: TokenSource; out: Segment[]; r: ReturnType<typeof runway>; reading: Promise<void> }> {
  const source = new TokenSource();
  const out: Segment[] = [];
  const r = runway(minChars);
  const reading = (async () => {
    for await (const s of segmentStream(source, { eagerFirst, runway: r })) out.push(s);
  })();
  source.push(first);
  await until(() => out.length === 1);
  return { source, out, r, reading };
}

describe('segmentStream with a runway', () => {
  it('waits for the whole sentence while the audio queued lasts', async () => {
    const { source, out, r, reading } = await answer('Of course, ');
    r.remaining = 5000;
    for (const t of ['I can look into that for you, ', 'and then ', 'I will call you back ']) source.push(t);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(texts(out)).toEqual(['Of course,']);
    source.push('tomorrow.');
    source.end();
    await reading;
    expect(texts(out)).toEqual([
      'Of course,',
      'I can look into that for you, and then I will call you back tomorrow.',
    ]);
  });

  it('speaks up to the last clause once the audio queued is down to a segment’s lead', async () => {
    const { source, out, r, reading } = await answer('Of course, ');
    // The first segment's audio still arrives: its length is not known, nothing is cut.
    for (const t of ['I can look into that for you, ', 'and then I will ', 'call']) source.push(t);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(out).toHaveLength(1);
    // Its audio is all in, and 250 ms of it are left: under the 300 ms a segment takes to start.
    r.remaining = 250;
    await until(() => out.length === 2);
    expect(out[1]!.text).toBe('I can look into that for you,');
    r.remaining = Number.POSITIVE_INFINITY;
    source.push(' you back tomorrow.');
    source.end();
    await reading;
    expect(texts(out)).toEqual([
      'Of course,',
      'I can look into that for you,',
      'and then I will call you back tomorrow.',
    ]);
  });

  it('with no clause, cuts before a word that opens a phrase, else at the last whole word', async () => {
    const { source, out, r, reading } = await answer('Right. ', 6);
    r.remaining = 0;
    for (const t of ['Your order ships today from the warehouse in Ohi']) source.push(t);
    await until(() => out.length === 2);
    // "in Ohi…" is unfinished: the cut is before "in", the last phrase opener with its word whole.
    expect(out[1]!.text).toBe('Your order ships today from the warehouse');
    nextSegmentRead(r);
    source.push('o, ');
    await until(() => out.length === 3);
    expect(out[2]!.text).toBe('in Ohio,');
    nextSegmentRead(r);
    source.push('probably tomorrow morning');
    await until(() => out.length === 4);
    // No clause end and no opener: the last whole word ("morning" may go on).
    expect(out[3]!.text).toBe('probably tomorrow');
    source.end();
    await reading;
    expect(out.at(-1)!.text).toBe('morning');
    const whole = 'Right. Your order ships today from the warehouse in Ohio, probably tomorrow morning';
    for (const seg of out) expect(whole.slice(seg.start, seg.end)).toBe(seg.text);
  });

  it('cuts once, then not again until a segment’s audio has begun to arrive', async () => {
    const { source, out, r, reading } = await answer('Of course, ');
    r.remaining = 100;
    source.push('I can look into that for you, and then ');
    await until(() => out.length === 2);
    source.push('I will call you back ');
    await new Promise((resolve) => setTimeout(resolve, 150));
    // The cut's audio has not begun: the runway says nothing yet of what is queued.
    expect(out).toHaveLength(2);
    nextSegmentRead(r);
    await until(() => out.length === 3);
    expect(out[2]!.text).toBe('and then I will call you back');
    source.end();
    await reading;
  });

  it('never cuts shorter than minChars, nor half a word', async () => {
    const { source, out, r, reading } = await answer('Okay. ', 12);
    r.remaining = 0;
    source.push('So, the ans');
    await new Promise((resolve) => setTimeout(resolve, 100));
    // "So," and "So, the" are under 12 characters; "ans" is not a whole word yet.
    expect(out).toHaveLength(1);
    source.push('wer is forty-two');
    await until(() => out.length === 2);
    expect(out[1]!.text).toBe('So, the answer is');
    source.end();
    await reading;
    expect(texts(out)).toEqual(['Okay.', 'So, the answer is', 'forty-two']);
  });
});
