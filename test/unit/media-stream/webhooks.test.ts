/** A flow's webhook gets every call event in its wire shape, against a real loopback HTTP server; failures are only logged. */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { toWire, type CallEvent } from '../../../adapters/media-stream/call-events.js';
import { postEvent, WEBHOOK_TIMEOUT_MS } from '../../../adapters/media-stream/webhooks.js';

const EVENT: CallEvent = { seq: 3, at: new Date(0).toISOString(), callId: 'CA1', type: 'dtmf', digit: '7' };

/** A logger that keeps its lines. */
function recordingLogger(): { log: pino.Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const log = pino(
    { level: 'warn' },
    { write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) },
  );
  return { log, lines };
}

async function until(predicate: () => boolean): Promise<void> {
  const deadline = performance.now() + 2000;
  while (!predicate()) {
    if (performance.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 5));
  }
}

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
});

async function listen(
  status: number,
  received: Array<{ req: IncomingMessage; body: string }>,
): Promise<string> {
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      received.push({ req, body });
      res.statusCode = status;
      res.end();
    });
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
}

describe('postEvent', () => {
  it('POSTs the event as JSON in its wire shape (the default sender, a real server)', async () => {
    const received: Array<{ req: IncomingMessage; body: string }> = [];
    const url = await listen(204, received);
    const { log, lines } = recordingLogger();
    postEvent(url, EVENT, { log });
    await until(() => received.length === 1);
    expect(received[0]!.req.method).toBe('POST');
    expect(received[0]!.req.url).toBe('/hook');
    expect(received[0]!.req.headers['content-type']).toBe('application/json');
    expect(JSON.parse(received[0]!.body)).toEqual(toWire(EVENT));
    await new Promise((r) => setTimeout(r, 20));
    expect(lines).toEqual([]);
  });

  it('logs an error status and a failure, and never rejects', async () => {
    const received: Array<{ req: IncomingMessage; body: string }> = [];
    const url = await listen(500, received);
    const { log, lines } = recordingLogger();
    postEvent(url, EVENT, { log });
    postEvent('http://127.0.0.1:9/unreachable', EVENT, {
      log,
      post: () => Promise.reject(new Error('refused')),
    });
    await until(() => lines.length === 2);
    expect(lines).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ msg: 'webhook answered with an error', status: 500, event: 'dtmf', url }),
        expect.objectContaining({ msg: 'webhook failed', err: 'refused', event: 'dtmf' }),
      ]),
    );
  });

  it('gives the sender a signal that times out, so a slow webhook is given up on', () => {
    let signal: AbortSignal | undefined;
    postEvent('http://example.invalid/', EVENT, {
      log: pino({ level: 'silent' }),
      post: (_url, _body, s) => {
        signal = s;
        return Promise.resolve(200);
      },
    });
    expect(signal).toBeDefined();
    expect(signal!.aborted).toBe(false);
    expect(WEBHOOK_TIMEOUT_MS).toBe(3000);
  });
});
