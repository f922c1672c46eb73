/**
 * One HTTP server's routing: parts mount under a path prefix (`/calls`, `/api/speech`, …); `/healthz` is
 * 503 until the process says it is ready, then 200; until then nothing else is routed. A handler that
 * throws costs its own request a 500 (or a cut connection once the answer has begun), never the process.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { sendJson, type RouteHandler } from './http.js';

export interface Route {
  /** `/calls`: the handler sees `/calls` and everything under it, with this prefix taken off. */
  readonly prefix: string;
  readonly handler: RouteHandler;
}

export class Router {
  private readonly routes: Route[] = [];
  /** Set by the composition root once every part is mounted; cleared when it starts shutting down. */
  ready = false;
  /**
   * More to say in `/healthz` once ready (a cluster's state): its `status` replaces `ok` (`degraded`
   * still answers 200: the instance serves what it holds).
   */
  health: (() => { status: string } & Record<string, unknown>) | undefined;

  constructor(private readonly logger: Logger) {}

  /** Routes are tried in the order they were mounted; the first handler that answers wins. */
  mount(...routes: readonly Route[]): void {
    this.routes.push(...routes);
  }

  async dispatch(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'http://localhost');
    } catch {
      sendJson(res, 400, { error: 'bad request target' });
      return;
    }
    if (url.pathname === '/healthz') {
      if (!this.ready) sendJson(res, 503, { status: 'starting' });
      else sendJson(res, 200, this.health?.() ?? { status: 'ok' });
      return;
    }
    // Parts mount while the process warms up; until all are there, nothing is routed.
    if (!this.ready) {
      sendJson(res, 503, { error: 'starting' }, { 'retry-after': '1' });
      return;
    }
    for (const { prefix, handler } of this.routes) {
      if (url.pathname !== prefix && !url.pathname.startsWith(`${prefix}/`)) continue;
      try {
        if (await handler(req, res, url.pathname.slice(prefix.length) || '/', url)) return;
      } catch (error) {
        this.logger.error({ err: error, path: url.pathname }, 'request failed');
        if (!res.headersSent) sendJson(res, 500, { error: 'internal error' });
        else res.destroy();
        return;
      }
    }
    sendJson(res, 404, { error: `no route for ${req.method ?? 'GET'} ${url.pathname}` });
  }
}
