/**
 * How a WebSocket of ours is closed (a gateway's media connection, a relay app's socket): the RFC 6455
 * codes used here, and close reasons cut to what the protocol allows, so the peer's log (and ours) says
 * why.
 */

/** RFC 6455 close codes used here. */
export const CLOSE = {
  normal: 1000,
  goingAway: 1001,
  /** The start names a codec, rate or id we cannot take. */
  unsupported: 1003,
  policy: 1008,
  tooBig: 1009,
  /** Something failed on our side while handling the peer's message. */
  internalError: 1011,
  tryAgainLater: 1013,
} as const;

/** A close frame's reason is at most 123 bytes of UTF-8 (RFC 6455 §5.5); `ws` throws on more. */
const MAX_REASON_BYTES = 123;

/** `reason` as a close reason: cut at a character boundary to fit in 123 bytes, with '…' if cut. */
export function closeReason(reason: string): string {
  if (Buffer.byteLength(reason) <= MAX_REASON_BYTES) return reason;
  let cut = '';
  let bytes = Buffer.byteLength('…');
  for (const char of reason) {
    bytes += Buffer.byteLength(char);
    if (bytes > MAX_REASON_BYTES) break;
    cut += char;
  }
  return `${cut}…`;
}
