/**
 * The XML documents the fakes are sent (Twilio's `Twiml` field) or fetch (Plivo's answer and transfer
 * URLs), read strictly the way the gateway would: well-formed, one root, no DTD. The tree comes back
 * for the tests to look at: elements, attributes, text.
 */
import { SaxesParser, type SaxesTagPlain } from 'saxes';

export interface XmlElement {
  readonly name: string;
  readonly attributes: Readonly<Record<string, string>>;
  readonly children: XmlElement[];
  text: string;
}

/** The document's root, or an Error saying why it is not well-formed XML. */
export function parseXml(text: string): XmlElement {
  const parser = new SaxesParser<{ xmlns: false }>({ xmlns: false });
  const stack: XmlElement[] = [];
  let root: XmlElement | undefined;
  let failure: Error | undefined;
  parser.on('doctype', () => {
    failure ??= new Error('a DOCTYPE is not accepted');
  });
  parser.on('opentag', (tag: SaxesTagPlain) => {
    const element: XmlElement = { name: tag.name, attributes: { ...tag.attributes }, children: [], text: '' };
    const parent = stack.at(-1);
    if (parent) parent.children.push(element);
    else if (root) failure ??= new Error('more than one root element');
    else root = element;
    stack.push(element);
  });
  parser.on('closetag', () => void stack.pop());
  parser.on('text', (t) => {
    const current = stack.at(-1);
    if (current) current.text += t;
  });
  parser.on('error', (error) => {
    failure ??= error;
  });
  parser.write(text).close();
  if (failure) throw failure;
  if (!root) throw new Error('no root element');
  return root;
}

/** Every element named `name` in the tree, depth first. */
export function findAll(root: XmlElement, name: string): XmlElement[] {
  const out: XmlElement[] = [];
  const walk = (e: XmlElement): void => {
    if (e.name === name) out.push(e);
    e.children.forEach(walk);
  };
  walk(root);
  return out;
}
