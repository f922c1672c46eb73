/**
 * Turning what went wrong on the wire into a `SpeechServiceError`: a non-2xx answer (whatever its body
 * looks like) or a transport failure. Whether it is retryable is decided by the error's status or by
 * the transport code, here and in errors.ts only.
 */
import { redact } from '../http/redact.js';
import { SpeechServiceError } from './errors.js';
import { parseRetryAfterMs } from './retry.js';

/** Codes for statuses whose body told us nothing usable. */
const STATUS_CODES: Readonly<Record<number, string>> = {
  400: 'bad_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  408: 'request_timeout',
  409: 'conflict',
  413: 'payload_too_large',
  422: 'unprocessable_entity',
  429: 'rate_limited',
  500: 'internal_server_error',
  502: 'bad_gateway',
  503: 'service_unavailable',
  504: 'gateway_timeout',
};

/** How much of a non-JSON error body makes it into a message. */
const MESSAGE_MAX_CHARS = 300;

/**
 * Transport failures that mean "this attempt never got an answer": the request may be sent again.
 * `UND_ERR_SOCKET` is undici's "other side closed" (the socket closed before the headers).
 */
const RETRYABLE_TRANSPORT_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
]);

export interface ResponseFacts {
  readonly status: number;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  /** The (possibly truncated) body as text. */
  readonly bodyText: string;
}

export function headerValue(
  headers: Readonly<Record<string, string | string[] | undefined>>,
  name: string,
): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** The request id a response carries: the `request-id` header, else `x-request-id`. */
export function requestIdOf(
  headers: Readonly<Record<string, string | string[] | undefined>>,
): string | undefined {
  return headerValue(headers, 'request-id') ?? headerValue(headers, 'x-request-id');
}

interface Detail {
  code?: string;
  message?: string;
  requestId?: string;
}

function asString(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/**
 * Reads the error body in the shapes found in the wild: ours and ElevenLabs' current one
 * (`{detail:{code,message,request_id}}`), ElevenLabs' legacy one (`{detail:{status,message}}`), a plain
 * string `detail`, FastAPI's validation list (`{detail:[{msg}]}`), and a top-level `{code,message}`.
 */
function parseDetail(bodyText: string): Detail | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(bodyText);
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null) return undefined;
  const root = parsed as Record<string, unknown>;
  const detail = root['detail'];
  if (typeof detail === 'string') return { message: detail };
  if (Array.isArray(detail)) {
    const first: unknown = detail[0];
    const msg =
      typeof first === 'object' && first !== null ? (first as Record<string, unknown>)['msg'] : undefined;
    return { code: 'invalid_parameters', ...optional('message', asString(msg)) };
  }
  const source = typeof detail === 'object' && detail !== null ? (detail as Record<string, unknown>) : root;
  return {
    ...optional('code', asString(source['code']) ?? asString(source['status'])),
    ...optional('message', asString(source['message']) ?? asString(source['error'])),
    ...optional('requestId', asString(source['request_id'])),
  };
}

function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}

export { redact };

function oneLine(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > MESSAGE_MAX_CHARS ? `${flat.slice(0, MESSAGE_MAX_CHARS)}…` : flat;
}

/** A non-2xx response as an error. `secrets` are scrubbed from anything the server wrote. */
export function errorFromResponse(facts: ResponseFacts, secrets: readonly string[]): SpeechServiceError {
  const detail = parseDetail(facts.bodyText);
  const code = detail?.code ?? STATUS_CODES[facts.status] ?? `http_${facts.status}`;
  const serverMessage = oneLine(detail ? (detail.message ?? '') : facts.bodyText) || undefined;
  const requestId = requestIdOf(facts.headers) ?? detail?.requestId;
  const retryAfterMs = parseRetryAfterMs(headerValue(facts.headers, 'retry-after'));
  const message = redact(
    `speech service answered ${facts.status} ${code}` +
      (serverMessage ? `: ${serverMessage}` : '') +
      (requestId ? ` (request-id ${requestId})` : ''),
    secrets,
  );
  return new SpeechServiceError({ code, message, status: facts.status, requestId, retryAfterMs });
}

function errorCode(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' ? code : undefined;
}

/** A failure below HTTP (no usable response) before the first audio byte. */
export function errorFromTransport(error: unknown, secrets: readonly string[]): SpeechServiceError {
  if (error instanceof SpeechServiceError) return error;
  const transportCode = errorCode(error);
  if (transportCode === 'UND_ERR_DESTROYED' || transportCode === 'UND_ERR_CLOSED') {
    return new SpeechServiceError({
      code: 'client_closed',
      message: 'the speech client was closed',
      retryable: false,
      cause: error,
    });
  }
  const retryable = transportCode !== undefined && RETRYABLE_TRANSPORT_CODES.has(transportCode);
  const what = error instanceof Error ? error.message : String(error);
  return new SpeechServiceError({
    code: retryable ? 'connection_failed' : 'request_failed',
    message: redact(`speech request failed${transportCode ? ` (${transportCode})` : ''}: ${what}`, secrets),
    retryable,
    cause: error,
  });
}

/**
 * A 2xx whose Content-Type is not the audio that was asked for (an HTML page, JSON, another format).
 * Not retryable: it is a misconfiguration (a wrong base URL or prefix, a proxy's login page, another
 * API), and the same request gets the same page again; retrying would only delay the failure.
 */
export function unexpectedContentType(
  facts: { readonly status: number; readonly headers: ResponseFacts['headers'] },
  expected: string,
  secrets: readonly string[],
): SpeechServiceError {
  const requestId = requestIdOf(facts.headers);
  const got = oneLine(headerValue(facts.headers, 'content-type') ?? '');
  return new SpeechServiceError({
    code: 'unexpected_content_type',
    message: redact(
      `speech service answered ${facts.status} with content-type "${got}" instead of ${expected}` +
        (requestId ? ` (request-id ${requestId})` : ''),
      secrets,
    ),
    status: facts.status,
    requestId,
    retryable: false,
  });
}

/** The connection broke after audio had started: never retried, never a clean end. */
export function streamInterrupted(error: unknown, requestId: string | undefined): SpeechServiceError {
  const transportCode = errorCode(error);
  const what = error instanceof Error ? error.message : String(error);
  return new SpeechServiceError({
    code: 'stream_interrupted',
    message: `the audio stream broke off before its end${transportCode ? ` (${transportCode})` : ''}: ${what}`,
    requestId,
    retryable: false,
    cause: error,
  });
}
