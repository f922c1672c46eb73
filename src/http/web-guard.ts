/**
 * What keeps a web page the operator happens to visit from driving voxbridge on loopback.
 *
 * - **DNS rebinding.** A page on `evil.example` can make its own name resolve to 127.0.0.1 and then read
 *   our answers as same-origin. Its requests still carry `Host: evil.example`, so only Host names that are
 *   loopback (`localhost`, `*.localhost`), an IP literal (a rebinding page cannot get one), or configured
 *   (`server.allowedHosts`) are answered. Vite's `server.allowedHosts`, webpack-dev-server's host check and
 *   Ollama's fix for the same attack do exactly this.
 * - **Cross-site requests.** A page can send a POST anywhere without asking (`mode: 'no-cors'`, a form), and
 *   open a WebSocket to any origin. A state-changing request whose `Origin` is not the server's own is
 *   refused; so is a WebSocket upgrade from a foreign browser origin unless the stream authenticated with a
 *   token (gateways may send an `Origin` of their own; a token proves they are not a web page).
 *
 * Same-origin means the Origin's host and port equal the request's `Host` (the scheme may differ: behind a
 * TLS proxy the page is `https:` while we see plain HTTP).
 */
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';

export interface WebGuardOptions {
  /**
   * Host names answered besides loopback names and IP literals: `voxbridge.example.com` (exactly that),
   * `.example.com` (it and every subdomain), or `*` (any: the check is off, e.g. a proxy checks it).
   */
  readonly allowedHosts: readonly string[];
}

export type GuardVerdict = { readonly ok: true } | { readonly ok: false; readonly reason: string };

const OK: GuardVerdict = { ok: true };
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** 127.0.0.0/8, ::1, localhost: only this machine can connect. */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (h === 'localhost' || h.endsWith('.localhost')) return true;
  if (isIP(h) === 4) return h.startsWith('127.');
  return h === '::1' || h === '::ffff:127.0.0.1';
}

/** The host name of a `Host` header value (`example.com:8080` → `example.com`, `[::1]:80` → `::1`). */
export function hostName(hostHeader: string): string {
  const value = hostHeader.trim().toLowerCase();
  if (value.startsWith('[')) {
    const end = value.indexOf(']');
    return end < 0 ? value : value.slice(1, end);
  }
  const colon = value.indexOf(':');
  return (colon < 0 ? value : value.slice(0, colon)).replace(/\.$/, '');
}

function headerValue(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

export class WebGuard {
  private readonly exact = new Set<string>();
  private readonly suffixes: string[] = [];
  private readonly any: boolean;

  constructor(options: WebGuardOptions) {
    let any = false;
    for (const entry of options.allowedHosts) {
      const name = entry.trim().toLowerCase();
      if (name === '*') any = true;
      else if (name.startsWith('.')) this.suffixes.push(name);
      else if (name !== '') this.exact.add(name.replace(/\.$/, ''));
    }
    this.any = any;
  }

  /** Whether a request naming this `Host` is answered. A request without one (HTTP/1.0) is not a browser's. */
  hostAllowed(hostHeader: string | undefined): boolean {
    if (this.any || hostHeader === undefined) return true;
    const name = hostName(hostHeader);
    return isIP(name) !== 0 || isLoopbackHost(name) || this.configured(name);
  }

  /**
   * The request's `Origin` when it comes from another site than ours (`null` included: sandboxed frames and
   * local files send it); undefined when there is none or it is our own.
   */
  foreignOrigin(req: IncomingMessage): string | undefined {
    const origin = headerValue(req, 'origin');
    if (origin === undefined) return undefined;
    const host = headerValue(req, 'host');
    let parsed: URL;
    try {
      parsed = new URL(origin);
    } catch {
      return origin;
    }
    if (parsed.host === '') return origin;
    if (host !== undefined && parsed.host === host.trim().toLowerCase()) return undefined;
    // Behind a proxy that rewrites Host, our pages' origin is a configured name.
    if (this.configured(hostName(parsed.host))) return undefined;
    return origin;
  }

  private configured(name: string): boolean {
    return this.exact.has(name) || this.suffixes.some((s) => name === s.slice(1) || name.endsWith(s));
  }

  /** An HTTP request: its Host must be ours, and a state-changing one must not come from another site. */
  checkRequest(req: IncomingMessage): GuardVerdict {
    const host = headerValue(req, 'host');
    if (!this.hostAllowed(host)) return hostRefused(host);
    const method = (req.method ?? 'GET').toUpperCase();
    if (SAFE_METHODS.has(method)) return OK;
    const origin = this.foreignOrigin(req);
    if (origin !== undefined)
      return { ok: false, reason: `cross-site ${method} refused: Origin ${origin} is not this server` };
    return OK;
  }

  /**
   * A WebSocket upgrade: its Host must be ours; a foreign browser Origin is refused unless the stream
   * authenticated with a token or signature (`authenticated`).
   */
  checkUpgrade(req: IncomingMessage, authenticated: boolean): GuardVerdict {
    const host = headerValue(req, 'host');
    if (!this.hostAllowed(host)) return hostRefused(host);
    if (authenticated) return OK;
    const origin = this.foreignOrigin(req);
    if (origin !== undefined)
      return {
        ok: false,
        reason: `WebSocket from Origin ${origin} refused: only this server's own pages may connect without a token (set MEDIA_STREAM_TOKEN)`,
      };
    return OK;
  }
}

function hostRefused(host: string | undefined): GuardVerdict {
  return {
    ok: false,
    reason: `Host ${JSON.stringify(host ?? '')} is not served here: add it to server.allowedHosts (ALLOWED_HOSTS)`,
  };
}
