/**
 * Reading a `/stream/with-timestamps` answer: JSON objects, one per line (ElevenLabs' framing, which its
 * SDKs split on "\n"), each with `audio_base64` and the `alignment` of the characters it completes.
 * The objects are parsed as the bytes arrive, whatever the chunking (an object split across chunks,
 * several in one), each bounded in size, and turned into the audio bytes the plain `/stream` would
 * have sent, plus character timings that grow as the objects come.
 */
import type { CharacterAlignment } from './alignment.js';
import { maxAudioBytes, maxAudioMs } from './budget.js';
import { SpeechServiceError } from './errors.js';
import type { OutputFormat } from './formats.js';
import { redact } from './http-errors.js';
import type { OpenResponse } from './transport.js';

/**
 * The largest object accepted: ElevenLabs sends one per ~100 ms–1 s of audio (a few hundred KB of
 * base64 at most); an object this big is a broken or hostile server, not speech.
 */
export const TIMESTAMPS_OBJECT_MAX_BYTES = 4 * 1024 * 1024;

/**
 * Timing entries an answer may carry beyond one per character of the text (a service that adds a
 * space between its internal chunks): this many, or a tenth of the text when that is more.
 */
export const TIMESTAMPS_EXTRA_CHARACTERS = 32;
const EXTRA_CHARACTERS_SHARE = 0.1;
/**
 * Bytes of JSON an answer may spend per character of the text on timings: a character's entry in
 * `alignment` and in `normalized_alignment` (which spells numbers out, so runs longer) is ~30–60 bytes.
 */
export const TIMESTAMPS_BYTES_PER_CHARACTER = 256;
/** Bytes an answer may carry besides its base64 audio and its timings: object keys, blank lines. */
export const TIMESTAMPS_BODY_SLACK_BYTES = 1024 * 1024;

const NEWLINE = 0x0a;
const BASE64_GROUP_CHARS = 4;
const BASE64_GROUP_BYTES = 3;

/**
 * What a with-timestamps answer may hold, from the request's text: timings are bounded by the text they
 * time and the audio it can make, the body by its audio in base64 plus those timings. A peer past any
 * of them fails the request (nothing it sent is kept).
 */
export interface TimestampsLimits {
  /** Timing entries over the whole answer: the text's characters and a small slack. */
  readonly maxCharacters: number;
  /** UTF-16 units all the entries' strings may hold together (an entry is one character, not a novel). */
  readonly maxCharacterUnits: number;
  /** The latest time a timing may name (ms): the most audio the text can make. */
  readonly maxTimeMs: number;
  /** Bytes of the whole body. */
  readonly maxBodyBytes: number;
}

/** The limits for a text of `chars` code points and `units` UTF-16 units, asked as `format`. */
export function timestampsLimits(chars: number, units: number, format: OutputFormat): TimestampsLimits {
  const extra = (n: number): number =>
    Math.max(TIMESTAMPS_EXTRA_CHARACTERS, Math.ceil(n * EXTRA_CHARACTERS_SHARE));
  const base64Bytes = Math.ceil(maxAudioBytes(format, chars) / BASE64_GROUP_BYTES) * BASE64_GROUP_CHARS;
  return {
    maxCharacters: chars + extra(chars),
    maxCharacterUnits: units + extra(units),
    maxTimeMs: maxAudioMs(chars),
    maxBodyBytes: base64Bytes + units * TIMESTAMPS_BYTES_PER_CHARACTER + TIMESTAMPS_BODY_SLACK_BYTES,
  };
}

/** One object of the stream: its audio, and the timings of the characters it completes (in ms). */
export interface TimestampedChunk {
  readonly audio: Uint8Array;
  readonly characters: readonly string[];
  readonly startMs: readonly number[];
  readonly endMs: readonly number[];
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Base64 as Node decodes it, checked: `Buffer.from` skips what is not base64 and stops at padding, so a
 * well-formed string is exactly the one whose decoded length its own length predicts.
 */
function decodeBase64(text: string): Uint8Array | undefined {
  if (text.length % BASE64_GROUP_CHARS !== 0) return undefined;
  const padding = text.endsWith('==') ? 2 : text.endsWith('=') ? 1 : 0;
  const bytes = Buffer.from(text, 'base64');
  const expected = (text.length / BASE64_GROUP_CHARS) * BASE64_GROUP_BYTES - padding;
  return bytes.byteLength === expected ? bytes : undefined;
}

/** Seconds (the wire's unit) to whole milliseconds, the unit of `CharacterAlignment`. */
function secondsToMs(list: unknown[], name: string): number[] | string {
  const out: number[] = [];
  for (const s of list) {
    if (typeof s !== 'number' || !Number.isFinite(s) || s < 0) return `${name} holds ${JSON.stringify(s)}`;
    out.push(Math.round(s * 1000));
  }
  return out;
}

/** The object's shape, or what is wrong with it; lists longer than `maxCharacters` are not read. */
function toChunk(value: unknown, maxCharacters: number): TimestampedChunk | string {
  if (!isObject(value)) return 'an object of the stream is not a JSON object';
  const base64 = value['audio_base64'];
  if (typeof base64 !== 'string') return 'audio_base64 is not a string';
  const audio = decodeBase64(base64);
  if (audio === undefined) return 'audio_base64 is not base64';
  const alignment = value['alignment'];
  if (alignment === undefined || alignment === null) return { audio, characters: [], startMs: [], endMs: [] };
  if (!isObject(alignment)) return 'alignment is not an object';
  const characters = alignment['characters'];
  const starts = alignment['character_start_times_seconds'];
  const ends = alignment['character_end_times_seconds'];
  if (!Array.isArray(characters) || !Array.isArray(starts) || !Array.isArray(ends))
    return 'alignment lacks its characters or times';
  if (starts.length !== characters.length || ends.length !== characters.length)
    return 'alignment has lists of different lengths';
  if (characters.length > maxCharacters)
    return `alignment times ${characters.length} characters, more than the text has (at most ${maxCharacters})`;
  if (!characters.every((c): c is string => typeof c === 'string'))
    return 'alignment.characters holds a non-string';
  const startMs = secondsToMs(starts, 'character_start_times_seconds');
  if (typeof startMs === 'string') return startMs;
  const endMs = secondsToMs(ends, 'character_end_times_seconds');
  if (typeof endMs === 'string') return endMs;
  return { audio, characters, startMs, endMs };
}

/**
 * Splits the body into its objects: each complete line is parsed as it arrives; blank lines are
 * skipped, and a last object without its "\n" is taken at the end. Throws a `SpeechServiceError`
 * (`invalid_response`, or `response_too_large` past `TIMESTAMPS_OBJECT_MAX_BYTES`) on the first bad one.
 */
export class TimestampsParser {
  /** The current line's bytes so far (a list, so a long line is not copied once per chunk). */
  #parts: Uint8Array[] = [];
  #size = 0;

  /**
   * `secrets` are scrubbed from the JSON parser's message, which quotes the body. An object timing more
   * than `maxCharacters` characters is refused before its times are read.
   */
  constructor(
    private readonly requestId: string | undefined,
    private readonly secrets: readonly string[] = [],
    private readonly maxObjectBytes = TIMESTAMPS_OBJECT_MAX_BYTES,
    private readonly maxCharacters = Infinity,
  ) {}

  push(chunk: Uint8Array): TimestampedChunk[] {
    const out: TimestampedChunk[] = [];
    let from = 0;
    for (let nl = chunk.indexOf(NEWLINE); nl >= 0; nl = chunk.indexOf(NEWLINE, from)) {
      this.#add(chunk.subarray(from, nl));
      this.#line(out);
      from = nl + 1;
    }
    this.#add(chunk.subarray(from));
    return out;
  }

  /** The body ended: the last object, if it had no "\n" after it. */
  end(): TimestampedChunk[] {
    const out: TimestampedChunk[] = [];
    this.#line(out);
    return out;
  }

  #add(bytes: Uint8Array): void {
    if (bytes.byteLength === 0) return;
    this.#size += bytes.byteLength;
    if (this.#size > this.maxObjectBytes)
      throw new SpeechServiceError({
        code: 'response_too_large',
        message: `an object of the timestamps stream exceeds ${this.maxObjectBytes} bytes`,
        requestId: this.requestId,
        retryable: false,
      });
    this.#parts.push(bytes);
  }

  #line(out: TimestampedChunk[]): void {
    const parts = this.#parts;
    const size = this.#size;
    this.#parts = [];
    this.#size = 0;
    if (size === 0) return;
    const bytes = parts.length === 1 ? parts[0]! : Buffer.concat(parts, size);
    let value: unknown;
    try {
      const text = UTF8.decode(bytes);
      if (text.trim() === '') return;
      value = JSON.parse(text);
    } catch (error) {
      const cause = new SyntaxError(redact((error as Error).message, this.secrets));
      throw this.#invalid('an object of the timestamps stream is not valid JSON', cause);
    }
    const chunk = toChunk(value, this.maxCharacters);
    if (typeof chunk === 'string') throw this.#invalid(chunk);
    out.push(chunk);
  }

  #invalid(message: string, cause?: unknown): SpeechServiceError {
    return new SpeechServiceError({
      code: 'invalid_response',
      message: `the speech service's timestamps stream is malformed: ${message}`,
      requestId: this.requestId,
      retryable: false,
      cause,
    });
  }
}

/**
 * A with-timestamps response read as audio: `next()` gives the decoded bytes of each object, in order,
 * while `alignment` grows with every object parsed (before its audio is handed out). A malformed
 * object, or an answer past its `limits`, fails it and cancels the connection.
 */
export class TimestampedBody {
  readonly alignment: CharacterAlignment = { characters: [], startMs: [], endMs: [] };
  readonly #response: OpenResponse;
  readonly #parser: TimestampsParser;
  readonly #limits: TimestampsLimits;
  /** Audio of objects parsed but not handed out: at most the objects of one body chunk. */
  readonly #ready: Uint8Array[] = [];
  #ended = false;
  #bodyBytes = 0;
  #characterUnits = 0;

  constructor(response: OpenResponse, secrets: readonly string[], limits: TimestampsLimits) {
    this.#response = response;
    this.#limits = limits;
    this.#parser = new TimestampsParser(
      response.requestId,
      secrets,
      TIMESTAMPS_OBJECT_MAX_BYTES,
      limits.maxCharacters,
    );
  }

  /** The next non-empty audio, or `undefined` at the body's clean end. */
  async next(): Promise<Uint8Array | undefined> {
    while (this.#ready.length === 0 && !this.#ended) await this.#pull();
    return this.#ready.shift();
  }

  /**
   * Reads until the first audio is in (kept for `next()`), so a stream resolves with audio flowing as
   * the plain one does. An answer that ends without audio fails with `empty_audio`.
   */
  async prime(): Promise<void> {
    while (this.#ready.length === 0 && !this.#ended) await this.#pull();
    if (this.#ready.length > 0) return;
    throw new SpeechServiceError({
      code: 'empty_audio',
      message: `speech service answered ${this.#response.status} with no audio in its timestamps stream`,
      status: this.#response.status,
      requestId: this.#response.requestId,
      retryable: false,
    });
  }

  cancel(reason?: unknown): void {
    this.#ready.length = 0;
    this.#response.cancel(reason);
  }

  async #pull(): Promise<void> {
    const chunk = await this.#response.next();
    try {
      if (chunk !== undefined) this.#countBytes(chunk.byteLength);
      const objects = chunk === undefined ? this.#parser.end() : this.#parser.push(chunk);
      for (const o of objects) this.#take(o);
    } catch (error) {
      this.cancel(error);
      throw error;
    }
    if (chunk === undefined) this.#ended = true;
  }

  #countBytes(n: number): void {
    this.#bodyBytes += n;
    const max = this.#limits.maxBodyBytes;
    if (this.#bodyBytes > max)
      throw new SpeechServiceError({
        code: 'response_too_large',
        message: `the timestamps stream exceeds ${max} bytes, more than the text's audio and timings take`,
        requestId: this.#response.requestId,
        retryable: false,
      });
  }

  /** An object's timings checked against the whole answer's bounds (before any is kept), then kept. */
  #take(o: TimestampedChunk): void {
    const { characters, startMs, endMs } = this.alignment;
    const { maxCharacters, maxCharacterUnits, maxTimeMs } = this.#limits;
    if (characters.length + o.characters.length > maxCharacters)
      throw this.#invalid(
        `it times more than ${maxCharacters} characters, more than the text has (and a small slack)`,
      );
    let units = this.#characterUnits;
    for (let i = 0; i < o.characters.length; i++) {
      units += o.characters[i]!.length;
      if (o.endMs[i]! > maxTimeMs || o.startMs[i]! > maxTimeMs)
        throw this.#invalid(`a timing is past ${maxTimeMs} ms, the most audio the text can make`);
    }
    if (units > maxCharacterUnits)
      throw this.#invalid(
        `its characters hold more than ${maxCharacterUnits} UTF-16 units, more than the text`,
      );
    this.#characterUnits = units;
    for (let i = 0; i < o.characters.length; i++) {
      characters.push(o.characters[i]!);
      startMs.push(o.startMs[i]!);
      endMs.push(o.endMs[i]!);
    }
    if (o.audio.byteLength > 0) this.#ready.push(o.audio);
  }

  #invalid(message: string): SpeechServiceError {
    return new SpeechServiceError({
      code: 'invalid_response',
      message: `the speech service's timestamps stream is out of bounds: ${message}`,
      requestId: this.#response.requestId,
      retryable: false,
    });
  }
}
