/**
 * The documents gateways fetch (Plivo XML, jambonz verbs, a Vonage NCCO), served by the app under its
 * public address: at unguessable paths, to GET and POST, for a while, and only so many at once.
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { DocumentHostFullError, PublishedDocuments } from '../../../src/app/document-host.js';
import { Router } from '../../../src/http/router.js';

let server: Server | undefined;

afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((r) => server?.close(r) ?? r(undefined));
  server = undefined;
});

/** The host's route on a real loopback server; its URLs are made under `publicUrl`. */
async function serve(host: PublishedDocuments): Promise<string> {
  const router = new Router(pino({ level: 'silent' }));
  router.mount(host.route());
  router.ready = true;
  server = createServer((req, res) => void router.dispatch(req, res));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('PublishedDocuments', () => {
  it('serves each document at an unguessable path under the public URL, to GET and POST, until it expires', async () => {
    let now = 0;
    const host = new PublishedDocuments({
      publicUrl: 'https://voice.example.com/vb/',
      ttlMs: 60_000,
      maxDocuments: 10,
      now: () => now,
    });
    const base = await serve(host);
    const url = await host.publish({
      contentType: 'application/xml',
      body: '<Response><Hangup/></Response>',
    });
    expect(url).toMatch(/^https:\/\/voice\.example\.com\/vb\/call-documents\/[A-Za-z0-9_-]{32}$/);
    const local = `${base}${new URL(url).pathname.replace('/vb', '')}`;
    const got = await fetch(local);
    expect(got.status).toBe(200);
    expect(got.headers.get('content-type')).toBe('application/xml');
    expect(await got.text()).toBe('<Response><Hangup/></Response>');
    const posted = await fetch(local, { method: 'POST', body: 'CallUUID=abc&From=%2B1555' });
    expect(posted.status).toBe(200);
    expect((await fetch(`${base}/call-documents/guessed`)).status).toBe(404);
    expect((await fetch(local, { method: 'DELETE' })).status).toBe(405);
    now = 60_000;
    expect((await fetch(local)).status).toBe(404);
    expect(host.size).toBe(0);
  });

  it('refuses a document past maxDocuments until older ones expire', async () => {
    let now = 0;
    const host = new PublishedDocuments({
      publicUrl: 'https://v.example',
      ttlMs: 10_000,
      maxDocuments: 2,
      now: () => now,
    });
    await host.publish({ contentType: 'application/json', body: '[]' });
    now = 5000;
    await host.publish({ contentType: 'application/json', body: '[]' });
    await expect(host.publish({ contentType: 'application/json', body: '[]' })).rejects.toThrow(
      DocumentHostFullError,
    );
    now = 10_000; // the first has expired
    await expect(host.publish({ contentType: 'application/json', body: '[]' })).resolves.toMatch(
      /call-documents/,
    );
  });
});
