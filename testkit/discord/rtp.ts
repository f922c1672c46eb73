/**
 * A member's voice over the fake voice server's UDP: RTP packets in the aead_aes256_gcm_rtpsize mode
 * (`seal` as Discord sends a member's audio, `open` for what the bot sends), and a loud voice to send.
 */
import { createCipheriv, createDecipheriv } from 'node:crypto';

const OPUS_PT = 0x78;
/** The rtpsize AEAD modes end a packet with a 16-byte tag, then a 4-byte nonce counter. */
export const TAG_BYTES = 16;
export const NONCE_BYTES = 4;
/** One-byte RTP header extension profile (RFC 8285), the one Discord's packets carry. */
const EXTENSION_PROFILE = 0xbede;

/** A 12-byte AES-GCM nonce: the 32-bit counter big-endian first, zeros after (as the library does). */
function gcmNonce(counter: number): Buffer {
  const nonce = Buffer.alloc(12);
  nonce.writeUInt32BE(counter >>> 0, 0);
  return nonce;
}

/**
 * An rtpsize AES-256-GCM packet's Opus payload. The unencrypted part is the 12-byte RTP header, its
 * CSRCs and, when the X bit is set, the 4-byte extension preamble (together the AAD); the extension
 * body is encrypted with the payload and dropped after decryption. Throws when it does not decrypt.
 */
export function open(key: Buffer, msg: Buffer): Buffer {
  const first = msg[0]!;
  const hasExtension = (first & 0x10) !== 0;
  const hasPadding = (first & 0x20) !== 0;
  let aadEnd = 12 + 4 * (first & 0x0f);
  const extensionWords = hasExtension ? msg.readUInt16BE(aadEnd + 2) : 0;
  if (hasExtension) aadEnd += 4;
  const nonceStart = msg.length - NONCE_BYTES;
  const tagStart = nonceStart - TAG_BYTES;
  const decipher = createDecipheriv('aes-256-gcm', key, gcmNonce(msg.readUInt32BE(nonceStart)));
  decipher.setAAD(msg.subarray(0, aadEnd));
  decipher.setAuthTag(msg.subarray(tagStart, nonceStart));
  let plain = Buffer.concat([decipher.update(msg.subarray(aadEnd, tagStart)), decipher.final()]);
  if (hasPadding) plain = plain.subarray(0, plain.length - plain[plain.length - 1]!);
  return plain.subarray(4 * extensionWords);
}

/**
 * The inverse of `open`, as Discord sends a member's audio: with `extension`, a 0xBEDE header
 * extension of one word (element id 1, one byte of data: an audio level, then padding).
 */
export function seal(
  key: Buffer,
  nonce: number,
  rtp: { sequence: number; timestamp: number; ssrc: number },
  opus: Buffer,
  extension: boolean,
): Buffer {
  const header = Buffer.alloc(extension ? 16 : 12);
  header[0] = extension ? 0x90 : 0x80;
  header[1] = OPUS_PT;
  header.writeUInt16BE(rtp.sequence, 2);
  header.writeUInt32BE(rtp.timestamp >>> 0, 4);
  header.writeUInt32BE(rtp.ssrc, 8);
  if (extension) {
    header.writeUInt16BE(EXTENSION_PROFILE, 12);
    header.writeUInt16BE(1, 14);
  }
  const body = extension ? Buffer.concat([Buffer.from([0x10, 0x7f, 0, 0]), opus]) : opus;
  const nonceBuffer = gcmNonce(nonce);
  const cipher = createCipheriv('aes-256-gcm', key, nonceBuffer);
  cipher.setAAD(header);
  const sealed = Buffer.concat([cipher.update(body), cipher.final(), cipher.getAuthTag()]);
  return Buffer.concat([header, sealed, nonceBuffer.subarray(0, NONCE_BYTES)]);
}

/** A member's "voice" for barge-in: a loud 180 Hz buzz with two harmonics, 48 kHz stereo, `ms` long. */
export function loudVoice(ms: number): Int16Array {
  const n = (48_000 * ms) / 1000;
  const out = new Int16Array(n * 2);
  for (let i = 0; i < n; i++) {
    const t = i / 48_000;
    const v =
      6000 * Math.sin(2 * Math.PI * 180 * t) +
      3000 * Math.sin(2 * Math.PI * 360 * t) +
      1500 * Math.sin(2 * Math.PI * 720 * t);
    out[2 * i] = out[2 * i + 1] = Math.round(v);
  }
  return out;
}
