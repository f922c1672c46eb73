import type { ESpeakEvent } from '@echogarden/espeak-ng-emscripten';
import { describe, expect, it } from 'vitest';
import { CharacterTimeline, type AlignmentJson } from '../../../src/service/character-timeline.js';
import { pieceOffsets, splitForEngine } from '../../../src/service/engine/sentences.js';
import { escapedOrigins, escapeSsml } from '../../../src/service/engine/espeak/ssml.js';
import { WordMarks } from '../../../src/service/engine/espeak/word-marks.js';

function ms(alignment: AlignmentJson): Array<[string, number, number]> {
  return alignment.characters.map((c, i) => [
    c,
    Math.round(alignment.character_start_times_seconds[i]! * 1000),
    Math.round(alignment.character_end_times_seconds[i]! * 1000),
  ]);
}

describe('CharacterTimeline', () => {
  it('spreads a word over its characters and gives the pause to the characters after it', () => {
    const t = new CharacterTimeline('Hi, you.');
    t.addWord({ start: 0, end: 2, startMs: 0, endMs: 200 });
    t.addWord({ start: 4, end: 7, startMs: 500, endMs: 800 });
    expect(ms(t.finish(900))).toEqual([
      ['H', 0, 100],
      ['i', 100, 200],
      [',', 200, 350], // the pause, from "Hi"'s last sound to "you"'s first phoneme
      [' ', 350, 500],
      ['y', 500, 600],
      ['o', 600, 700],
      ['u', 700, 800],
      ['.', 800, 900], // after the last word: to the end of the audio
    ]);
  });

  it('counts code points: an emoji is one character', () => {
    const t = new CharacterTimeline('a😀b');
    t.addWord({ start: 0, end: 3, startMs: 0, endMs: 300 });
    expect(t.finish(300).characters).toEqual(['a', '😀', 'b']);
  });

  it('hands out only characters whose sound ends within the audio sent, each once', () => {
    const t = new CharacterTimeline('ab cd');
    t.addWord({ start: 0, end: 2, startMs: 0, endMs: 100 });
    expect(t.take(40)).toBeUndefined();
    expect(ms(t.take(60)!)).toEqual([['a', 0, 50]]);
    expect(ms(t.take(100)!)).toEqual([['b', 50, 100]]);
    expect(t.take(1000)).toBeUndefined(); // the space waits for the next word to be timed
    t.addWord({ start: 3, end: 5, startMs: 100, endMs: 300 });
    expect(ms(t.take(250)!)).toEqual([
      [' ', 100, 100],
      ['c', 100, 200],
    ]);
    expect(ms(t.finish(300))).toEqual([['d', 200, 300]]);
  });

  it('keeps times monotonic and within the audio whatever the words say', () => {
    const t = new CharacterTimeline('one two three four');
    t.addWord({ start: 0, end: 3, startMs: 50, endMs: 400 });
    t.addWord({ start: 2, end: 7, startMs: 300, endMs: 350 }); // reaches back: only "wo" is new
    t.addWord({ start: 1, end: 2, startMs: 0, endMs: 10 }); // nothing new: ignored
    t.addWord({ start: 8, end: 13, startMs: 600, endMs: 2000 }); // past the audio's end
    const out = ms(t.finish(1000.6));
    expect(out.map(([c]) => c).join('')).toBe('one two three four');
    let previous = 0;
    for (const [, start, end] of out) {
      expect(start).toBeGreaterThanOrEqual(previous);
      expect(end).toBeGreaterThanOrEqual(start);
      expect(end).toBeLessThanOrEqual(1000);
      previous = end;
    }
  });

  it('times a text no word was found in over the whole audio', () => {
    const t = new CharacterTimeline('...');
    expect(ms(t.finish(300))).toEqual([
      ['.', 0, 100],
      ['.', 100, 200],
      ['.', 200, 300],
    ]);
  });
});

describe('escapedOrigins', () => {
  it('maps every code point of the escaped text back to the one it came from', () => {
    const text = 'a&b<😀>';
    const escaped = Array.from(escapeSsml(text));
    const origins = escapedOrigins(text);
    expect(origins.length).toBe(escaped.length);
    expect([...origins]).toEqual([0, 1, 1, 1, 1, 1, 2, 3, 3, 3, 3, 4, 5, 5, 5, 5]);
  });
});

describe('pieceOffsets', () => {
  it('finds each piece in the text, in code points', () => {
    const text = '😀 Hi there.   How are you?  Fine, thanks. And you? ';
    const pieces = splitForEngine(text);
    const offsets = pieceOffsets(text, pieces);
    const chars = Array.from(text);
    pieces.forEach((piece, i) => {
      const n = Array.from(piece).length;
      expect(chars.slice(offsets[i], offsets[i]! + n).join('')).toBe(piece);
    });
  });

  it('never cuts a surrogate pair when a word must be split hard', () => {
    const text = '😀'.repeat(300);
    const pieces = splitForEngine(text);
    expect(pieces.length).toBeGreaterThan(1);
    for (const p of pieces) expect(p).toMatch(/^(?:\u{1F600})+$/u);
    expect(pieceOffsets(text, pieces)).toEqual(
      pieces.map((_, i) => pieces.slice(0, i).reduce((n, p) => n + Array.from(p).length, 0)),
    );
  });
});

describe('WordMarks', () => {
  const RATE = 1000; // one sample per ms keeps the arithmetic readable

  function event(type: string, audioMs: number, position = 0, length = 0): ESpeakEvent {
    return { type, text_position: position, word_length: length, audio_position: audioMs };
  }

  /** `loud` ms of sound then `quiet` ms of digital silence. */
  function audio(loud: number, quiet: number): Int16Array {
    const samples = new Int16Array(loud + quiet);
    samples.fill(3000, 0, loud);
    return samples;
  }

  it('ends a word at its last sound and maps positions back through the SSML escaping', () => {
    const text = 'A & B';
    const marks = new WordMarks(text, RATE);
    // eSpeak was given "A &amp; B": the `&` is positions 3–7, "B" position 9.
    const first = marks.push(audio(150, 50), [event('word', 0, 1, 1), event('word', 100, 7, 1)]);
    expect(first).toEqual([{ start: 0, end: 1, startMs: 0, endMs: 100 }]);
    const second = marks.push(audio(0, 100), [event('end', 250), event('word', 300, 9, 1)]);
    // "&" sounded until 150, then silence: the pause is not the word's.
    expect(second).toEqual([{ start: 2, end: 3, startMs: 100, endMs: 150 }]);
    marks.push(audio(80, 20), []);
    expect(marks.end()).toEqual([{ start: 4, end: 5, startMs: 300, endMs: 380 }]);
  });

  it('ignores events outside the text and clamps marks into the callback they came with', () => {
    const marks = new WordMarks('ab', RATE);
    expect(marks.push(audio(100, 0), [event('word', 0, 1, 2), event('word', 50, 99, 1)])).toEqual([
      { start: 0, end: 2, startMs: 0, endMs: 50 },
    ]);
    // A mark rounded to just before this callback's first sample counts from its start.
    expect(marks.push(audio(100, 0), [event('word', 99, 1, 1)])).toEqual([]);
    expect(marks.end()).toEqual([{ start: 0, end: 1, startMs: 100, endMs: 200 }]);
  });
});
