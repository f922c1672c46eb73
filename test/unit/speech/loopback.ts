/**
 * A real node:http server on 127.0.0.1, port 0, for the speech client's unit tests. It records every
 * request (with its whole body), numbers connections and timestamps when each one closes, so tests can
 * assert on keep-alive reuse and on how fast an abort reaches the server.
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { once } from 'node:events';
import { performance } from 'node:perf_hooks';
import { afterEach, expect } from 'vitest';
import { SpeechClient, type SpeechClientOptions } from '../../../src/speech/client.js';
import { SpeechServiceError } from '../../../src/speech/errors.js';

export interface RecordedRequest {
  readonly method: string;
  readonly url: string;
  readonly path: string;
  readonly query: URLSearchParams;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
  /** 1-based number of the connection it came on. */
  readonly connection: number;
}

export type Handler = (
  req: IncomingMessage,
  res: ServerResponse,
  info: { readonly index: number; readonly body: Buffer; readonly connection: number },
) => void | Promise<void>;

export interface Loopback {
  readonly url: string;
  readonly requests: RecordedRequest[];
  /** Connections accepted so far. */
  connectionCount(): number;
  /** Resolves with `performance.now()` when connection `n` closes (at once if it already did). */
  connectionClosed(n: number): Promise<number>;
  close(): Promise<void>;
}

export async function startLoopback(handler: Handler): Promise<Loopback> {
  const requests: RecordedRequest[] = [];
  const sockets = new Map<Socket, number>();
  const closedAt = new Map<number, number>();
  const waiters = new Map<number, Array<(t: number) => void>>();
  let accepted = 0;

  const server = createServer((req, res) => {
    const connection = sockets.get(req.socket) ?? 0;
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      const body = Buffer.concat(parts);
      const url = new URL(req.url ?? '/', 'http://localhost');
      const index = requests.length;
      requests.push({
        method: req.method ?? '',
        url: req.url ?? '',
        path: url.pathname,
        query: url.searchParams,
        headers: req.headers,
        body,
        connection,
      });
      Promise.resolve(handler(req, res, { index, body, connection })).catch((error: unknown) => {
        res.destroy(error as Error);
      });
    });
  });
  server.on('connection', (socket) => {
    const n = ++accepted;
    sockets.set(socket, n);
    socket.on('close', () => {
      const t = performance.now();
      sockets.delete(socket);
      closedAt.set(n, t);
      for (const resolve of waiters.get(n) ?? []) resolve(t);
      waiters.delete(n);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    connectionCount: () => accepted,
    connectionClosed(n) {
      const t = closedAt.get(n);
      if (t !== undefined) return Promise.resolve(t);
      return new Promise((resolve) => {
        const list = waiters.get(n) ?? [];
        list.push(resolve);
        waiters.set(n, list);
      });
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The API key the speech tests' clients send unless a file picks its own. */
export const KEY = 'test-key-0123456789';

interface Closable {
  close(): Promise<void>;
}

export interface LoopbackClients {
  /**
   * Starts a loopback server answering with `handler` and returns a `SpeechClient` for it:
   * `{ baseUrl: server.url, apiKey: KEY, ...defaults, ...options }`.
   */
  setup(handler: Handler, options?: Partial<SpeechClientOptions>): Promise<SpeechClient>;
  /** Starts a loopback server answering with `handler` and returns the client `connect` makes for it. */
  open<C extends Closable>(handler: Handler, connect: (server: Loopback) => C): Promise<C>;
  /** Has `client` (one made without a loopback server) closed after the test as well. */
  track<C extends Closable>(client: C): C;
  /** The server the current test started last. */
  readonly server: Loopback;
}

/**
 * The speech tests' set-up: servers and clients started through it are closed after each test (the
 * clients first), by an `afterEach` it registers in the calling file.
 */
export function loopbackClients(defaults: Partial<SpeechClientOptions> = {}): LoopbackClients {
  const clients: Closable[] = [];
  const servers: Loopback[] = [];

  afterEach(async () => {
    for (const client of clients.splice(0)) await client.close();
    for (const server of servers.splice(0)) await server.close();
  });

  const track = <C extends Closable>(client: C): C => {
    clients.push(client);
    return client;
  };
  const open = async <C extends Closable>(handler: Handler, connect: (server: Loopback) => C): Promise<C> => {
    const server = await startLoopback(handler);
    servers.push(server);
    return track(connect(server));
  };

  return {
    setup: (handler, options = {}) =>
      open(
        handler,
        (server) => new SpeechClient({ baseUrl: server.url, apiKey: KEY, ...defaults, ...options }),
      ),
    open,
    track,
    get server(): Loopback {
      const server = servers.at(-1);
      if (server === undefined) throw new Error('no loopback server started in this test');
      return server;
    },
  };
}

/** The `SpeechServiceError` that `p` rejects with (failing the test if it resolves or rejects otherwise). */
export async function failureOf(p: Promise<unknown>): Promise<SpeechServiceError> {
  const error = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(SpeechServiceError);
  return error as SpeechServiceError;
}

/** Sends `parts` as separate chunks, `gapMs` apart, so each arrives in its own read. */
export async function writeSpaced(
  res: ServerResponse,
  parts: readonly Uint8Array[],
  gapMs: number,
): Promise<void> {
  for (const part of parts) {
    res.write(part);
    await new Promise((r) => setTimeout(r, gapMs));
  }
}

export function jsonError(
  res: ServerResponse,
  status: number,
  detail: Record<string, unknown>,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify({ detail });
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

export const delay = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** PCM-ish bytes whose value encodes their position, so reassembly errors show. */
export function patternBytes(length: number, start = 0): Buffer {
  const buf = Buffer.allocUnsafe(length);
  for (let i = 0; i < length; i++) buf[i] = (start + i) & 0xff;
  return buf;
}
