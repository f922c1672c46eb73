/**
 * Reading a fetched answer's body within a size bound: for peers that are not trusted to say how much
 * they send (a relay app's `play` file, a TwiML webhook's answer, a phone gateway's REST answer). The
 * bound is checked on the declared `Content-Length` before a byte is read and again on every chunk, so
 * an answer that lies costs at most `maxBytes` plus one chunk. `readBodyCapped` reads a fetch
 * `Response`; `readStreamCapped` any body that is an async iterable of bytes (undici's `request`).
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
  const body = res.body;
  return readStreamCapped(
    (body ?? []) as AsyncIterable<Uint8Array>,
    maxBytes,
    Number(res.headers.get('content-length') ?? Number.NaN),
    async () => {
      await body?.cancel().catch(() => undefined);
    },
  );
}

/**
 * The chunks of `body`, whole, or `BodyTooLargeError`. `declaredBytes` (the answer's Content-Length,
 * NaN or undefined when it gave none) over the bound refuses the body unread, after `cancel()` (which
 * must free the connection: `destroy()` an undici body, `cancel()` a web stream); a body that passes
 * the bound while it arrives is left there, which cancels it (the iterator's `return`).
 */
export async function readStreamCapped(
  body: AsyncIterable<Uint8Array>,
  maxBytes: number,
  declaredBytes: number | undefined,
  cancel: () => unknown,
): Promise<Uint8Array> {
  if (declaredBytes !== undefined && declaredBytes > maxBytes) {
    await cancel();
    throw new BodyTooLargeError(maxBytes, declaredBytes);
  }
  const parts: Uint8Array[] = [];
  let total = 0;
  // Leaving the loop early cancels the body.
  for await (const chunk of body) {
    total += chunk.byteLength;
    if (total > maxBytes) throw new BodyTooLargeError(maxBytes, undefined);
    parts.push(chunk);
  }
  return Buffer.concat(parts, total);
}
