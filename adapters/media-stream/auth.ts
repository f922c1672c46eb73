/**
 * Who may open a media stream: Twilio's request signature, or the deployment's shared token, checked on
 * the HTTP upgrade before any WebSocket exists.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { twilioSignature } from '../../src/protocols/twilio-signature.js';
import type { GatewayName } from '../../src/protocols/types.js';

export interface MediaAuthSecrets {
  twilioAuthToken: string | undefined;
  mediaStreamToken: string | undefined;
}

/**
 * `authenticated`: the connection proved itself (a token or Twilio's signature), as opposed to being let
 * in because no secret is set (loopback only): a foreign browser Origin is refused only then.
 */
export type AuthVerdict =
  { ok: true; authenticated: boolean } | { ok: false; status: 401 | 403; reason: string };

/** Constant-time comparison of two secrets of any length. */
function sameSecret(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/**
 * The token a gateway's connection carries, wherever the gateway can put it: a bearer or Basic
 * `Authorization` header (Exotel, jambonz), Telnyx's `x-telnyx-streaming-auth-token`, a `token` query
 * parameter, or a last path segment (`/media/twilio/<token>`, for Twilio, whose stream URLs may not
 * carry a query string).
 */
function presentedTokens(req: IncomingMessage, url: URL, pathToken: string | undefined): string[] {
  const tokens: string[] = [];
  const authorization = header(req, 'authorization');
  if (authorization) {
    const [scheme, value = ''] = authorization.split(/\s+/, 2);
    if (scheme?.toLowerCase() === 'bearer') tokens.push(value);
    if (scheme?.toLowerCase() === 'basic') {
      const decoded = Buffer.from(value, 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      if (colon >= 0) tokens.push(decoded.slice(colon + 1));
    }
  }
  const telnyx = header(req, 'x-telnyx-streaming-auth-token');
  if (telnyx) tokens.push(telnyx);
  const query = url.searchParams.get('token');
  if (query) tokens.push(query);
  if (pathToken) {
    // A malformed escape (`%zz`) is no token at all: refused, never an exception in the upgrade.
    try {
      tokens.push(decodeURIComponent(pathToken));
    } catch {
      /* not a token */
    }
  }
  return tokens;
}

/**
 * Decides an upgrade. Twilio with TWILIO_AUTH_TOKEN set must carry a valid signature (the shared token
 * is accepted instead only when the signature is absent and MEDIA_STREAM_TOKEN is set); every gateway
 * must carry MEDIA_STREAM_TOKEN when it is set. With neither set (loopback only), anyone may connect.
 */
export function authorizeUpgrade(
  gateway: GatewayName,
  req: IncomingMessage,
  url: URL,
  pathToken: string | undefined,
  secrets: MediaAuthSecrets,
): AuthVerdict {
  const tokenOk = (): boolean =>
    secrets.mediaStreamToken !== undefined &&
    presentedTokens(req, url, pathToken).some((t) => sameSecret(t, secrets.mediaStreamToken!));

  if (gateway === 'twilio' && secrets.twilioAuthToken) {
    const signature = header(req, 'x-twilio-signature');
    if (signature) {
      // Twilio signs the URL it connected to; behind a TLS terminator we see ws:, it used wss:.
      const host = header(req, 'host') ?? '';
      const path = req.url ?? '/';
      const candidates = [`wss://${host}${path}`, `ws://${host}${path}`];
      if (candidates.some((u) => sameSecret(signature, twilioSignature(secrets.twilioAuthToken!, u))))
        return { ok: true, authenticated: true };
      return { ok: false, status: 403, reason: 'invalid X-Twilio-Signature' };
    }
    if (tokenOk()) return { ok: true, authenticated: true };
    return { ok: false, status: 401, reason: 'missing X-Twilio-Signature' };
  }
  if (secrets.mediaStreamToken === undefined) return { ok: true, authenticated: false };
  if (tokenOk()) return { ok: true, authenticated: true };
  const presented = presentedTokens(req, url, pathToken).length > 0;
  return presented
    ? { ok: false, status: 403, reason: 'wrong media stream token' }
    : { ok: false, status: 401, reason: 'media stream token required' };
}
