/**
 * A control request for a call or guild held by another instance, passed on to it over HTTP (undici,
 * keep-alive connections per instance) and its answer streamed back as it comes: a JSON answer, a
 * `say` that waits for the end of its utterance, an event stream that runs for the whole call.
 *
 * The forwarded request carries the client's own `Authorization` (the owner checks it as it checks
 * any request) and the cluster token in `x-voxbridge-cluster`, which tells the owner to answer itself
 * rather than forward again. `Host` is the owner's, and `Origin` is dropped: the instance that took
 * the request already applied the web-page checks. An owner that cannot be reached answers 503
 * `owner_unreachable` at once (refused) or within `connectTimeoutMs` (silent), never a hang.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { pipeline } from 'node:stream/promises';
import { Agent, request, type Dispatcher } from 'undici';
import { sendJson } from '../http/http.js';
import type { InstanceInfo } from './registry.js';

/** On a request between instances: the cluster token. */
export const CLUSTER_HEADER = 'x-voxbridge-cluster';
/** On a forwarded answer: the instance that answered. */
export const INSTANCE_HEADER = 'x-voxbridge-instance';

/** Not passed on: hop-by-hop headers, the ones rewritten here, and any cluster header a client sent. */
const DROPPED_REQUEST = new Set([
  'host',
  'origin',
  'referer',
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'expect',
  CLUSTER_HEADER,
  INSTANCE_HEADER,
]);
const DROPPED_RESPONSE = new Set(['connection', 'keep-alive', 'transfer-encoding', 'trailer', 'upgrade']);

export interface ForwarderOptions {
  /** The cluster token; undefined on a loopback cluster with no token set. */
  token: string | undefined;
  connectTimeoutMs: number;
}

export interface ForwardStats {
  forwarded: number;
  unreachable: number;
}

export class Forwarder {
  readonly stats: ForwardStats = { forwarded: 0, unreachable: 0 };
  private readonly agent: Agent;

  constructor(private readonly options: ForwarderOptions) {
    this.agent = new Agent({
      connect: { timeout: options.connectTimeoutMs },
      // A `say` with `wait` lasts as long as its utterance, an event stream as long as its call.
      headersTimeout: 0,
      bodyTimeout: 0,
      // Connections to each instance are kept and reused (one request at a time on each).
      keepAliveTimeout: 30_000,
    });
  }

  /** Headers of a request to another instance: `headers` as given, plus the cluster token. */
  private clusterHeaders(headers: Record<string, string>): Record<string, string> {
    return this.options.token === undefined
      ? { ...headers, [CLUSTER_HEADER]: '1' }
      : { ...headers, [CLUSTER_HEADER]: this.options.token };
  }

  /** Passes `req` on to `owner` and streams the answer back into `res`. */
  async forward(req: IncomingMessage, res: ServerResponse, owner: InstanceInfo, what: string): Promise<void> {
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers))
      if (value !== undefined && !DROPPED_REQUEST.has(name))
        headers[name] = Array.isArray(value) ? value.join(', ') : value;
    const method = req.method ?? 'GET';
    const hasBody = method !== 'GET' && method !== 'HEAD' && method !== 'DELETE';
    const abort = new AbortController();
    const onClose = (): void => {
      if (!res.writableFinished) abort.abort();
    };
    res.once('close', onClose);
    let answer: Dispatcher.ResponseData;
    try {
      answer = await request(new URL(req.url ?? '/', owner.url), {
        dispatcher: this.agent,
        method,
        headers: this.clusterHeaders(headers),
        body: hasBody ? req : null,
        signal: abort.signal,
      });
    } catch (error) {
      res.off('close', onClose);
      if (abort.signal.aborted) return; // the client went away
      this.stats.unreachable++;
      if (!res.headersSent)
        sendJson(
          res,
          503,
          {
            error: 'owner_unreachable',
            message: `${what} is held by instance ${owner.id} (${owner.url}), which did not answer: ${(error as Error).message}`,
            instance: owner.id,
          },
          { 'retry-after': '2' },
        );
      else res.destroy();
      return;
    }
    this.stats.forwarded++;
    const out: Record<string, string | string[]> = { [INSTANCE_HEADER]: owner.id };
    for (const [name, value] of Object.entries(answer.headers))
      if (value !== undefined && !DROPPED_RESPONSE.has(name)) out[name] = value;
    res.writeHead(answer.statusCode, out);
    // An event stream is seen open at once; any other answer goes out with its body in one write.
    if (String(answer.headers['content-type'] ?? '').startsWith('text/event-stream')) res.flushHeaders();
    try {
      await pipeline(answer.body, res);
    } catch {
      // Either side went away mid-answer: the pipeline has destroyed both.
    } finally {
      res.off('close', onClose);
    }
  }

  /**
   * `GET path` on `instance` with the client's authorization, for a list gathered from every
   * instance; rejects when it does not answer 200 with JSON within `timeoutMs`.
   */
  async getJson(
    instance: InstanceInfo,
    path: string,
    authorization: string | undefined,
    timeoutMs: number,
  ): Promise<unknown> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (authorization !== undefined) headers['authorization'] = authorization;
    const answer = await request(new URL(path, instance.url), {
      dispatcher: this.agent,
      method: 'GET',
      headers: this.clusterHeaders(headers),
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (answer.statusCode !== 200) {
      await answer.body.dump();
      throw new Error(`instance ${instance.id} answered ${answer.statusCode}`);
    }
    return answer.body.json();
  }

  /** Cuts every forwarded request still open (event streams run until then). */
  async close(): Promise<void> {
    await this.agent.destroy();
  }
}
