/**
 * ConversationRelay's WebSocket messages (Twilio's, and Telnyx's copy): what voxbridge sends an app
 * (`setup`, `prompt`, `dtmf`, `interrupt`, `error`, and the `info` it asked for) and what it reads
 * from one (`text`, `play`, `sendDigits`, `language`, `end`). Parsing is lenient the way real peers
 * need: numbers and booleans may come as strings, unknown fields are ignored; an unknown type or a bad
 * field is a `RelayParseError` whose message goes back to the app as an `error`, and the session goes
 * on. Every size is bounded before it is used.
 *
 * Our own additions ride under one key ConversationRelay does not use, `voxbridge`, which an app that
 * does not know it ignores.
 */
import { z } from 'zod';
import { jsonDepthExceeds } from '../http/json-depth.js';

/** The largest message an app may send (bytes): a long token stream is many messages, not one. */
export const RELAY_MAX_MESSAGE_BYTES = 64 * 1024;
const MAX_TOKEN_CHARS = 16_384;
const MAX_DIGITS = 64;
const MAX_HANDOFF_CHARS = 16_384;
/** Objects and arrays inside one another in a message, at most (handoff data is the only nested field). */
export const RELAY_MAX_JSON_DEPTH = 32;

/** Who may cut speech: ConversationRelay's values (a boolean is `any` or `none`). */
export type Interruptible = 'none' | 'dtmf' | 'speech' | 'any';

/** Extensions of ours, under `voxbridge` in `setup` and `prompt`. */
export interface RelayExtension {
  gateway?: string;
  /** Whether the caller's words come as `prompt`s (false: no speech-to-text is configured). */
  prompts?: boolean;
  guildId?: string;
  channelId?: string;
  /** The Discord member who spoke a `prompt`. */
  member?: { id: string; name?: string };
}

export type ToApp =
  | {
      type: 'setup';
      sessionId: string;
      callSid: string;
      accountSid: string;
      parentCallSid: string;
      from: string;
      to: string;
      forwardedFrom: string;
      callType: string;
      callerName: string;
      direction: string;
      callStatus: string;
      customParameters: Record<string, string>;
      voxbridge: RelayExtension;
    }
  | { type: 'prompt'; voicePrompt: string; lang: string; last: boolean; voxbridge?: RelayExtension }
  | { type: 'dtmf'; digit: string }
  | { type: 'interrupt'; utteranceUntilInterrupt: string; durationUntilInterruptMs: number }
  | { type: 'error'; description: string }
  | InfoMessage;

/**
 * What the app asked to be told (`RelayInfoOption`): who is speaking (`speaker-events`: `value` "on"
 * or "off", `ts` the time in epoch ms), and what the caller heard of an answer (`tokens-played`).
 */
export type InfoMessage =
  | { type: 'info'; name: 'agentSpeaking' | 'clientSpeaking'; value: 'on' | 'off'; ts: number }
  | { type: 'info'; name: 'tokensPlayed'; value: string };

/**
 * The values of ConversationRelay's `debug` attribute (and of `events`, its newer name): which `info`
 * messages the app is sent. `debugging` is Twilio's own diagnostics (e.g. `roundTripDelayMs`): taken,
 * and nothing is sent for it.
 */
export const RELAY_INFO_OPTIONS = ['debugging', 'speaker-events', 'tokens-played'] as const;
export type RelayInfoOption = (typeof RELAY_INFO_OPTIONS)[number];

/**
 * The options of a `debug` (or `events`) attribute: words separated by spaces or commas, in any case,
 * or a list of them. Unknown words are left out and returned, once each, for the caller to log.
 */
export function parseRelayInfoOptions(value: string | readonly string[]): {
  options: Set<RelayInfoOption>;
  unknown: string[];
} {
  const options = new Set<RelayInfoOption>();
  const unknown = new Set<string>();
  const words = (typeof value === 'string' ? [value] : value).flatMap((v) => v.split(/[\s,]+/));
  for (const word of words) {
    if (word === '') continue;
    const option = word.toLowerCase();
    if ((RELAY_INFO_OPTIONS as readonly string[]).includes(option)) options.add(option as RelayInfoOption);
    else unknown.add(word);
  }
  return { options, unknown: [...unknown] };
}

/** A boolean as JSON has it, or as a string ("true"/"false"). */
const bool = z.union([z.boolean(), z.enum(['true', 'false']).transform((v) => v === 'true')]);
/** A number as JSON has it, or as a string of digits ("460"). */
const count = z.union([
  z.number().int().min(0).max(1000),
  z
    .string()
    .regex(/^\d{1,4}$/)
    .transform(Number),
]);
const interruptible = z.union([
  z.enum(['none', 'dtmf', 'speech', 'any']),
  bool.transform((v): Interruptible => (v ? 'any' : 'none')),
]);

/**
 * An `interruptible` as TwiML writes it (`any`, `none`, `dtmf`, `speech`, or `true`/`false`, any
 * case); undefined when it is none of these.
 */
export function readInterruptible(word: string): Interruptible | undefined {
  const parsed = interruptible.safeParse(word.trim().toLowerCase());
  return parsed.success ? parsed.data : undefined;
}

/** A boolean as TwiML writes it (`true`/`false`, any case); undefined when absent or neither. */
export function readBool(word: string | undefined): boolean | undefined {
  if (word === undefined) return undefined;
  const parsed = bool.safeParse(word.trim().toLowerCase());
  return parsed.success ? parsed.data : undefined;
}
const lang = z.string().max(35);

const textMessage = z.looseObject({
  type: z.literal('text'),
  /** A token is usually a string; a number an app serialised as one is taken as its text. */
  token: z.union([z.string().max(MAX_TOKEN_CHARS), z.number().transform(String)]),
  last: bool.optional(),
  lang: lang.optional(),
  interruptible: interruptible.optional(),
  preemptible: bool.optional(),
});
const playMessage = z.looseObject({
  type: z.literal('play'),
  source: z.string().min(1).max(2048),
  loop: count.optional(),
  interruptible: interruptible.optional(),
  preemptible: bool.optional(),
});
const sendDigitsMessage = z.looseObject({
  type: z.literal('sendDigits'),
  digits: z
    .string()
    .min(1)
    .max(MAX_DIGITS)
    .regex(/^[0-9*#A-Dw]+$/, 'digits are 0-9, *, #, A-D and w (a half-second pause)'),
});
const languageMessage = z.looseObject({
  type: z.literal('language'),
  ttsLanguage: lang.optional(),
  transcriptionLanguage: lang.optional(),
});
const endMessage = z.looseObject({
  type: z.literal('end'),
  /** A string in ConversationRelay; an object an app sends instead is kept as its JSON. */
  handoffData: z
    .union([z.string(), z.record(z.string(), z.unknown()).transform((o) => JSON.stringify(o))])
    .pipe(z.string().max(MAX_HANDOFF_CHARS))
    .optional(),
});

const FROM_APP = {
  text: textMessage,
  play: playMessage,
  sendDigits: sendDigitsMessage,
  language: languageMessage,
  end: endMessage,
} as const;

export type FromApp = { [K in keyof typeof FROM_APP]: z.output<(typeof FROM_APP)[K]> }[keyof typeof FROM_APP];

export class RelayParseError extends Error {
  override readonly name = 'RelayParseError';
}

/** One message from the app, or a `RelayParseError` saying what is wrong with it. */
export function parseFromApp(data: string): FromApp {
  if (data.length > RELAY_MAX_MESSAGE_BYTES)
    throw new RelayParseError(`message over ${RELAY_MAX_MESSAGE_BYTES} bytes`);
  // What reads the message afterwards (the handoff data's JSON, the schema) recurses: refused unread.
  if (jsonDepthExceeds(data, RELAY_MAX_JSON_DEPTH))
    throw new RelayParseError(`message nests deeper than ${RELAY_MAX_JSON_DEPTH} levels`);
  let json: unknown;
  try {
    json = JSON.parse(data);
  } catch {
    throw new RelayParseError('message is not JSON');
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json))
    throw new RelayParseError('message is not a JSON object');
  const type = (json as { type?: unknown }).type;
  if (typeof type !== 'string') throw new RelayParseError('message has no type');
  const schema = Object.hasOwn(FROM_APP, type) ? FROM_APP[type as keyof typeof FROM_APP] : undefined;
  if (!schema) throw new RelayParseError(`unknown message type: ${type.slice(0, 40)}`);
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new RelayParseError(
      `invalid ${type} message: ${issue.path.join('.') || 'message'}: ${issue.message}`,
    );
  }
  return parsed.data;
}

/** The JSON of a message to the app. */
export function serializeToApp(message: ToApp): string {
  return JSON.stringify(message);
}
