/**
 * Whom a call goes to, checked before any request leaves: an E.164 number or a SIP URI, nothing that
 * could smuggle markup into a TwiML or XML document, a verb into an NCCO, or a second destination into
 * an Asterisk dial string. And the URLs a gateway will fetch (hold music, a summary, a stream), which
 * must be absolute http(s) or ws(s) URLs.
 */
import { CallControlError } from './errors.js';
import type { CallControlGateway, CallTarget } from './port.js';

/** E.164: a plus, then up to 15 digits, the first not 0. */
const E164 = /^\+[1-9]\d{1,14}$/;

/**
 * `sip:` or `sips:`, a user part (optional), a host, an optional port and `;params`. No spaces, quotes,
 * angle brackets, commas or ampersands: the characters that would break out of the documents and dial
 * strings a target is written into.
 */
const SIP_URI =
  /^sips?:(?:[A-Za-z0-9\-_.!~*'()%+=$;?/]+@)?[A-Za-z0-9.\-[\]:]+(?::\d{1,5})?(?:;[A-Za-z0-9\-_.=]+)*$/;

/** `+15551234567` → a number, `sip:alice@example.com` → a SIP URI; anything else `invalid_request`. */
export function parseCallTarget(text: string, gateway: CallControlGateway, operation: string): CallTarget {
  const trimmed = text.trim();
  if (E164.test(trimmed)) return { kind: 'number', number: trimmed };
  if (SIP_URI.test(trimmed)) return { kind: 'sip', uri: trimmed };
  throw new CallControlError({
    code: 'invalid_request',
    gateway,
    operation,
    message: `${gateway} ${operation}: a target must be an E.164 number (+15551234567) or a SIP URI (sip:user@host)`,
  });
}

/** The target as given, checked again (a caller may build one by hand). */
export function checkedTarget(
  target: CallTarget,
  gateway: CallControlGateway,
  operation: string,
): CallTarget {
  return parseCallTarget(target.kind === 'number' ? target.number : target.uri, gateway, operation);
}

/** A caller id: an E.164 number (every gateway takes one; a few take more, see their modules). */
export function checkedNumber(
  value: string,
  what: string,
  gateway: CallControlGateway,
  operation: string,
): string {
  if (E164.test(value)) return value;
  throw new CallControlError({
    code: 'invalid_request',
    gateway,
    operation,
    message: `${gateway} ${operation}: ${what} must be an E.164 number (+15551234567)`,
  });
}

/** `url`, if it is an absolute URL of one of `schemes` (`https:`, `wss:`, …); else `invalid_request`. */
export function checkedUrl(
  url: string,
  what: string,
  schemes: readonly string[],
  gateway: CallControlGateway,
  operation: string,
): string {
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  if (parsed && schemes.includes(parsed.protocol)) return url;
  throw new CallControlError({
    code: 'invalid_request',
    gateway,
    operation,
    message: `${gateway} ${operation}: ${what} must be an absolute ${schemes.map((s) => s.replace(':', '')).join(' or ')} URL`,
  });
}

/** A number as Plivo and jambonz write it: its country code without the plus. */
export function withoutPlus(number: string): string {
  return number.replace(/^\+/, '');
}

export const HTTP_SCHEMES = ['https:', 'http:'] as const;
export const WS_SCHEMES = ['wss:', 'ws:'] as const;

/** A ring timeout in whole seconds within the gateway's range, `fallback` when absent. */
export function ringSeconds(value: number | undefined, fallback: number, min: number, max: number): number {
  if (value === undefined || !Number.isFinite(value)) return fallback;
  return Math.min(max, Math.max(min, Math.round(value)));
}

/** The ring timeout every gateway uses when none is asked for. */
export const DEFAULT_RING_SECONDS = 30;
