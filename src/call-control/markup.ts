/**
 * Writing the XML documents some gateways take their instructions in (Twilio's TwiML, Plivo's XML).
 * Every text and attribute value is escaped, so a summary, a parameter or a URL can never become
 * markup of its own.
 */

/** `&`, `<`, `>`, `"` and `'` as entities; other control characters (which XML 1.0 forbids) dropped. */
export function escapeXml(text: string): string {
  return (
    text
      // eslint-disable-next-line no-control-regex
      .replace(/[\u0000-\u0008\u000B\u000C\u000E-\u001F]/g, '')
      .replace(/&/g, '&amp;')
      .replace(/</g, '&lt;')
      .replace(/>/g, '&gt;')
      .replace(/"/g, '&quot;')
      .replace(/'/g, '&apos;')
  );
}

export type XmlAttributes = Readonly<Record<string, string | number | boolean | undefined>>;

/** One element: its attributes in the order given (undefined ones left out), then its children as written. */
export function xmlElement(name: string, attributes: XmlAttributes = {}, ...children: string[]): string {
  const attrs = Object.entries(attributes)
    .filter((entry): entry is [string, string | number | boolean] => entry[1] !== undefined)
    .map(([key, value]) => ` ${key}="${escapeXml(String(value))}"`)
    .join('');
  return children.length === 0 ? `<${name}${attrs}/>` : `<${name}${attrs}>${children.join('')}</${name}>`;
}

/** An element whose only child is `text`, escaped. */
export function xmlText(name: string, attributes: XmlAttributes, text: string): string {
  return xmlElement(name, attributes, escapeXml(text));
}

/** A whole document: the XML declaration and a `<Response>` around `children`. */
export function xmlResponse(...children: string[]): string {
  return `<?xml version="1.0" encoding="UTF-8"?>${xmlElement('Response', {}, ...children)}`;
}
