// Over 450 lines: one table of segmentation cases for text and token streams.
import { describe, expect, it } from 'vitest';
import { segmentStream, segmentText, type Segment } from '../../../src/speaker/segmenter.js';
import { TEXT_MAX_CHARS, textLength } from '../../../src/speech/limits.js';
import { seeded } from '../../../testkit/random.js';
import { TokenSource } from '../../../testkit/tokens.js';

const texts = (segments: readonly Segment[]): string[] => segments.map((s) => s.text);

/**
 * The invariants every segmentation keeps: segments in order, each the substring at its offsets,
 * trimmed, non-empty, within maxChars (code points); every character of the input in exactly one
 * segment, or whitespace between segments.
 */
function expectCovers(text: string, segments: readonly Segment[], maxChars = TEXT_MAX_CHARS): void {
  const problems: string[] = [];
  const owner = new Array<number>(text.length).fill(-1);
  segments.forEach((s, n) => {
    if (s.text !== text.slice(s.start, s.end)) problems.push(`segment ${n} is not the text at its offsets`);
    if (s.text.length === 0 || s.text !== s.text.trim()) problems.push(`segment ${n} is empty or untrimmed`);
    if (textLength(s.text) > maxChars) problems.push(`segment ${n} is over ${maxChars} characters`);
    if (n > 0 && s.start < segments[n - 1]!.end) problems.push(`segment ${n} overlaps the one before`);
    for (let i = s.start; i < s.end; i++) {
      if (owner[i] !== -1) problems.push(`character ${i} is in two segments`);
      owner[i] = n;
    }
  });
  for (let i = 0; i < text.length; i++) {
    if (owner[i] === -1 && !/\s/.test(text[i]!)) problems.push(`character ${i} is in no segment`);
  }
  expect(problems, JSON.stringify({ text, maxChars })).toEqual([]);
}

async function* tokensOf(parts: readonly string[]): AsyncGenerator<string> {
  for (const p of parts) yield p;
}

async function collect(stream: AsyncIterable<Segment>): Promise<Segment[]> {
  const out: Segment[] = [];
  for await (const s of stream) out.push(s);
  return out;
}

/** Cuts `text` into tokens of 1–`maxLen` UTF-16 units, anywhere (mid-word, mid-terminator, mid-pair). */
function splitRandomly(text: string, rnd: () => number, maxLen = 6): string[] {
  const parts: string[] = [];
  for (let i = 0; i < text.length;) {
    const n = 1 + Math.floor(rnd() * maxLen);
    parts.push(text.slice(i, i + n));
    i += n;
  }
  return parts;
}

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('segmentText', () => {
  it('splits sentences and keeps their offsets', () => {
    const text = '  Hello world. How are you?  I am fine!\tBye ';
    const segments = segmentText(text);
    expect(texts(segments)).toEqual(['Hello world.', 'How are you?', 'I am fine!', 'Bye']);
    expect(segments[0]).toEqual({ text: 'Hello world.', start: 2, end: 14 });
    expectCovers(text, segments);
  });

  it('does not end sentences at abbreviations, initials, decimals or list numbers', () => {
    const text =
      'Dr. Smith met Mr. Jones at 3.14 p.m. on Jan. 5, e.g. at the U.S. embassy. J. R. R. Tolkien wrote it, ' +
      'vs. the rest etc. and Ph.D. holders. Pi is 3.14159. The end.';
    expect(texts(segmentText(text))).toEqual([
      'Dr. Smith met Mr. Jones at 3.14 p.m. on Jan. 5, e.g. at the U.S. embassy.',
      'J. R. R. Tolkien wrote it, vs. the rest etc. and Ph.D. holders.',
      'Pi is 3.14159.',
      'The end.',
    ]);
    expect(texts(segmentText('1. Buy milk.\n2. Buy eggs. I was born in 1990. Then'))).toEqual([
      '1. Buy milk.',
      '2. Buy eggs.',
      'I was born in 1990.',
      'Then',
    ]);
    expect(texts(segmentText('Visit example.com. Then (see Dr.) leave.'))).toEqual([
      'Visit example.com.',
      'Then (see Dr.) leave.',
    ]);
  });

  it('handles ellipses, "?!", closing quotes and brackets', () => {
    const text = 'Wait… What?! He said "Stop." (Really.) Well... no!!! «Oui.» ‘Yes?’ Done';
    const segments = segmentText(text);
    expect(texts(segments)).toEqual([
      'Wait…',
      'What?!',
      'He said "Stop."',
      '(Really.)',
      'Well...',
      'no!!!',
      '«Oui.»',
      '‘Yes?’',
      'Done',
    ]);
    expectCovers(text, segments);
  });

  it('ends sentences at CJK terminators without a space after them', () => {
    const text = '你好。今天天气很好！你呢？「好的。」然后呢';
    expect(texts(segmentText(text))).toEqual(['你好。', '今天天气很好！', '你呢？', '「好的。」', '然后呢']);
    // Regression: a run of several full-width terminators once looped forever.
    expect(texts(segmentText('真的吗？？！好。。'))).toEqual(['真的吗？？！', '好。。']);
  });

  it('ends a segment at a blank line, not at a single newline', () => {
    const text = 'Title\n\nFirst line\nsecond line.\n \t\nNext para\r\n\r\nLast\u2029Very last';
    const segments = segmentText(text);
    expect(texts(segments)).toEqual(['Title', 'First line\nsecond line.', 'Next para', 'Last', 'Very last']);
    expectCovers(text, segments);
  });

  it('does not make a segment of punctuation alone', () => {
    expect(texts(segmentText('... and then? ---\n\nIt ended.'))).toEqual([
      '... and then?',
      '---\n\nIt ended.',
    ]);
    expect(texts(segmentText('?!'))).toEqual(['?!']);
    expect(segmentText('')).toEqual([]);
    expect(segmentText(' \n\t ')).toEqual([]);
  });

  it('cuts 12 000 characters without punctuation at words, within the limit', () => {
    const rnd = seeded(1);
    let text = '';
    while (text.length < 12_000) text += 'abcdefghij'.slice(0, 1 + Math.floor(rnd() * 10)) + ' ';
    text = text.trimEnd();
    const segments = segmentText(text);
    expectCovers(text, segments);
    expect(segments).toHaveLength(3);
    for (const s of segments.slice(0, -1)) {
      expect(s.text.length).toBeGreaterThan(TEXT_MAX_CHARS - 11);
      expect(text[s.end]).toBe(' '); // a whole word ends there
    }
  });

  it('cuts 12 000 characters without spaces or punctuation hard at the limit', () => {
    const text = 'x'.repeat(12_000);
    const segments = segmentText(text);
    expectCovers(text, segments);
    expect(segments.map((s) => [s.start, s.end])).toEqual([
      [0, 5000],
      [5000, 10_000],
      [10_000, 12_000],
    ]);
  });

  it('cuts a 6000-character sentence with commas at a comma', () => {
    let text = '';
    for (let n = 0; text.length < 6000; n++) text += `clause number ${n} goes on for a while, `;
    text = text.replace(/, $/, '.');
    const segments = segmentText(text);
    expectCovers(text, segments);
    expect(segments).toHaveLength(2);
    expect(segments[0]!.text.endsWith(',')).toBe(true);
    expect(segments[0]!.text.length).toBeGreaterThan(TEXT_MAX_CHARS - 50);
    expect(segments[1]!.text.endsWith('.')).toBe(true);
  });

  it('prefers a word cut near the limit to a clause cut early in it', () => {
    const text = 'So, ' + 'word '.repeat(30).trim() + '.';
    const segments = segmentText(text, 40);
    expectCovers(text, segments, 40);
    expect(segments[0]!.text).toBe('So, ' + 'word '.repeat(7).trim());
  });

  it('cuts at full-width commas and dashes too', () => {
    expect(texts(segmentText('一二三四五，六七八九十一二', 8))).toEqual(['一二三四五，', '六七八九十一二']);
    expect(texts(segmentText('alpha beta—gamma delta', 14))).toEqual(['alpha beta—', 'gamma delta']);
  });

  it('counts code points as the service does, and never cuts inside a character', () => {
    const emoji = '😀'.repeat(10);
    const segments = segmentText(emoji, 4);
    expect(texts(segments)).toEqual(['😀😀😀😀', '😀😀😀😀', '😀😀']);
    expectCovers(emoji, segments, 4);
    // A skin-tone modifier and a combining accent stay with the character they modify.
    expect(texts(segmentText('👍🏽'.repeat(3), 3))).toEqual(['👍🏽', '👍🏽', '👍🏽']);
    expect(texts(segmentText('e\u0301'.repeat(3), 3))).toEqual(['e\u0301', 'e\u0301', 'e\u0301']);
  });

  it('keeps the invariants on arbitrary text, at any limit', () => {
    const alphabet = [
      'a',
      'b',
      'Dr',
      'e.g',
      'U.S',
      '3',
      ' ',
      ' ',
      '\n',
      '.',
      '!',
      '?',
      '…',
      ',',
      '"',
      ')',
      '。',
      '你',
      '😀',
      '\u0301',
    ];
    const rnd = seeded(7);
    for (let round = 0; round < 300; round++) {
      let text = '';
      const length = Math.floor(rnd() * 120);
      for (let i = 0; i < length; i++) text += alphabet[Math.floor(rnd() * alphabet.length)];
      const maxChars = 1 + Math.floor(rnd() * 30);
      expectCovers(text, segmentText(text, maxChars), maxChars);
    }
  });

  it('rejects a limit below one character', () => {
    expect(() => segmentText('x', 0)).toThrow(RangeError);
    expect(() => segmentText('x', 1.5)).toThrow(RangeError);
  });
});

describe('segmentStream', () => {
  it('gives the segments of segmentText whatever the tokens, split mid-word and mid-terminator', async () => {
    const parts = [
      'Hello wor',
      'ld.',
      ' How',
      ' are you?',
      '!',
      ' Dr',
      '. Smith is',
      ' here',
      '..',
      '. Fine',
      '.',
    ];
    const whole = parts.join('');
    const streamed = await collect(segmentStream(tokensOf(parts)));
    expect(streamed).toEqual(segmentText(whole));
    expect(texts(streamed)).toEqual(['Hello world.', 'How are you?!', 'Dr. Smith is here...', 'Fine.']);
  });

  it('matches segmentText on random texts and random token splits, limits included', async () => {
    const alphabet = [
      'word',
      'a',
      'Mr',
      'U.S',
      '3.1',
      ' ',
      ' ',
      '\n',
      '\r',
      '.',
      '!',
      '?',
      '…',
      ',',
      '—',
      '"',
      '」',
      '。',
      '，',
      '😀',
    ];
    const rnd = seeded(42);
    for (let round = 0; round < 200; round++) {
      let text = '';
      const length = Math.floor(rnd() * 100);
      for (let i = 0; i < length; i++) text += alphabet[Math.floor(rnd() * alphabet.length)];
      const maxChars = 1 + Math.floor(rnd() * 40);
      const streamed = await collect(segmentStream(tokensOf(splitRandomly(text, rnd)), { maxChars }));
      expect(streamed, JSON.stringify({ text, maxChars })).toEqual(segmentText(text, maxChars));
    }
  });

  it('matches segmentText on a long text fed one character at a time', async () => {
    let text = '';
    for (let n = 0; text.length < 12_000; n++)
      text += n % 7 === 0 ? `Sentence ${n}, with a clause. ` : `word${n} `;
    const streamed = await collect(segmentStream(tokensOf([...text])));
    expect(streamed).toEqual(segmentText(text));
    expectCovers(text, streamed);
  });

  it('yields a sentence as soon as it is complete, before later tokens arrive', async () => {
    const source = new TokenSource();
    const stream = segmentStream(source);
    let next = stream.next();
    let settled = false;
    void next.then(() => (settled = true));
    source.push('Hello wor');
    source.push('ld.');
    await tick();
    expect(settled).toBe(false); // "." may still be "..." or "3.14"
    source.push(' How');
    expect(await next).toEqual({ done: false, value: { text: 'Hello world.', start: 0, end: 12 } });
    next = stream.next();
    source.push(' are you? Fine');
    expect(await next).toEqual({ done: false, value: { text: 'How are you?', start: 13, end: 25 } });
    next = stream.next();
    source.end();
    expect(await next).toEqual({ done: false, value: { text: 'Fine', start: 26, end: 30 } });
    expect(await stream.next()).toEqual({ done: true, value: undefined });
  });

  it('cuts a sentence that grows past maxChars while it streams', async () => {
    const source = new TokenSource();
    const stream = segmentStream(source, { maxChars: 20 });
    const next = stream.next();
    for (const word of ['one ', 'two ', 'three ', 'four ', 'five ']) source.push(word);
    expect(await next).toEqual({ done: false, value: { text: 'one two three four', start: 0, end: 18 } });
    source.end();
    expect(texts(await collect(stream))).toEqual(['five']);
  });

  it('reports offsets into the concatenation of all tokens', async () => {
    const parts = ['  ', 'Hi', '.', '\n\n', ' There', ' it is.'];
    const segments = await collect(segmentStream(tokensOf(parts)));
    expect(segments).toEqual([
      { text: 'Hi.', start: 2, end: 5 },
      { text: 'There it is.', start: 8, end: 20 },
    ]);
  });

  it('stops pulling tokens on abort, rejects with the reason and closes the source', async () => {
    const source = new TokenSource();
    const ac = new AbortController();
    const stream = segmentStream(source, { signal: ac.signal });
    const next = stream.next();
    source.push('Never ending');
    await tick();
    const reason = new Error('barge-in');
    ac.abort(reason);
    await expect(next).rejects.toBe(reason);
    await tick();
    expect(source.returned).toBe(true);
    expect(await stream.next()).toEqual({ done: true, value: undefined });
  });

  it('an abort while the consumer holds a segment ends the stream at the next pull', async () => {
    const source = new TokenSource();
    const ac = new AbortController();
    const stream = segmentStream(source, { signal: ac.signal });
    source.push('One. Two. Three');
    expect((await stream.next()).value).toMatchObject({ text: 'One.' });
    ac.abort('stop');
    await expect(stream.next()).rejects.toBe('stop');
    await tick();
    expect(source.returned).toBe(true);
    await expect(collect(segmentStream(tokensOf(['x']), { signal: ac.signal }))).rejects.toBe('stop');
  });

  it('closes the source when the consumer stops early', async () => {
    const source = new TokenSource();
    source.push('One. Two. ');
    for await (const s of segmentStream(source)) {
      expect(s.text).toBe('One.');
      break;
    }
    await tick();
    expect(source.returned).toBe(true);
  });

  it('passes on a failure of the source', async () => {
    async function* failing(): AsyncGenerator<string> {
      yield 'Hello. ';
      throw new Error('LLM went away');
    }
    const seen: string[] = [];
    await expect(
      (async () => {
        for await (const s of segmentStream(failing())) seen.push(s.text);
      })(),
    ).rejects.toThrow('LLM went away');
    expect(seen).toEqual(['Hello.']);
  });

  describe('with an eager first segment', () => {
    const eagerFirst = { minChars: 8, maxChars: 40, waitMs: 60 };

    it('speaks the first clause as soon as it is complete, then whole sentences', async () => {
      const source = new TokenSource();
      const out: Segment[] = [];
      const reading = (async () => {
        for await (const s of segmentStream(source, { eagerFirst })) out.push(s);
      })();
      for (const t of ['Of cour', 'se, I can', ' help', ' with that, ']) source.push(t);
      await tick();
      expect(texts(out)).toEqual(['Of course,']);
      for (const t of ['right away. Then, ', 'we go on.']) source.push(t);
      source.end();
      await reading;
      // After the first, clauses do not cut: the rest are whole sentences.
      expect(texts(out)).toEqual(['Of course,', 'I can help with that, right away.', 'Then, we go on.']);
      const whole = 'Of course, I can help with that, right away. Then, we go on.';
      for (const seg of out) expect(whole.slice(seg.start, seg.end)).toBe(seg.text);
    });

    it('does not cut a clause shorter than minChars', async () => {
      const out = await collect(
        segmentStream(tokensOf(['Hi, ', 'there, my', ' friend. Bye.']), { eagerFirst }),
      );
      expect(texts(out)).toEqual(['Hi, there,', 'my friend.', 'Bye.']);
    });

    it('cuts at a word once maxChars are in with no clause or sentence end', async () => {
      const words = 'one two three four five six seven eight nine ten eleven twelve';
      const out = await collect(segmentStream(tokensOf(words.split(/(?<= )/)), { eagerFirst }));
      expect(out[0]!.text.length).toBeLessThanOrEqual(eagerFirst.maxChars);
      expect(out[0]!.text.length).toBeGreaterThan(eagerFirst.maxChars / 2);
      expect(texts(out).join(' ')).toBe(words);
    });

    it('speaks the words so far when the tokens stop coming for waitMs, and never half a word', async () => {
      const source = new TokenSource();
      const out: Segment[] = [];
      const reading = (async () => {
        for await (const s of segmentStream(source, { eagerFirst })) out.push(s);
      })();
      source.push('Let me check that for yo');
      await new Promise((r) => setTimeout(r, eagerFirst.waitMs * 3));
      expect(texts(out)).toEqual(['Let me check that for']);
      source.push('u. Done.');
      source.end();
      await reading;
      expect(texts(out)).toEqual(['Let me check that for', 'you.', 'Done.']);
    });

    it('without eagerFirst, waits for the sentence as before', async () => {
      const source = new TokenSource();
      const out: Segment[] = [];
      const reading = (async () => {
        for await (const s of segmentStream(source)) out.push(s);
      })();
      source.push('Of course, I can help');
      await new Promise((r) => setTimeout(r, 100));
      expect(out).toEqual([]);
      source.end();
      await reading;
      expect(texts(out)).toEqual(['Of course, I can help']);
    });
  });
});
