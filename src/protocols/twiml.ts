/**
 * TwiML, as a ConversationRelay app's webhook answers a call: the verbs voxbridge runs (`<Say>`,
 * `<Play>`, `<Pause>`, `<Hangup/>`, `<Reject/>`, `<Redirect>`, `<Connect>` with `<ConversationRelay>`
 * and its `<Language>` and `<Parameter>` children, `<Dial>` to one number or SIP address) read from
 * the XML into plain values, and every other verb kept by name so that the call can fail clearly where
 * it reaches one.
 *
 * The document is untrusted input (a webhook's answer): it is parsed by a strict XML parser (saxes)
 * with no DTD at all (a `<!DOCTYPE>` is refused, so no entity can be declared, let alone expanded:
 * only XML's five named entities and character references are read), and every count and length is
 * bounded before it sizes anything (`TWIML_LIMITS`).
 */
import { SaxesParser, type SaxesTagPlain } from 'saxes';

export const TWIML_LIMITS = {
  /** The document's characters, at most (Twilio's own limit is 64 kB). */
  chars: 64 * 1024,
  /** Elements nested in one another, at most (Response > Connect > ConversationRelay > Language is 4). */
  depth: 8,
  /** Elements in the document, at most. */
  elements: 512,
  /** Verbs in `<Response>`, at most. */
  verbs: 100,
  /** Attributes of one element, at most. */
  attributes: 64,
  /** One attribute value's or one verb's text's characters, at most (Twilio's `<Say>` takes 4096). */
  valueChars: 4096,
  /** One `<Pause>`, at most (s): an hour. */
  pauseSeconds: 3600,
} as const;

/** A TwiML document that cannot be read; the message names what is wrong. */
export class TwimlError extends Error {
  override readonly name = 'TwimlError';
}

export interface ConversationRelayNoun {
  /** Its attributes as written (names as Twilio spells them). */
  readonly attributes: Readonly<Record<string, string>>;
  /** `<Language>` children: each one's attributes (`code`, `voice`, `ttsProvider`, …). */
  readonly languages: readonly Readonly<Record<string, string>>[];
  /** `<Parameter name value>` children, in order. */
  readonly parameters: readonly { readonly name: string; readonly value: string }[];
}

/** Whom a `<Dial>` reaches: its text or `<Number>` (spaces, dashes, dots and brackets taken out), or a `<Sip>`. */
export type DialTarget =
  { readonly kind: 'number'; readonly number: string } | { readonly kind: 'sip'; readonly uri: string };

/** `<Dial timeout>`'s range and default, as Twilio documents them (seconds). */
export const DIAL_TIMEOUT = { min: 5, max: 600, default: 30 } as const;

export type TwimlVerb =
  | { verb: 'Say'; text: string; voice?: string; language?: string; loop: number }
  | { verb: 'Play'; url: string; loop: number }
  | { verb: 'Pause'; seconds: number }
  | { verb: 'Hangup' }
  | { verb: 'Reject'; reason: string }
  | { verb: 'Redirect'; url: string; method: 'GET' | 'POST' }
  | {
      verb: 'Connect';
      action?: string;
      method: 'GET' | 'POST';
      relay: ConversationRelayNoun;
    }
  | {
      verb: 'Dial';
      target: DialTarget;
      timeoutSeconds: number;
      callerId?: string;
      action?: string;
      method: 'GET' | 'POST';
      /** Attributes voxbridge takes without effect (`record`, `Number@sendDigits`, …), by name. */
      ignored: string[];
    }
  /** A verb (or a `<Connect>` or `<Dial>` noun) voxbridge does not run: the call fails there, clearly. */
  | { verb: 'Unsupported'; name: string };

/** Verbs that Twilio documents and voxbridge does not run (the rest are not TwiML at all). */
const KNOWN_UNSUPPORTED = new Set([
  'Enqueue',
  'Gather',
  'Leave',
  'Pay',
  'Record',
  'Refer',
  'Sms',
  'Start',
  'Stop',
  'Prompt',
  'Queue',
  'Echo',
]);

interface Element {
  readonly name: string;
  readonly attributes: Record<string, string>;
  readonly children: Element[];
  text: string;
}

/** Reads a TwiML document into its verbs. Throws `TwimlError` for anything it cannot take. */
export function parseTwiml(xml: string): TwimlVerb[] {
  if (xml.length > TWIML_LIMITS.chars)
    throw new TwimlError(`the document is ${xml.length} characters; at most ${TWIML_LIMITS.chars}`);
  const root = readXml(xml);
  if (root.name !== 'Response') throw new TwimlError(`the root element is <${root.name}>, not <Response>`);
  if (root.children.length > TWIML_LIMITS.verbs)
    throw new TwimlError(`<Response> holds ${root.children.length} verbs; at most ${TWIML_LIMITS.verbs}`);
  return root.children.map(toVerb);
}

function readXml(xml: string): Element {
  const parser = new SaxesParser<{ xmlns: false }>({ xmlns: false });
  const stack: Element[] = [];
  let root: Element | undefined;
  let elements = 0;
  parser.on('doctype', () => {
    throw new TwimlError('a <!DOCTYPE> is not allowed in TwiML (no DTD, no entities)');
  });
  parser.on('opentag', (tag: SaxesTagPlain) => {
    if (++elements > TWIML_LIMITS.elements)
      throw new TwimlError(`the document has over ${TWIML_LIMITS.elements} elements`);
    if (stack.length >= TWIML_LIMITS.depth)
      throw new TwimlError(`elements nest over ${TWIML_LIMITS.depth} deep`);
    const names = Object.keys(tag.attributes);
    if (names.length > TWIML_LIMITS.attributes)
      throw new TwimlError(
        `<${tag.name}> has ${names.length} attributes; at most ${TWIML_LIMITS.attributes}`,
      );
    const attributes: Record<string, string> = Object.create(null) as Record<string, string>;
    for (const name of names) {
      const value = tag.attributes[name]!;
      if (value.length > TWIML_LIMITS.valueChars)
        throw new TwimlError(`<${tag.name} ${name}> is over ${TWIML_LIMITS.valueChars} characters`);
      attributes[name] = value;
    }
    const element: Element = { name: tag.name, attributes, children: [], text: '' };
    const parent = stack.at(-1);
    if (parent) parent.children.push(element);
    else root = element;
    stack.push(element);
  });
  parser.on('closetag', () => {
    stack.pop();
  });
  const onText = (text: string): void => {
    const current = stack.at(-1);
    if (!current) return;
    if (current.text.length + text.length > TWIML_LIMITS.valueChars)
      throw new TwimlError(`the text of <${current.name}> is over ${TWIML_LIMITS.valueChars} characters`);
    current.text += text;
  };
  parser.on('text', onText);
  parser.on('cdata', onText);
  parser.on('error', (error) => {
    throw new TwimlError(`not well-formed XML: ${error.message}`);
  });
  try {
    parser.write(xml).close();
  } catch (error) {
    if (error instanceof TwimlError) throw error;
    throw new TwimlError(`not well-formed XML: ${(error as Error).message}`);
  }
  if (!root) throw new TwimlError('the document has no element');
  return root;
}

/** Twilio's `loop`: a count, 0 meaning "until the call ends"; absent, 1. */
function loopOf(element: Element): number {
  const raw = element.attributes['loop'];
  if (raw === undefined) return 1;
  const n = Number(raw.trim());
  if (!Number.isInteger(n) || n < 0)
    throw new TwimlError(`<${element.name} loop="${raw.slice(0, 40)}"> is not a whole number`);
  return n;
}

function methodOf(element: Element): 'GET' | 'POST' {
  const raw = (element.attributes['method'] ?? 'POST').toUpperCase();
  if (raw !== 'GET' && raw !== 'POST')
    throw new TwimlError(`<${element.name} method="${raw.slice(0, 20)}">: GET or POST`);
  return raw;
}

function textOf(element: Element): string {
  return element.text.trim();
}

function toVerb(element: Element): TwimlVerb {
  const a = element.attributes;
  switch (element.name) {
    case 'Say': {
      const text = textOf(element);
      return {
        verb: 'Say',
        text,
        loop: loopOf(element),
        ...(a['voice'] === undefined ? {} : { voice: a['voice'] }),
        ...(a['language'] === undefined ? {} : { language: a['language'] }),
      };
    }
    case 'Play': {
      const url = textOf(element);
      if (url === '') throw new TwimlError('<Play> has no URL');
      return { verb: 'Play', url, loop: loopOf(element) };
    }
    case 'Pause': {
      const raw = a['length'] ?? '1';
      const seconds = Number(raw.trim());
      if (!Number.isInteger(seconds) || seconds < 0 || seconds > TWIML_LIMITS.pauseSeconds)
        throw new TwimlError(
          `<Pause length="${raw.slice(0, 40)}"> is not a whole number of seconds up to ${TWIML_LIMITS.pauseSeconds}`,
        );
      return { verb: 'Pause', seconds };
    }
    case 'Hangup':
      return { verb: 'Hangup' };
    case 'Reject':
      return { verb: 'Reject', reason: a['reason'] ?? 'rejected' };
    case 'Redirect': {
      const url = textOf(element);
      if (url === '') throw new TwimlError('<Redirect> has no URL');
      return { verb: 'Redirect', url, method: methodOf(element) };
    }
    case 'Connect': {
      const [noun, ...more] = element.children;
      if (noun === undefined) throw new TwimlError('<Connect> holds no noun');
      if (more.length > 0) throw new TwimlError('<Connect> holds more than one noun');
      if (noun.name !== 'ConversationRelay') return { verb: 'Unsupported', name: `Connect/${noun.name}` };
      const action = a['action']?.trim();
      return {
        verb: 'Connect',
        method: methodOf(element),
        ...(action ? { action } : {}),
        relay: conversationRelay(noun),
      };
    }
    case 'Dial':
      return dial(element);
    default:
      if (KNOWN_UNSUPPORTED.has(element.name)) return { verb: 'Unsupported', name: element.name };
      throw new TwimlError(`<${element.name}> is not a TwiML verb`);
  }
}

/** `<Dial>`'s attributes that voxbridge runs; any other is taken without effect (and said so). */
const DIAL_ATTRIBUTES = new Set(['timeout', 'callerId', 'action', 'method']);
/** `<Dial>` nouns Twilio documents that voxbridge does not dial. */
const DIAL_UNSUPPORTED = new Set(['Client', 'Conference', 'Queue', 'Application', 'WhatsApp']);

/** A phone number as written in TwiML (`+1 (555) 123-4567`), with its separators taken out. */
function dialNumber(text: string): string {
  return text.replace(/[\s().-]/g, '');
}

function dial(element: Element): TwimlVerb {
  const a = element.attributes;
  const ignored = Object.keys(a).filter((name) => !DIAL_ATTRIBUTES.has(name));
  let target: DialTarget;
  if (element.children.length === 0) {
    const number = dialNumber(textOf(element));
    if (number === '') throw new TwimlError('<Dial> has no number');
    target = { kind: 'number', number };
  } else {
    const [noun, ...more] = element.children;
    if (more.length > 0)
      throw new TwimlError(
        `<Dial> holds ${element.children.length} nouns; voxbridge dials one number or SIP address at a time`,
      );
    if (DIAL_UNSUPPORTED.has(noun!.name)) return { verb: 'Unsupported', name: `Dial/${noun!.name}` };
    const address = textOf(noun!);
    if (noun!.name === 'Number') target = { kind: 'number', number: dialNumber(address) };
    else if (noun!.name === 'Sip') target = { kind: 'sip', uri: address };
    else throw new TwimlError(`<Dial> cannot hold <${noun!.name}>`);
    if (address === '') throw new TwimlError(`<${noun!.name}> has no address`);
    ignored.push(...Object.keys(noun!.attributes).map((name) => `${noun!.name}@${name}`));
  }
  const raw = a['timeout'];
  const timeoutSeconds = raw === undefined ? DIAL_TIMEOUT.default : Number(raw.trim());
  if (
    !Number.isInteger(timeoutSeconds) ||
    timeoutSeconds < DIAL_TIMEOUT.min ||
    timeoutSeconds > DIAL_TIMEOUT.max
  )
    throw new TwimlError(
      `<Dial timeout="${(raw ?? '').slice(0, 20)}"> is not a whole number of seconds from ${DIAL_TIMEOUT.min} to ${DIAL_TIMEOUT.max}`,
    );
  const callerId = a['callerId']?.trim();
  const action = a['action']?.trim();
  return {
    verb: 'Dial',
    target,
    timeoutSeconds,
    method: methodOf(element),
    ignored,
    ...(callerId ? { callerId } : {}),
    ...(action ? { action } : {}),
  };
}

function conversationRelay(noun: Element): ConversationRelayNoun {
  const languages: Array<Readonly<Record<string, string>>> = [];
  const parameters: Array<{ name: string; value: string }> = [];
  for (const child of noun.children) {
    if (child.name === 'Language') {
      if (!child.attributes['code']) throw new TwimlError('<Language> has no code');
      languages.push({ ...child.attributes });
    } else if (child.name === 'Parameter') {
      const name = child.attributes['name'];
      if (!name) throw new TwimlError('<Parameter> has no name');
      parameters.push({ name, value: child.attributes['value'] ?? '' });
    } else {
      throw new TwimlError(`<ConversationRelay> cannot hold <${child.name}>`);
    }
  }
  if (!noun.attributes['url']) throw new TwimlError('<ConversationRelay> has no url');
  return { attributes: { ...noun.attributes }, languages, parameters };
}
