import type { IncomingMessage, ServerResponse } from 'node:http';
import { createHash, timingSafeEqual } from 'node:crypto';

/** A request handler of a mounted part. It answers `true` when it handled the request. */
export type RouteHandler = (
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  url: URL,
) => Promise<boolean>;

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

/**
 * What another instance of the cluster proved about a request it signed and forwarded here
 * (src/cluster/signature.ts): whether its client presented a bearer token that instance accepted, and
 * the digest its body must have. The client's token itself is never forwarded.
 */
export interface PeerProof {
  readonly bearer: boolean;
  /** SHA-256 the body must have; undefined for a text streamed as it arrives (not hashed). */
  readonly bodySha256: Buffer | undefined;
}

const PEER_PROOF = Symbol('voxbridge.peerProof');
type ProvenRequest = IncomingMessage & { [PEER_PROOF]?: PeerProof };

/** Marks `req` as a request another instance signed (set only once its signature verified). */
export function setPeerProof(req: IncomingMessage, proof: PeerProof): void {
  (req as ProvenRequest)[PEER_PROOF] = proof;
}

export function peerProof(req: IncomingMessage): PeerProof | undefined {
  return (req as ProvenRequest)[PEER_PROOF];
}

/** A signed body that is not the body that was signed. */
export class BodyDigestError extends Error {
  override readonly name = 'BodyDigestError';
  readonly code = 'body_digest_mismatch';
  constructor() {
    super('the body is not the one the forwarding instance signed');
  }
}

/**
 * Reads a request body up to `limitBytes`; past that it rejects with `BodyTooLargeError`. A body another
 * instance signed must be the one it signed (`BodyDigestError`).
 */
export async function readBody(req: IncomingMessage, limitBytes: number): Promise<Buffer> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buf = chunk as Buffer;
    size += buf.length;
    if (size > limitBytes) throw new BodyTooLargeError(limitBytes);
    parts.push(buf);
  }
  const body = Buffer.concat(parts, size);
  const signed = peerProof(req)?.bodySha256;
  if (signed !== undefined && !timingSafeEqual(createHash('sha256').update(body).digest(), signed))
    throw new BodyDigestError();
  return body;
}

/**
 * A text body as it arrives, decoded as UTF-8 chunk by chunk (a character split between chunks is kept
 * whole), for a client that streams what it writes (an LLM's output through `curl -T -`). Throws
 * `BodyTooLargeError` once more than `limitChars` UTF-16 units came.
 */
export async function* readTextStream(req: IncomingMessage, limitChars: number): AsyncGenerator<string> {
  const decoder = new TextDecoder('utf-8');
  let chars = 0;
  for await (const chunk of req) {
    const text = decoder.decode(chunk as Buffer, { stream: true });
    chars += text.length;
    if (chars > limitChars) {
      req.resume();
      throw new BodyTooLargeError(limitChars, 'characters');
    }
    if (text) yield text;
  }
  const tail = decoder.decode();
  if (tail) yield tail;
}

export class BodyTooLargeError extends Error {
  override readonly name = 'BodyTooLargeError';
  constructor(
    readonly limitBytes: number,
    unit: 'bytes' | 'characters' = 'bytes',
  ) {
    super(`request body exceeds ${limitBytes} ${unit}`);
  }
}

/**
 * Whether the request carries `Authorization: Bearer <token>` (always, when no token is configured), or
 * was signed by another instance of the cluster that checked its client's token.
 */
export function bearerAuthorized(req: IncomingMessage, token: string | undefined): boolean {
  if (token === undefined) return true;
  if (peerProof(req)?.bearer === true) return true;
  const header = req.headers.authorization ?? '';
  const m = /^Bearer\s+(.+)$/i.exec(header);
  return m !== null && secretEquals(m[1]!, token);
}

/**
 * Whether the client sent an `Authorization` header (here, or to the instance that forwarded the request):
 * something a web page cannot send to another site without the CORS consent this server never gives.
 */
export function presentedAuthorization(req: IncomingMessage): boolean {
  return req.headers.authorization !== undefined || peerProof(req)?.bearer === true;
}

/** Whether `given` is `secret`, in time that does not depend on where they differ (digests compared). */
export function secretEquals(given: string, secret: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(secret).digest();
  return timingSafeEqual(a, b);
}

/** Answers 401 with the header that names the scheme. */
export function sendUnauthorized(res: ServerResponse): void {
  sendJson(res, 401, { error: 'bearer token required (CONTROL_TOKEN)' }, { 'www-authenticate': 'Bearer' });
}

export function sendMethodNotAllowed(res: ServerResponse, allow: string): true {
  sendJson(res, 405, { error: `method not allowed; use ${allow}` }, { allow });
  return true;
}

/** `application/json` or a `+json` type, with any parameters (`; charset=utf-8`). */
const JSON_TYPE = /^application\/(?:[\w.-]+\+)?json\s*(?:;|$)/i;

/** Whether a Content-Type is JSON (`application/json`, `application/*+json`, with parameters or not). */
export function isJsonType(type: string | undefined): boolean {
  return JSON_TYPE.test(type ?? '');
}

/**
 * A JSON body, or undefined after answering 415 (not sent as `application/json`), 413 (too large) or 400
 * (not JSON) itself. The type is required: a web page can send `text/plain` anywhere without asking the
 * server first (a "simple" cross-site request), but not `application/json`.
 */
export async function readJsonBody(
  req: IncomingMessage,
  res: ServerResponse,
  limitBytes: number,
): Promise<{ body: unknown } | undefined> {
  if (!isJsonType(req.headers['content-type'])) {
    sendJson(res, 415, { error: 'the body must be sent as Content-Type: application/json' });
    req.resume();
    return undefined;
  }
  try {
    return { body: JSON.parse((await readBody(req, limitBytes)).toString('utf8')) as unknown };
  } catch (error) {
    if (error instanceof BodyTooLargeError) sendJson(res, 413, { error: error.message });
    else if (error instanceof BodyDigestError) sendJson(res, 400, { error: error.message, code: error.code });
    else sendJson(res, 400, { error: 'body must be JSON' });
    return undefined;
  }
}

/**
 * A route's path split into decoded segments (`/CA%2F1/say` → `['CA/1', 'say']`), or undefined when a
 * segment is not valid percent-encoding (`%zz`): the caller answers 400.
 */
export function pathSegments(path: string): string[] | undefined {
  try {
    return path.split('/').filter(Boolean).map(decodeURIComponent);
  } catch {
    return undefined;
  }
}

/** Answers 400 for a path that is not valid percent-encoding. */
export function sendBadPath(res: ServerResponse): true {
  sendJson(res, 400, { error: 'the path is not valid percent-encoding' });
  return true;
}
