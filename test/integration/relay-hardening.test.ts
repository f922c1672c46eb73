/**
 * The second red team's relay attacks (issue 39), each reproduced against the real app while an
 * innocent call speaks beside it (`Bystander`: its gaps, `/healthz` every 100 ms, the process's RSS):
 * handoff data nested 5000 deep, 1000 `sendDigits` of 64 keys, talk cycles without end, a storm of
 * invalid messages from an app that does not read, and 1000 control-API says of 5000 characters.
 * Each costs the attacker's own session or request; the bystander never notices.
 */
import { once } from 'node:events';
import type { AddressInfo, Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocketServer, type WebSocket } from 'ws';
import { rawText } from '../../src/http/ws-data.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { Bystander } from '../helpers/bystander.js';
import { FakeTwilio } from '../helpers/gateways/twilio.js';
import { until } from '../helpers/relay-app.js';

type Message = Record<string, unknown> & { type: string };
type Attack = (socket: WebSocket, received: Message[]) => void;

/** A relay app that runs the next attack on each session it gets. */
const attacks: Attack[] = [];
let server: WebSocketServer;
let t: TestApp;
let bystander: Bystander;

beforeAll(async () => {
  server = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  await once(server, 'listening');
  server.on('connection', (socket) => {
    const received: Message[] = [];
    const attack = attacks.shift();
    socket.on('message', (d) => {
      const m = JSON.parse(rawText(d)) as Message;
      received.push(m);
      if (m.type === 'setup') attack?.(socket, received);
    });
  });
  t = await startTestApp({
    calls: { defaultFlow: null },
    relays: { hostile: { url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}/relay` } },
    flows: {
      hostile: {
        start: 'talk',
        nodes: {
          talk: { type: 'relay', relay: 'hostile', onClose: 'bye' },
          bye: { type: 'hangup' },
        },
      },
    },
  });
  bystander = await Bystander.start(t.url);
}, 60_000);
afterAll(async () => {
  await bystander?.close();
  await t?.close();
  for (const c of server?.clients ?? []) c.terminate();
  await new Promise((r) => server?.close(r));
});

/** A call on the hostile relay; resolves with the call and how its relay ended. */
async function hostileCall(attack: Attack): Promise<{ g: FakeTwilio; relayEnded: Promise<Message> }> {
  attacks.push(attack);
  const g = new FakeTwilio(`${t.url.replace('http:', 'ws:')}/media/twilio`, {
    customParameters: { flow: 'hostile' },
  });
  // Listened for from the call's start: an attack the app cuts short at once ends the relay, and the
  // call, before a poll for the call would find it.
  let stop = (): void => undefined;
  const relayEnded = new Promise<Message>((resolve) => {
    stop = t.app.calls.onCall((call) =>
      call.on('event', (e) => {
        const ended = e.type === 'relay' && (e as { status?: string }).status === 'ended';
        if (ended && e.callId === g.callSid) resolve(e);
      }),
    );
  });
  void relayEnded.finally(stop);
  await g.start();
  return { g, relayEnded };
}

const nested = (levels: number): string => '{"a":'.repeat(levels) + '1' + '}'.repeat(levels);
const errorsOf = (received: Message[]): string[] =>
  received.filter((m) => m.type === 'error').map((m) => String(m['description']));

describe('a hostile relay app beside an innocent call', () => {
  it('handoff data nested 5000 deep: an error to the app; its next end ends the relay as asked', async () => {
    let received: Message[] = [];
    const { g, relayEnded } = await hostileCall((socket, r) => {
      received = r;
      socket.send(`{"type":"end","handoffData":${nested(5000)}}`);
      const check = setInterval(() => {
        if (errorsOf(r).length === 0) return;
        clearInterval(check);
        socket.send(JSON.stringify({ type: 'end', handoffData: '{"reason":"done"}' }));
      }, 10);
    });
    const ended = await relayEnded;
    expect(errorsOf(received)[0]).toMatch(/deeper than 32 levels/);
    expect(ended).toMatchObject({ reason: 'end', handoffData: '{"reason":"done"}' });
    await g.close();
  });

  it('1000 sendDigits of 64 keys at once: one plays, the rest refused, the flood closed for its rate', async () => {
    let received: Message[] = [];
    let closedWith: number | undefined;
    const { g, relayEnded } = await hostileCall((socket, r) => {
      received = r;
      socket.on('close', (code) => (closedWith = code));
      const digits = '1234567890*#ABCD'.repeat(4);
      for (let i = 0; i < 1000; i++) socket.send(JSON.stringify({ type: 'sendDigits', digits }));
    });
    expect(await relayEnded).toMatchObject({ reason: 'closed', detail: 'message rate too high' });
    // The refusals sent before the close have all arrived once the close has.
    await until(() => closedWith !== undefined, 10_000, 'the socket to close');
    expect(closedWith).toBe(1008);
    const refused = errorsOf(received).filter((e) => /sendDigits refused/.test(e));
    expect(refused.length).toBeGreaterThan(100);
    // One message's tones at most were queued on the call: 12.8 s of them, not 1000 times that.
    const call = t.app.calls.get(g.callSid);
    expect(call === undefined || call.state.status === 'ended').toBe(true);
    await g.close();
  });

  it('300 talk cycles: 8 are spoken or queued, the rest refused with an error', async () => {
    let received: Message[] = [];
    const { g } = await hostileCall((socket, r) => {
      received = r;
      for (let i = 0; i < 300; i++)
        socket.send(JSON.stringify({ type: 'text', token: `Answer number ${i}.`, last: true }));
    });
    await until(() => errorsOf(received).length >= 292, 10_000, 'the refusals');
    expect(errorsOf(received).filter((e) => /answers are already waiting/.test(e))).toHaveLength(292);
    await g.close();
  });

  it('an app that stops reading and storms 200,000 messages (nine in ten invalid): closed, 1008', async () => {
    let closedWith: number | undefined;
    let paused: Socket | undefined;
    const { g, relayEnded } = await hostileCall((socket) => {
      paused = (socket as unknown as { _socket: Socket })._socket;
      paused.pause();
      socket.on('close', (code) => (closedWith = code));
      // In slices, so the attacker's own loop (in this process) does not stall the bystander.
      const slice = (from: number): void => {
        for (let i = from; i < Math.min(from + 2000, 200_000); i++)
          socket.send(i % 10 === 9 ? '{"type":"language","ttsLanguage":"en-US"}' : 'garbage');
        if (from + 2000 < 200_000) setImmediate(() => slice(from + 2000));
      };
      slice(0);
    });
    expect(await relayEnded).toMatchObject({ reason: 'closed', detail: 'message rate too high' });
    // The app reads again: it finds its socket closed (cut after the close's grace, or closed by it).
    paused!.resume();
    await until(() => closedWith !== undefined, 10_000, 'the socket to close');
    await g.close();
  });

  it('1000 control-API says of 5000 characters on one call: the queue takes 40, the rest get 429', async () => {
    const g = new FakeTwilio(`${t.url.replace('http:', 'ws:')}/media/twilio`);
    await g.start();
    const text = 'Words that fill the queue. '.repeat(186).slice(0, 5000);
    const statuses: number[] = [];
    for (let i = 0; i < 1000; i += 50) {
      const batch = await Promise.all(
        Array.from({ length: 50 }, async () => {
          const res = await fetch(`${t.url}/calls/${g.callSid}/say`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ text, wait: false }),
          });
          const body = (await res.json()) as { code?: string };
          if (res.status === 429) expect(body.code).toBe('queue_full');
          return res.status;
        }),
      );
      statuses.push(...batch);
    }
    const accepted = statuses.filter((s) => s === 202).length;
    // 200,000 characters queued; one more say may be speaking (out of the queue) already.
    expect(accepted).toBeGreaterThanOrEqual(40);
    expect(accepted).toBeLessThanOrEqual(41);
    expect(statuses.filter((s) => s === 429)).toHaveLength(1000 - accepted);
    await g.close();
  });

  it('the innocent call never noticed: /healthz under 500 ms, no gap over 500 ms, RSS within 200 MB', async () => {
    const seen = await bystander.report();
    expect(seen.healthChecks).toBeGreaterThan(10);
    expect(seen.playedMs).toBeGreaterThan(2000);
    expect(seen.healthMaxMs).toBeLessThan(500);
    expect(seen.gapMaxMs).toBeLessThanOrEqual(500);
    expect(seen.rssGrowthMax).toBeLessThan(200 * 1024 * 1024);
  });
});
