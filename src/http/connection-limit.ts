/**
 * A cap on the connections one HTTP server holds at once, calls' WebSockets and event streams included.
 *
 * Without it, enough slow or silent clients use up the process's file descriptors, and then every new
 * connection (health checks too) is dropped by the kernel with no answer. Node's own `maxConnections`
 * also drops silently; here a connection past the cap is told why (`503`, `Retry-After`) and closed, while
 * the descriptors below the cap keep serving. Header and request timeouts (set on the server) make slow
 * clients give their slot back.
 */
import type { IncomingMessage, Server } from 'node:http';
import type { Socket } from 'node:net';

/** How long a refused connection may take to read its 503 before it is cut. */
const REFUSAL_LINGER_MS = 1000;

export interface ConnectionLimit {
  /** Connections open now. */
  readonly open: number;
  /** Connections refused since the start. */
  readonly refused: number;
}

export interface ConnectionLimitOptions {
  readonly maxConnections: number;
  /**
   * A connection that has not begun a request by then is closed. Node's header timeout covers only a
   * request under way, not a client that connects and says nothing.
   */
  readonly firstRequestTimeoutMs: number;
  readonly onRefused?: (open: number) => void;
}

export function limitConnections(server: Server, options: ConnectionLimitOptions): ConnectionLimit {
  const state = { open: 0, refused: 0 };
  const body = JSON.stringify({ error: 'too many connections; try again shortly' });
  const refusal =
    'HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n' +
    `Content-Length: ${Buffer.byteLength(body)}\r\nRetry-After: 1\r\nConnection: close\r\n\r\n${body}`;
  const silent = new WeakMap<Socket, NodeJS.Timeout>();
  const spoke = (socket: Socket): void => {
    clearTimeout(silent.get(socket));
    silent.delete(socket);
  };
  server.on('connection', (socket: Socket) => {
    if (state.open >= options.maxConnections) {
      state.refused++;
      options.onRefused?.(state.open);
      socket.on('error', () => undefined);
      socket.end(refusal);
      setTimeout(() => socket.destroy(), REFUSAL_LINGER_MS).unref();
      return;
    }
    state.open++;
    const timer = setTimeout(() => socket.destroy(), options.firstRequestTimeoutMs);
    timer.unref();
    silent.set(socket, timer);
    socket.once('close', () => {
      state.open--;
      spoke(socket);
    });
  });
  // The first request's headers are in: from here Node's request and keep-alive timeouts apply.
  server.on('request', (req: IncomingMessage) => spoke(req.socket));
  server.prependListener('upgrade', (req: IncomingMessage) => spoke(req.socket));
  return state;
}
