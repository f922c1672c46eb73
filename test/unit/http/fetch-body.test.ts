/**
 * The one bounded body reader: a declared length over the bound refuses the body unread (and frees
 * it), a body that passes the bound while it arrives is cut there, and a body within it comes whole.
 */
import { describe, expect, it } from 'vitest';
import { BodyTooLargeError, readBodyCapped, readStreamCapped } from '../../../src/http/fetch-body.js';

async function* chunks(
  sizes: number[],
  seen: { read: number; returned: boolean },
): AsyncGenerator<Uint8Array> {
  try {
    for (const size of sizes) {
      seen.read += size;
      yield new Uint8Array(size).fill(7);
    }
  } finally {
    seen.returned = true;
  }
}

describe('readStreamCapped', () => {
  it('returns a body within the bound whole', async () => {
    const seen = { read: 0, returned: false };
    const body = await readStreamCapped(chunks([3, 4, 5], seen), 12, 12, () => undefined);
    expect([...body]).toEqual(new Array<number>(12).fill(7));
  });

  it('refuses a declared length over the bound without reading, and cancels the body', async () => {
    const seen = { read: 0, returned: false };
    let cancelled = false;
    const error = await readStreamCapped(chunks([5], seen), 4, 5, () => (cancelled = true)).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(BodyTooLargeError);
    expect((error as BodyTooLargeError).declared).toBe(5);
    expect([cancelled, seen.read]).toEqual([true, 0]);
  });

  it('cuts an undeclared body at the chunk that passes the bound, leaving the rest unread', async () => {
    const seen = { read: 0, returned: false };
    const error = await readStreamCapped(chunks([4, 4, 4, 4], seen), 10, undefined, () => undefined).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(BodyTooLargeError);
    expect((error as BodyTooLargeError).declared).toBeUndefined();
    expect(seen).toEqual({ read: 12, returned: true });
  });
});

describe('readBodyCapped', () => {
  it('reads a fetch Response the same way', async () => {
    expect(Buffer.from(await readBodyCapped(new Response('hello'), 5)).toString()).toBe('hello');
    await expect(readBodyCapped(new Response('hello!'), 5)).rejects.toBeInstanceOf(BodyTooLargeError);
    expect((await readBodyCapped(new Response(null), 5)).byteLength).toBe(0);
  });
});
