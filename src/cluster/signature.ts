/**
 * How one instance proves a forwarded request to another without sending a secret: an HMAC-SHA256,
 * keyed by the cluster token, over the request's method, path and query, Content-Type, a SHA-256 of
 * its body, the id of the instance it is meant for, a time and a nonce. As Stripe and Slack sign their
 * webhooks (`t=…,v1=…` over the time and the payload), and for the same reason: a peer that receives
 * it learns nothing it could use elsewhere. The token itself never leaves the instance, nor does the
 * client's `Authorization`: the instance that took the request checked it, and says so in `a=1`.
 *
 *   x-voxbridge-cluster: v1;i=<target id>;t=<unix ms>;n=<nonce>;b=<body sha256 | unsigned>;a=<0|1>;s=<hmac>
 *
 * - **Another instance.** The target's id is signed: a request an impostor in the registry received (it
 *   was signed for the impostor's id) is refused by every real instance.
 * - **Later.** A signature is valid for `SIGNATURE_MAX_AGE_MS` either side of its time (clocks of a
 *   cluster agree within seconds under NTP).
 * - **Again, within the window.** The owner remembers the nonce of each request it accepted until the
 *   request's time leaves the window, in a cache bounded at `NONCE_CACHE_MAX` entries; only requests
 *   whose signature verified enter it (an outsider cannot flush it). Past that many accepted requests
 *   per window (over 1000 a second), the oldest nonces are forgotten early: a replay of those is then
 *   only refused by the window, never more open than without a cache.
 * - **Body.** A JSON body is read whole by every route that takes one, so the forwarding instance reads
 *   it (bounded) and signs its digest; the owner checks it as the route reads it (`readBody`). A text
 *   streamed as it arrives (a `say` by `curl -T -`) cannot be hashed before it is sent: it goes
 *   `b=unsigned`, as AWS SigV4 has `UNSIGNED-PAYLOAD`. Its method, path, type, target and nonce are still
 *   signed, so only someone on the wire between two instances, able to cut the original, could change
 *   its text; use TLS between instances (an `https:` INSTANCE_URL) where that matters.
 *
 * Without a cluster token (a loopback cluster whose control API has no token either: the cluster token
 * defaults to the control token, and a non-loopback HOST requires one) there is nothing to sign with
 * and nothing to protect: the header goes without `s=` and is taken as it is, and only loopback peers
 * are sent anything (`instance-entry.ts`).
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { PeerProof } from '../http/http.js';

/** On a request between instances: its signature. */
export const CLUSTER_HEADER = 'x-voxbridge-cluster';
/** How far a signature's time may be from the receiver's clock, either way. */
export const SIGNATURE_MAX_AGE_MS = 30_000;
/** Nonces of accepted requests remembered at most (about 100 bytes each). */
export const NONCE_CACHE_MAX = 65_536;
/** `b=` of a body streamed as it arrives, not hashed. */
export const UNSIGNED_BODY = 'unsigned';
/** Longer than any header this module writes (an instance id is at most 255 characters). */
const HEADER_MAX_CHARS = 512;

const HEADER =
  /^v1;i=([A-Za-z0-9._-]{1,255});t=(\d{1,15});n=([A-Za-z0-9_-]{22});b=([A-Za-z0-9_-]{43}|unsigned);a=([01])(?:;s=([A-Za-z0-9_-]{43}))?$/;

/** What a signature covers. */
export interface SignedRequest {
  readonly method: string;
  /** As sent on the request line: `/calls/CA1/say?wait=true`. */
  readonly pathAndQuery: string;
  readonly contentType: string | undefined;
  /** The body's SHA-256, or undefined for a body streamed unhashed. */
  readonly bodySha256: Buffer | undefined;
  /** The instance the request is meant for. */
  readonly target: string;
  /** Whether the client presented a bearer token the forwarding instance accepted. */
  readonly bearer: boolean;
}

export function sha256(data: Uint8Array | string): Buffer {
  return createHash('sha256').update(data).digest();
}

function canonical(r: SignedRequest, time: string, nonce: string, body: string): string {
  return [
    'voxbridge-cluster-v1',
    r.method.toUpperCase(),
    r.pathAndQuery,
    r.contentType ?? '',
    r.target,
    time,
    nonce,
    body,
    r.bearer ? '1' : '0',
  ].join('\n');
}

function mac(token: string, text: string): Buffer {
  return createHmac('sha256', token).update(text).digest();
}

/** The `x-voxbridge-cluster` value for `request`, signed with `token` (unsigned without one). */
export function signRequest(request: SignedRequest, token: string | undefined, now = Date.now()): string {
  const time = String(Math.floor(now));
  const nonce = randomBytes(16).toString('base64url');
  const body = request.bodySha256?.toString('base64url') ?? UNSIGNED_BODY;
  const head = `v1;i=${request.target};t=${time};n=${nonce};b=${body};a=${request.bearer ? 1 : 0}`;
  if (token === undefined) return head;
  return `${head};s=${mac(token, canonical(request, time, nonce, body)).toString('base64url')}`;
}

export type SignatureFailure = 'malformed' | 'wrong_instance' | 'stale' | 'bad_signature' | 'replayed';

export type SignatureVerdict =
  | { readonly ok: true; readonly proof: PeerProof }
  | { readonly ok: false; readonly reason: SignatureFailure; readonly message: string };

export interface SignatureVerifierOptions {
  /** The cluster token; undefined on a loopback cluster with no token set. */
  readonly token: string | undefined;
  /** This instance's id: a request signed for another is refused. */
  readonly self: string;
  readonly maxAgeMs?: number;
  readonly maxNonces?: number;
  readonly now?: () => number;
}

export class SignatureVerifier {
  private readonly nonces = new Map<string, number>();
  private readonly maxAgeMs: number;
  private readonly maxNonces: number;
  private readonly now: () => number;

  constructor(private readonly options: SignatureVerifierOptions) {
    this.maxAgeMs = options.maxAgeMs ?? SIGNATURE_MAX_AGE_MS;
    this.maxNonces = options.maxNonces ?? NONCE_CACHE_MAX;
    this.now = options.now ?? Date.now;
  }

  /** Checks the signature `req` carries in `x-voxbridge-cluster` (present: the caller looked). */
  verify(req: IncomingMessage): SignatureVerdict {
    const value = req.headers[CLUSTER_HEADER];
    const m = typeof value === 'string' && value.length <= HEADER_MAX_CHARS ? HEADER.exec(value) : null;
    if (!m) return fail('malformed', 'the cluster signature header is not one this version writes');
    const [target, time, nonce, body, bearer] = [m[1]!, m[2]!, m[3]!, m[4]!, m[5] === '1'];
    const signature = m[6];
    if (target !== this.options.self)
      return fail('wrong_instance', `the request was signed for instance ${target}, not this one`);
    const now = this.now();
    if (Math.abs(now - Number(time)) > this.maxAgeMs)
      return fail('stale', `the signature is more than ${this.maxAgeMs} ms away from this instance's clock`);
    const proof: PeerProof = {
      bearer,
      bodySha256: body === UNSIGNED_BODY ? undefined : Buffer.from(body, 'base64url'),
    };
    const { token } = this.options;
    if (token === undefined) return { ok: true, proof };
    if (signature === undefined) return fail('bad_signature', 'the request is not signed');
    const expected = mac(
      token,
      canonical(
        {
          method: req.method ?? 'GET',
          pathAndQuery: req.url ?? '/',
          contentType: headerText(req.headers['content-type']),
          bodySha256: proof.bodySha256,
          target,
          bearer,
        },
        time,
        nonce,
        body,
      ),
    );
    const given = Buffer.from(signature, 'base64url');
    if (given.length !== expected.length || !timingSafeEqual(expected, given))
      return fail(
        'bad_signature',
        'the signature does not match (is CLUSTER_TOKEN the same on every instance?)',
      );
    this.forgetExpired(now);
    if (this.nonces.has(nonce)) return fail('replayed', 'this signed request was already received');
    if (this.nonces.size >= this.maxNonces) this.nonces.delete(this.nonces.keys().next().value!);
    this.nonces.set(nonce, Number(time) + this.maxAgeMs);
    return { ok: true, proof };
  }

  /** Nonces remembered now (for tests and metrics). */
  get remembered(): number {
    return this.nonces.size;
  }

  /** Drops nonces whose request left the window, oldest first (they were added in about that order). */
  private forgetExpired(now: number): void {
    for (const [nonce, expiresAt] of this.nonces) {
      if (expiresAt >= now) return;
      this.nonces.delete(nonce);
    }
  }
}

function headerText(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(', ') : value;
}

function fail(reason: SignatureFailure, message: string): SignatureVerdict {
  return { ok: false, reason, message };
}
