/**
 * The one error a call-control port throws. Its `code` says what went wrong in terms the app can act
 * on (409 for what is not configured, 502/504 for a gateway that failed or did not answer, 404 for a
 * call the gateway no longer knows); the gateway's own words, where it gave any, are in `reason` and
 * `providerCode`. A message never carries a credential: everything built from what a gateway wrote is
 * scrubbed of the port's secrets first (servers have been known to echo a key back).
 */
import type { CallControlGateway } from './port.js';

export type CallControlErrorCode =
  /** The gateway's credentials are not all set: `missing` names the environment variables. */
  | 'missing_credentials'
  /** A credential is set but cannot be used (VONAGE_PRIVATE_KEY is not a readable private key). */
  | 'invalid_credentials'
  /** This gateway cannot do this at all (Exotel has no API for a call in progress). */
  | 'unsupported'
  /** The gateway could, but voxbridge lacks a setting for it (a document host, a flow, a dial template). */
  | 'not_configured'
  /** The request itself is wrong (a target that is neither an E.164 number nor a SIP URI, a bad URL). */
  | 'invalid_request'
  /** The gateway does not know the call (ended, or never there). */
  | 'call_not_found'
  /** The gateway refused the credentials (401, 403). */
  | 'unauthorized'
  /** The gateway refused the request (another 4xx): `reason` says why in its words. */
  | 'rejected'
  /** 429. */
  | 'rate_limited'
  /** The gateway failed (5xx). */
  | 'provider_error'
  /** No whole answer within the request's deadline. */
  | 'timeout'
  /** The answer was larger than the bound; it was cut, not read. */
  | 'answer_too_large'
  /** A 2xx whose body is not what the API documents (not JSON, no call id). */
  | 'invalid_answer'
  /** No answer at all: the connection failed or broke. */
  | 'connection_failed';

/** Codes after which the same request may well succeed later (none is retried by the port itself). */
const RETRYABLE: ReadonlySet<CallControlErrorCode> = new Set([
  'rate_limited',
  'provider_error',
  'timeout',
  'connection_failed',
]);

export interface CallControlErrorFields {
  readonly code: CallControlErrorCode;
  readonly gateway: CallControlGateway;
  /** What was being done: `hang_up`, `transfer`, `originate`. */
  readonly operation: string;
  readonly message: string;
  /** The gateway's HTTP status, when it answered. */
  readonly status?: number;
  /** The gateway's own error code (Twilio 20404, Telnyx "90018", …). */
  readonly providerCode?: string;
  /** The gateway's own explanation, scrubbed of secrets. */
  readonly reason?: string;
  /** `missing_credentials`: the environment variables to set. */
  readonly missing?: readonly string[];
  readonly cause?: unknown;
}

export class CallControlError extends Error {
  override readonly name = 'CallControlError';
  readonly code: CallControlErrorCode;
  readonly gateway: CallControlGateway;
  readonly operation: string;
  readonly status: number | undefined;
  readonly providerCode: string | undefined;
  readonly reason: string | undefined;
  readonly missing: readonly string[];
  /**
   * Whether the same request may succeed if sent again later. The port never resends one itself: a
   * transfer or an outbound call that timed out may have happened all the same.
   */
  readonly retryable: boolean;

  constructor(fields: CallControlErrorFields) {
    super(fields.message, fields.cause === undefined ? undefined : { cause: fields.cause });
    this.code = fields.code;
    this.gateway = fields.gateway;
    this.operation = fields.operation;
    this.status = fields.status;
    this.providerCode = fields.providerCode;
    this.reason = fields.reason;
    this.missing = fields.missing ?? [];
    this.retryable = RETRYABLE.has(fields.code);
  }
}

/** `unsupported`: the gateway offers no way to do `operation` (`why` says what it lacks). */
export function unsupported(gateway: CallControlGateway, operation: string, why: string): CallControlError {
  return new CallControlError({
    code: 'unsupported',
    gateway,
    operation,
    message: `${gateway} ${operation}: ${why}`,
  });
}

/** `not_configured`: the gateway could do `operation`, given `what`. */
export function notConfigured(
  gateway: CallControlGateway,
  operation: string,
  what: string,
): CallControlError {
  return new CallControlError({
    code: 'not_configured',
    gateway,
    operation,
    message: `${gateway} ${operation} needs ${what}`,
  });
}

/** `invalid_request`: the request cannot be sent as it is. */
export function invalidRequest(
  gateway: CallControlGateway,
  operation: string,
  why: string,
): CallControlError {
  return new CallControlError({
    code: 'invalid_request',
    gateway,
    operation,
    message: `${gateway} ${operation}: ${why}`,
  });
}
