/** A `ws` message's data (a Buffer, a list of fragments, or an ArrayBuffer) as one thing to read. */
import type { RawData } from 'ws';

export function rawBytes(data: RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.from(data);
}

/** The message as UTF-8 text. */
export function rawText(data: RawData): string {
  return rawBytes(data).toString('utf8');
}
