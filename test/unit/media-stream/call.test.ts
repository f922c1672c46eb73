/**
 * The Call's lifecycle on a Twilio connection (the pure protocol, an in-memory transport): one
 * `stateChange` per change with the old and the new state, teardown on leaving active, the flow in the
 * active (and ended) state, and the events and webhooks of its parts wired together.
 */
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { Call, type CallSettings, type CallState } from '../../../adapters/media-stream/call.js';
import type { CallEvent } from '../../../adapters/media-stream/call-events.js';
import { flowSchema } from '../../../src/flows/schema.js';
import { twilio } from '../../../src/protocols/twilio.js';
import type { SpeechAudio, SpeechSource } from '../../../src/speaker/segment-audio.js';
import { FakeClock } from '../../helpers/fake-clock.js';

const encoder = new TextEncoder();
const message = (m: unknown): Uint8Array => encoder.encode(JSON.stringify(m));
const START = message({
  event: 'start',
  sequenceNumber: '1',
  start: {
    accountSid: 'AC1',
    streamSid: 'MZ1',
    callSid: 'CA1',
    tracks: ['inbound'],
    customParameters: {},
    mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 },
  },
  streamSid: 'MZ1',
});
const STOP = message({ event: 'stop', sequenceNumber: '9', streamSid: 'MZ1', stop: { callSid: 'CA1' } });
const DTMF = (digit: string): Uint8Array =>
  message({ event: 'dtmf', streamSid: 'MZ1', sequenceNumber: '5', dtmf: { track: 'inbound_track', digit } });

/** A source that never answers: these tests are about the call, not the speech. */
const silentSource: SpeechSource = {
  stream: (_request, options) =>
    new Promise<SpeechAudio>((_resolve, reject) =>
      options?.signal?.addEventListener('abort', () => reject(options.signal!.reason as Error), {
        once: true,
      }),
    ),
};

const MENU = flowSchema.parse({
  start: 'menu',
  webhook: 'https://example.com/events',
  nodes: { menu: { type: 'gather', prompt: 'Press 1.', branches: { '1': 'menu' }, timeoutMs: 5000 } },
});

function setup(settings: Partial<CallSettings> = {}) {
  const changes: Array<[CallState, CallState]> = [];
  const events: CallEvent[] = [];
  const posted: Array<{ url: string; body: unknown }> = [];
  const call = new Call({
    gateway: twilio,
    transport: { send: (_m, onSent) => onSent() },
    close: () => undefined,
    source: silentSource,
    clock: new FakeClock(),
    logger: pino({ level: 'silent' }),
    settings: {
      voiceId: 'v',
      leadMs: 200,
      markIntervalMs: 100,
      bargeIn: false,
      defaultFlow: undefined,
      flows: { menu: MENU },
      protocolOptions: {},
      ...settings,
    },
    post: (url, body) => {
      posted.push({ url, body });
      return Promise.resolve(200);
    },
  });
  call.on('stateChange', (oldState, newState) => changes.push([oldState, newState]));
  call.on('event', (e) => events.push(e));
  return { call, changes, events, posted };
}

describe('Call state', () => {
  it('emits stateChange(old, new) once per change: connecting → active → ended', () => {
    const { call, changes } = setup();
    expect(call.state.status).toBe('connecting');
    call.onMessage(START, false);
    expect(changes).toHaveLength(1);
    const [connecting, active] = changes[0]!;
    expect(connecting.status).toBe('connecting');
    expect(active.status).toBe('active');
    expect(call.state).toBe(active);
    call.onMessage(STOP, false);
    expect(changes).toHaveLength(2);
    expect(changes[1]![0]).toBe(active);
    expect(changes[1]![1]).toEqual({ status: 'ended', reason: 'stopped by the gateway', flow: undefined });
    // Ended is final: nothing changes it again.
    call.end('again');
    void call.hangup();
    expect(changes).toHaveLength(2);
  });

  it('leaving active tears the call down before stateChange: the speaker refuses new text', async () => {
    const { call, changes } = setup();
    call.onMessage(START, false);
    const speaker = call.speaker!;
    let atChange: Promise<{ status: string }> | undefined;
    call.on('stateChange', (old) => {
      if (old.status === 'active') atChange = speaker.say('Said during the change.').result;
    });
    call.end('connection closed (1006)');
    expect(changes.at(-1)![1].status).toBe('ended');
    expect((await atChange!).status).toBe('failed');
    expect(call.speaker).toBeUndefined();
  });

  it('a call that never started goes from connecting straight to ended', () => {
    const { call, changes, events } = setup();
    call.end('no start message within 5000 ms');
    expect(changes.map(([o, n]) => [o.status, n.status])).toEqual([['connecting', 'ended']]);
    expect(events.map((e) => e.type)).toEqual(['call.ended']);
  });

  it('the flow lives in the active state and stays named once ended; its webhook gets every event', async () => {
    const { call, events, posted } = setup({ defaultFlow: 'menu' });
    call.onMessage(START, false);
    const active = call.state;
    expect(active.status === 'active' && active.flow?.name).toBe('menu');
    expect(call.flow).toBe('menu');
    call.onMessage(DTMF('5'), false);
    call.end('hung up');
    expect(call.flow).toBe('menu');
    await new Promise((r) => setImmediate(r));
    const types = events.map((e) => e.type);
    expect(types[0]).toBe('call.started');
    expect(types).toContain('dtmf');
    // The aborted flow may report its end after the call's; the call's events stop at its end.
    expect(types.filter((t) => t !== 'flow').at(-1)).toBe('call.ended');
    expect(events[0]).toMatchObject({ type: 'call.started', flow: 'menu', callId: 'CA1', seq: 1 });
    // Every call event reaches the webhook, in order, the last one after the call ended.
    const hooked = posted
      .filter((p) => p.url === 'https://example.com/events')
      .map((p) => (p.body as CallEvent).seq);
    expect(hooked).toEqual(events.map((e) => e.seq));
    expect(call.eventsAfter(1).map((e) => e.seq)).toEqual(events.slice(1).map((e) => e.seq));
  });

  it('without a flow: no webhook, no flow name', () => {
    const { call, events, posted } = setup();
    call.onMessage(START, false);
    call.onMessage(DTMF('1'), false);
    expect(call.flow).toBeUndefined();
    expect(events[0]).toMatchObject({ type: 'call.started', flow: null });
    expect(posted).toEqual([]);
  });
});
