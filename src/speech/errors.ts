/**
 * One coded error type for everything that can go wrong talking to a speech service. `retryable` is
 * decided here and nowhere else.
 */
export interface SpeechServiceErrorOptions {
  code: string;
  message: string;
  status?: number | undefined;
  requestId?: string | undefined;
  retryable?: boolean | undefined;
  /** Seconds the server asked us to wait (`Retry-After`), when it said. */
  retryAfterMs?: number | undefined;
  cause?: unknown;
}

export class SpeechServiceError extends Error {
  override readonly name: string = 'SpeechServiceError';
  readonly code: string;
  readonly status: number | undefined;
  readonly requestId: string | undefined;
  readonly retryable: boolean;
  readonly retryAfterMs: number | undefined;

  constructor(options: SpeechServiceErrorOptions) {
    super(options.message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = options.code;
    this.status = options.status;
    this.requestId = options.requestId;
    this.retryable = options.retryable ?? isRetryableStatus(options.status);
    this.retryAfterMs = options.retryAfterMs;
  }
}

/** A bad input caught before any request went out. `field` names it in the wire's snake_case. */
export class SpeechInputError extends SpeechServiceError {
  override readonly name = 'SpeechInputError';
  readonly field: string;
  constructor(field: string, message: string) {
    super({ code: 'invalid_input', message, retryable: false });
    this.field = field;
  }
}

/** 408, 429 and 5xx are worth another try; 4xx otherwise means the request itself is wrong. */
export function isRetryableStatus(status: number | undefined): boolean {
  if (status === undefined) return false;
  return status === 408 || status === 429 || status >= 500;
}
