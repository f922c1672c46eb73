/**
 * The IVR flow runner on a scripted call (the `FlowCall` port) and a fake clock: speaking, gathering
 * keys with timeouts and retries, branching, the wait after a barge-in, webhooks, hangup, abort.
 */
import { describe, expect, it } from 'vitest';
import {
  runFlow,
  type FlowCall,
  type FlowEvent,
  type FlowGreetingEnd,
  type FlowMachineDecision,
  type FlowSayResult,
  type FlowTransfer,
  type FlowTransferOutcome,
} from '../../../src/flows/runner.js';
import { flowSchema, type Flow } from '../../../src/flows/schema.js';
import { FakeClock } from '../../helpers/fake-clock.js';

/**
 * A call whose `say` takes `sayMs` of clock time (or is cut by a scripted barge-in) and whose keys
 * arrive at scripted clock times.
 */
class ScriptedCall implements FlowCall {
  readonly id = 'call-1';
  readonly said: Array<{ text: string; interruptible: boolean; voiceId?: string; at: number }> = [];
  hungUpAt: number | undefined;
  private readonly keys: Array<{ at: number; digit: string }>;

  constructor(
    private readonly clock: FakeClock,
    keys: Array<{ at: number; digit: string }> = [],
    /** Texts that the caller talks over, and when (ms after they start). */
    private readonly bargeIns: ReadonlyMap<string, number> = new Map(),
    private readonly sayMs = 1000,
  ) {
    this.keys = [...keys].sort((a, b) => a.at - b.at);
  }

  async say(text: string, options: { voiceId?: string; interruptible: boolean }): Promise<FlowSayResult> {
    this.said.push({ text, ...options, at: this.clock.now() });
    const cut = this.bargeIns.get(text);
    if (cut !== undefined && options.interruptible) {
      await this.clock.sleepUntil(this.clock.now() + cut);
      return { status: 'interrupted' };
    }
    // A key pressed while speaking cuts an interruptible prompt.
    const end = this.clock.now() + this.sayMs;
    const key = this.keys.find((k) => k.at <= end);
    if (key && options.interruptible) {
      await this.clock.sleepUntil(Math.max(this.clock.now(), key.at));
      return { status: 'interrupted' };
    }
    await this.clock.sleepUntil(end);
    return { status: 'played' };
  }

  async nextDigit(timeoutMs: number, signal: AbortSignal): Promise<string | undefined> {
    const deadline = this.clock.now() + timeoutMs;
    const key = this.keys[0];
    if (key && key.at <= deadline) {
      this.keys.shift();
      await this.clock.sleepUntil(Math.max(this.clock.now(), key.at), signal);
      return key.digit;
    }
    await this.clock.sleepUntil(deadline, signal);
    return undefined;
  }

  async hangup(): Promise<void> {
    this.hungUpAt = this.clock.now();
  }
}

function flow(definition: unknown): Flow {
  return flowSchema.parse(definition);
}

const MENU = flow({
  start: 'hello',
  voice: 'flow-voice',
  nodes: {
    hello: { type: 'say', text: 'Hello.', next: 'menu' },
    menu: {
      type: 'gather',
      prompt: 'Press 1 or 2.',
      digits: 1,
      timeoutMs: 3000,
      retries: 1,
      branches: { '1': 'one', '2': 'bye' },
      otherwise: 'menu',
    },
    one: { type: 'say', text: 'One.', voice: 'node-voice', next: 'menu' },
    bye: { type: 'hangup', text: 'Bye.' },
  },
});

async function run(f: Flow, call: ScriptedCall, clock: FakeClock, events: FlowEvent[] = []) {
  const controller = new AbortController();
  const done = runFlow(f, call, { name: 'test', signal: controller.signal, onEvent: (e) => events.push(e) });
  let end: string | undefined;
  void done.then((e) => (end = e));
  for (let i = 0; i < 200 && end === undefined; i++) await clock.advance(500);
  return { end: await done, controller };
}

describe('runFlow', () => {
  it('speaks, gathers a key, branches, and hangs up after its goodbye', async () => {
    const clock = new FakeClock();
    const call = new ScriptedCall(clock, [
      { at: 2500, digit: '1' },
      { at: 4000, digit: '2' },
    ]);
    const { end } = await run(MENU, call, clock);
    expect(end).toBe('hangup');
    expect(call.said.map((s) => s.text)).toEqual([
      'Hello.',
      'Press 1 or 2.',
      'One.',
      'Press 1 or 2.',
      'Bye.',
    ]);
    expect(call.said.map((s) => s.voiceId)).toEqual([
      'flow-voice',
      'flow-voice',
      'node-voice',
      'flow-voice',
      'flow-voice',
    ]);
    expect(call.said.at(-1)!.interruptible).toBe(false); // a goodbye is never cut
    expect(call.hungUpAt).toBeDefined();
  });

  it('re-prompts on no input, then goes to onFail (default: hang up)', async () => {
    const clock = new FakeClock();
    const call = new ScriptedCall(clock);
    const { end } = await run(MENU, call, clock);
    expect(end).toBe('hangup');
    expect(call.said.map((s) => s.text)).toEqual(['Hello.', 'Press 1 or 2.', 'Press 1 or 2.']);
    // Each prompt is followed by the full timeout of silence before the next.
    expect(call.said[2]!.at - call.said[1]!.at).toBe(1000 + 3000);
  });

  it('an unknown key goes to `otherwise`', async () => {
    const clock = new FakeClock();
    const call = new ScriptedCall(clock, [
      { at: 2500, digit: '9' },
      { at: 5000, digit: '2' },
    ]);
    const events: FlowEvent[] = [];
    await run(MENU, call, clock, events);
    expect(
      events.filter((e) => e.node === 'menu' && e.detail?.['digits'] !== undefined).map((e) => e.detail),
    ).toEqual([
      { digits: '9', next: 'menu' },
      { digits: '2', next: 'bye' },
    ]);
  });

  it('after a barge-in, waits at least 5 s for a key before speaking again', async () => {
    const clock = new FakeClock();
    const call = new ScriptedCall(clock, [], new Map([['Hello.', 400]]));
    await run(MENU, call, clock);
    const [hello, menu] = call.said;
    expect(hello!.text).toBe('Hello.');
    expect(menu!.text).toBe('Press 1 or 2.');
    expect(menu!.at - hello!.at).toBeGreaterThanOrEqual(400 + 5000);
  });

  it('a key pressed in the wait after a barge-in answers the next menu without its prompt', async () => {
    const clock = new FakeClock();
    const call = new ScriptedCall(clock, [{ at: 2000, digit: '2' }], new Map([['Hello.', 400]]));
    const { end } = await run(MENU, call, clock);
    expect(end).toBe('hangup');
    expect(call.said.map((s) => s.text)).toEqual(['Hello.', 'Bye.']);
  });

  it('collects several digits, ending early on finishOnKey', async () => {
    const pin = flow({
      start: 'pin',
      nodes: {
        pin: {
          type: 'gather',
          prompt: 'PIN?',
          digits: 4,
          finishOnKey: '#',
          branches: { '12': 'ok' },
          onFail: 'no',
        },
        ok: { type: 'hangup', text: 'OK.' },
        no: { type: 'hangup' },
      },
    });
    const clock = new FakeClock();
    const call = new ScriptedCall(clock, [
      { at: 1500, digit: '1' },
      { at: 2000, digit: '2' },
      { at: 2500, digit: '#' },
    ]);
    await run(pin, call, clock);
    expect(call.said.map((s) => s.text)).toEqual(['PIN?', 'OK.']);
  });

  it('posts webhook nodes and goes on whether they answer or fail', async () => {
    const hooked = flow({
      start: 'w',
      nodes: {
        w: { type: 'webhook', url: 'http://127.0.0.1:9/hook', event: 'entered', next: 'bye' },
        bye: { type: 'hangup' },
      },
    });
    const bodies: unknown[] = [];
    const clock = new FakeClock();
    const call = new ScriptedCall(clock);
    const events: FlowEvent[] = [];
    const end = await runFlow(hooked, call, {
      name: 'hooked',
      signal: new AbortController().signal,
      onEvent: (e) => events.push(e),
      post: async (_url, body) => {
        bodies.push(body);
        throw new Error('connection refused');
      },
    });
    expect(end).toBe('hangup');
    expect(bodies).toEqual([{ event: 'entered', call_id: 'call-1', flow: 'hooked', node: 'w' }]);
    expect(events.find((e) => e.type === 'flow.webhook')?.detail).toEqual({ error: 'connection refused' });
  });

  it('stops a flow that loops without ever speaking or waiting', async () => {
    const loop = flow({
      start: 'a',
      nodes: { a: { type: 'webhook', url: 'http://127.0.0.1:9/x', event: 'e', next: 'a' } },
    });
    const clock = new FakeClock();
    const end = await runFlow(loop, new ScriptedCall(clock), {
      name: 'loop',
      signal: new AbortController().signal,
      post: async () => 204,
    });
    expect(end).toBe('loop');
  });

  it('ends as aborted when the call ends, leaving no timer', async () => {
    const clock = new FakeClock();
    const call = new ScriptedCall(clock);
    const controller = new AbortController();
    const done = runFlow(MENU, call, { name: 'm', signal: controller.signal });
    await clock.advance(2500); // after the greeting and the prompt: in the menu's wait for a key
    controller.abort();
    expect(await done).toBe('aborted');
    expect(clock.pending).toBe(0);
  });
});

describe('runFlow: transfers', () => {
  /** A scripted call that can be transferred, answering each transfer with the next outcome given. */
  class TransferringCall extends ScriptedCall {
    readonly transfers: FlowTransfer[] = [];
    constructor(
      clock: FakeClock,
      private readonly outcomes: FlowTransferOutcome[],
    ) {
      super(clock);
    }
    transfer = (request: FlowTransfer): Promise<FlowTransferOutcome> => {
      this.transfers.push(request);
      return Promise.resolve(this.outcomes.shift() ?? { ok: false, code: 'none', message: 'no outcome' });
    };
  }

  const DESK = flow({
    start: 'warm',
    nodes: {
      warm: {
        type: 'transfer',
        text: 'One moment.',
        to: '+15551234567',
        mode: 'warm',
        callerId: '+15550001111',
        summary: 'A caller about their bill.',
        holdMusicUrl: 'https://music.example.com/hold.mp3',
        onFail: 'cold',
      },
      cold: { type: 'transfer', to: 'sip:desk@pbx.example.com', timeoutSeconds: 15 },
    },
  });

  it('says its text, transfers, and ends the flow (no hang-up) when the gateway took the caller', async () => {
    const clock = new FakeClock();
    const call = new TransferringCall(clock, [{ ok: true, targetCallId: 'CA-target' }]);
    const events: FlowEvent[] = [];
    const { end } = await run(DESK, call, clock, events);
    expect(end).toBe('transfer');
    expect(call.said.map((s) => [s.text, s.interruptible])).toEqual([['One moment.', false]]);
    expect(call.transfers).toEqual([
      {
        to: '+15551234567',
        mode: 'warm',
        callerId: '+15550001111',
        timeoutSeconds: 30,
        summary: { text: 'A caller about their bill.' },
        holdMusicUrl: 'https://music.example.com/hold.mp3',
      },
    ]);
    expect(call.hungUpAt).toBeUndefined();
    expect(events.at(-2)).toMatchObject({
      type: 'flow.node',
      node: 'warm',
      detail: { transfer: 'done', targetCallId: 'CA-target' },
    });
    expect(events.at(-1)).toMatchObject({ type: 'flow.end', detail: { reason: 'transfer' } });
  });

  it('goes to onFail when the transfer fails, and hangs up when a node without onFail fails', async () => {
    const clock = new FakeClock();
    const call = new TransferringCall(clock, [
      { ok: false, code: 'rejected', message: 'busy' },
      { ok: false, code: 'unsupported', message: 'no SIP' },
    ]);
    const events: FlowEvent[] = [];
    const { end } = await run(DESK, call, clock, events);
    expect(end).toBe('hangup');
    expect(call.transfers.map((t) => [t.to, t.mode, t.timeoutSeconds])).toEqual([
      ['+15551234567', 'warm', 30],
      ['sip:desk@pbx.example.com', 'cold', 15],
    ]);
    expect(call.hungUpAt).toBeDefined();
    expect(events.filter((e) => e.detail?.['transfer'] === 'failed').map((e) => e.detail?.['code'])).toEqual([
      'rejected',
      'unsupported',
    ]);
  });

  it('on a call that cannot be transferred, the transfer fails to onFail', async () => {
    const clock = new FakeClock();
    const call = new ScriptedCall(clock);
    const events: FlowEvent[] = [];
    const { end } = await run(DESK, call, clock, events);
    expect(end).toBe('hangup');
    expect(events.find((e) => e.detail?.['transfer'] === 'failed')?.detail).toMatchObject({
      code: 'unsupported',
    });
  });
});

describe('runFlow: answering machines', () => {
  /**
   * A scripted call with a detector: its decision comes at `decision.at` on the clock (or never), the
   * greeting it waits for ends at `greeting.at` (or never).
   */
  class DetectingCall extends ScriptedCall {
    readonly waits: Array<{ kind: 'decision' | 'greeting'; ms: number; at: number }> = [];
    constructor(
      private readonly clock2: FakeClock,
      private readonly decision: (FlowMachineDecision & { at: number }) | undefined,
      private readonly greeting: (FlowGreetingEnd & { at: number }) | undefined,
    ) {
      super(clock2);
    }
    detectMachine = async (
      timeoutMs: number,
      signal: AbortSignal,
    ): Promise<FlowMachineDecision | undefined> => {
      const now = this.clock2.now();
      this.waits.push({ kind: 'decision', ms: timeoutMs, at: now });
      const d = this.decision;
      if (d && d.at <= now + timeoutMs) {
        await this.clock2.sleepUntil(d.at, signal);
        return d;
      }
      await this.clock2.sleepUntil(now + timeoutMs, signal);
      return undefined;
    };
    greetingEnd = async (maxWaitMs: number, signal: AbortSignal): Promise<FlowGreetingEnd> => {
      const now = this.clock2.now();
      this.waits.push({ kind: 'greeting', ms: maxWaitMs, at: now });
      const g = this.greeting;
      if (g && g.at <= now + maxWaitMs) {
        await this.clock2.sleepUntil(g.at, signal);
        return g;
      }
      await this.clock2.sleepUntil(now + maxWaitMs, signal);
      return { end: 'timeout' };
    };
  }

  const OUTREACH = flow({
    start: 'who',
    nodes: {
      who: { type: 'detect-machine', human: 'hello', machine: 'message', unknown: 'hello', timeoutMs: 8000 },
      hello: { type: 'say', text: 'Hi, this is the clinic.', next: 'bye' },
      message: { type: 'voicemail', text: 'Please call the clinic back.', maxWaitMs: 20_000 },
      bye: { type: 'hangup' },
    },
  });
  const machine = (at: number): FlowMachineDecision & { at: number } => ({
    result: 'machine',
    reason: 'long-speech',
    decidedAtMs: at,
    speechMs: 2400,
    at,
  });

  it('a machine: silent until the decision, then the message once the beep ends, not interruptible, then hangs up', async () => {
    const clock = new FakeClock();
    const call = new DetectingCall(clock, machine(3000), { end: 'beep', atMs: 7200, at: 7500 });
    const events: FlowEvent[] = [];
    const { end } = await run(OUTREACH, call, clock, events);
    expect(end).toBe('hangup');
    expect(call.waits).toEqual([
      { kind: 'decision', ms: 8000, at: 0 },
      { kind: 'greeting', ms: 20_000, at: 3000 },
    ]);
    expect(call.said).toEqual([{ text: 'Please call the clinic back.', interruptible: false, at: 7500 }]);
    expect(call.hungUpAt).toBe(8500);
    expect(events.find((e) => e.node === 'who' && e.detail?.['result'])?.detail).toEqual({
      result: 'machine',
      reason: 'long-speech',
      decidedAtMs: 3000,
      speechMs: 2400,
      next: 'message',
    });
    expect(events.find((e) => e.node === 'message' && e.detail?.['greeting'])?.detail).toEqual({
      greeting: 'beep',
      atMs: 7200,
    });
  });

  it('a person goes to the human branch; no decision within timeoutMs goes to unknown', async () => {
    const clock = new FakeClock();
    const person = new DetectingCall(
      clock,
      { result: 'human', reason: 'short-speech', decidedAtMs: 1800, speechMs: 500, at: 1800 },
      undefined,
    );
    expect((await run(OUTREACH, person, clock)).end).toBe('hangup');
    expect(person.said.map((s) => [s.text, s.at])).toEqual([['Hi, this is the clinic.', 1800]]);

    const clock2 = new FakeClock();
    const mute = new DetectingCall(clock2, undefined, undefined);
    const events: FlowEvent[] = [];
    expect((await run(OUTREACH, mute, clock2, events)).end).toBe('hangup');
    expect(mute.said.map((s) => [s.text, s.at])).toEqual([['Hi, this is the clinic.', 8000]]);
    expect(events.find((e) => e.node === 'who' && e.detail?.['result'])?.detail).toEqual({
      result: 'unknown',
      reason: 'timeout',
      next: 'hello',
    });
  });

  it('unknown defaults to the human branch; a greeting that never ends gets the message at maxWaitMs, then next', async () => {
    const f = flow({
      start: 'who',
      nodes: {
        who: { type: 'detect-machine', human: 'hello', machine: 'message' },
        hello: { type: 'hangup', text: 'Hi.' },
        message: { type: 'voicemail', text: 'Call us.', next: 'bye' },
        bye: { type: 'hangup', text: 'Bye.' },
      },
    });
    const clock = new FakeClock();
    const unknown = new DetectingCall(
      clock,
      { result: 'unknown', reason: 'silence', decidedAtMs: 5000, speechMs: 0, at: 5000 },
      undefined,
    );
    await run(f, unknown, clock);
    expect(unknown.waits[0]).toEqual({ kind: 'decision', ms: 10_000, at: 0 });
    expect(unknown.said.map((s) => s.text)).toEqual(['Hi.']);

    const clock2 = new FakeClock();
    const endless = new DetectingCall(clock2, machine(2500), undefined);
    const events: FlowEvent[] = [];
    await run(f, endless, clock2, events);
    expect(endless.said.map((s) => [s.text, s.at])).toEqual([
      ['Call us.', 32_500],
      ['Bye.', 33_500],
    ]);
    expect(events.find((e) => e.detail?.['greeting'])?.detail).toEqual({ greeting: 'timeout' });
  });

  it('on a call without a detector: unknown (unsupported), and a voicemail speaks at once', async () => {
    const f = flow({
      start: 'who',
      nodes: {
        who: { type: 'detect-machine', human: 'message', machine: 'message', unknown: 'message' },
        message: { type: 'voicemail', text: 'Call us.' },
      },
    });
    const clock = new FakeClock();
    const call = new ScriptedCall(clock);
    const events: FlowEvent[] = [];
    expect((await run(f, call, clock, events)).end).toBe('hangup');
    expect(call.said).toEqual([{ text: 'Call us.', interruptible: false, at: 0 }]);
    expect(
      events.filter((e) => e.type === 'flow.node' && e.detail?.['type'] === undefined).map((e) => e.detail),
    ).toEqual([{ result: 'unknown', reason: 'unsupported', next: 'message' }, { greeting: 'unsupported' }]);
  });

  it('refuses unknown branches and options out of bounds', () => {
    const base = { start: 'who', nodes: { end: { type: 'hangup' } } };
    const bad = (node: Record<string, unknown>) =>
      flowSchema.safeParse({ ...base, nodes: { ...base.nodes, who: node } }).success;
    expect(bad({ type: 'detect-machine', human: 'end', machine: 'end' })).toBe(true);
    expect(bad({ type: 'detect-machine', human: 'end', machine: 'nowhere' })).toBe(false);
    expect(bad({ type: 'detect-machine', human: 'end', machine: 'end', unknown: 'nowhere' })).toBe(false);
    expect(bad({ type: 'detect-machine', human: 'end' })).toBe(false);
    expect(bad({ type: 'detect-machine', human: 'end', machine: 'end', timeoutMs: 500 })).toBe(false);
    expect(bad({ type: 'detect-machine', human: 'end', machine: 'end', timeoutMs: 60_001 })).toBe(false);
    expect(bad({ type: 'voicemail', text: 'Hi.' })).toBe(true);
    expect(bad({ type: 'voicemail', text: '' })).toBe(false);
    expect(bad({ type: 'voicemail', text: 'Hi.', maxWaitMs: 999 })).toBe(false);
    expect(bad({ type: 'voicemail', text: 'Hi.', maxWaitMs: 120_001 })).toBe(false);
    expect(bad({ type: 'voicemail', text: 'Hi.', next: 'nowhere' })).toBe(false);
    expect(bad({ type: 'voicemail', text: 'Hi.', bargeIn: true })).toBe(false);
  });
});
