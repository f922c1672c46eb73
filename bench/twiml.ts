/**
 * A Twilio app's TwiML webhook, measured end to end on Twilio-protocol calls (callers that make line
 * noise): the call's start message → the webhook request, and the webhook request → the first audio
 * of the `<ConversationRelay welcomeGreeting>` at the gateway (the webhook answered at once, the relay
 * app a plain `ws` server). Beside it, in the same run, the same greeting from a relay in the config
 * (`relays.<name>.welcome`, no webhook): what the webhook adds. Each greeting is said once before
 * (the phrase cache warm, as a line's greeting is after its first call), and a third row greets each
 * caller by a name never said before (the speech service's own time included).
 */
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer } from 'ws';
import { startBenchApp } from './app.js';
import { Caller, until } from './barge-in.js';
import { fmt, median, percentile, printTable } from './stats.js';

const GREETING = 'Hello, thanks for calling. How can I help you today?';

export async function benchTwiml(calls = 24): Promise<void> {
  const setups = new Map<string, number>();
  const relayServer = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  await once(relayServer, 'listening');
  relayServer.on('connection', (socket) =>
    socket.on('message', (data: Buffer) => {
      const m = JSON.parse(data.toString('utf8')) as Record<string, unknown>;
      if (m['type'] === 'setup') setups.set(String(m['callSid']), performance.now());
    }),
  );
  const relayUrl = `ws://127.0.0.1:${(relayServer.address() as AddressInfo).port}/relay`;

  const webhooks = new Map<string, number>();
  let fresh = 0;
  const web = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const params = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
      if (req.url === '/after') {
        res.writeHead(200, { 'content-type': 'text/xml' }).end('<Response><Hangup/></Response>');
        return;
      }
      webhooks.set(params.get('CallSid') ?? '', performance.now());
      const greeting = req.url === '/fresh' ? `Hello caller number ${++fresh}, how can I help?` : GREETING;
      res
        .writeHead(200, { 'content-type': 'text/xml' })
        .end(
          `<?xml version="1.0" encoding="UTF-8"?><Response><Connect action="/after"><ConversationRelay url="${relayUrl}" welcomeGreeting="${greeting}"/></Connect></Response>`,
        );
    });
  });
  web.listen(0, '127.0.0.1');
  await once(web, 'listening');
  const origin = `http://127.0.0.1:${(web.address() as AddressInfo).port}`;
  const relayHost = new URL(relayUrl).host;
  const twiml = (path: string): Record<string, unknown> => ({
    start: 'answer',
    nodes: { answer: { type: 'twiml', url: `${origin}${path}`, hosts: [relayHost] } },
  });

  const bench = await startBenchApp('twiml', {
    calls: { defaultFlow: 'webhook' },
    relays: { r: { url: relayUrl, welcome: GREETING } },
    flows: {
      webhook: twiml('/incoming-call'),
      fresh: twiml('/fresh'),
      config: { start: 'talk', nodes: { talk: { type: 'relay', relay: 'r' } } },
    },
  });
  let n = 0;
  type Row = { startToHook: number[]; hookToAudio: number[]; startToAudio: number[] };
  const measure = async (flow: string, count: number): Promise<Row> => {
    const row: Row = { startToHook: [], hookToAudio: [], startToAudio: [] };
    for (let i = 0; i < count; i++) {
      const c = new Caller(`${bench.app.url.replace('http:', 'ws:')}/media/twilio?flow=${flow}`, 7000 + n++);
      await c.start();
      const startedAt = performance.now();
      try {
        if (!(await until(() => c.mediaAt.length > 0, 15_000))) throw new Error(`no audio on ${flow}`);
        const audioAt = c.mediaAt[0]!;
        const hookAt = webhooks.get(c.callSid);
        row.startToAudio.push(audioAt - startedAt);
        if (hookAt !== undefined) {
          row.startToHook.push(hookAt - startedAt);
          row.hookToAudio.push(audioAt - hookAt);
        }
      } finally {
        c.close();
      }
      // One call at a time: each measures the path, not a queue behind the others.
      await new Promise((r) => setTimeout(r, 100));
    }
    return row;
  };
  try {
    // The greeting said once (cached from then on, as a line's greeting is), and the paths warmed.
    await measure('webhook', 1);
    await measure('config', 1);
    const rows: Array<[string, Row]> = [];
    for (let round = 0; round < 2; round++) {
      rows.push(['TwiML webhook, greeting cached', await measure('webhook', calls / 2)]);
      rows.push(['relay in the config (no webhook), greeting cached', await measure('config', calls / 2)]);
    }
    rows.push(['TwiML webhook, a greeting never said before', await measure('fresh', calls / 2)]);
    const merged = new Map<string, Row>();
    for (const [name, r] of rows) {
      const m = merged.get(name) ?? { startToHook: [], hookToAudio: [], startToAudio: [] };
      m.startToHook.push(...r.startToHook);
      m.hookToAudio.push(...r.hookToAudio);
      m.startToAudio.push(...r.startToAudio);
      merged.set(name, m);
    }
    const cell = (v: number[]): string =>
      v.length === 0 ? '—' : `${fmt(median(v), 0)} / ${fmt(percentile(v, 95), 0)}`;
    printTable(
      `TwiML webhook → first audio of the welcome greeting (ms, p50 / p95; one call at a time, callers sending line noise)`,
      ['path', 'calls', 'start → webhook', 'webhook → first audio', 'start → first audio'],
      [...merged].map(([name, r]) => [
        name,
        String(r.startToAudio.length),
        cell(r.startToHook),
        cell(r.hookToAudio),
        cell(r.startToAudio),
      ]),
    );
    const setupGap = [...webhooks].flatMap(([sid, at]) => {
      const s = setups.get(sid);
      return s === undefined ? [] : [s - at];
    });
    console.log(
      `webhook request → the relay app's setup message: p50 ${fmt(median(setupGap), 1)} ms, p95 ${fmt(percentile(setupGap, 95), 1)} ms (${setupGap.length} calls)`,
    );
  } finally {
    await bench.close();
    web.closeAllConnections();
    await new Promise((r) => web.close(r));
    for (const s of relayServer.clients) s.terminate();
    await new Promise((r) => relayServer.close(r));
  }
}
