/** The flow a call runs: which one, the keys it reads in order, its run, and its end with the call. */
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { CallFlow, chooseFlow } from '../../../adapters/media-stream/call-flow.js';
import type { FlowEvent } from '../../../src/flows/runner.js';
import { flowSchema, type Flow } from '../../../src/flows/schema.js';
import { FakeClock } from '../../helpers/fake-clock.js';

const MENU: Flow = flowSchema.parse({
  start: 'menu',
  webhook: 'https://example.com/events',
  nodes: {
    menu: { type: 'gather', prompt: 'Press 1.', branches: { '1': 'bye' }, timeoutMs: 5000 },
    bye: { type: 'hangup', text: 'Bye.' },
  },
});
const OTHER: Flow = flowSchema.parse({ start: 'end', nodes: { end: { type: 'hangup' } } });
const FLOWS = { menu: MENU, other: OTHER };

function recordingLogger(): { log: pino.Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const log = pino(
    { level: 'warn' },
    { write: (l: string) => lines.push(JSON.parse(l) as Record<string, unknown>) },
  );
  return { log, lines };
}

const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('chooseFlow', () => {
  it('runs the flow the call names, else the default, else none', () => {
    const { log } = recordingLogger();
    expect(chooseFlow('other', { defaultFlow: 'menu', flows: FLOWS }, log)).toEqual({
      name: 'other',
      flow: OTHER,
    });
    expect(chooseFlow(undefined, { defaultFlow: 'menu', flows: FLOWS }, log)).toEqual({
      name: 'menu',
      flow: MENU,
    });
    expect(chooseFlow(undefined, { defaultFlow: undefined, flows: FLOWS }, log)).toBeUndefined();
  });

  it('an unknown name is logged and the default runs instead', () => {
    const { log, lines } = recordingLogger();
    expect(chooseFlow('nope', { defaultFlow: 'menu', flows: FLOWS }, log)?.name).toBe('menu');
    expect(chooseFlow('nope', { defaultFlow: undefined, flows: FLOWS }, log)).toBeUndefined();
    expect(lines.map((l) => [l['msg'], l['flow']])).toEqual([
      ['the call asks for an unknown flow; running the default', 'nope'],
      ['the call asks for an unknown flow; running the default', 'nope'],
    ]);
  });
});

function setup() {
  const clock = new FakeClock();
  const said: string[] = [];
  const events: FlowEvent[] = [];
  let hangups = 0;
  const { log, lines } = recordingLogger();
  const flow = new CallFlow({
    name: 'menu',
    flow: MENU,
    call: {
      id: 'CA1',
      say: (text) => {
        said.push(text);
        return Promise.resolve({ status: 'played' });
      },
      hangup: () => {
        hangups++;
        return Promise.resolve();
      },
    },
    clock,
    onEvent: (e) => events.push(e),
    log,
  });
  return { clock, flow, said, events, lines, hangups: () => hangups };
}

describe('CallFlow', () => {
  it('names its flow and its webhook', () => {
    const { flow } = setup();
    expect(flow.name).toBe('menu');
    expect(flow.webhook).toBe('https://example.com/events');
  });

  it('runs the flow: a key pressed answers its gather, whose branch speaks and hangs up', async () => {
    const { flow, said, events, hangups, lines } = setup();
    flow.start();
    await tick();
    expect(said).toEqual(['Press 1.']);
    flow.pushDigit('1');
    await tick();
    await tick();
    expect(said).toEqual(['Press 1.', 'Bye.']);
    expect(hangups()).toBe(1);
    expect(events.map((e) => [e.type, e.node])).toContainEqual(['flow.node', 'bye']);
    expect(events.every((e) => e.flow === 'menu')).toBe(true);
    expect(lines).toEqual([]);
  });

  it('keys pressed before the flow reads them wait, in order', async () => {
    const { flow, said, hangups } = setup();
    flow.pushDigit('1');
    flow.start();
    await tick();
    await tick();
    expect(said).toEqual(['Press 1.', 'Bye.']);
    expect(hangups()).toBe(1);
  });

  it('abort() stops a flow waiting for a key: no timeout fires later, nothing is logged as a failure', async () => {
    const { clock, flow, said, hangups, lines } = setup();
    flow.start();
    await tick();
    flow.abort();
    await tick();
    await clock.advance(60_000);
    expect(said).toEqual(['Press 1.']);
    expect(hangups()).toBe(0);
    expect(clock.pending).toBe(0);
    expect(lines).toEqual([]);
  });
});
