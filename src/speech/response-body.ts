/**
 * Reading a whole 2xx body (a JSON answer, or `synthesize()`'s audio) under a byte bound: a peer that
 * sends more is cut off and refused, never buffered.
 */
import { SpeechServiceError } from './errors.js';
import { redact } from './http-errors.js';
import type { OpenResponse } from './transport.js';

/** The whole body; past `maxBytes` the exchange is cancelled and `response_too_large` thrown. */
export async function readBody(response: OpenResponse, maxBytes: number): Promise<Buffer> {
  const parts: Buffer[] = [];
  let size = 0;
  for (let chunk = await response.next(); chunk !== undefined; chunk = await response.next()) {
    size += chunk.byteLength;
    if (size > maxBytes) {
      response.cancel();
      throw new SpeechServiceError({
        code: 'response_too_large',
        message: `the speech service's answer exceeds ${maxBytes} bytes`,
        status: response.status,
        requestId: response.requestId,
        retryable: false,
      });
    }
    parts.push(chunk);
  }
  return parts.length === 1 && parts[0] !== undefined ? parts[0] : Buffer.concat(parts, size);
}

/**
 * The body parsed as JSON; malformed JSON is `invalid_response`. The parser's own message quotes the
 * body, so the `cause` carries it with `secrets` scrubbed.
 */
export async function readJsonBody(
  response: OpenResponse,
  maxBytes: number,
  secrets: readonly string[],
): Promise<unknown> {
  const body = await readBody(response, maxBytes);
  try {
    return JSON.parse(body.toString('utf8'));
  } catch (error) {
    throw new SpeechServiceError({
      code: 'invalid_response',
      message: 'the speech service answered with malformed JSON',
      status: response.status,
      requestId: response.requestId,
      retryable: false,
      cause: new SyntaxError(redact((error as Error).message, secrets)),
    });
  }
}
