/**
 * Ending a caller's turn by what was said and by silence (src/barge-in/endpointing.ts): each cue with
 * its wait and reason, the boundary of each wait, the ceiling, the settings' bounds; then a few turns
 * of the pause corpus through the caller's VAD, with the words a realtime speech-to-text would have
 * delivered 150 ms after each was spoken: a pause mid-number, after "um" or between clauses is not
 * cut where today's fixed 700 ms cuts it, and a complete short answer is ended within 350 ms.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import {
  classifyTranscript,
  decideEndOfTurn,
  DEFAULT_ENDPOINTING,
  endpointingConfig,
  SileroModel,
  type EndpointCue,
} from '../../src/barge-in/index.js';
import { corpusTurn, espeakVoice, type CorpusTurn, type TurnKind } from '../../testkit/turn-corpus.js';
import { fixedEnd, outcome, ruleEnd, silenceSteps, sttTranscript } from '../../testkit/turn-replay.js';
import { VOICES } from '../../testkit/vad-audio.js';

describe('how a transcript ends', () => {
  const cases: ReadonlyArray<
    readonly [transcript: string, cue: EndpointCue, evidence: string, waitMs: number]
  > = [
    ['', 'no-text', '', 700],
    ['   ', 'no-text', '', 700],
    ['My number is 415', 'number', '415', 1500],
    ['My number is 415.', 'number', '415', 1500],
    ['my number is four one five', 'number', 'five', 1500],
    ['It is four one five.', 'number', 'five', 1500],
    ['the code is 4-1-5', 'number', '4-1-5', 1500],
    ['nine four one oh', 'number', 'oh', 1500],
    ["I'd like to, um", 'hesitation', 'um', 1500],
    ['Payments, um.', 'hesitation', 'um', 1500],
    ['I wanted to ask about my bill and', 'conjunction', 'and', 1500],
    ['I need to move it because', 'conjunction', 'because', 1500],
    ['it was, you know', 'filler', 'you know', 1500],
    ['I would like', 'filler', 'like', 1500],
    ['I wanted to ask about', 'open-word', 'about', 1500],
    ['my name is', 'open-word', 'is', 1500],
    ['the account is in my', 'open-word', 'my', 1500],
    ['Yes.', 'sentence-end', '.', 250],
    ['I think so.', 'sentence-end', '.', 250],
    ['Who is it for?', 'sentence-end', '?', 250],
    ['It is the blue one.', 'sentence-end', '.', 250],
    ['yes', 'short-answer', 'yes', 250],
    ["That's right", 'short-answer', "that's right", 250],
    ['billing', 'short-answer', 'billing', 250],
    ['billing please', 'short-answer', 'billing please', 250],
    ['an agent, thank you', 'short-answer', 'an agent thank you', 250],
    ['Yes,', 'open-punctuation', ',', 1100],
    ['I was thinking...', 'open-punctuation', '...', 1100],
    ['I want to cancel my order', 'unpunctuated', '', 1100],
    ['hello', 'unpunctuated', '', 1100],
    ['can', 'unpunctuated', '', 1100],
  ];
  it.each(cases)('%j: %s', (transcript, cue, evidence, waitMs) => {
    expect(classifyTranscript(transcript)).toEqual({ cue, evidence });
    expect(decideEndOfTurn({ transcript, silenceMs: 0 }).waitMs).toBe(waitMs);
  });
});

describe('the decision', () => {
  it('continues until the silence reaches the wait, then ends, each with its reason', () => {
    const transcript = 'I wanted to ask about my bill and';
    expect(decideEndOfTurn({ transcript, silenceMs: 620 })).toEqual({
      action: 'continue',
      cue: 'conjunction',
      evidence: 'and',
      waitMs: 1500,
      silenceMs: 620,
      remainingMs: 880,
      reason: 'continue: trails off on the conjunction "and", 620 of 1500 ms of silence',
    });
    expect(decideEndOfTurn({ transcript, silenceMs: 1499 }).action).toBe('continue');
    const end = decideEndOfTurn({ transcript, silenceMs: 1500 });
    expect(end.action).toBe('end');
    expect(end.remainingMs).toBe(0);
    expect(end.reason).toBe('end: trails off on the conjunction "and", 1500 ms of silence ≥ 1500 ms');
  });

  it('ends a complete answer after a short silence, and waits longer for one the caller may go on with', () => {
    expect(decideEndOfTurn({ transcript: 'Yes.', silenceMs: 249 }).action).toBe('continue');
    const yes = decideEndOfTurn({ transcript: 'Yes.', silenceMs: 250 });
    expect(yes.action).toBe('end');
    expect(yes.reason).toBe('end: a complete sentence ("."), 250 ms of silence ≥ 250 ms');
    // Asked again as words arrive: a late "and" puts the turn back to waiting.
    expect(decideEndOfTurn({ transcript: 'Yes. And', silenceMs: 250 }).action).toBe('continue');
    expect(decideEndOfTurn({ transcript: 'my number is 415', silenceMs: 1000 }).reason).toBe(
      'continue: a number being given ("415"), 1000 of 1500 ms of silence',
    );
    expect(decideEndOfTurn({ transcript: '', silenceMs: 700 }).reason).toBe(
      'end: no words yet, 700 ms of silence ≥ 700 ms',
    );
  });

  it('never waits past the ceiling, and says so', () => {
    const config = endpointingConfig({ numberMs: 3000, maxMs: 2000 });
    expect(decideEndOfTurn({ transcript: 'four one five', silenceMs: 1999 }, config).action).toBe('continue');
    const end = decideEndOfTurn({ transcript: 'four one five', silenceMs: 2000 }, config);
    expect(end).toMatchObject({ action: 'end', cue: 'number', waitMs: 2000 });
    expect(end.reason).toBe(
      'end: a number being given ("five"), 2000 ms of silence ≥ 2000 ms (the ceiling; 3000 ms asked)',
    );
    // A wait under the ceiling is its own.
    expect(decideEndOfTurn({ transcript: 'Yes.', silenceMs: 0 }, config).waitMs).toBe(250);
  });

  it('refuses a silence that is negative or not a number', () => {
    expect(() => decideEndOfTurn({ transcript: 'yes', silenceMs: -1 })).toThrow(RangeError);
    expect(() => decideEndOfTurn({ transcript: 'yes', silenceMs: Number.NaN })).toThrow(RangeError);
  });
});

describe('the settings', () => {
  it('default every bound, and take any of them alone', () => {
    expect(endpointingConfig()).toEqual({
      completeMs: 250,
      unpunctuatedMs: 1100,
      incompleteMs: 1500,
      numberMs: 1500,
      noTextMs: 700,
      maxMs: 2500,
    });
    expect(endpointingConfig({})).toEqual(DEFAULT_ENDPOINTING);
    expect(endpointingConfig({ completeMs: 300, maxMs: 4000 })).toEqual({
      ...DEFAULT_ENDPOINTING,
      completeMs: 300,
      maxMs: 4000,
    });
    expect(Object.isFrozen(DEFAULT_ENDPOINTING)).toBe(true);
  });

  it.each([
    [{ completeMs: 50 }, 'completeMs'],
    [{ numberMs: 20_000 }, 'numberMs'],
    [{ noTextMs: 700.5 }, 'noTextMs'],
    [{ maxMs: 100 }, 'maxMs'],
    [{ incompleteMs: '1500' }, 'incompleteMs'],
    [{ completeMs: 1200 }, 'completeMs'],
    [{ silenceMs: 700 }, 'silenceMs'],
  ])('refuse %j', (options, field) => {
    expect(() => endpointingConfig(options)).toThrow(RangeError);
    expect(() => endpointingConfig(options)).toThrow(field);
  });

  it('refuse a complete sentence waiting longer than an unfinished one', () => {
    expect(() => endpointingConfig({ completeMs: 800, unpunctuatedMs: 700 })).toThrow(/completeMs/);
    expect(endpointingConfig({ completeMs: 700, unpunctuatedMs: 700 }).completeMs).toBe(700);
  });
});

describe('on turns of the pause corpus, through the caller VAD', () => {
  let model: SileroModel;
  beforeAll(async () => {
    model = await SileroModel.load();
  }, 30_000);

  const voice = espeakVoice(VOICES[0]!);
  /** Where the rule and today's 700 ms end the turn, the rule fed words 150 ms after they are spoken. */
  async function replay(kind: TurnKind, text: string, pausesMs: number[] = []) {
    const turn = await corpusTurn({ kind, text }, voice, { seed: 7, pausesMs, snrDb: 20 });
    const steps = await silenceSteps(model, turn);
    return {
      turn,
      today: outcome(turn, fixedEnd(steps, 700)),
      rule: outcome(turn, ruleEnd(steps, sttTranscript(turn.words, 150))),
    };
  }

  function expectPausesAsAsked(turn: CorpusTurn, pausesMs: number[]): void {
    expect(turn.pauses.map((p) => Math.round(p.endMs - p.startMs))).toEqual(pausesMs);
    expect(turn.endMs).toBe(turn.words.at(-1)!.endMs);
  }

  it('does not cut a pause in the middle of a number, which today cuts', async () => {
    const { turn, today, rule } = await replay(
      'number',
      'My number is four one five | two three nine.',
      [850],
    );
    expectPausesAsAsked(turn, [850]);
    expect(turn.words.map((w) => w.text)).toEqual([
      'My',
      'number',
      'is',
      'four',
      'one',
      'five',
      'two',
      'three',
      'nine.',
    ]);
    expect(today.premature).toBe(true);
    expect(rule.premature).toBe(false);
    expect(rule.end?.decision?.cue).toBe('number');
  });

  it('does not cut a pause after "um" or between clauses', async () => {
    for (const [kind, text] of [
      ['hesitation', 'Um, | I need to pay my bill.'],
      ['clause', 'I wanted to ask about my bill | and also my address.'],
      ['clause', 'I wanted to ask about | my last payment.'],
    ] as const) {
      const { turn, today, rule } = await replay(kind, text, [850]);
      expectPausesAsAsked(turn, [850]);
      expect(today.premature, text).toBe(true);
      expect(rule.premature, text).toBe(false);
      expect(rule.latencyMs, text).toBeLessThan(350);
    }
  });

  it('ends a complete short answer within 350 ms of its last word, where today takes 700', async () => {
    for (const text of ['Yes.', 'Billing, please.', "That's all."]) {
      const { today, rule } = await replay('short-answer', text);
      expect(rule.premature, text).toBe(false);
      expect(rule.end?.decision?.cue, text).toBe('sentence-end');
      expect(rule.latencyMs, text).toBeLessThanOrEqual(350);
      expect(today.latencyMs! - rule.latencyMs!, text).toBeGreaterThan(300);
    }
  });
});
