/**
 * When a caller's turn is over, from what they have said so far and how long they have been silent
 * (issue 45, part 3). A fixed silence (`stt.endOfTurnMs`) either cuts a caller who pauses mid-number or
 * mid-thought, or keeps one who said "yes." waiting; the words tell the two apart. The rule, after
 * Vapi's `transcriptionEndpointingPlan` (a short wait after punctuation, a longer one without, another
 * after a number) and LiveKit's endpointing (`minDelay` when the turn looks done, up to `maxDelay` when
 * it does not):
 *
 * - a complete sentence (terminal punctuation) or a complete short answer ("yes", "that's right",
 *   "billing please") ends after `completeMs` of silence;
 * - a turn that ends on a number (digits or number words: a number being dictated) waits `numberMs`,
 *   punctuated or not (speech-to-text puts a full stop after a chunk of digits read out);
 * - one that trails off on a hesitation ("um"), a conjunction ("and", "because"), a discourse filler
 *   ("like", "you know") or a word that cannot end a sentence ("the", "to", "my", "is") waits
 *   `incompleteMs`; terminal punctuation overrides the last three ("I think so.", "Who is it for?"),
 *   never a number or a hesitation;
 * - anything else without a sentence end (no punctuation, or a comma) waits `unpunctuatedMs`;
 * - no words yet waits `noTextMs` (by default today's fixed 700 ms: without a transcript the rule is
 *   what it replaces);
 * - no wait exceeds `maxMs`, the ceiling.
 *
 * Pure: the caller measures the silence on its own clock (the detector's inbound timeline, an injected
 * clock in tests) and asks again as words arrive or the silence grows; a `continue` says how much more
 * silence would end the turn if nothing changes. English word lists. `completeMs` must exceed the
 * speech-to-text's delay (how long after a word is spoken its text arrives), or a turn's earlier
 * punctuated text ends it before its last words are heard: docs/calls.md, «Ending a caller's turn».
 */
import { z } from 'zod';

/** A wait (ms): at least a few VAD windows, at most ten seconds. */
const waitMs = (fallback: number) => z.number().int().min(100).max(10_000).default(fallback);

/**
 * The rule's settings. Every field is optional on input and takes its default; figures behind the
 * defaults: docs/calls.md, «Ending a caller's turn».
 */
export const endpointingSchema = z
  .strictObject({
    /** After a complete sentence or short answer (Vapi's `onPunctuationSeconds`, LiveKit's `minDelay`). */
    completeMs: waitMs(250),
    /** After words with no sentence end (Vapi's `onNoPunctuationSeconds`). */
    unpunctuatedMs: waitMs(1100),
    /** After a hesitation, a conjunction, a discourse filler or a word that cannot end a sentence. */
    incompleteMs: waitMs(1500),
    /** After a number (Vapi's `onNumberSeconds`): digits being dictated come in chunks. */
    numberMs: waitMs(1500),
    /** Before any words have arrived. */
    noTextMs: waitMs(700),
    /** The ceiling: no silence within a turn is waited out longer (LiveKit's `maxDelay`). */
    maxMs: z.number().int().min(500).max(10_000).default(2500),
  })
  .refine((c) => c.completeMs <= Math.min(c.unpunctuatedMs, c.incompleteMs, c.numberMs, c.noTextMs), {
    message: 'must not exceed any other wait: a finished sentence never waits longer than an unfinished one',
    path: ['completeMs'],
  });

export type EndpointingConfig = z.output<typeof endpointingSchema>;
export type EndpointingOptions = z.input<typeof endpointingSchema>;

export const DEFAULT_ENDPOINTING: Readonly<EndpointingConfig> = Object.freeze(endpointingSchema.parse({}));

/** Settings from `options` (a relay's, a config file's), the defaults for what they leave out. */
export function endpointingConfig(options: unknown = {}): EndpointingConfig {
  const parsed = endpointingSchema.safeParse(options);
  if (!parsed.success) throw new RangeError(`invalid endpointing settings: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

/** What the end of the transcript looks like, which decides the wait. */
export type EndpointCue =
  | 'no-text'
  | 'number'
  | 'hesitation'
  | 'conjunction'
  | 'filler'
  | 'open-word'
  | 'sentence-end'
  | 'short-answer'
  | 'open-punctuation'
  | 'unpunctuated';

export interface TranscriptEnding {
  readonly cue: EndpointCue;
  /** The word(s) or mark the cue was read from ("and", "415", "?"); '' for no text and plain words. */
  readonly evidence: string;
}

export interface EndpointingInput {
  /** The turn's words so far as speech-to-text gives them (partial or committed); '' before any. */
  readonly transcript: string;
  /** Silence since the caller's last speech (ms), on the caller's clock. */
  readonly silenceMs: number;
}

export interface EndpointDecision {
  readonly action: 'continue' | 'end';
  readonly cue: EndpointCue;
  readonly evidence: string;
  /** The wait that applied (ms): the cue's, or the ceiling if that is lower. */
  readonly waitMs: number;
  readonly silenceMs: number;
  /** Silence still needed to end the turn if the words do not change (ms); 0 once it ends. */
  readonly remainingMs: number;
  /** For the log: `continue: trails off on the conjunction "and", 620 of 1500 ms of silence`. */
  readonly reason: string;
}

const words = (list: string): ReadonlySet<string> => new Set(list.split(' '));

/** Sounds of thinking: the caller is still there. Waited for even with punctuation after them. */
const HESITATIONS = words('um umm uh uhh uhm er erm ah eh hm hmm mm');
const CONJUNCTIONS = words(
  'and but or nor so because cause cos then if when while whereas although though since unless until till than whether plus',
);
/** Words people trail off on while they find the next ones (also two-word ones, below). */
const FILLERS = words('like well actually basically');
const FILLER_PAIRS = words('you_know i_mean kind_of sort_of');
/** Articles, prepositions, possessives, subject pronouns, copulas: no sentence ends on them. */
const OPEN_WORDS = words(
  "the a an to of for from with without at in on about into onto by as via my your our their his its is are was were am i we they he she it's i'm that's there's we're they're you're he's she's",
);
const NUMBER_WORDS = words(
  'zero two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred thousand million',
);
/** Number words only after another number ("four one", "five oh", "four double"): "the blue one", "oh". */
const NUMBER_WORDS_AFTER_NUMBER = words('one oh double triple');
/** Whole answers that are complete without punctuation. */
const SHORT_ANSWERS = words(
  "yes yeah yep yup no nope nah okay ok sure right correct exactly absolutely definitely fine great perfect please thanks alright goodbye bye thank_you no_thanks no_thank_you yes_please that's_right that's_correct that's_it that's_all that_is_all that's_fine all_right of_course not_really i_don't_know",
);
/** A request closed politely is complete: "billing please", "an agent, thank you". */
const CLOSERS = words('please thanks thank_you');
/**
 * A one-word turn is a short answer ("billing"), unless it is a greeting or opens a question ("can",
 * "what"): those come before what the caller means to say.
 */
const NOT_ALONE = words('hello hi hey what where who why how which can could would will should do does did');

const TERMINAL = /[.!?]$/;
/** Punctuation at the very end (closing quotes and brackets set aside). */
const TRAILING_MARKS = /([.!?…,;:\-–—]+)["'”’)\]]*$/u;

function tokens(text: string): string[] {
  return text
    .toLowerCase()
    .replace(/[‘’]/g, "'")
    .split(/\s+/)
    .map((t) => t.replace(/^[^\p{L}\p{N}]+|[^\p{L}\p{N}]+$/gu, ''))
    .filter((t) => t !== '');
}

/** Whether `ws[i]` is a number: digits, a number word, or an ambiguous one after a number. */
function isNumberAt(ws: readonly string[], i: number): boolean {
  const token = ws[i];
  if (token === undefined) return false;
  const word = token.split('-').at(-1)!;
  if (/\p{N}/u.test(token) || NUMBER_WORDS.has(word)) return true;
  return NUMBER_WORDS_AFTER_NUMBER.has(word) && isNumberAt(ws, i - 1);
}

/** How `transcript` ends: the cue that picks the wait, and what it was read from. */
export function classifyTranscript(transcript: string): TranscriptEnding {
  const ws = tokens(transcript);
  const last = ws.at(-1);
  if (last === undefined) return { cue: 'no-text', evidence: '' };
  const pair = ws.slice(-2).join('_');
  const whole = ws.join('_');
  const mark = TRAILING_MARKS.exec(transcript.trim())?.[1] ?? '';
  // An ellipsis trails off; a single full stop ends a sentence.
  const terminal = TERMINAL.test(mark) && !mark.includes('..');
  if (isNumberAt(ws, ws.length - 1)) return { cue: 'number', evidence: last };
  if (HESITATIONS.has(last)) return { cue: 'hesitation', evidence: last };
  if (terminal) return { cue: 'sentence-end', evidence: mark.at(-1)! };
  if (CONJUNCTIONS.has(last)) return { cue: 'conjunction', evidence: last };
  if (FILLER_PAIRS.has(pair)) return { cue: 'filler', evidence: pair.replace('_', ' ') };
  if (FILLERS.has(last)) return { cue: 'filler', evidence: last };
  if (OPEN_WORDS.has(last)) return { cue: 'open-word', evidence: last };
  if (mark !== '') return { cue: 'open-punctuation', evidence: mark };
  const closer = CLOSERS.has(last) || CLOSERS.has(pair);
  if (SHORT_ANSWERS.has(whole) || closer || (ws.length === 1 && !NOT_ALONE.has(last)))
    return { cue: 'short-answer', evidence: ws.join(' ') };
  return { cue: 'unpunctuated', evidence: '' };
}

function cueWaitMs(cue: EndpointCue, config: EndpointingConfig): number {
  switch (cue) {
    case 'no-text':
      return config.noTextMs;
    case 'number':
      return config.numberMs;
    case 'hesitation':
    case 'conjunction':
    case 'filler':
    case 'open-word':
      return config.incompleteMs;
    case 'sentence-end':
    case 'short-answer':
      return config.completeMs;
    case 'open-punctuation':
    case 'unpunctuated':
      return config.unpunctuatedMs;
  }
}

function describe({ cue, evidence }: TranscriptEnding): string {
  switch (cue) {
    case 'no-text':
      return 'no words yet';
    case 'number':
      return `a number being given ("${evidence}")`;
    case 'hesitation':
      return `trails off on "${evidence}"`;
    case 'conjunction':
      return `trails off on the conjunction "${evidence}"`;
    case 'filler':
      return `trails off on the filler "${evidence}"`;
    case 'open-word':
      return `trails off on "${evidence}", which ends no sentence`;
    case 'sentence-end':
      return `a complete sentence ("${evidence}")`;
    case 'short-answer':
      return `a complete short answer ("${evidence}")`;
    case 'open-punctuation':
      return `no sentence end ("${evidence}")`;
    case 'unpunctuated':
      return 'no punctuation';
  }
}

/** Whether the caller's turn is over: `end` once the silence has lasted the wait their words call for. */
export function decideEndOfTurn(
  input: EndpointingInput,
  config: EndpointingConfig = DEFAULT_ENDPOINTING,
): EndpointDecision {
  if (!Number.isFinite(input.silenceMs) || input.silenceMs < 0)
    throw new RangeError(`silenceMs must be a finite number ≥ 0, not ${input.silenceMs}`);
  const ending = classifyTranscript(input.transcript);
  const wanted = cueWaitMs(ending.cue, config);
  const waitMs = Math.min(wanted, config.maxMs);
  const silenceMs = input.silenceMs;
  const end = silenceMs >= waitMs;
  const ceiling = wanted > config.maxMs ? ` (the ceiling; ${wanted} ms asked)` : '';
  const heard = Math.round(silenceMs);
  const reason = end
    ? `end: ${describe(ending)}, ${heard} ms of silence ≥ ${waitMs} ms${ceiling}`
    : `continue: ${describe(ending)}, ${heard} of ${waitMs} ms of silence${ceiling}`;
  return {
    action: end ? 'end' : 'continue',
    cue: ending.cue,
    evidence: ending.evidence,
    waitMs,
    silenceMs,
    remainingMs: end ? 0 : waitMs - silenceMs,
    reason,
  };
}
