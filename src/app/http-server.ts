/**
 * The one HTTP server every part mounts on: Node's server with the timeouts that make slow clients give
 * their slot back, the connection cap, the Host/Origin guard on every request (and, through the calls
 * part, on every upgrade), and the router. Listening starts here, before the parts, so `/healthz`
 * answers 503 while they warm up.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { once } from 'node:events';
import type { Logger } from 'pino';
import { limitConnections, type ConnectionLimit } from '../http/connection-limit.js';
import { sendJson } from '../http/http.js';
import { Router } from '../http/router.js';
import { isLoopbackHost, WebGuard } from '../http/web-guard.js';
import type { Config } from './config.js';

export interface HttpServer {
  readonly server: Server;
  /** `http://host:port` as it listens. */
  readonly url: string;
  readonly router: Router;
  readonly guard: WebGuard;
  readonly connections: ConnectionLimit;
  /** Ends every connection and stops listening. */
  close(): Promise<void>;
}

export async function startHttpServer(config: Config['server'], logger: Logger): Promise<HttpServer> {
  const router = new Router(logger);
  const guard = new WebGuard({ allowedHosts: config.allowedHosts });
  const server = createServer(
    {
      headersTimeout: config.headersTimeoutMs,
      requestTimeout: config.requestTimeoutMs,
      keepAliveTimeout: config.keepAliveTimeoutMs,
      // Timeouts are enforced by a periodic sweep; the default (30 s) lets slow clients linger.
      connectionsCheckingInterval: Math.min(1000, config.headersTimeoutMs / 2),
    },
    (req, res) => {
      const verdict = guard.checkRequest(req);
      if (!verdict.ok) {
        logger.warn(
          { host: req.headers.host, origin: req.headers.origin, method: req.method },
          verdict.reason,
        );
        sendJson(res, 403, { error: verdict.reason });
        return;
      }
      void router.dispatch(req, res);
    },
  );
  const connections = limitConnections(server, {
    maxConnections: config.maxConnections,
    firstRequestTimeoutMs: config.headersTimeoutMs,
    onRefused: (open) => logger.warn({ open }, 'connection refused: at server.maxConnections'),
  });
  server.listen(config.port, config.host);
  await once(server, 'listening');
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  if (!isLoopbackHost(config.host) && config.allowedHosts.length === 0)
    logger.warn(
      { host: config.host },
      'server.allowedHosts is empty: only requests to an IP address or a loopback name are answered; ' +
        'add the host names gateways and browsers use (ALLOWED_HOSTS=voxbridge.example.com)',
    );
  return {
    server,
    url: `http://${host}:${address.port}`,
    router,
    guard,
    connections,
    async close() {
      router.ready = false;
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
