/**
 * The second red team's call and relay attacks (issue 39) against one running instance, with an
 * innocent call beside them: a Twilio-protocol caller hearing a long answer (the gaps between its media
 * messages), `/healthz` asked every 100 ms, and the process's RSS. Each attack runs until the instance
 * has dealt with it; then the attacker leaves, and RSS is read again a minute later (after a GC when
 * `--expose-gc` is on, as `npm run bench` runs it).
 *
 * Targets: `/healthz` never slower than 500 ms, the innocent call's gaps ≤ 500 ms, RSS growth ≤ 200 MB
 * during an attack and back within 50 MB of where it started a minute after.
 */
import { once } from 'node:events';
import type { AddressInfo, Socket } from 'node:net';
import WebSocket, { WebSocketServer } from 'ws';
import type { App } from '../src/app/app.js';
import { parseServerMessage, TwilioCallerMessages, twilioSid } from '../src/protocols/twilio-caller.js';
import { startBenchApp } from './app.js';
import { fmt, printTable } from './stats.js';

const MB = 1024 * 1024;
const SETTLE_MS = Number(process.env['BENCH_HARDENING_SETTLE_MS'] ?? 60_000);
const ANSWER = Array.from(
  { length: 40 },
  (_, i) => `This is sentence ${i + 1} of an answer that has nothing to do with the attack next door.`,
).join(' ');

type Attack = (socket: WebSocket) => void;

/** A Twilio-protocol call: sends a caller's quiet line every 20 ms, notes when each media message comes. */
class TwilioCall {
  readonly ws: WebSocket;
  readonly messages: TwilioCallerMessages;
  lastMediaAt: number | undefined;
  maxGapMs = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(url: string, parameters: Record<string, string> = {}) {
    this.messages = new TwilioCallerMessages(
      { callSid: twilioSid('CA'), streamSid: twilioSid('MZ') },
      parameters,
    );
    this.ws = new WebSocket(url);
    this.ws.on('message', (data: Buffer) => {
      if (parseServerMessage(data.toString())?.type !== 'media') return;
      const now = performance.now();
      if (this.lastMediaAt !== undefined) this.maxGapMs = Math.max(this.maxGapMs, now - this.lastMediaAt);
      this.lastMediaAt = now;
    });
    this.ws.once('open', () => {
      for (const m of this.messages.start()) this.send(m);
      this.timer = setInterval(() => this.media(), 20);
    });
  }

  get callSid(): string {
    return this.messages.ids.callSid;
  }

  async opened(): Promise<void> {
    if (this.ws.readyState !== WebSocket.OPEN) await once(this.ws, 'open');
  }

  /** 20 ms of a quiet line, stamped where it falls on the caller's timeline or at `timestampMs`. */
  media(timestampMs?: number): void {
    const noise = new Uint8Array(160);
    for (let i = 0; i < noise.length; i++) noise[i] = 0xfc + Math.floor(Math.random() * 4);
    const { message } = this.messages.media(noise);
    if (timestampMs !== undefined)
      (message as { media: { timestamp: string } }).media.timestamp = String(timestampMs);
    this.send(message);
  }

  send(message: unknown): void {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(message));
  }

  close(): void {
    clearInterval(this.timer);
    this.ws.close();
  }
}

interface Watch {
  healthMaxMs: number;
  gapMaxMs: number;
  rssPeak: number;
  stop(): Promise<void>;
}

/** `/healthz` every 100 ms, RSS every 50 ms, the bystander's gaps from now on. */
function watch(app: App, bystander: TwilioCall): Watch {
  const w = { healthMaxMs: 0, gapMaxMs: 0, rssPeak: process.memoryUsage().rss };
  let on = true;
  bystander.maxGapMs = 0;
  const rss = setInterval(() => (w.rssPeak = Math.max(w.rssPeak, process.memoryUsage().rss)), 50);
  const probe = (async () => {
    while (on) {
      const t0 = performance.now();
      const res = await fetch(`${app.url}/healthz`, { signal: AbortSignal.timeout(30_000) });
      await res.arrayBuffer();
      w.healthMaxMs = Math.max(w.healthMaxMs, performance.now() - t0);
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  return Object.assign(w, {
    async stop() {
      on = false;
      await probe;
      clearInterval(rss);
      w.gapMaxMs = bystander.maxGapMs;
    },
  });
}

const nested = (levels: number): string => '{"a":'.repeat(levels) + '1' + '}'.repeat(levels);

export async function benchHardening(): Promise<void> {
  let nextAttack: Attack | undefined;
  const relayServer = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  await once(relayServer, 'listening');
  relayServer.on('connection', (socket) => {
    const attack = nextAttack;
    socket.on('message', (d: Buffer) => {
      if ((JSON.parse(d.toString()) as { type?: string }).type === 'setup') attack?.(socket);
    });
  });
  const bench = await startBenchApp('hardening', {
    calls: { defaultFlow: null },
    relays: { hostile: { url: `ws://127.0.0.1:${(relayServer.address() as AddressInfo).port}/relay` } },
    flows: {
      hostile: {
        start: 'talk',
        nodes: { talk: { type: 'relay', relay: 'hostile', onClose: 'bye' }, bye: { type: 'hangup' } },
      },
    },
  });
  const { app } = bench;
  const media = `${app.url.replace('http:', 'ws:')}/media/twilio`;
  const bystander = new TwilioCall(media);
  await bystander.opened();
  await new Promise((r) => setTimeout(r, 300));
  for (let i = 0; i < 3; i++)
    await fetch(`${app.url}/calls/${bystander.callSid}/say`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ text: ANSWER, wait: false }),
    });
  while (bystander.lastMediaAt === undefined) await new Promise((r) => setTimeout(r, 50));
  await new Promise((r) => setTimeout(r, 1000));

  /** Runs `attack` on a call handed to the hostile relay; resolves when the relay has ended. */
  const onRelay = async (attack: Attack, media?: (call: TwilioCall) => Promise<string>): Promise<string> => {
    nextAttack = attack;
    const hostile = new TwilioCall(`${app.url.replace('http:', 'ws:')}/media/twilio`, { flow: 'hostile' });
    await hostile.opened();
    const ended = new Promise<string>((resolve) => {
      const wait = (): void => {
        const c = app.calls.get(hostile.callSid);
        if (!c) return void setTimeout(wait, 10);
        c.on('event', (e) => {
          if (e.type === 'relay' && (e as { status?: string }).status === 'ended')
            resolve(
              String((e as { detail?: string; reason?: string }).detail ?? (e as { reason?: string }).reason),
            );
        });
      };
      wait();
    });
    if (media) {
      const how = await media(hostile);
      hostile.close();
      return how;
    }
    const how = await Promise.race([
      ended,
      new Promise<string>((r) => setTimeout(() => r('still open after 30 s'), 30_000)),
    ]);
    hostile.close();
    return how;
  };

  const attacks: Array<{ name: string; run: () => Promise<string> }> = [
    {
      name: 'end with handoffData 5000 deep',
      run: () =>
        onRelay((s) => {
          s.send(`{"type":"end","handoffData":${nested(5000)}}`);
          setTimeout(() => s.send('{"type":"end","handoffData":"after"}'), 200);
        }),
    },
    {
      name: '1000 sendDigits of 64 keys',
      run: () =>
        onRelay((s) => {
          const digits = '1234567890*#ABCD'.repeat(4);
          for (let i = 0; i < 1000; i++) s.send(JSON.stringify({ type: 'sendDigits', digits }));
        }),
    },
    {
      name: '2000 talk cycles (last: true)',
      run: () =>
        onRelay((s) => {
          for (let i = 0; i < 2000; i++)
            s.send(JSON.stringify({ type: 'text', token: `Answer ${i}.`, last: true }));
        }),
    },
    {
      name: 'unread socket, 9 unknown + 1 valid, 150/s',
      run: () =>
        onRelay((s) => {
          (s as unknown as { _socket: Socket })._socket.pause();
          let i = 0;
          const timer = setInterval(() => {
            if (s.readyState !== WebSocket.OPEN) return clearInterval(timer);
            for (let k = 0; k < 15; k++, i++)
              s.send(i % 10 === 9 ? '{"type":"language"}' : `{"type":"x${i % 9}"}`);
          }, 100);
          setTimeout(() => clearInterval(timer), 25_000);
        }),
    },
    {
      name: '200k messages, 9 in 10 invalid JSON',
      run: () =>
        onRelay((s) => {
          // In slices, so the attacker's own loop (in this process) does not stall the bystander.
          const slice = (from: number): void => {
            for (let i = from; i < Math.min(from + 2000, 200_000); i++)
              s.send(i % 10 === 9 ? '{"type":"language"}' : 'garbage');
            if (from + 2000 < 200_000 && s.readyState === WebSocket.OPEN)
              setImmediate(() => slice(from + 2000));
          };
          slice(0);
        }),
    },
    {
      name: '5000 media with backwards timestamps',
      run: () =>
        onRelay(
          () => undefined,
          async (call) => {
            for (let i = 0; i < 5000; i++) {
              call.media(1_000_000 - i * 20);
              if (i % 24 === 23) await new Promise((r) => setTimeout(r, 100));
            }
            await app.calls.get(call.callSid)?.hangup();
            return 'hung up after them';
          },
        ),
    },
    {
      name: '1000 control-API says of 5000 chars',
      run: async () => {
        const call = new TwilioCall(`${app.url.replace('http:', 'ws:')}/media/twilio`);
        await call.opened();
        await new Promise((r) => setTimeout(r, 200));
        const text = 'Words that fill the queue. '.repeat(186).slice(0, 5000);
        const counts = new Map<number, number>();
        for (let i = 0; i < 1000; i += 50)
          await Promise.all(
            Array.from({ length: 50 }, async () => {
              const res = await fetch(`${app.url}/calls/${call.callSid}/say`, {
                method: 'POST',
                headers: { 'content-type': 'application/json' },
                body: JSON.stringify({ text, wait: false }),
              });
              await res.arrayBuffer();
              counts.set(res.status, (counts.get(res.status) ?? 0) + 1);
            }),
          );
        call.close();
        return [...counts].map(([s, n]) => `${n}x${s}`).join(' ');
      },
    },
  ];

  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  const rssStart = process.memoryUsage().rss;
  const rows: string[][] = [];
  for (const a of attacks) {
    const before = process.memoryUsage().rss;
    const w = watch(app, bystander);
    const t0 = performance.now();
    const outcome = await a.run();
    const took = performance.now() - t0;
    await new Promise((r) => setTimeout(r, 500));
    await w.stop();
    rows.push([
      a.name,
      outcome,
      fmt(took, 0),
      fmt(w.healthMaxMs, 0),
      fmt(w.gapMaxMs, 0),
      fmt((w.rssPeak - before) / MB, 0),
    ]);
  }
  const w = watch(app, bystander);
  await new Promise((r) => setTimeout(r, SETTLE_MS));
  gc?.();
  await w.stop();
  const rssAfter = process.memoryUsage().rss;
  printTable(
    'Hardening: attacks beside an innocent call (targets: /healthz ≤ 500 ms, gaps ≤ 500 ms, RSS ≤ +200 MB)',
    ['attack', 'how it ended', 'ms', '/healthz max ms', 'innocent gap max ms', 'RSS peak +MB'],
    rows,
  );
  console.log(
    `RSS ${fmt(SETTLE_MS / 1000, 0)} s after the last attacker left: ${fmt((rssAfter - rssStart) / MB, 0)} MB above where it started (target ≤ 50); meanwhile /healthz max ${fmt(w.healthMaxMs, 0)} ms, innocent gap max ${fmt(w.gapMaxMs, 0)} ms`,
  );
  bystander.close();
  await bench.close();
  for (const c of relayServer.clients) c.terminate();
  await new Promise((r) => relayServer.close(r));
}
