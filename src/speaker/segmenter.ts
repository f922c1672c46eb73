import { orAbort } from '../async/abortable.js';
import { TEXT_MAX_CHARS } from '../speech/limits.js';

export interface Segment {
  readonly text: string;
  /** offsets of this segment in the original text, so what was heard can be reported as a substring */
  readonly start: number;
  readonly end: number;
}

export interface SegmentStreamOptions {
  maxChars?: number;
  signal?: AbortSignal;
  /**
   * Cut the first segment early, so speech starts before the first sentence is complete: at its first
   * clause end `minChars` or more in, at a word once `maxChars` are in, or at the last whole word when
   * no text came for `waitMs`. Later segments are whole sentences (they are requested while the
   * earlier ones play).
   */
  eagerFirst?: EagerFirstOptions | undefined;
  /**
   * Cut a later segment before its sentence ends when the audio already queued would run out first:
   * once `remainingMs()` (the audio queued and not yet played; Infinity while a segment's audio is
   * still arriving) is down to `leadMs()` (what a new segment takes to start playing), the text in so
   * far is spoken up to its last clause end, else its last phrase boundary, else its last whole word,
   * `minChars` in at least. Without it, later segments are whole sentences.
   */
  runway?: RunwayOptions | undefined;
}

export interface RunwayOptions {
  remainingMs: () => number;
  /** Segments (of those yielded, in order) whose audio has begun to arrive. */
  begun: () => number;
  leadMs: () => number;
  /** The shortest cut (characters). */
  minChars: number;
}

/** While text is pending and a segment's audio still arrives, the runway is looked at this often (ms). */
const RUNWAY_POLL_MS = 40;

export interface EagerFirstOptions {
  minChars: number;
  maxChars: number;
  waitMs: number;
}

/** For text streamed as an LLM writes it: about a second of tokens, or a clause, before speaking. */
export const EAGER_FIRST: EagerFirstOptions = { minChars: 8, maxChars: 100, waitMs: 400 };

/** Terminators that end a sentence only when whitespace (or the end) follows. */
const SPACED_TERMINATORS = new Set(['.', '!', '?', '…', '‼', '⁇', '⁈', '⁉', '؟', '।', '॥']);
/** Full-width terminators: CJK text puts no space after them. */
const CJK_TERMINATORS = new Set(['。', '！', '？', '｡', '．']);
const CLAUSE_MARKS = new Set([',', ';', ':']);
const CJK_CLAUSE_MARKS = new Set(['，', '、', '；', '：', '､']);
const DASHES = new Set(['—', '–']);
/** Closing quotes and brackets, which belong to the sentence they close. */
const CLOSER = /^[\p{Pe}\p{Pf}"'`]$/u;
const OPENERS = /^[\p{Ps}\p{Pi}"'`]+/u;
const WORD_CHAR = /^[\p{L}\p{N}]$/u;
const WHITESPACE = /^\s$/;
const MARK = /^\p{M}$/u;
const ZWJ = 0x200d;

/** Whether a code point attaches to the one before (a combining mark, a joiner, a variation selector, a skin tone). */
function isExtend(code: number): boolean {
  return (
    code === ZWJ ||
    code === 0xfe0e ||
    code === 0xfe0f ||
    (code >= 0x1f3fb && code <= 0x1f3ff) ||
    MARK.test(String.fromCodePoint(code))
  );
}

/**
 * Words that end in "." without ending the sentence. Ordinary words that double as abbreviations
 * ("no", "sat", "sun", "art") are left out: a missed split only merges two sentences into one request,
 * while a wrong one breaks the prosody mid-sentence ("Dr. | Smith").
 */
const ABBREVIATIONS = new Set([
  ...['mr', 'mrs', 'ms', 'mx', 'messrs', 'dr', 'drs', 'prof', 'sr', 'jr', 'st', 'mt', 'ft', 'rev', 'hon'],
  ...['gen', 'col', 'capt', 'lt', 'sgt', 'cpl', 'maj', 'adm', 'gov', 'sen', 'rep', 'pres', 'supt'],
  ...['vs', 'etc', 'al', 'cf', 'eg', 'ie', 'approx', 'appt', 'apt', 'dept', 'fig', 'figs', 'inc', 'ltd'],
  ...['corp', 'co', 'bros', 'assn', 'ave', 'blvd', 'rd', 'hwy', 'ext', 'tel', 'vol', 'vols', 'pp', 'nos'],
  ...['esp', 'incl', 'jan', 'feb', 'mar', 'apr', 'jun', 'jul', 'aug', 'sep', 'sept', 'oct', 'nov', 'dec'],
  ...['mon', 'tue', 'tues', 'thu', 'thur', 'thurs', 'fri'],
]);
/**
 * Words before which a sentence may be cut when the audio would otherwise run out: conjunctions,
 * relative words and prepositions, where a speaker may pause.
 */
const PHRASE_OPENERS = new Set([
  ...['and', 'but', 'or', 'nor', 'so', 'yet', 'because', 'although', 'though', 'while', 'whereas'],
  ...['which', 'who', 'whom', 'whose', 'that', 'where', 'when', 'if', 'unless', 'until', 'since'],
  ...['with', 'without', 'for', 'from', 'into', 'about', 'after', 'before', 'during', 'between'],
  ...['through', 'under', 'over', 'to', 'in', 'on', 'at', 'by', 'of'],
]);
const INITIAL = /^\p{Lu}$/u;
/** "e.g", "U.S", "Ph.D", "a.m" (the final "." excluded). */
const DOTTED_ABBREVIATION = /^\p{L}{1,3}(?:\.\p{L}{1,3})+$/u;
/** "1." at the start of a segment is a list marker. */
const LIST_NUMBER = /^\d{1,3}$/;

function isWs(ch: string | undefined): boolean {
  return ch !== undefined && WHITESPACE.test(ch);
}

function isTerminator(ch: string | undefined): boolean {
  return ch !== undefined && (SPACED_TERMINATORS.has(ch) || CJK_TERMINATORS.has(ch));
}

function isCloser(ch: string | undefined): boolean {
  return ch !== undefined && CLOSER.test(ch);
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

function checkCount(name: string, value: number, min: number): number {
  if (!Number.isInteger(value) || value < min)
    throw new RangeError(`${name} must be an integer ≥ ${min}, got ${value}`);
  return value;
}

/**
 * Finds sentence segments in a text that may still be growing. Every decision is taken only once the
 * text it depends on is in (the character after a terminator and its closing quotes, the rest of a
 * whitespace run, the character past the length limit), so feeding the text in pieces gives exactly the
 * segments that feeding it whole does: `segmentText` and `segmentStream` are this one loop.
 */
class SentenceSplitter {
  private buf = '';
  /** Offset of `buf[0]` in the whole text. */
  private base = 0;
  /** Where the pending segment starts (its first non-whitespace character once `started`). */
  private pos = 0;
  private started = false;
  /** Where scanning resumes: the start of a construct that reached the end of the text so far. */
  private scanAt = 0;
  /** Whether the pending segment has a letter or digit yet: punctuation alone does not end a segment. */
  private sawWord = false;
  /** `buf` index `maxChars` code points past `pos`, once the text reaches it. */
  private limit: number | undefined;

  constructor(private readonly maxChars: number) {}

  push(text: string): void {
    if (this.pos > 0) {
      // Drop what is already segmented; every index kept is relative to `buf`.
      const drop = this.pos;
      this.buf = this.buf.slice(drop);
      this.base += drop;
      this.pos = 0;
      this.scanAt -= drop;
      if (this.limit !== undefined) this.limit -= drop;
    }
    this.buf += text;
  }

  /** The next complete segment, or undefined until more text comes (`final`: the text is all in). */
  take(final: boolean): Segment | undefined {
    const { buf } = this;
    if (!this.started) {
      let i = this.pos;
      while (i < buf.length && isWs(buf[i])) i++;
      this.pos = i;
      if (i === buf.length) return undefined;
      this.started = true;
      this.scanAt = i;
      this.sawWord = false;
      this.limit = undefined;
    }
    const start = this.pos;
    const end = this.scan(final);
    if (end === undefined) return undefined;
    this.pos = end;
    this.started = false;
    return { text: buf.slice(start, end), start: this.base + start, end: this.base + end };
  }

  /**
   * The pending text up to its first clause end at least `minChars` in (", " "; " ": " a dash), or up
   * to its last whole word once it is `maxChars` long: a first segment that need not wait for its
   * sentence to end. Undefined when neither is there yet.
   */
  takeClause(minChars: number, maxChars: number): Segment | undefined {
    if (!this.skipSpace()) return undefined;
    const { buf } = this;
    const a = this.pos;
    for (let p = a + minChars; p < buf.length; p++) if (this.isClauseEnd(a, p)) return this.cutAt(p);
    return buf.length - a >= maxChars ? this.takeWords() : undefined;
  }

  /**
   * The pending text up to its last clause end, else its last phrase boundary (before a word that
   * opens a phrase: "and", "because", "which", "with", …), else its last whole word, each at least
   * `minChars` in: the most that can be spoken now without ending on a broken word.
   */
  takePhrase(minChars: number): Segment | undefined {
    if (!this.skipSpace()) return undefined;
    const { buf } = this;
    const a = this.pos;
    const least = a + minChars;
    for (let p = buf.length - 1; p >= least; p--) if (this.isClauseEnd(a, p)) return this.cutAt(p);
    let word: number | undefined;
    for (let p = buf.length - 1; p >= least; p--) {
      if (!isWs(buf[p]) || isWs(buf[p - 1]) || !WORD_CHAR.test(buf[p - 1]!)) continue;
      word ??= p;
      if (this.opensPhrase(p)) return this.cutAt(p);
    }
    return word === undefined ? undefined : this.cutAt(word);
  }

  /** Whether the word after the whitespace at `p` opens a phrase (and is whole: whitespace after it). */
  private opensPhrase(p: number): boolean {
    const { buf } = this;
    let q = p;
    while (q < buf.length && isWs(buf[q])) q++;
    let e = q;
    while (e < buf.length && !isWs(buf[e])) e++;
    return e < buf.length && PHRASE_OPENERS.has(buf.slice(q, e).toLowerCase());
  }

  /** The pending text up to its last whole word (one followed by whitespace), if it has one. */
  takeWords(): Segment | undefined {
    if (!this.skipSpace()) return undefined;
    const { buf } = this;
    for (let p = buf.length - 1; p > this.pos; p--)
      if (isWs(buf[p]) && !isWs(buf[p - 1]) && WORD_CHAR.test(buf[p - 1]!)) return this.cutAt(p);
    return undefined;
  }

  /** Whether any text (not only whitespace) waits to be segmented. */
  get pending(): boolean {
    if (this.started) return true;
    for (let i = this.pos; i < this.buf.length; i++) if (!isWs(this.buf[i])) return true;
    return false;
  }

  /** Moves past whitespace before a segment; false when nothing else is pending. */
  private skipSpace(): boolean {
    if (this.started) return true;
    let i = this.pos;
    while (i < this.buf.length && isWs(this.buf[i])) i++;
    this.pos = i;
    return i < this.buf.length;
  }

  private cutAt(end: number): Segment {
    let e = end;
    while (e > this.pos && isWs(this.buf[e - 1])) e--;
    const start = this.pos;
    this.pos = end;
    this.started = false;
    return { text: this.buf.slice(start, e), start: this.base + start, end: this.base + e };
  }

  /** End of the pending segment, or undefined when it cannot be told yet. */
  private scan(final: boolean): number | undefined {
    const { buf } = this;
    const len = buf.length;
    const a = this.pos;
    const limit = this.limitIndex();
    let i = this.scanAt;
    while (i < len) {
      const ch = buf[i]!;
      if (isWs(ch)) {
        // A blank line ends a segment; other whitespace is just whitespace.
        let j = i;
        let breaks = 0;
        while (j < len && breaks < 2 && isWs(buf[j])) {
          const c = buf[j]!;
          if (c === '\r' || c === '\u2028' || (c === '\n' && buf[j - 1] !== '\r')) breaks++;
          else if (c === '\u2029') breaks += 2;
          j++;
        }
        if (breaks >= 2 && this.sawWord) return i;
        while (j < len && isWs(buf[j])) j++;
        if (j === len) break;
        i = j;
        continue;
      }
      if (i >= limit) return this.overflow(limit);
      if (isTerminator(ch)) {
        let j = i;
        let cjk = false;
        for (; j < len && isTerminator(buf[j]); j++) if (CJK_TERMINATORS.has(buf[j]!)) cjk = true;
        const runEnd = j;
        while (j < len && isCloser(buf[j])) j++;
        if (j > limit) return this.overflow(limit);
        if (j === len) break; // more terminators or closers may follow
        const ends =
          this.sawWord &&
          (cjk || (isWs(buf[j]) && !(runEnd - i === 1 && ch === '.' && this.isAbbreviation(a, i))));
        if (ends) return j;
        i = j;
        continue;
      }
      const code = buf.charCodeAt(i);
      if (isHighSurrogate(code) && i + 1 === len) break; // its other half is still to come
      const cp = String.fromCodePoint(buf.codePointAt(i)!);
      if (!this.sawWord && WORD_CHAR.test(cp)) this.sawWord = true;
      i += cp.length;
    }
    if (!final) {
      this.scanAt = i;
      return undefined;
    }
    let end = len;
    while (end > a && isWs(buf[end - 1])) end--;
    return end;
  }

  /** Whether the "." at `dot` closes an abbreviation, an initial, or a list number, not a sentence. */
  private isAbbreviation(a: number, dot: number): boolean {
    let q = dot;
    while (q > a && !isWs(this.buf[q - 1])) q--;
    const word = this.buf.slice(q, dot);
    const openers = OPENERS.exec(word)?.[0].length ?? 0;
    const core = word.slice(openers);
    if (core === '') return false;
    if (INITIAL.test(core) || DOTTED_ABBREVIATION.test(core)) return true;
    if (ABBREVIATIONS.has(core.toLowerCase())) return true;
    return q === a && LIST_NUMBER.test(core);
  }

  /** `buf` index `maxChars` code points past the segment start, or Infinity while the text is shorter. */
  private limitIndex(): number {
    if (this.limit !== undefined) return this.limit;
    const { buf } = this;
    const a = this.pos;
    // UTF-16 units are never fewer than code points: no walk while the text is short.
    if (buf.length - a <= this.maxChars) return Infinity;
    let i = a;
    for (let n = 0; n < this.maxChars && i < buf.length; n++) {
      i += isHighSurrogate(buf.charCodeAt(i)) && i + 1 < buf.length ? 2 : 1;
    }
    if (i >= buf.length) return Infinity; // not sure yet: a surrogate pair may be split at the end
    this.limit = i;
    return i;
  }

  /**
   * The sentence runs past `maxChars` (a non-whitespace character at `limit` is in): cut it at the best
   * boundary within the limit: a clause in the second half of the window, a word, any clause, then
   * hard.
   */
  private overflow(limit: number): number {
    const a = this.pos;
    const clause = this.lastCut(limit, (p) => this.isClauseEnd(a, p));
    const half = a + (limit - a) / 2;
    if (clause !== undefined && clause >= half) return clause;
    const word = this.lastCut(limit, (p) => isWs(this.buf[p]) && !isWs(this.buf[p - 1]));
    if (word !== undefined) return word;
    if (clause !== undefined) return clause;
    return this.hardCut(limit);
  }

  private lastCut(limit: number, isCut: (p: number) => boolean): number | undefined {
    for (let p = limit; p > this.pos; p--) if (isCut(p)) return p;
    return undefined;
  }

  /** Whether a clause ends just before `p`: ", " ";" ":" then whitespace, a full-width comma, a dash. */
  private isClauseEnd(a: number, p: number): boolean {
    const { buf } = this;
    let q = p - 1;
    while (q > a && isCloser(buf[q])) q--;
    const c = buf[q]!;
    if (CLAUSE_MARKS.has(c)) return isWs(buf[p]);
    if (CJK_CLAUSE_MARKS.has(c)) return true;
    if (DASHES.has(c)) return true;
    return c === '-' && q === p - 1 && isWs(buf[q - 1]) && isWs(buf[p]);
  }

  /** `limit`, moved back so that it does not split a character from what attaches to it. */
  private hardCut(limit: number): number {
    const { buf } = this;
    let p = limit;
    while (p > this.pos + 1) {
      if (!isExtend(buf.codePointAt(p)!) && buf.charCodeAt(p - 1) !== ZWJ) break;
      p -= p >= 2 && isHighSurrogate(buf.charCodeAt(p - 2)) ? 2 : 1;
    }
    return p > this.pos ? p : limit;
  }
}

/**
 * Splits text into sentence segments (one request each, so the next one can be requested while the
 * previous plays), never over maxChars (default 5000): a sentence over the limit is split at clause
 * boundaries, then words, then hard. Whitespace between segments is not part of any segment.
 * Abbreviations like "Dr." "e.g." "U.S." and decimals "3.14" do not end sentences.
 */
export function segmentText(text: string, maxChars: number = TEXT_MAX_CHARS): Segment[] {
  const splitter = new SentenceSplitter(checkCount('maxChars', maxChars, 1));
  splitter.push(text);
  const segments: Segment[] = [];
  for (let s = splitter.take(true); s; s = splitter.take(true)) segments.push(s);
  return segments;
}

/**
 * Aggregates a streaming text input (tokens as an LLM yields them, split anywhere, even mid-word) into
 * sentence segments, yielding each sentence as soon as it is complete (its terminator seen followed by
 * whitespace or the end), and the remainder at the end. A sentence that grows past maxChars is cut at
 * the best boundary available. Offsets are into the concatenation of all tokens. On abort it stops
 * pulling tokens (a pending pull is abandoned, the source is closed) and throws `signal.reason`.
 */
export async function* segmentStream(
  tokens: AsyncIterable<string>,
  options: SegmentStreamOptions = {},
): AsyncGenerator<Segment> {
  const { signal, runway } = options;
  const splitter = new SentenceSplitter(checkCount('maxChars', options.maxChars ?? TEXT_MAX_CHARS, 1));
  signal?.throwIfAborted();
  const iterator = tokens[Symbol.asyncIterator]();
  let sourceEnded = false;
  let eager = options.eagerFirst;
  let pending: Promise<IteratorResult<string>> | undefined;
  /** Segments yielded so far, and the index of the last one cut for the runway. */
  let yielded = 0;
  let lastCut = -1;
  try {
    for (;;) {
      let next: IteratorResult<string> | undefined;
      pending ??= nextOrAbort(iterator, signal);
      // After the first segment: how long until the queued audio runs out (Infinity while a segment's
      // audio still arrives). After a cut, none again until that segment's audio has begun to arrive:
      // until then what is queued says nothing of what is coming.
      const pendingText = !eager && runway !== undefined && splitter.pending;
      const armed = pendingText && runway.begun() > lastCut;
      const slack = armed ? runway.remainingMs() - runway.leadMs() : Number.POSITIVE_INFINITY;
      if (slack <= 0) {
        const phrase = splitter.takePhrase(runway!.minChars);
        if (phrase) {
          lastCut = yielded++;
          yield phrase;
          signal?.throwIfAborted();
          continue;
        }
      }
      try {
        // Before the first segment, text that stops coming for `waitMs` is spoken as far as it goes;
        // later, with text pending, the runway is looked at again when it may have run out.
        let waitMs: number | undefined;
        if (eager) waitMs = eager.waitMs;
        else if (pendingText && slack > 0) waitMs = Math.min(slack, RUNWAY_POLL_MS);
        next = waitMs === undefined ? await pending : await withinMs(pending, waitMs);
      } catch (error) {
        sourceEnded = !signal?.aborted; // the source itself failed: nothing to close
        throw error;
      }
      if (next === undefined) {
        if (!eager) continue; // the runway is looked at again
        const words = splitter.takeWords();
        if (words) {
          eager = undefined;
          yielded++;
          yield words;
          signal?.throwIfAborted();
        }
        continue;
      }
      pending = undefined;
      if (next.done) {
        sourceEnded = true;
        break;
      }
      splitter.push(next.value);
      for (let s = splitter.take(false); s; s = splitter.take(false)) {
        eager = undefined;
        yielded++;
        yield s;
        signal?.throwIfAborted();
      }
      const first = eager && splitter.takeClause(eager.minChars, eager.maxChars);
      if (first) {
        eager = undefined;
        yielded++;
        yield first;
        signal?.throwIfAborted();
      }
    }
  } finally {
    // Stopped early (abort, or the consumer stopped reading): let the source release what it holds.
    // Not awaited: a source stuck in a pending pull would never answer.
    if (!sourceEnded)
      void Promise.resolve()
        .then(() => iterator.return?.())
        .catch(() => undefined);
  }
  for (let s = splitter.take(true); s; s = splitter.take(true)) {
    yield s;
    signal?.throwIfAborted();
  }
}

/** The promise's value, or undefined when it has not settled within `ms` (it is left running). */
async function withinMs<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((resolve) => (timer = setTimeout(resolve, ms, undefined)));
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** The iterator's next result, or a rejection with `signal.reason` as soon as the signal aborts. */
function nextOrAbort<T>(
  iterator: AsyncIterator<T>,
  signal: AbortSignal | undefined,
): Promise<IteratorResult<T>> {
  return orAbort(iterator.next(), signal);
}
