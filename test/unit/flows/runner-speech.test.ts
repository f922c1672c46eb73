/**
 * A gather that hears speech, on a scripted call (the `FlowCall` port with `listen`) and a fake clock:
 * the branch a spoken answer chooses, a no-match and a timeout taking the retry, a caller still talking
 * when the wait runs out, a key winning over speech, a barge-in over the prompt answered by voice, and
 * the gather's result as the runner reports it. Grammars are the real ones, built from the flow.
 */
import { describe, expect, it } from 'vitest';
import { buildFlowGrammars } from '../../../src/flows/grammars.js';
import {
  runFlow,
  type FlowCall,
  type FlowEvent,
  type FlowHeard,
  type FlowListening,
  type FlowSayResult,
  type GatherResult,
} from '../../../src/flows/runner.js';
import { flowSchema, type Flow } from '../../../src/flows/schema.js';
import type { MenuGrammar } from '../../../src/recognition/grammar.js';
import { DEFAULT_MIN_CONFIDENCE } from '../../../src/recognition/recognizer.js';
import { FakeClock } from '../../helpers/fake-clock.js';

/** A turn of the caller's: speech from `onsetAt` to its end decided at `endAt`, then recognised as `heard`. */
interface Turn {
  onsetAt: number;
  endAt: number;
  heard: Partial<FlowHeard>;
}

/** How long the scripted recogniser takes, after a turn's end. */
const RECOGNITION_MS = 40;

/**
 * A call whose `say` takes `sayMs` of clock time, cut when the caller starts a turn or presses a key
 * while it plays (if it may be cut); keys arrive at scripted times (a wait that is aborted takes none);
 * `listen` answers with the first scripted turn that begins after it was armed.
 */
class ListeningCall implements FlowCall {
  readonly id = 'call-1';
  readonly said: Array<{ text: string; at: number; status: FlowSayResult['status'] }> = [];
  readonly listens: Array<{
    grammar: MenuGrammar;
    minConfidence: number;
    at: number;
    closedAt?: number;
    answered?: boolean;
  }> = [];
  hungUpAt: number | undefined;
  listen: FlowCall['listen'] = (grammar, signal, minConfidence) =>
    this.startListening(grammar, signal, minConfidence);

  constructor(
    private readonly clock: FakeClock,
    private readonly keys: Array<{ at: number; digit: string }> = [],
    private readonly turns: Turn[] = [],
    private readonly sayMs = 1000,
  ) {
    this.keys.sort((a, b) => a.at - b.at);
  }

  async say(text: string, options: { interruptible: boolean }): Promise<FlowSayResult> {
    const at = this.clock.now();
    const end = at + this.sayMs;
    const cutAt = [...this.turns.map((t) => t.onsetAt), ...this.keys.map((k) => k.at)]
      .filter((t) => t >= at && t < end)
      .sort((a, b) => a - b)[0];
    const cut = options.interruptible ? cutAt : undefined;
    await this.clock.sleepUntil(cut ?? end);
    const status = cut === undefined ? 'played' : 'interrupted';
    this.said.push({ text, at, status });
    return { status };
  }

  async nextDigit(timeoutMs: number, signal: AbortSignal): Promise<string | undefined> {
    const deadline = this.clock.now() + timeoutMs;
    const key = this.keys[0];
    if (key && key.at <= deadline) {
      await this.clock.sleepUntil(Math.max(this.clock.now(), key.at), signal);
      this.keys.shift();
      return key.digit;
    }
    await this.clock.sleepUntil(deadline, signal);
    return undefined;
  }

  async hangup(): Promise<void> {
    this.hungUpAt = this.clock.now();
  }

  private startListening(grammar: MenuGrammar, signal: AbortSignal, minConfidence: number): FlowListening {
    const record: (typeof this.listens)[number] = { grammar, minConfidence, at: this.clock.now() };
    this.listens.push(record);
    const turn = this.turns.find((t) => t.onsetAt >= record.at);
    const closed = new AbortController();
    const close = (): void => {
      if (closed.signal.aborted) return;
      record.closedAt = this.clock.now();
      closed.abort();
    };
    signal.addEventListener('abort', close, { once: true });
    const clock = this.clock;
    const heard = (async (): Promise<FlowHeard> => {
      if (!turn) return new Promise<never>((_, reject) => closed.signal.addEventListener('abort', reject));
      await clock.sleepUntil(turn.endAt + RECOGNITION_MS, closed.signal);
      record.answered = true;
      this.turns.splice(this.turns.indexOf(turn), 1);
      return {
        text: '',
        key: undefined,
        digits: undefined,
        confidence: 0.9,
        words: [],
        cpuMs: 5,
        latencyMs: RECOGNITION_MS,
        ...turn.heard,
      };
    })();
    heard.catch(() => undefined);
    return {
      heard,
      get busy() {
        const now = clock.now();
        return turn !== undefined && now >= turn.onsetAt && now < turn.endAt + RECOGNITION_MS;
      },
      close,
    };
  }
}

function flow(definition: unknown): Flow {
  return flowSchema.parse(definition);
}

const MENU = flow({
  start: 'menu',
  nodes: {
    menu: {
      type: 'gather',
      prompt: 'Say billing or support, or press 1 or 2.',
      input: ['dtmf', 'speech'],
      timeoutMs: 3000,
      retries: 1,
      minConfidence: 0.5,
      branches: { '1': 'billing', '2': 'support' },
      speech: { '1': ['billing', 'my bill'], '2': ['support', 'help'] },
      onFail: 'bye',
    },
    billing: { type: 'hangup', text: 'Billing.' },
    support: { type: 'hangup', text: 'Support.' },
    bye: { type: 'hangup', text: 'Bye.' },
  },
});

async function run(f: Flow, call: ListeningCall, clock: FakeClock, speech = true) {
  const events: FlowEvent[] = [];
  const gathers: GatherResult[] = [];
  const grammars = speech ? buildFlowGrammars({ test: f }).get('test') : undefined;
  const done = runFlow(f, call, {
    name: 'test',
    signal: new AbortController().signal,
    grammars,
    onEvent: (e) => events.push(e),
    onGather: (g) => gathers.push(g),
  });
  let end: string | undefined;
  void done.then((e) => (end = e));
  for (let i = 0; i < 400 && end === undefined; i++) await clock.advance(100);
  return { end: await done, events, gathers, grammars };
}

const texts = (call: ListeningCall): string[] => call.said.map((s) => s.text);

describe('a gather that hears speech', () => {
  it('takes the branch the caller named, listening from before its prompt', async () => {
    const clock = new FakeClock();
    const call = new ListeningCall(
      clock,
      [],
      [{ onsetAt: 1500, endAt: 2600, heard: { text: 'support please', key: '2', confidence: 0.82 } }],
    );
    const { end, gathers, events, grammars } = await run(MENU, call, clock);
    expect(end).toBe('hangup');
    expect(texts(call)).toEqual(['Say billing or support, or press 1 or 2.', 'Support.']);
    // Armed as the prompt began, with the node's own grammar; closed once it answered.
    expect(call.listens).toHaveLength(1);
    expect(call.listens[0]!.at).toBe(0);
    expect(call.listens[0]!.grammar).toBe(grammars!.get('menu'));
    // What the answer is held to goes with it: the recogniser's second pass is taken only if that decides.
    expect(call.listens[0]!.minConfidence).toBe(0.5);
    expect(call.listens[0]!.answered).toBe(true);
    expect(gathers).toEqual([
      {
        node: 'menu',
        input: 'speech',
        digits: '2',
        text: 'support please',
        words: [],
        confidence: 0.82,
        latencyMs: RECOGNITION_MS,
        next: 'support',
      },
    ]);
    expect(events).toContainEqual({
      type: 'flow.node',
      flow: 'test',
      node: 'menu',
      detail: { input: 'speech', digits: '2', text: 'support please', confidence: 0.82, next: 'support' },
    });
  });

  it('a no-match (no key, or too little confidence) takes the retry, then onFail', async () => {
    const clock = new FakeClock();
    const call = new ListeningCall(
      clock,
      [],
      [
        { onsetAt: 1500, endAt: 2500, heard: { text: '', key: undefined, confidence: 0 } },
        // The retry's prompt starts at 2540; this one is recognised as billing, but barely.
        { onsetAt: 3800, endAt: 4800, heard: { text: 'billing', key: '1', confidence: 0.3 } },
      ],
    );
    const { gathers } = await run(MENU, call, clock);
    expect(texts(call)).toEqual([
      'Say billing or support, or press 1 or 2.',
      'Say billing or support, or press 1 or 2.',
      'Bye.',
    ]);
    expect(gathers.map((g) => [g.digits, g.next, g.confidence])).toEqual([
      [undefined, undefined, 0],
      [undefined, undefined, 0.3],
    ]);
    // Each attempt listens afresh.
    expect(call.listens.map((l) => l.at)).toEqual([0, 2500 + RECOGNITION_MS]);
  });

  it('a no-match goes to `otherwise` where the node has one, as an unknown key does', async () => {
    const withOtherwise = flow({
      start: 'menu',
      nodes: {
        menu: { ...MENU.nodes['menu'], otherwise: 'operator' },
        billing: { type: 'hangup' },
        support: { type: 'hangup' },
        operator: { type: 'hangup', text: 'Operator.' },
        bye: { type: 'hangup' },
      },
    });
    const clock = new FakeClock();
    const call = new ListeningCall(clock, [], [{ onsetAt: 1500, endAt: 2500, heard: { text: 'uh' } }]);
    const { gathers } = await run(withOtherwise, call, clock);
    expect(texts(call).at(-1)).toBe('Operator.');
    expect(gathers[0]).toMatchObject({ input: 'speech', digits: undefined, next: 'operator' });
  });

  it('silence until the timeout is a timeout: the retry, with no gather result', async () => {
    const clock = new FakeClock();
    const call = new ListeningCall(clock);
    const { gathers } = await run(MENU, call, clock);
    expect(texts(call)).toEqual([
      'Say billing or support, or press 1 or 2.',
      'Say billing or support, or press 1 or 2.',
      'Bye.',
    ]);
    expect(call.said[1]!.at - call.said[0]!.at).toBe(1000 + 3000);
    expect(gathers).toEqual([]);
    // Nothing left listening.
    expect(call.listens.every((l) => l.closedAt !== undefined)).toBe(true);
  });

  it('a caller still talking when the wait runs out is waited for, not timed out', async () => {
    const clock = new FakeClock();
    // The wait ends at 4000; the caller began at 3500 and their turn ends at 6000.
    const call = new ListeningCall(
      clock,
      [],
      [{ onsetAt: 3500, endAt: 6000, heard: { text: 'i would like billing', key: '1' } }],
    );
    const { gathers } = await run(MENU, call, clock);
    expect(texts(call)).toEqual(['Say billing or support, or press 1 or 2.', 'Billing.']);
    expect(call.said[1]!.at).toBe(6000 + RECOGNITION_MS);
    expect(gathers[0]).toMatchObject({ input: 'speech', digits: '1', next: 'billing' });
  });

  it('a key pressed while the caller talks wins: the listening is closed, its turn never used', async () => {
    const clock = new FakeClock();
    const call = new ListeningCall(
      clock,
      [{ at: 2000, digit: '1' }],
      [{ onsetAt: 1500, endAt: 2600, heard: { text: 'support', key: '2' } }],
    );
    const { gathers } = await run(MENU, call, clock);
    expect(texts(call)).toEqual(['Say billing or support, or press 1 or 2.', 'Billing.']);
    expect(call.listens[0]).toMatchObject({ closedAt: 2000 });
    expect(call.listens[0]!.answered).toBeUndefined();
    expect(gathers).toEqual([
      {
        node: 'menu',
        input: 'dtmf',
        digits: '1',
        text: undefined,
        words: [],
        confidence: undefined,
        latencyMs: undefined,
        next: 'billing',
      },
    ]);
  });

  it('a caller who barges in over the prompt and says their choice is heard: one listening, from before it', async () => {
    const clock = new FakeClock();
    const call = new ListeningCall(
      clock,
      [],
      [{ onsetAt: 400, endAt: 1400, heard: { text: 'billing', key: '1' } }],
    );
    const { gathers } = await run(MENU, call, clock);
    expect(call.said[0]).toMatchObject({ status: 'interrupted' });
    expect(texts(call)).toEqual(['Say billing or support, or press 1 or 2.', 'Billing.']);
    expect(call.listens).toHaveLength(1);
    expect(call.listens[0]!.at).toBe(0);
    expect(call.said[1]!.at).toBe(1400 + RECOGNITION_MS);
    expect(gathers[0]).toMatchObject({ input: 'speech', digits: '1', next: 'billing' });
  });

  it('a prompt that may not be cut is listened after: talk over it is not the answer', async () => {
    const f = flow({
      start: 'menu',
      nodes: {
        menu: { ...MENU.nodes['menu'], bargeIn: false },
        billing: { type: 'hangup', text: 'Billing.' },
        support: { type: 'hangup', text: 'Support.' },
        bye: { type: 'hangup', text: 'Bye.' },
      },
    });
    const clock = new FakeClock();
    const call = new ListeningCall(
      clock,
      [],
      [
        { onsetAt: 400, endAt: 900, heard: { text: 'billing', key: '1' } },
        { onsetAt: 1500, endAt: 2500, heard: { text: 'support', key: '2' } },
      ],
    );
    await run(f, call, clock);
    expect(call.said[0]).toMatchObject({ status: 'played' });
    expect(call.listens[0]!.at).toBe(1000);
    expect(texts(call).at(-1)).toBe('Support.');
  });

  it('spoken digits answer a gather of several keys like the keys would', async () => {
    const pin = flow({
      start: 'pin',
      nodes: {
        pin: {
          type: 'gather',
          prompt: 'Your extension?',
          input: ['dtmf', 'speech'],
          digits: 3,
          branches: { '415': 'ok' },
          onFail: 'no',
        },
        ok: { type: 'hangup', text: 'Connecting.' },
        no: { type: 'hangup' },
      },
    });
    const clock = new FakeClock();
    const call = new ListeningCall(
      clock,
      [],
      [{ onsetAt: 1500, endAt: 3000, heard: { text: 'four one five', digits: '415' } }],
    );
    const { gathers } = await run(pin, call, clock);
    expect(texts(call)).toEqual(['Your extension?', 'Connecting.']);
    expect(gathers[0]).toMatchObject({ input: 'speech', digits: '415', next: 'ok' });
  });

  it('takes keys only where the call cannot listen, or no grammar was given', async () => {
    for (const [speech, canListen] of [
      [false, true],
      [true, false],
    ] as const) {
      const clock = new FakeClock();
      const call = new ListeningCall(
        clock,
        [{ at: 2000, digit: '2' }],
        [{ onsetAt: 1500, endAt: 2500, heard: { key: '1' } }],
      );
      if (!canListen) call.listen = undefined;
      await run(MENU, call, clock, speech);
      expect(texts(call).at(-1)).toBe('Support.');
      expect(call.listens).toEqual([]);
    }
  });

  it('a gather that takes speech alone passes over keys', async () => {
    const f = flow({
      start: 'menu',
      nodes: {
        menu: { ...MENU.nodes['menu'], input: ['speech'] },
        billing: { type: 'hangup', text: 'Billing.' },
        support: { type: 'hangup', text: 'Support.' },
        bye: { type: 'hangup', text: 'Bye.' },
      },
    });
    const clock = new FakeClock();
    const call = new ListeningCall(
      clock,
      [{ at: 1500, digit: '1' }],
      [{ onsetAt: 2500, endAt: 3500, heard: { text: 'support', key: '2' } }],
    );
    const { gathers } = await run(f, call, clock);
    expect(texts(call).at(-1)).toBe('Support.');
    expect(gathers.map((g) => g.input)).toEqual(['speech']);
  });
});

describe('the gather schema', () => {
  const gather = (fields: Record<string, unknown>) =>
    flowSchema.safeParse({
      start: 'm',
      nodes: {
        m: { type: 'gather', branches: { '1': 'a', '2': 'a' }, ...fields },
        a: { type: 'hangup' },
      },
    });
  const messages = (fields: Record<string, unknown>): string[] => {
    const parsed = gather(fields);
    return parsed.success ? [] : parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
  };

  it('defaults to keys only, with carriers and the recogniser’s confidence', () => {
    const parsed = gather({});
    expect(parsed.success).toBe(true);
    const node = parsed.data!.nodes['m'];
    expect(node).toMatchObject({ input: ['dtmf'], carriers: true, minConfidence: DEFAULT_MIN_CONFIDENCE });
  });

  it('hears the keys’ names where the node has no spoken forms, unless told otherwise', () => {
    const grammarOf = (fields: Record<string, unknown>) => {
      const f = flow({
        start: 'm',
        nodes: {
          m: { type: 'gather', input: ['dtmf', 'speech'], branches: { '1': 'a', '2': 'a' }, ...fields },
          a: { type: 'hangup' },
        },
      });
      return buildFlowGrammars({ f }).get('f')!.get('m')!;
    };
    expect(grammarOf({}).interpret('two').digits).toBe('2');
    expect(grammarOf({ speech: { '1': ['billing'] } }).interpret('two').digits).toBeUndefined();
    expect(grammarOf({ speech: { '1': ['billing'] } }).interpret('billing').key).toBe('1');
    expect(grammarOf({ speech: { '1': ['billing'] }, spokenDigits: true }).interpret('two').digits).toBe('2');
  });

  it('refuses spoken forms for a branch it does not have, or without speech input', () => {
    expect(messages({ input: ['dtmf', 'speech'], speech: { '3': ['three'] } })).toEqual([
      'nodes.m.speech.3: names no branch "3"',
    ]);
    expect(messages({ speech: { '1': ['one'] } })).toEqual([
      'nodes.m.speech: spoken forms need `input` to include speech',
    ]);
    expect(messages({ input: ['speech'], spokenDigits: false })).toEqual([
      'nodes.m.speech: the node listens for speech but has no spoken forms, and spokenDigits is false',
    ]);
    expect(messages({ input: ['dtmf', 'dtmf'] })).toEqual(['nodes.m.input: names each input once']);
  });

  it('takes words and $yes / $no as spoken forms, nothing that could break a grammar', () => {
    expect(messages({ input: ['dtmf', 'speech'], speech: { '1': ["I'd like billing", '$yes'] } })).toEqual(
      [],
    );
    for (const bad of ['billing | support', '<rule>', '  billing', 'press 1', '$maybe', ''])
      expect(messages({ input: ['dtmf', 'speech'], speech: { '1': [bad] } }), bad).toHaveLength(1);
  });
});
