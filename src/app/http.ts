import type { IncomingMessage, ServerResponse } from 'node:http';

/** A request handler of a mounted part. It answers `true` when it handled the request. */
export type RouteHandler = (
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  url: URL,
) => Promise<boolean>;

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

/** Reads a request body up to `limitBytes`; past that it rejects with `tooLarge`. */
export async function readBody(req: IncomingMessage, limitBytes: number): Promise<Buffer> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buf = chunk as Buffer;
    size += buf.length;
    if (size > limitBytes) throw new BodyTooLargeError(limitBytes);
    parts.push(buf);
  }
  return Buffer.concat(parts, size);
}

export class BodyTooLargeError extends Error {
  override readonly name = 'BodyTooLargeError';
  constructor(readonly limitBytes: number) {
    super(`request body exceeds ${limitBytes} bytes`);
  }
}
