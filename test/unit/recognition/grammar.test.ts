/**
 * Menu grammars (src/recognition/grammar.ts): a config's free-text phrases become a JSGF grammar of
 * dictionary words with optional carriers and spoken keys; what the decoder says is read back into the
 * choice's key and the digits; a word the model cannot say is an error that names it.
 */
import { describe, expect, it } from 'vitest';
import {
  BUILT_IN_PHRASES,
  competitorGrammar,
  GRAMMAR_LIMITS,
  GrammarError,
  menuGrammar,
  type MenuGrammar,
} from '../../../src/recognition/grammar.js';
import { MENU } from '../../../testkit/menu-audio.js';

function errorOf(make: () => MenuGrammar): GrammarError {
  try {
    make();
  } catch (error) {
    expect(error).toBeInstanceOf(GrammarError);
    return error as GrammarError;
  }
  throw new Error('no GrammarError');
}

describe('menuGrammar', () => {
  const menu = menuGrammar(MENU);

  it('reads an answer with carriers back into its choice', () => {
    expect(menu.interpret("Um, I'd like to talk to billing, please.")).toEqual({
      key: 'billing',
      digits: undefined,
    });
    expect(menu.interpret('i want to pay my bill')).toEqual({ key: 'billing', digits: undefined });
    expect(menu.interpret('can i speak to an operator thank you')).toEqual({
      key: 'agent',
      digits: undefined,
    });
    expect(menu.interpret('SAY THAT AGAIN')).toEqual({ key: 'repeat', digits: undefined });
    expect(menu.interpret('check my account balance')).toEqual({ key: 'balance', digits: undefined });
  });

  it("counts an answer's carrier words before and after it, for the confidence", () => {
    expect(menu.carrierWords("Um, I'd like to talk to billing, please.")).toEqual({ before: 6, after: 1 });
    expect(menu.carrierWords('check my account balance')).toEqual({ before: 1, after: 0 });
    expect(menu.carrierWords('when are you open thank you')).toEqual({ before: 0, after: 2 });
    expect(menu.carrierWords('billing')).toEqual({ before: 0, after: 0 });
    for (const text of ['', 'please', 'billing support', 'the weather is nice'])
      expect(menu.carrierWords(text)).toBeUndefined();
    const keys = menuGrammar([], { maxDigits: 3 });
    expect(keys.carrierWords('i need four one five please')).toEqual({ before: 2, after: 1 });
    expect(keys.interpret('i need four one five please')).toEqual({ key: undefined, digits: '415' });
    expect(menuGrammar(MENU, { carriers: false }).carrierWords('my account balance')).toEqual({
      before: 0,
      after: 0,
    });
  });

  it('reads nothing from text the grammar cannot produce', () => {
    for (const text of [
      '',
      'the weather is nice',
      'billing support',
      'to billing',
      'billing billing',
      'please',
    ])
      expect(menu.interpret(text)).toEqual({ key: undefined, digits: undefined });
    expect(menu.interpret('billing '.repeat(200))).toEqual({ key: undefined, digits: undefined });
  });

  it('lower-cases phrases, strips their punctuation and keeps inner apostrophes', () => {
    const g = menuGrammar([{ key: 'x', phrases: ['  “That’s RIGHT!”  ', 'e-mail'] }], { carriers: false });
    expect(g.jsgf).toContain("that's right");
    expect(g.jsgf).toContain('e mail');
    expect(g.interpret("That's right.")).toEqual({ key: 'x', digits: undefined });
    expect(g.interpret('um e mail')).toEqual({ key: undefined, digits: undefined });
  });

  it('is a JSGF grammar of the choices between optional carriers, with a stable id', () => {
    expect(menu.jsgf).toMatch(
      /^#JSGF V1\.0;\ngrammar menu;\npublic <menu> = \[<hesitation>\] \[<lead>\] <answer> \[<after>\];/,
    );
    expect(menu.jsgf).toContain('<answer> = <c0> | <c1> | <c2> | <c3> | <c4> | <c5> | <c6> | <c7>;');
    expect(menu.jsgf).toContain('<c0> = pay my bill | payments | billing;');
    expect(menu.id).toMatch(/^[0-9a-f]{32}$/);
    expect(menuGrammar(MENU).id).toBe(menu.id);
    expect(menuGrammar(MENU, { carriers: false }).id).not.toBe(menu.id);
    const bare = menuGrammar(MENU, { carriers: false });
    expect(bare.jsgf).toContain('public <menu> = <answer>;');
    expect(bare.interpret('i want billing')).toEqual({ key: undefined, digits: undefined });
    expect(bare.interpret('billing')).toEqual({ key: 'billing', digits: undefined });
  });

  it('hears spoken keys as digits, up to maxDigits', () => {
    const g = menuGrammar([{ key: 'agent', phrases: ['an agent'] }], { maxDigits: 4 });
    expect(g.interpret('four one five')).toEqual({ key: undefined, digits: '415' });
    expect(g.interpret('um oh star pound hash')).toEqual({ key: undefined, digits: '0*##' });
    expect(g.interpret('one two three four five')).toEqual({ key: undefined, digits: undefined });
    expect(g.interpret('an agent')).toEqual({ key: 'agent', digits: undefined });
    expect(g.jsgf).toContain('<digits> = <digit> [<digit> [<digit> [<digit>]]];');
    expect(menu.interpret('four')).toEqual({ key: undefined, digits: undefined });
    // A choice whose phrase is a key's name: both.
    const keys = menuGrammar([{ key: '3', phrases: ['three'] }], { maxDigits: 1 });
    expect(keys.interpret('three')).toEqual({ key: '3', digits: '3' });
  });

  it('expands $yes and $no into the built-in phrase sets', () => {
    const g = menuGrammar([
      { key: 'yes', phrases: ['$yes'] },
      { key: 'no', phrases: ['$no', 'never'] },
    ]);
    for (const p of BUILT_IN_PHRASES.yes) expect(g.interpret(p).key).toBe('yes');
    for (const p of BUILT_IN_PHRASES.no) expect(g.interpret(p).key).toBe('no');
    expect(g.interpret('yeah please')).toEqual({ key: 'yes', digits: undefined });
    expect(g.interpret('never')).toEqual({ key: 'no', digits: undefined });
    expect(BUILT_IN_PHRASES.yes).toEqual(
      expect.arrayContaining(['yes', 'yeah', 'yep', 'sure', 'correct', "that's right"]),
    );
    expect(BUILT_IN_PHRASES.no).toEqual(expect.arrayContaining(['no', 'nope', 'no thanks', 'not really']));
  });

  it('names the choice and the word the dictionary does not have', () => {
    const e = errorOf(() =>
      menuGrammar([
        { key: 'ok', phrases: ['fine'] },
        { key: 'pay', phrases: ['pay with Zorblax'] },
      ]),
    );
    expect(e.choice).toBe('pay');
    expect(e.word).toBe('zorblax');
    expect(e.message).toContain('"zorblax"');
    expect(e.message).toContain('"pay"');
    expect(errorOf(() => menuGrammar([{ key: 'n', phrases: ['press 1'] }])).message).toContain(
      'write numbers as words',
    );
  });

  it('refuses bad input and what is past its bounds', () => {
    expect(errorOf(() => menuGrammar([])).message).toContain('at least one choice');
    expect(errorOf(() => menuGrammar([{ key: 'a', phrases: [] }])).choice).toBe('a');
    expect(errorOf(() => menuGrammar([{ key: 'a', phrases: [' ?! '] }])).message).toContain('no words');
    expect(errorOf(() => menuGrammar([{ key: '', phrases: ['yes'] }])).message).toContain('key');
    expect(
      errorOf(() =>
        menuGrammar([
          { key: 'a', phrases: ['yes'] },
          { key: 'a', phrases: ['no'] },
        ]),
      ).message,
    ).toContain('two choices');
    expect(
      errorOf(() =>
        menuGrammar([
          { key: 'a', phrases: ['sales'] },
          { key: 'b', phrases: ['Sales!'] },
        ]),
      ).message,
    ).toContain('both have the phrase "sales"');
    expect(errorOf(() => menuGrammar([{ key: 'a', phrases: ['$maybe'] }])).message).toContain('$maybe');
    expect(
      errorOf(() => menuGrammar([{ key: 'a', phrases: ['one two three four five six seven eight nine'] }]))
        .message,
    ).toContain(`${GRAMMAR_LIMITS.wordsPerPhrase} words`);
    expect(errorOf(() => menuGrammar([{ key: 'a', phrases: [`${'a'.repeat(41)}`] }])).word).toBe(
      'a'.repeat(41),
    );
    const many = Array.from({ length: GRAMMAR_LIMITS.choices + 1 }, (_, i) => ({
      key: `k${i}`,
      phrases: ['yes'],
    }));
    expect(errorOf(() => menuGrammar(many)).message).toContain(`${GRAMMAR_LIMITS.choices} choices`);
    expect(
      errorOf(() => menuGrammar([{ key: 'a', phrases: Array.from({ length: 33 }, () => 'yes') }])).message,
    ).toContain(`${GRAMMAR_LIMITS.phrasesPerChoice} phrases`);
    expect(
      errorOf(() => menuGrammar([{ key: 'a', phrases: ['yes'] }], { maxDigits: 1.5 })).message,
    ).toContain('maxDigits');
    // 64 choices × 32 phrases of 3 words each pass the per-choice bounds, not the total.
    const x = ['red', 'green', 'blue', 'black', 'white', 'brown', 'pink', 'gray'];
    const y = ['cat', 'dog', 'fish', 'bird', 'horse', 'cow', 'goat', 'sheep'];
    const z = [
      'one',
      'two',
      'three',
      'four',
      'five',
      'six',
      'seven',
      'eight',
      'nine',
      'ten',
      'eleven',
      'twelve',
    ];
    const w = ['north', 'south', 'east', 'west'];
    const huge = Array.from({ length: 64 }, (_, c) => ({
      key: `k${c}`,
      phrases: Array.from(
        { length: 32 },
        (_, p) => `${x[c % 8]} ${y[c >> 3]} ${z[p % 12]} ${w[p % 4]}`,
      ).filter((p, i, all) => all.indexOf(p) === i),
    }));
    expect(errorOf(() => menuGrammar(huge)).message).toContain(`${GRAMMAR_LIMITS.totalWords} words in all`);
  });
});

describe('competitorGrammar', () => {
  it('is the menu without the answer, made once', () => {
    const menu = menuGrammar(MENU, { maxDigits: 3 });
    const other = competitorGrammar(menu, { key: 'billing', digits: undefined })!;
    expect(other.interpret('billing')).toEqual({ key: undefined, digits: undefined });
    expect(other.interpret('sales')).toEqual({ key: 'sales', digits: undefined });
    expect(other.interpret('four one')).toEqual({ key: undefined, digits: '41' });
    expect(competitorGrammar(menu, { key: 'billing', digits: undefined })).toBe(other);
    const noDigits = competitorGrammar(menu, { key: undefined, digits: '41' })!;
    expect(noDigits.interpret('four one')).toEqual({ key: undefined, digits: undefined });
    expect(noDigits.interpret('billing').key).toBe('billing');
  });

  it('is none when nothing else is left, or for a grammar made elsewhere', () => {
    const one = menuGrammar([{ key: 'a', phrases: ['yes'] }]);
    expect(competitorGrammar(one, { key: 'a', digits: undefined })).toBeUndefined();
    const foreign: MenuGrammar = {
      id: 'x',
      jsgf: one.jsgf,
      interpret: () => ({ key: 'a', digits: undefined }),
      carrierWords: () => ({ before: 0, after: 0 }),
    };
    expect(competitorGrammar(foreign, { key: 'a', digits: undefined })).toBeUndefined();
  });
});
