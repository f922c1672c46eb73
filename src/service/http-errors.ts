import type { ServerResponse } from 'node:http';
import { sendJson } from '../http/http.js';

const TYPES: Record<number, string> = {
  400: 'validation_error',
  401: 'authentication_error',
  403: 'authorization_error',
  404: 'not_found',
  405: 'invalid_request',
  413: 'validation_error',
  429: 'rate_limit_error',
  500: 'internal_error',
  503: 'service_unavailable',
  507: 'insufficient_storage',
};

/** An error the local service answers with, in the body shape docs/speech-service.md decides. */
export class ServiceHttpError extends Error {
  override readonly name = 'ServiceHttpError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly param?: string,
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }
}

export const badRequest = (message: string, param?: string, code = 'invalid_parameters'): ServiceHttpError =>
  new ServiceHttpError(400, code, message, param);

export function sendServiceError(res: ServerResponse, error: ServiceHttpError, requestId: string): void {
  const headers: Record<string, string> = { 'request-id': requestId };
  if (error.retryAfterSeconds !== undefined) headers['retry-after'] = String(error.retryAfterSeconds);
  sendJson(
    res,
    error.status,
    {
      detail: {
        type: TYPES[error.status] ?? 'error',
        code: error.code,
        message: error.message,
        status: error.code,
        request_id: requestId,
        ...(error.param === undefined ? {} : { param: error.param }),
      },
    },
    headers,
  );
}
