/** The gateways' base64 payloads: standard padded base64 decodes, and nothing else does. */
import { describe, expect, it } from 'vitest';
import { decodeBase64, encodeBase64 } from '../../../src/protocols/common.js';
import { ProtocolError } from '../../../src/protocols/types.js';
import { seeded } from '../../../testkit/random.js';

describe('decodeBase64', () => {
  it('round-trips every length of bytes from 0 to 200', () => {
    const random = seeded(1);
    for (let n = 0; n <= 200; n++) {
      const bytes = Uint8Array.from({ length: n }, () => Math.floor(random() * 256));
      expect(decodeBase64(encodeBase64(bytes), 'payload')).toEqual(Buffer.from(bytes));
    }
  });

  it('refuses a text with any one character that standard base64 does not have, wherever it is', () => {
    const text = encodeBase64(Uint8Array.from({ length: 30 }, (_, i) => i * 7));
    for (const bad of ['-', '_', ' ', '\n', '=', '@', 'é', '.'])
      for (let at = 0; at < text.length; at++) {
        // Padding in the last place is base64 (of one byte fewer).
        if (bad === '=' && at === text.length - 1) continue;
        const corrupted = text.slice(0, at) + bad + text.slice(at + 1);
        expect(() => decodeBase64(corrupted, 'payload'), `${bad} at ${at}`).toThrow(ProtocolError);
      }
  });

  it('refuses missing or extra padding, padding inside, and lengths that are not a multiple of 4', () => {
    for (const text of ['AAA', 'AAAAA', 'AA', 'A===', 'AA=A', 'AA==AAAA', 'AAA==', 'AAAA=', '====', 'AB=C'])
      expect(() => decodeBase64(text, 'payload'), text).toThrow(ProtocolError);
    expect(decodeBase64('AA==', 'payload')).toEqual(Buffer.from([0]));
    expect(decodeBase64('', 'payload')).toEqual(Buffer.alloc(0));
  });
});
