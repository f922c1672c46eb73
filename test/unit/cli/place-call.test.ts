/**
 * `voxbridge call NUMBER --wait` reads the instance's event stream: what it holds of it is bounded, and
 * an event it cannot read fails the command with a message, not a crash.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { runPlace } from '../../../src/cli/place-call.js';

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  server = undefined;
});

/** An instance that places the call, then streams `events` as they are asked for. */
async function instance(events: (write: (chunk: string) => boolean) => void): Promise<string> {
  server = createServer((req, res) => {
    if (req.method === 'POST') {
      res.writeHead(201, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ id: 'VB0123' }));
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    events((chunk) => res.write(chunk));
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const io = { out: () => undefined, err: () => undefined };
const plan = (baseUrl: string) => ({ baseUrl, controlToken: undefined, body: {}, wait: true });

describe('voxbridge call --wait against a hostile event stream', () => {
  it('stops reading an event that never ends, past 256 KiB', async () => {
    const url = await instance((write) => {
      const line = `data: ${'x'.repeat(64 * 1024)}`;
      for (let i = 0; i < 8; i++) write(line);
    });
    await expect(runPlace(plan(url), io)).rejects.toThrow(/without an event's end/);
  });

  it('fails with a message on an event that is not JSON', async () => {
    const url = await instance((write) => write('data: {not json\n\n'));
    await expect(runPlace(plan(url), io)).rejects.toThrow(/not JSON/);
  });

  it('follows a well-formed stream to the answer', async () => {
    const url = await instance((write) => {
      write(`data: ${JSON.stringify({ type: 'call.ringing', provider_call_id: 'CA1' })}\n\n`);
      write(`data: ${JSON.stringify({ type: 'call.answered', ring_ms: 900 })}\n\n`);
    });
    await expect(runPlace(plan(url), io)).resolves.toBeUndefined();
  });
});
