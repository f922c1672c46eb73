/**
 * A document host for the ports of gateways that fetch their instructions from a URL (Plivo XML,
 * jambonz verbs, a Vonage `onAnswer` NCCO), as the app will host them: each document at its own
 * unguessable path on a loopback HTTP server, answered to GET and POST alike. It records what was
 * published and every fetch; `fetchDocument` is how the vendor fakes fetch one, as the gateway would.
 */
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { DocumentHost, HostedDocument } from '../../src/call-control/index.js';

export interface PublishedDocument extends HostedDocument {
  readonly url: string;
}

export class FakeDocumentHost implements DocumentHost {
  readonly published: PublishedDocument[] = [];
  readonly fetches: Array<{ readonly path: string; readonly method: string }> = [];
  readonly #server: Server;
  readonly #documents = new Map<string, HostedDocument>();
  #base = '';

  private constructor() {
    this.#server = createServer((req, res) => {
      const path = new URL(req.url ?? '/', 'http://host').pathname;
      this.fetches.push({ path, method: req.method ?? 'GET' });
      const doc = this.#documents.get(path);
      req.resume();
      if (!doc || (req.method !== 'GET' && req.method !== 'POST')) {
        res.writeHead(404).end();
        return;
      }
      res.writeHead(200, { 'content-type': doc.contentType }).end(doc.body);
    });
  }

  static async start(): Promise<FakeDocumentHost> {
    const host = new FakeDocumentHost();
    host.#server.listen(0, '127.0.0.1');
    await once(host.#server, 'listening');
    host.#base = `http://127.0.0.1:${(host.#server.address() as AddressInfo).port}`;
    return host;
  }

  publish(document: HostedDocument): Promise<string> {
    const path = `/documents/${randomUUID()}`;
    this.#documents.set(path, document);
    const url = `${this.#base}${path}`;
    this.published.push({ ...document, url });
    return Promise.resolve(url);
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}

/** A document fetched as a gateway fetches one: its status, type and text (a failure as status 0). */
export async function fetchDocument(
  url: string,
  method: 'GET' | 'POST' = 'GET',
): Promise<{ status: number; contentType: string; body: string }> {
  try {
    const res = await fetch(url, { method, signal: AbortSignal.timeout(2000) });
    return { status: res.status, contentType: res.headers.get('content-type') ?? '', body: await res.text() };
  } catch {
    return { status: 0, contentType: '', body: '' };
  }
}
