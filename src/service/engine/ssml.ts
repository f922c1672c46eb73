/** eSpeak-NG always parses its input as SSML, so markup characters in plain text must be escaped. */
export function escapeSsml(text: string): string {
  return text.replace(/[<>&]/g, (c) => (c === '<' ? '&lt;' : c === '>' ? '&gt;' : '&amp;'));
}
