/**
 * The loopback HTTP server under every fake gateway REST API: real node:http on 127.0.0.1 and a free
 * port, each request read whole (form or JSON body parsed as the vendor's API would), handed to the
 * vendor fake's route, recorded with what was answered. Faults a test can queue for the next request:
 * an answer of its own (a documented error, a body quoting a secret), an answer larger than any client
 * should read (with or without its length declared), or no answer at all until the server closes.
 */
import { once } from 'node:events';
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request as the fake received it. */
export interface RecordedRequest {
  readonly method: string;
  /** The path, percent-decoded segment by segment as a router would see it. */
  readonly path: string;
  readonly rawPath: string;
  readonly query: Readonly<Record<string, string>>;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  /** `application/x-www-form-urlencoded` bodies: every field, repeated keys kept in order. */
  readonly form: Readonly<Record<string, readonly string[]>> | undefined;
  /** `application/json` bodies, parsed (undefined when the body is not JSON). */
  readonly json: unknown;
  /** What the fake answered (undefined while it hangs). */
  status?: number;
  /** `performance.now()` when its body had arrived whole. */
  readonly receivedAt: number;
}

/** What a route answers: a JSON value, a text, or nothing. */
export interface Reply {
  readonly status: number;
  readonly json?: unknown;
  readonly text?: string;
  readonly contentType?: string;
}

export type Fault =
  /** Answer this instead of the route. */
  | { readonly kind: 'answer'; readonly reply: Reply }
  /** Never answer; the connection stays open until the server closes. */
  | { readonly kind: 'hang' }
  /** A 200 whose JSON body is `bytes` long; `declared`: with its Content-Length (default), or chunked. */
  | { readonly kind: 'oversize'; readonly bytes: number; readonly declared?: boolean };

export type Route = (request: RecordedRequest) => Reply | Promise<Reply>;

export function json(status: number, value: unknown): Reply {
  return { status, json: value };
}

export function empty(status: number): Reply {
  return { status };
}

function parseForm(body: string): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const [k, v] of new URLSearchParams(body)) (out[k] ??= []).push(v);
  return out;
}

function decodedPath(raw: string): string {
  return raw
    .split('/')
    .map((segment) => {
      try {
        return decodeURIComponent(segment);
      } catch {
        return segment;
      }
    })
    .join('/');
}

export class FakeRestServer {
  readonly requests: RecordedRequest[] = [];
  readonly #server: Server;
  #route: Route = () => ({ status: 404, text: 'no route' });
  readonly #faults: Fault[] = [];
  readonly #hanging = new Set<ServerResponse>();
  #url = '';

  private constructor() {
    this.#server = createServer((req, res) => void this.#handle(req, res));
  }

  /** A server on a free loopback port; its vendor fake gives it its route with `use`. */
  static async start(): Promise<FakeRestServer> {
    const fake = new FakeRestServer();
    fake.#server.listen(0, '127.0.0.1');
    await once(fake.#server, 'listening');
    const { port } = fake.#server.address() as AddressInfo;
    fake.#url = `http://127.0.0.1:${port}`;
    return fake;
  }

  get url(): string {
    return this.#url;
  }

  /** Every request (but those a fault takes) goes to `route`. */
  use(route: Route): void {
    this.#route = route;
  }

  readonly #listeners = new Set<(request: RecordedRequest) => void>();

  /** The next request for which `match` holds, as it arrives (before it is answered). */
  nextRequest(match: (request: RecordedRequest) => boolean, timeoutMs = 10_000): Promise<RecordedRequest> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#listeners.delete(listener);
        reject(new Error(`no matching request within ${timeoutMs} ms`));
      }, timeoutMs);
      const listener = (request: RecordedRequest): void => {
        if (!match(request)) return;
        clearTimeout(timer);
        this.#listeners.delete(listener);
        resolve(request);
      };
      this.#listeners.add(listener);
    });
  }

  /** The next request (after any already queued) meets `fault` instead of the route. */
  failNext(fault: Fault): void {
    this.#faults.push(fault);
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    const url = new URL(req.url ?? '/', 'http://fake');
    const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim();
    let parsed: unknown;
    if (type === 'application/json')
      try {
        parsed = JSON.parse(body);
      } catch {
        parsed = undefined;
      }
    const recorded: RecordedRequest = {
      method: req.method ?? 'GET',
      path: decodedPath(url.pathname),
      rawPath: url.pathname,
      query: Object.fromEntries(url.searchParams),
      headers: req.headers,
      body,
      form: type === 'application/x-www-form-urlencoded' ? parseForm(body) : undefined,
      json: parsed,
      receivedAt: performance.now(),
    };
    this.requests.push(recorded);
    for (const listener of [...this.#listeners]) listener(recorded);
    const fault = this.#faults.shift();
    if (fault?.kind === 'hang') {
      this.#hanging.add(res);
      return;
    }
    if (fault?.kind === 'oversize') {
      const padding = 'x'.repeat(Math.max(0, fault.bytes - 20));
      const text = JSON.stringify({ sid: 'big', padding });
      recorded.status = 200;
      const headers: Record<string, string | number> = { 'content-type': 'application/json' };
      if (fault.declared !== false) headers['content-length'] = Buffer.byteLength(text);
      res.writeHead(200, headers);
      // In pieces, so an undeclared body passes the bound while it arrives.
      for (let at = 0; at < text.length; at += 16_384) res.write(text.slice(at, at + 16_384));
      res.end();
      return;
    }
    let reply: Reply;
    try {
      reply = fault?.kind === 'answer' ? fault.reply : await this.#route(recorded);
    } catch (error) {
      reply = { status: 500, text: `fake route failed: ${(error as Error).message}` };
    }
    recorded.status = reply.status;
    if (reply.json !== undefined) {
      res.writeHead(reply.status, { 'content-type': reply.contentType ?? 'application/json' });
      res.end(JSON.stringify(reply.json));
    } else if (reply.text !== undefined) {
      res.writeHead(reply.status, { 'content-type': reply.contentType ?? 'text/plain' });
      res.end(reply.text);
    } else {
      res.writeHead(reply.status);
      res.end();
    }
  }

  async close(): Promise<void> {
    for (const res of this.#hanging) res.destroy();
    this.#hanging.clear();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}

/** The `Authorization: Basic` credentials of a request, decoded; undefined when absent or malformed. */
export function basicCredentials(
  headers: IncomingHttpHeaders,
): { user: string; password: string } | undefined {
  const [scheme, value] = (headers.authorization ?? '').split(' ');
  if (scheme !== 'Basic' || value === undefined) return undefined;
  const decoded = Buffer.from(value, 'base64').toString('utf8');
  const at = decoded.indexOf(':');
  return at < 0 ? undefined : { user: decoded.slice(0, at), password: decoded.slice(at + 1) };
}

/** The `Authorization: Bearer` token of a request. */
export function bearerToken(headers: IncomingHttpHeaders): string | undefined {
  const [scheme, value] = (headers.authorization ?? '').split(' ');
  return scheme === 'Bearer' ? value : undefined;
}

/** Whether the request's body was sent as `type`. */
export function contentTypeIs(request: RecordedRequest, type: string): boolean {
  return (request.headers['content-type'] ?? '').split(';')[0]?.trim() === type;
}

/** One value of a form field (the first), or undefined. */
export function field(request: RecordedRequest, name: string): string | undefined {
  return request.form?.[name]?.[0];
}

/** A fresh id: `prefix` and 32 hex digits (Twilio's form), or a UUID. */
export function hexId(prefix: string): string {
  let hex = '';
  for (let i = 0; i < 32; i++) hex += Math.floor(Math.random() * 16).toString(16);
  return `${prefix}${hex}`;
}
