/** Writing a speech response's body: each write waits for the client, and memory per request is bounded. */
import type { ServerResponse } from 'node:http';
import { once } from 'node:events';

/** What a whole body may hold in memory before it is streamed instead: ~20 s of 24 kHz PCM. */
export const WHOLE_BODY_MEMORY_BYTES = 1024 * 1024;

export async function write(
  res: ServerResponse,
  bytes: Uint8Array | string,
  signal: AbortSignal,
): Promise<void> {
  if (bytes.length === 0) return;
  if (!res.write(bytes)) await once(res, 'drain', { signal });
}
