/**
 * A control request for a call or guild held by another instance, passed on to it over HTTP (undici,
 * keep-alive connections per instance) and its answer relayed back: a JSON answer, a `say` that waits
 * for the end of its utterance, an event stream that runs for the whole call.
 *
 * The instance that takes the request has already checked its client; the owner is told so by a
 * signature (`signature.ts`), never by the client's credentials: `Authorization`, cookies and every
 * other header not on a short list stay here, and the cluster token never travels. The owner found in
 * the registry may be anyone who could write to Redis, so its answer is bounded:
 *
 * - A JSON (or any non-stream) answer is read whole, up to `maxAnswerBytes`, before a byte of it is
 *   relayed: past the limit the client gets 502 `owner_answer_too_large` and the connection to the owner
 *   is cut. Its headers must come within `answerTimeoutMs` (a `say`'s come when its speech ends: for it
 *   the deadline starts with them), its body within `answerTimeoutMs` of them; else 504 `owner_timeout`.
 * - An event stream is piped with backpressure (nothing buffered beyond the sockets'), for as long as
 *   the call lasts; an owner that sends nothing, not even its keep-alive comment, for
 *   `STREAM_IDLE_TIMEOUT_MS` is cut.
 * - An owner that cannot be reached answers 503 `owner_unreachable` at once (refused) or within
 *   `connectTimeoutMs` (silent), never a hang.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { pipeline } from 'node:stream/promises';
import { Agent, request, type Dispatcher } from 'undici';
import { DEFAULT_EVENT_STREAM } from '../http/event-stream.js';
import { BodyTooLargeError, isJsonType, readBody, sendJson } from '../http/http.js';
import { jsonDepthExceeds } from '../http/json-depth.js';
import { PeerAnswerError, readAnswer } from './peer-answer.js';
import type { InstanceInfo } from './instance-entry.js';
import { CLUSTER_HEADER, sha256, signRequest } from './signature.js';

/** On a forwarded answer: the instance that answered. */
export const INSTANCE_HEADER = 'x-voxbridge-instance';
/** A forwarded event stream that sends nothing for this long is cut (its owner sends a comment every 15 s). */
export const STREAM_IDLE_TIMEOUT_MS = 3 * DEFAULT_EVENT_STREAM.keepaliveMs;
/**
 * The largest JSON body forwarded (read whole, to be signed): no control route takes a larger one (a
 * say's is the largest, under 700 KB: `test/unit/cluster/limits.test.ts` holds the two together).
 */
export const FORWARDED_JSON_MAX_BYTES = 1024 * 1024;

/** The client's headers passed on: what the owner's routes read. Nothing that could carry a credential. */
const PASSED_REQUEST = ['accept', 'content-type', 'last-event-id', 'user-agent'] as const;
/** The owner's headers relayed: what our routes send. Nothing that could set state in a browser. */
const PASSED_RESPONSE = [
  'content-type',
  'cache-control',
  'retry-after',
  'allow',
  'www-authenticate',
  'x-content-type-options',
] as const;
const EMPTY_SHA256 = sha256('');

export interface ForwarderOptions {
  /** The cluster token; undefined on a loopback cluster with no token set. */
  token: string | undefined;
  connectTimeoutMs: number;
  /** Headers of an answer (but a `say`'s), and the whole of a JSON answer once its headers came. */
  answerTimeoutMs: number;
  /** The largest answer read (anything but an event stream). */
  maxAnswerBytes: number;
}

export interface ForwardStats {
  forwarded: number;
  unreachable: number;
  /** Answers not relayed: too large, too slow, or cut. */
  refused: number;
}

export interface ForwardOptions {
  /**
   * How long the answer's headers may take: `speech` for a `say`'s, which come when its speech ends
   * (only the client bounds that wait; the body's deadline starts with them); a number for a request
   * that waits for something of its own (a Discord join); by default `answerTimeoutMs`.
   */
  readonly headersWithin?: number | 'speech';
}

export class Forwarder {
  readonly stats: ForwardStats = { forwarded: 0, unreachable: 0, refused: 0 };
  private readonly agent: Agent;

  constructor(private readonly options: ForwarderOptions) {
    this.agent = new Agent({
      connect: { timeout: options.connectTimeoutMs },
      // Deadlines are this module's (they differ by request); an event stream's idle bound is here.
      headersTimeout: 0,
      bodyTimeout: STREAM_IDLE_TIMEOUT_MS,
      // Connections to each instance are kept and reused (one request at a time on each).
      keepAliveTimeout: 30_000,
    });
  }

  /** Passes `req` on to `owner` and relays the answer into `res`. */
  async forward(
    req: IncomingMessage,
    res: ServerResponse,
    owner: InstanceInfo,
    what: string,
    { headersWithin = this.options.answerTimeoutMs }: ForwardOptions = {},
  ): Promise<void> {
    const headers: Record<string, string> = {};
    for (const name of PASSED_REQUEST) {
      const value = req.headers[name];
      if (typeof value === 'string') headers[name] = value;
    }
    const method = (req.method ?? 'GET').toUpperCase();
    let body: Buffer | IncomingMessage | null = null;
    let bodySha256: Buffer | undefined = EMPTY_SHA256;
    if (method !== 'GET' && method !== 'HEAD' && method !== 'DELETE') {
      if (isJsonType(headers['content-type'])) {
        // Every route reads a JSON body whole: read here, it can be signed.
        try {
          body = await readBody(req, FORWARDED_JSON_MAX_BYTES);
        } catch (error) {
          if (!(error instanceof BodyTooLargeError)) throw error;
          sendJson(res, 413, { error: error.message });
          return;
        }
        bodySha256 = sha256(body);
      } else if (
        req.headers['transfer-encoding'] !== undefined ||
        Number(req.headers['content-length']) > 0
      ) {
        // A text spoken as it arrives: streamed on, unhashed (signature.ts).
        body = req;
        bodySha256 = undefined;
        const length = req.headers['content-length'];
        if (length !== undefined) headers['content-length'] = length;
      }
    }
    // The owner's origin, always: a request target like `//elsewhere/calls/…` names a host of its own.
    const target = new URL(req.url ?? '/', 'http://request.invalid');
    const url = new URL(owner.url);
    url.pathname = target.pathname;
    url.search = target.search;
    headers[CLUSTER_HEADER] = signRequest(
      {
        method,
        pathAndQuery: url.pathname + url.search,
        contentType: headers['content-type'],
        bodySha256,
        target: owner.id,
        bearer: req.headers.authorization !== undefined,
      },
      this.options.token,
    );

    const cut = new AbortController();
    let clientGone = false;
    let timedOut = false;
    let timer: NodeJS.Timeout | undefined;
    const deadline = (ms: number): void => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        timedOut = true;
        cut.abort();
      }, ms);
    };
    const onClose = (): void => {
      if (res.writableFinished) return;
      clientGone = true;
      cut.abort();
    };
    res.once('close', onClose);
    if (headersWithin !== 'speech') deadline(headersWithin);
    try {
      let answer: Dispatcher.ResponseData;
      try {
        answer = await request(url, { dispatcher: this.agent, method, headers, body, signal: cut.signal });
      } catch (error) {
        if (clientGone) return;
        if (timedOut)
          throw new PeerAnswerError('owner_timeout', 'it sent no answer in time', { cause: error });
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
      const out: Record<string, string | string[]> = { [INSTANCE_HEADER]: owner.id };
      for (const name of PASSED_RESPONSE) {
        const value = answer.headers[name];
        if (value !== undefined) out[name] = value;
      }
      if (String(answer.headers['content-type'] ?? '').startsWith('text/event-stream')) {
        clearTimeout(timer);
        this.stats.forwarded++;
        res.writeHead(answer.statusCode, out);
        res.flushHeaders(); // seen open at once
        // Backpressure both ways: a client that does not read stops the reads from the owner.
        await pipeline(answer.body, res).catch(() => undefined); // either side went away: both are destroyed
        return;
      }
      deadline(this.options.answerTimeoutMs);
      let text: Buffer;
      try {
        text = await readAnswer(answer, this.options.maxAnswerBytes);
      } catch (error) {
        if (clientGone) return;
        if (error instanceof PeerAnswerError) throw error;
        if (timedOut)
          throw new PeerAnswerError('owner_timeout', 'its answer did not end in time', { cause: error });
        throw new PeerAnswerError('owner_answer_broken', 'its answer was cut', { cause: error });
      }
      this.stats.forwarded++;
      res.writeHead(answer.statusCode, { ...out, 'content-length': text.length });
      res.end(text);
    } catch (error) {
      if (!(error instanceof PeerAnswerError)) throw error;
      this.stats.refused++;
      if (res.headersSent) res.destroy();
      else
        sendJson(res, error.status, {
          error: error.code,
          message: `${what} is held by instance ${owner.id}, whose answer was not relayed: ${error.message}`,
          instance: owner.id,
        });
    } finally {
      clearTimeout(timer);
      res.off('close', onClose);
    }
  }

  /**
   * `GET path` on `instance`, for a list gathered from every instance: its JSON, read up to
   * `limitBytes` within `signal`, and its size. Rejects on anything but 200 with JSON.
   */
  async getJson(
    instance: InstanceInfo,
    path: string,
    bearer: boolean,
    limitBytes: number,
    signal: AbortSignal,
  ): Promise<{ value: unknown; bytes: number }> {
    const url = new URL(path, instance.url);
    const headers = {
      accept: 'application/json',
      [CLUSTER_HEADER]: signRequest(
        {
          method: 'GET',
          pathAndQuery: url.pathname + url.search,
          contentType: undefined,
          bodySha256: EMPTY_SHA256,
          target: instance.id,
          bearer,
        },
        this.options.token,
      ),
    };
    const answer = await request(url, { dispatcher: this.agent, method: 'GET', headers, signal });
    if (answer.statusCode !== 200) {
      answer.body.destroy();
      throw new Error(`instance ${instance.id} answered ${answer.statusCode}`);
    }
    const raw = await readAnswer(answer, limitBytes);
    const text = raw.toString('utf8');
    if (jsonDepthExceeds(text)) throw new Error(`instance ${instance.id} answered JSON nested too deep`);
    return { value: JSON.parse(text) as unknown, bytes: raw.length };
  }

  /** Cuts every forwarded request still open (event streams run until then). */
  async close(): Promise<void> {
    await this.agent.destroy();
  }
}
