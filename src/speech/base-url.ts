/**
 * The speech service's base URL may carry `user:password@` (a proxy in front of the service that wants
 * Basic auth). Those credentials are sent as `Authorization: Basic` and never shown: every place that
 * logs the URL or puts it in a message goes through `redactUrl`.
 */

const REDACTED_USERINFO = '[redacted]';

/** For text that is not a valid URL: everything between `://` and the last `@`, whatever it holds. */
const ANY_USERINFO = /^([a-z][a-z0-9+.-]*:\/\/).*@/is;

/**
 * The URL with its user name and password replaced by `[redacted]` (both: a token is often passed as
 * the user name alone). A URL without credentials comes back unchanged; text that does not parse as a
 * URL loses everything up to its last `@`.
 */
export function redactUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return url.replace(ANY_USERINFO, `$1${REDACTED_USERINFO}@`);
  }
  if (parsed.username === '' && parsed.password === '') return url;
  const { protocol, host, pathname, search, hash } = parsed;
  // The parser turns `http://host` into `http://host/`: keep the text as it was written.
  const path = pathname === '/' && !/^[^?#]*\/([?#]|$)/.test(url.slice(protocol.length + 2)) ? '' : pathname;
  return `${protocol}//${REDACTED_USERINFO}@${host}${path}${search}${hash}`;
}

/** Percent-decoded, or as written when it is not valid percent-encoding. */
function decoded(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

export interface BaseUrlParts {
  /** `scheme://host:port`, without credentials: what the connection pool is opened on. */
  readonly origin: string;
  /** The base URL's own path, without a trailing slash. */
  readonly path: string;
  /** The value of `Authorization` when the URL carries credentials. */
  readonly authorization: string | undefined;
  /** The password, the user name and the header value, for scrubbing from error messages. */
  readonly secrets: readonly string[];
}

/**
 * Splits a base URL into what the client connects to and the credentials it sends. Throws a
 * `TypeError` that does not repeat the URL (it may hold a password).
 */
export function parseBaseUrl(baseUrl: string): BaseUrlParts {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    // Not even redacted: in text that does not parse, nothing says where a password ends.
    throw new TypeError('SpeechClient: baseUrl is not a valid URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new TypeError(`SpeechClient: baseUrl must be http(s), got ${url.protocol}`);
  const path = url.pathname.replace(/\/+$/, '');
  if (url.username === '' && url.password === '')
    return { origin: url.origin, path, authorization: undefined, secrets: [] };
  // The URL keeps them percent-encoded; Basic carries the characters themselves (RFC 7617, UTF-8).
  const user = decoded(url.username);
  const password = decoded(url.password);
  const token = Buffer.from(`${user}:${password}`, 'utf8').toString('base64');
  const secrets = [password, url.password, user, url.username, token].filter((s) => s !== '');
  return { origin: url.origin, path, authorization: `Basic ${token}`, secrets };
}
