/** eSpeak-NG always parses its input as SSML, so markup characters in plain text must be escaped. */
export function escapeSsml(text: string): string {
  return text.replace(/[<>&]/g, (c) => (c === '<' ? '&lt;' : c === '>' ? '&gt;' : '&amp;'));
}

/** Code points of `escapeSsml(c)`: `&amp;` is five, `&lt;` and `&gt;` four, anything else one. */
function escapedLength(c: string): number {
  return c === '&' ? 5 : c === '<' || c === '>' ? 4 : 1;
}

/**
 * For each code point of `escapeSsml(text)`, the index of the code point of `text` it stands for: the
 * way back from eSpeak's positions (code points of what it was given) to the caller's text.
 */
export function escapedOrigins(text: string): Uint32Array {
  const chars = Array.from(text);
  let length = 0;
  for (const c of chars) length += escapedLength(c);
  const origins = new Uint32Array(length);
  let at = 0;
  for (let i = 0; i < chars.length; i++) {
    const n = escapedLength(chars[i]!);
    origins.fill(i, at, at + n);
    at += n;
  }
  return origins;
}
