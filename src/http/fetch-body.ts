/**
 * Reading a fetched answer's body within a size bound: for peers that are not trusted to say how much
 * they send (a relay app's `play` file, a TwiML webhook's answer). The bound is checked on the
 * declared `Content-Length` before a byte is read and again on every chunk, so an answer that lies
 * costs at most `maxBytes` plus one chunk.
 */

/** The answer is larger than allowed: `declared` from its header, else at least `maxBytes` + 1 read. */
export class BodyTooLargeError extends Error {
  override readonly name = 'BodyTooLargeError';
  constructor(
    readonly maxBytes: number,
    readonly declared: number | undefined,
  ) {
    super(
      declared === undefined
        ? `the answer is over ${maxBytes} bytes`
        : `the answer is ${declared} bytes; at most ${maxBytes}`,
    );
  }
}

/** The body of `res`, whole, or `BodyTooLargeError` (the body is cancelled then). */
export async function readBodyCapped(res: Response, maxBytes: number): Promise<Uint8Array> {
  const declared = Number(res.headers.get('content-length') ?? Number.NaN);
  if (declared > maxBytes) {
    await res.body?.cancel().catch(() => undefined);
    throw new BodyTooLargeError(maxBytes, declared);
  }
  if (!res.body) return new Uint8Array(0);
  const parts: Uint8Array[] = [];
  let total = 0;
  // Leaving the loop early cancels the body.
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    total += chunk.byteLength;
    if (total > maxBytes) throw new BodyTooLargeError(maxBytes, undefined);
    parts.push(chunk);
  }
  return Buffer.concat(parts, total);
}
