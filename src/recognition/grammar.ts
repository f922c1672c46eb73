/**
 * Menu grammars: a menu's choices, each with the phrases a caller may say for it (free text from a
 * config), as a JSGF grammar the decoder runs, and the reading of what it recognised back into a
 * choice's key (and spoken keypad digits).
 *
 * Shape: `[before] answer [after]`, where the answer is one choice's phrase or, with `maxDigits`, a
 * sequence of spoken keys; `before` and `after` are the optional carrier words callers wrap a choice in
 * ("um, I'd like to talk to … please"). A finite-state grammar always finds some path: the recogniser's
 * confidence (confidence.ts) is what tells speech outside it from a choice.
 *
 * Every word must be in the model's dictionary; a phrase holding another is a `GrammarError` naming the
 * choice and the word, so a configuration can be corrected. What a grammar may hold is bounded
 * (`GRAMMAR_LIMITS`): building a decoder's search grows faster than the grammar (2048 words: ~60 ms
 * per worker, 8192 words: 1.4 s, the largest the per-choice bounds alone allow, 16 k words: 14 s).
 */
import { createHash } from 'node:crypto';
import { inDictionary } from './dictionary.js';
import { textWords } from './words.js';

export interface MenuChoice {
  readonly key: string;
  readonly phrases: readonly string[];
}

export interface MenuGrammarOptions {
  /** Optional carrier words around a choice ("I'd like", "I want to", "can I", "talk to", "please", "um"); default true. */
  carriers?: boolean;
  /** Spoken keys: "zero".."nine", "oh", "star", "pound"/"hash" → '0'..'9', '*', '#', as a sequence of up to `maxDigits`; default off (0). */
  maxDigits?: number;
}

export interface MenuGrammar {
  /** Stable id (a hash of the JSGF), for workers to cache a compiled grammar. */
  readonly id: string;
  readonly jsgf: string;
  /** The key a recognised text means, and the digits it spoke, if any (undefined: neither). */
  interpret(text: string): { key: string | undefined; digits: string | undefined };
  /**
   * How many of a recognised text's words are carriers ("I'd like to", "please") before and after
   * its answer; undefined when it is no answer of this grammar.
   */
  carrierWords(text: string): { before: number; after: number } | undefined;
}

/** A grammar that cannot be made: `choice` (its key) and `word` say where, when it is about a word. */
export class GrammarError extends Error {
  override readonly name = 'GrammarError';
  constructor(
    message: string,
    readonly choice?: string,
    readonly word?: string,
  ) {
    super(message);
  }
}

export const GRAMMAR_LIMITS = {
  choices: 64,
  phrasesPerChoice: 32,
  wordsPerPhrase: 8,
  charsPerWord: 40,
  keyChars: 64,
  maxDigits: 20,
  /** Words over all phrases (carriers and built-in sets included): bounds the decoder's build time. */
  totalWords: 2048,
  /** Text given to `interpret` (longer is no recognition of this grammar's). */
  interpretChars: 1000,
} as const;

/** Built-in phrase sets a choice may name as '$yes' / '$no' in its phrases: yes, yeah, yep, sure, correct, that's right… / no, nope, no thanks, not really… */
export const BUILT_IN_PHRASES: Readonly<Record<'yes' | 'no', readonly string[]>> = Object.freeze({
  yes: Object.freeze([
    'yes',
    'yeah',
    'yep',
    'yup',
    'sure',
    'correct',
    "that's right",
    'that is right',
    'right',
    'okay',
    'yes please',
    'of course',
    'absolutely',
    'definitely',
  ]),
  no: Object.freeze([
    'no',
    'nope',
    'no thanks',
    'no thank you',
    'not really',
    'not at all',
    "that's wrong",
    'that is wrong',
    'wrong',
    'incorrect',
    'negative',
    'definitely not',
  ]),
});

/** Carrier words before a choice: `[hesitation] [want [to] [verb] | verb]`, e.g. "um, I'd like to talk to". */
const HESITATIONS: readonly string[] = ['um', 'uh', 'er'];
const WANTS: readonly string[] = [
  'i want',
  'i wanna',
  "i'd like",
  'i would like',
  'i need',
  'can i',
  'could i',
  'may i',
  'let me',
  'please',
];
const VERBS: readonly string[] = ['talk to', 'speak to', 'get', 'have', 'go to', 'hear', 'check'];
const CARRIERS_AFTER: readonly string[] = ['please', 'thanks', 'thank you'];

/** Spoken keypad keys. */
const SPOKEN_KEYS: Readonly<Record<string, string>> = {
  zero: '0',
  oh: '0',
  one: '1',
  two: '2',
  three: '3',
  four: '4',
  five: '5',
  six: '6',
  seven: '7',
  eight: '8',
  nine: '9',
  star: '*',
  pound: '#',
  hash: '#',
};

/** A phrase as the decoder's words, checked against the bounds and the dictionary. */
function phraseWords(phrase: string, key: string): string[] {
  const words = textWords(phrase).map((w) => w.word);
  if (words.length === 0) throw new GrammarError(`choice "${key}": the phrase "${phrase}" has no words`, key);
  if (words.length > GRAMMAR_LIMITS.wordsPerPhrase)
    throw new GrammarError(
      `choice "${key}": the phrase "${phrase}" has more than ${GRAMMAR_LIMITS.wordsPerPhrase} words`,
      key,
    );
  for (const word of words) {
    if (word.length > GRAMMAR_LIMITS.charsPerWord)
      throw new GrammarError(
        `choice "${key}": "${word}" is longer than ${GRAMMAR_LIMITS.charsPerWord} characters`,
        key,
        word,
      );
    if (!inDictionary(word))
      throw new GrammarError(
        /^\p{N}+$/u.test(word)
          ? `choice "${key}": "${word}" is not a word the recogniser knows (write numbers as words)`
          : `choice "${key}": "${word}" is not in the recogniser's dictionary`,
        key,
        word,
      );
  }
  return words;
}

/** A choice's phrases as word lists, `$yes`/`$no` expanded, duplicates dropped. */
function choicePhrases(choice: MenuChoice): string[] {
  const { key, phrases } = choice;
  if (!Array.isArray(phrases) || phrases.length === 0)
    throw new GrammarError(`choice "${key}" has no phrases`, key);
  if (phrases.length > GRAMMAR_LIMITS.phrasesPerChoice)
    throw new GrammarError(`choice "${key}" has more than ${GRAMMAR_LIMITS.phrasesPerChoice} phrases`, key);
  const out = new Set<string>();
  for (const phrase of phrases) {
    if (typeof phrase !== 'string') throw new GrammarError(`choice "${key}": a phrase is not text`, key);
    const set = /^\s*\$(\w+)\s*$/.exec(phrase)?.[1];
    if (set !== undefined) {
      if (set !== 'yes' && set !== 'no')
        throw new GrammarError(`choice "${key}": there is no built-in phrase set "$${set}" ($yes, $no)`, key);
      for (const p of BUILT_IN_PHRASES[set]) out.add(phraseWords(p, key).join(' '));
    } else out.add(phraseWords(phrase, key).join(' '));
  }
  return [...out];
}

/** JSGF alternatives, longest first (so that a regex built from them prefers the longest). */
function alternatives(phrases: readonly string[]): string {
  return [...phrases].sort((a, b) => b.length - a.length || (a < b ? -1 : 1)).join(' | ');
}

/** A regex group matching one of `phrases`, each followed by a space. */
function group(phrases: readonly string[]): string {
  const escaped = [...phrases]
    .sort((a, b) => b.length - a.length)
    .map((p) => `${p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} `);
  return `(?:${escaped.join('|')})`;
}

class CompiledMenuGrammar implements MenuGrammar {
  readonly id: string;

  constructor(
    readonly jsgf: string,
    private readonly choices: ReadonlyArray<{ key: string; pattern: RegExp }>,
    private readonly digitsPattern: RegExp | undefined,
  ) {
    this.id = createHash('sha256').update(jsgf).digest('hex').slice(0, 32);
  }

  interpret(text: string): { key: string | undefined; digits: string | undefined } {
    const spoken = this.spoken(text);
    if (spoken === undefined) return { key: undefined, digits: undefined };
    const key = this.choices.find((c) => c.pattern.test(spoken))?.key;
    const said = this.digitsPattern?.exec(spoken)?.[2];
    const digits = said
      ?.trim()
      .split(' ')
      .map((w) => SPOKEN_KEYS[w])
      .join('');
    return { key, digits };
  }

  carrierWords(text: string): { before: number; after: number } | undefined {
    const spoken = this.spoken(text);
    if (spoken === undefined) return undefined;
    for (const pattern of [...this.choices.map((c) => c.pattern), this.digitsPattern]) {
      const match = pattern?.exec(spoken);
      if (match) return { before: wordCount(match[1]!), after: wordCount(match[match.length - 1]!) };
    }
    return undefined;
  }

  /** The text's words, each followed by a space, as the patterns read them. */
  private spoken(text: string): string | undefined {
    if (typeof text !== 'string' || text.length > GRAMMAR_LIMITS.interpretChars) return undefined;
    const words = textWords(text).map((w) => w.word);
    return words.length === 0 ? undefined : `${words.join(' ')} `;
  }
}

/** Words in a run of the patterns' "word " units. */
function wordCount(run: string): number {
  return run === '' ? 0 : run.trim().split(' ').length;
}

interface Made {
  readonly choices: readonly MenuChoice[];
  readonly options: MenuGrammarOptions;
  /** Competitors made so far, by the answer they leave out. */
  readonly competitors: Map<string, MenuGrammar | undefined>;
}

/** How each grammar `menuGrammar` made was made, for its competitors. */
const made = new WeakMap<MenuGrammar, Made>();

/**
 * The menu without the answer `text` was read as (its choice, and spoken digits if it spoke some): what
 * the recogniser decodes a second time to measure how far ahead the answer was (confidence.ts).
 * Undefined when no other answer is left, or for a grammar `menuGrammar` did not make.
 */
export function competitorGrammar(
  grammar: MenuGrammar,
  answer: { key: string | undefined; digits: string | undefined },
): MenuGrammar | undefined {
  const how = made.get(grammar);
  if (!how || (answer.key === undefined && answer.digits === undefined)) return undefined;
  const dropDigits = answer.digits !== undefined;
  const id = `${answer.key ?? ''}\u0000${dropDigits}`;
  if (how.competitors.has(id)) return how.competitors.get(id);
  const choices = how.choices.filter((c) => c.key !== answer.key);
  const options = { ...how.options, ...(dropDigits ? { maxDigits: 0 } : {}) };
  const competitor =
    choices.length === 0 && (options.maxDigits ?? 0) === 0 ? undefined : menuGrammar(choices, options);
  how.competitors.set(id, competitor);
  return competitor;
}

export function menuGrammar(choices: readonly MenuChoice[], options: MenuGrammarOptions = {}): MenuGrammar {
  const carriers = options.carriers ?? true;
  const maxDigits = options.maxDigits ?? 0;
  if (!Number.isInteger(maxDigits) || maxDigits < 0 || maxDigits > GRAMMAR_LIMITS.maxDigits)
    throw new GrammarError(`maxDigits must be a whole number from 0 to ${GRAMMAR_LIMITS.maxDigits}`);
  const given: unknown = choices;
  if (!Array.isArray(given) || (choices.length === 0 && maxDigits === 0))
    throw new GrammarError('a menu needs at least one choice (or spoken digits)');
  if (choices.length > GRAMMAR_LIMITS.choices)
    throw new GrammarError(`a menu has at most ${GRAMMAR_LIMITS.choices} choices`);

  const keys = new Set<string>();
  const owner = new Map<string, string>();
  const parsed: Array<{ key: string; phrases: string[] }> = [];
  for (const choice of choices) {
    // A config's choices: checked, not trusted to match the type.
    const key: unknown = (choice as Partial<MenuChoice> | undefined)?.key;
    if (typeof key !== 'string' || key === '' || key.length > GRAMMAR_LIMITS.keyChars)
      throw new GrammarError(`a choice's key must be text of 1 to ${GRAMMAR_LIMITS.keyChars} characters`);
    if (keys.has(key)) throw new GrammarError(`two choices have the key "${key}"`, key);
    keys.add(key);
    const phrases = choicePhrases(choice);
    for (const p of phrases) {
      const other = owner.get(p);
      if (other !== undefined)
        throw new GrammarError(`choices "${other}" and "${key}" both have the phrase "${p}"`, key);
      owner.set(p, key);
    }
    parsed.push({ key, phrases });
  }

  const digitWords = Object.keys(SPOKEN_KEYS);
  let totalWords = 0;
  const count = (phrases: readonly string[]): void => {
    for (const p of phrases) totalWords += p.split(' ').length;
  };
  for (const c of parsed) count(c.phrases);
  if (carriers) for (const set of [HESITATIONS, WANTS, VERBS, ['to'], CARRIERS_AFTER]) count(set);
  if (maxDigits > 0) totalWords += digitWords.length;
  if (totalWords > GRAMMAR_LIMITS.totalWords)
    throw new GrammarError(`a menu's phrases have at most ${GRAMMAR_LIMITS.totalWords} words in all`);

  const rules: string[] = [];
  const answers = parsed.map((_, i) => `<c${i}>`);
  parsed.forEach((c, i) => rules.push(`<c${i}> = ${alternatives(c.phrases)};`));
  if (maxDigits > 0) {
    answers.push('<digits>');
    // <digit> [<digit> [<digit> …]]: up to maxDigits, at least one.
    let seq = '<digit>';
    for (let n = 1; n < maxDigits; n++) seq = `<digit> [${seq}]`;
    rules.push(`<digits> = ${seq};`, `<digit> = ${alternatives(digitWords)};`);
  }
  let top = '<answer>';
  if (carriers) {
    top = `[<hesitation>] [<lead>] ${top} [<after>]`;
    rules.push(
      `<hesitation> = ${alternatives(HESITATIONS)};`,
      '<lead> = <want> [to] [<verb>] | <verb>;',
      `<want> = ${alternatives(WANTS)};`,
      `<verb> = ${alternatives(VERBS)};`,
      `<after> = ${alternatives(CARRIERS_AFTER)};`,
    );
  }
  const jsgf = [
    '#JSGF V1.0;',
    'grammar menu;',
    `public <menu> = ${top};`,
    `<answer> = ${answers.join(' | ')};`,
    ...rules,
    '',
  ].join('\n');

  const prefix = carriers
    ? `${group(HESITATIONS)}?(?:${group(WANTS)}(?:to )?${group(VERBS)}?|${group(VERBS)})?`
    : '';
  const suffix = carriers ? `${group(CARRIERS_AFTER)}?` : '';
  // The carriers before and after are the first and last groups.
  const compiled = parsed.map((c) => ({
    key: c.key,
    pattern: new RegExp(`^(${prefix})${group(c.phrases)}(${suffix})$`),
  }));
  const digitsPattern =
    maxDigits > 0 ? new RegExp(`^(${prefix})(${group(digitWords)}{1,${maxDigits}})(${suffix})$`) : undefined;
  const grammar = new CompiledMenuGrammar(jsgf, compiled, digitsPattern);
  made.set(grammar, {
    choices: parsed.map((c) => ({ key: c.key, phrases: c.phrases })),
    options: { carriers, maxDigits },
    competitors: new Map(),
  });
  return grammar;
}
