import { describe, expect, it } from 'vitest';
import { SpeechServiceError } from '../../../src/speech/errors.js';
import { acceptsTimestampsContentType } from '../../../src/speech/formats.js';
import { TimestampsParser, type TimestampedChunk } from '../../../src/speech/timestamps.js';

interface WireAlignment {
  characters: string[];
  character_start_times_seconds: number[];
  character_end_times_seconds: number[];
}

function object(audio: Uint8Array, chars: string[], startS: number[], endS: number[]): string {
  const alignment: WireAlignment = {
    characters: chars,
    character_start_times_seconds: startS,
    character_end_times_seconds: endS,
  };
  return JSON.stringify({
    audio_base64: Buffer.from(audio).toString('base64'),
    alignment,
    normalized_alignment: alignment,
  });
}

/** Three objects as a service sends them: odd audio lengths, a multi-byte character, an empty audio. */
const OBJECTS = [
  object(new Uint8Array([1, 2, 3]), ['H', 'i'], [0, 0.05], [0.05, 0.1]),
  object(new Uint8Array([4, 5, 6, 7, 8]), [' ', '😀', 'é'], [0.1, 0.1, 0.2], [0.1, 0.2, 0.3]),
  object(new Uint8Array(0), ['!'], [0.3], [0.312]),
];
const BODY = Buffer.from(OBJECTS.map((o) => `${o}\n`).join(''), 'utf8');

function parseAll(parts: readonly Uint8Array[]): TimestampedChunk[] {
  const parser = new TimestampsParser('req-1');
  const out = parts.flatMap((p) => parser.push(p));
  return [...out, ...parser.end()];
}

function summary(chunks: readonly TimestampedChunk[]): unknown {
  return chunks.map((c) => ({
    audio: [...c.audio],
    characters: c.characters,
    startMs: c.startMs,
    endMs: c.endMs,
  }));
}

const EXPECTED = [
  { audio: [1, 2, 3], characters: ['H', 'i'], startMs: [0, 50], endMs: [50, 100] },
  { audio: [4, 5, 6, 7, 8], characters: [' ', '😀', 'é'], startMs: [100, 100, 200], endMs: [100, 200, 300] },
  { audio: [], characters: ['!'], startMs: [300], endMs: [312] },
];

function errorOf(run: () => unknown): SpeechServiceError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(SpeechServiceError);
    return error as SpeechServiceError;
  }
  throw new Error('expected a SpeechServiceError');
}

describe('TimestampsParser', () => {
  it('parses the same objects however the body is split, a multi-byte character included', () => {
    expect(summary(parseAll([BODY]))).toEqual(EXPECTED);
    for (let cut = 1; cut < BODY.length; cut++)
      expect(summary(parseAll([BODY.subarray(0, cut), BODY.subarray(cut)]))).toEqual(EXPECTED);
    const bytes = Array.from({ length: BODY.length }, (_, i) => BODY.subarray(i, i + 1));
    expect(summary(parseAll(bytes))).toEqual(EXPECTED);
  });

  it('hands out each object as soon as its line is complete, several from one chunk', () => {
    const parser = new TimestampsParser(undefined);
    const firstTwo = Buffer.from(`${OBJECTS[0]}\n${OBJECTS[1]}\n${OBJECTS[2]!.slice(0, 10)}`);
    expect(parser.push(firstTwo)).toHaveLength(2);
    expect(parser.push(Buffer.from(OBJECTS[2]!.slice(10)))).toEqual([]);
    expect(parser.push(Buffer.from('\n'))).toHaveLength(1);
    expect(parser.end()).toEqual([]);
  });

  it('skips blank lines and CRLF, and takes a last object that has no newline', () => {
    const body = Buffer.from(`\n${OBJECTS[0]}\r\n\r\n\n${OBJECTS[1]}\n\n${OBJECTS[2]}`);
    expect(summary(parseAll([body]))).toEqual(EXPECTED);
  });

  it('takes an object without alignment (or a null one) as audio alone', () => {
    const body = Buffer.from(
      `${JSON.stringify({ audio_base64: 'AAE=' })}\n${JSON.stringify({ audio_base64: 'AgM=', alignment: null })}\n`,
    );
    expect(summary(parseAll([body]))).toEqual([
      { audio: [0, 1], characters: [], startMs: [], endMs: [] },
      { audio: [2, 3], characters: [], startMs: [], endMs: [] },
    ]);
  });

  it('fails on a line that is not JSON, naming the request and scrubbing secrets from the cause', () => {
    // V8's message quotes the text around the error: a server echoing the key would show it.
    const parser = new TimestampsParser('req-1', ['k3y-9']);
    const error = errorOf(() => parser.push(Buffer.from(`${OBJECTS[0]}\n{"a": k3y-9}\n`)));
    expect(error.code).toBe('invalid_response');
    expect(error.requestId).toBe('req-1');
    expect(error.retryable).toBe(false);
    expect((error.cause as Error).message).toContain('[redacted]');
    expect((error.cause as Error).message).not.toContain('k3y-9');
  });

  it('fails on a truncated last object when the body ends', () => {
    const parser = new TimestampsParser(undefined);
    expect(parser.push(Buffer.from(OBJECTS[0]!.slice(0, -1)))).toEqual([]);
    expect(errorOf(() => parser.end()).code).toBe('invalid_response');
  });

  it.each([
    ['an array', '[1,2]'],
    ['no audio_base64', '{"alignment":null}'],
    ['audio_base64 not a string', '{"audio_base64":12}'],
    ['audio_base64 not base64', '{"audio_base64":"AA$A"}'],
    ['audio_base64 missing its padding', '{"audio_base64":"AAE"}'],
    ['alignment not an object', '{"audio_base64":"","alignment":"x"}'],
    [
      'lists of different lengths',
      '{"audio_base64":"","alignment":{"characters":["a","b"],"character_start_times_seconds":[0],"character_end_times_seconds":[0,1]}}',
    ],
    [
      'a time that is not a number',
      '{"audio_base64":"","alignment":{"characters":["a"],"character_start_times_seconds":["0"],"character_end_times_seconds":[1]}}',
    ],
    [
      'a negative time',
      '{"audio_base64":"","alignment":{"characters":["a"],"character_start_times_seconds":[-1],"character_end_times_seconds":[1]}}',
    ],
    [
      'a character that is not a string',
      '{"audio_base64":"","alignment":{"characters":[1],"character_start_times_seconds":[0],"character_end_times_seconds":[1]}}',
    ],
  ])('fails on an object with %s', (_what, line) => {
    expect(errorOf(() => parseAll([Buffer.from(`${line}\n`)])).code).toBe('invalid_response');
  });

  it('fails on invalid UTF-8', () => {
    const bad = Buffer.concat([
      Buffer.from('{"audio_base64":"","x":"'),
      Buffer.from([0xc3]),
      Buffer.from('"}\n'),
    ]);
    expect(errorOf(() => parseAll([bad])).code).toBe('invalid_response');
  });

  it('refuses an object over the bound as soon as it passes it, before its end arrives', () => {
    const parser = new TimestampsParser('req-2', [], 1000);
    expect(parser.push(Buffer.alloc(600, 0x41))).toEqual([]);
    const error = errorOf(() => parser.push(Buffer.alloc(600, 0x41)));
    expect(error.code).toBe('response_too_large');
    expect(error.requestId).toBe('req-2');
    // The bound is per object: many objects each under it are fine.
    const small = new TimestampsParser(undefined, [], OBJECTS[0]!.length);
    const many = Buffer.from(`${OBJECTS[0]}\n`.repeat(50));
    expect(small.push(many)).toHaveLength(50);
  });
});

describe('acceptsTimestampsContentType', () => {
  it.each([
    [undefined, true],
    ['', true],
    ['application/json', true],
    ['application/json; charset=utf-8', true],
    ['application/x-ndjson', true],
    ['application/octet-stream', true],
    ['text/html; charset=utf-8', false],
    ['audio/mpeg', false],
    ['text/event-stream', false],
  ])('%s → %s', (type, accepted) => {
    expect(acceptsTimestampsContentType(type)).toBe(accepted);
  });
});
