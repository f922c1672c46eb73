/**
 * The webhook side of a Twilio voice app, written from Twilio's docs (a plain `node:http` server,
 * nothing of ours): each path answers TwiML for the form Twilio posts (or the query of a GET), and
 * every request is recorded with its `X-Twilio-Signature` checked by the official `twilio` library.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import twilio from 'twilio';

export interface TwimlRequest {
  path: string;
  method: string;
  params: Record<string, string>;
  /** Whether `twilio.validateRequest` accepted its signature. */
  signed: boolean;
  headers: IncomingMessage['headers'];
}

/** What a path answers: TwiML text (200, text/xml), or a status and body of one's own. */
export type TwimlRoute =
  | string
  | ((
      request: TwimlRequest,
    ) => string | { status: number; body: string | Buffer; type?: string } | typeof HANG);

/** A route's answer that is no answer: the request is left waiting (until the app closes). */
export const HANG = Symbol('hang');

export class TwimlApp {
  readonly requests: TwimlRequest[] = [];
  readonly routes = new Map<string, TwimlRoute>();
  /** Sockets of requests never answered ('hang'), destroyed on close. */
  private readonly hanging: ServerResponse[] = [];

  private constructor(
    private readonly server: Server,
    readonly authToken: string,
  ) {
    server.on('request', (req, res) => void this.handle(req, res));
  }

  static async start(authToken: string): Promise<TwimlApp> {
    const server = createServer();
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    return new TwimlApp(server, authToken);
  }

  get origin(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  get host(): string {
    return `127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  on(path: string, route: TwimlRoute): this {
    this.routes.set(path, route);
    return this;
  }

  of(path: string): TwimlRequest[] {
    return this.requests.filter((r) => r.path === path);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const url = new URL(req.url ?? '/', this.origin);
    const body = Buffer.concat(chunks).toString('utf8');
    const params: Record<string, string> = {};
    if (req.method === 'POST') for (const [k, v] of new URLSearchParams(body)) params[k] = v;
    const signature = String(req.headers['x-twilio-signature'] ?? '');
    // Twilio's own check: the full URL requested, and the POST parameters (none for a GET).
    const signed = twilio.validateRequest(this.authToken, signature, url.href, params);
    if (req.method === 'GET') for (const [k, v] of url.searchParams) params[k] = v;
    const request: TwimlRequest = {
      path: url.pathname,
      method: req.method ?? '',
      params,
      signed,
      headers: req.headers,
    };
    this.requests.push(request);
    const route = this.routes.get(url.pathname);
    if (route === undefined) {
      res.writeHead(404).end();
      return;
    }
    const answer = typeof route === 'string' ? route : route(request);
    if (answer === HANG) {
      this.hanging.push(res);
      return;
    }
    if (typeof answer === 'string') {
      res.writeHead(200, { 'content-type': 'text/xml' }).end(answer);
      return;
    }
    res.writeHead(answer.status, { 'content-type': answer.type ?? 'text/xml' }).end(answer.body);
  }

  async close(): Promise<void> {
    for (const res of this.hanging) res.destroy();
    this.server.closeAllConnections();
    await new Promise((r) => this.server.close(r));
  }
}
