/**
 * A start message's custom parameters and ids: flattened to strings, and bounded (count, sizes, id
 * length) before they reach logs, events and the control API.
 */
import { isObject, type JsonObject } from './common.js';
import { ProtocolError, type GatewayName } from './types.js';

/**
 * A start message's custom parameters, in either shape they come in: an object (`{"flow": "sales"}`,
 * as Telnyx's AsyncAPI start frame and Exotel show them) or the `[{"name": "flow", "value": "sales"}]`
 * list that Telnyx's Call Control `streaming_start` takes. Both give the same record (values as
 * `flattenParameters` makes them); list entries that are not `{name: string, …}` are skipped, and
 * anything that is neither an object nor a list is no parameters: never a reason to refuse the call.
 */
export function customParameters(value: unknown): Record<string, string> {
  if (Array.isArray(value)) {
    const pairs: Array<[string, unknown]> = [];
    for (const item of value as unknown[])
      if (isObject(item) && typeof item['name'] === 'string') pairs.push([item['name'], item['value']]);
    return stringEntries(pairs);
  }
  return isObject(value) ? flattenParameters(value) : {};
}

/**
 * Custom parameters (Twilio `customParameters`, jambonz metadata, Vonage headers, …) as strings: strings
 * kept, numbers and booleans printed, objects and arrays as JSON, null dropped, `skip` keys left out.
 */
export function flattenParameters(
  source: JsonObject | undefined,
  skip: readonly string[] = [],
): Record<string, string> {
  if (!source) return {};
  return stringEntries(Object.entries(source).filter(([key]) => !skip.includes(key)));
}

function stringEntries(pairs: ReadonlyArray<readonly [string, unknown]>): Record<string, string> {
  const entries: Array<[string, string]> = [];
  for (const [key, value] of pairs) {
    if (value === null || value === undefined) continue;
    // JSON gives nothing else: strings, numbers, booleans, objects and arrays.
    entries.push([key, typeof value === 'string' ? value : JSON.stringify(value)]);
  }
  // fromEntries defines own properties, so a key like "__proto__" stays data.
  return Object.fromEntries(entries);
}

/**
 * What a call keeps of the parameters a gateway (and the stream URL's query) gave it. They are listed by
 * `GET /calls`, sent in `call.started` and logged, so a peer must not size them: 150 calls with 1 MiB
 * each made a 157 MB log and a 157 MB `GET /calls`.
 */
export const PARAMETER_LIMITS = {
  maxCount: 32,
  maxNameChars: 64,
  maxValueChars: 1024,
  /** Names and values together. */
  maxTotalChars: 8192,
} as const;

export interface LimitedParameters {
  readonly parameters: Record<string, string>;
  /** How many were left out, and how many characters (names and values) they had. */
  readonly dropped: number;
  readonly droppedChars: number;
}

/**
 * `parameters` within `PARAMETER_LIMITS`: a parameter whose name or value is too long is left out
 * whole (a cut value would be a different value), and so is every one past the count or the total.
 * Those named in `first` (`flow`, which picks the call's flow) are taken first; the rest keep their
 * order. The call goes on with what is kept; the caller logs what was dropped.
 */
export function limitParameters(
  parameters: Readonly<Record<string, string>>,
  first: readonly string[] = ['flow'],
): LimitedParameters {
  const { maxCount, maxNameChars, maxValueChars, maxTotalChars } = PARAMETER_LIMITS;
  const entries = Object.entries(parameters);
  const ordered = [
    ...entries.filter(([name]) => first.includes(name)),
    ...entries.filter(([name]) => !first.includes(name)),
  ];
  const kept: Array<[string, string]> = [];
  let total = 0;
  let dropped = 0;
  let droppedChars = 0;
  for (const [name, value] of ordered) {
    const chars = name.length + value.length;
    if (
      name.length > maxNameChars ||
      value.length > maxValueChars ||
      kept.length >= maxCount ||
      total + chars > maxTotalChars
    ) {
      dropped++;
      droppedChars += chars;
      continue;
    }
    kept.push([name, value]);
    total += chars;
  }
  return { parameters: Object.fromEntries(kept), dropped, droppedChars };
}

/** The longest call or stream id taken: every call event and log line carries them. */
export const MAX_ID_CHARS = 128;

/** The start's ids if they are short enough to log and address (`/calls/{id}`); else `invalid_start`. */
export function checkIds(gateway: GatewayName, stream: { callId: string; streamId: string }): void {
  for (const [what, id] of [
    ['call id', stream.callId],
    ['stream id', stream.streamId],
  ] as const)
    if (id.length > MAX_ID_CHARS)
      throw new ProtocolError(
        'invalid_start',
        `${gateway}: ${what} of ${id.length} characters (at most ${MAX_ID_CHARS})`,
      );
}
