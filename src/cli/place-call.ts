/**
 * `voxbridge call +15551234567 --gateway twilio --from +15550001111 --flow reminder`: asks a running
 * instance to place an outbound call (`POST /calls` of its control API) and prints the call's id; with
 * `--wait`, follows the call's events until it is answered or fails.
 */
import {
  CliError,
  integerOption,
  keyValueOptions,
  parseCommand,
  UsageError,
  type Env,
  type Parsed,
} from './args.js';

export const PLACE_HELP = `Usage: voxbridge call NUMBER --from CALLER_ID [options]

Asks a running voxbridge (its control API, POST /calls) to place a call to NUMBER (E.164, or a SIP URI)
through a gateway's REST API; the callee's media stream comes back to that instance (its
server.publicUrl) and runs a flow. Prints the call's id; follow it with GET /calls/ID/events.

Options:
  --from CALLER_ID          the caller id: a number the gateway account owns (required)
  --gateway NAME            twilio, telnyx, plivo, vonage, jambonz, asterisk or exotel (default twilio)
  --flow NAME               the flow the call runs once answered (default: the server's calls.defaultFlow)
  --param KEY=VALUE         a parameter of the call, in its start message (repeatable)
  --ring-seconds N          how long the callee may ring
  --machine-detection MODE  the gateway's own answering-machine detection: detect or detect-message-end,
                            its verdict posted to --amd-callback
  --amd-callback URL        where the gateway posts that verdict
  --url URL                 the instance (default http://127.0.0.1:$PORT, PORT defaulting to 8080)
  --control-token TOKEN     its CONTROL_TOKEN (default: $CONTROL_TOKEN; prefer the variable)
  --wait                    follow the call until it is answered (exit 0) or fails (exit 1)
  -h, --help                this help

Examples:
  voxbridge call +15551234567 --from +15550001111 --flow reminder
  voxbridge call sip:alice@pbx.example.com --gateway telnyx --from +15550001111 --wait`;

export const PLACE_OPTIONS = {
  url: { type: 'string' },
  key: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  from: { type: 'string' },
  gateway: { type: 'string' },
  flow: { type: 'string' },
  param: { type: 'string', multiple: true },
  'ring-seconds': { type: 'string' },
  'machine-detection': { type: 'string' },
  'amd-callback': { type: 'string' },
  'control-token': { type: 'string' },
  wait: { type: 'boolean' },
} as const;

export interface PlacePlan {
  /** The instance's base URL (`http://127.0.0.1:8080`), no trailing slash. */
  readonly baseUrl: string;
  readonly controlToken: string | undefined;
  /** `POST /calls`'s body. */
  readonly body: Record<string, unknown>;
  readonly wait: boolean;
}

/** The instance's base URL: http(s) (a ws(s) URL is taken as its http(s) twin), no query. */
function instanceUrl(given: string | undefined, env: Env): string {
  const raw = given ?? `http://127.0.0.1:${env['PORT'] || '8080'}`;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UsageError(`--url is not a URL: "${raw}"`, 'call');
  }
  const schemes: Record<string, string> = {
    'http:': 'http:',
    'https:': 'https:',
    'ws:': 'http:',
    'wss:': 'https:',
  };
  const scheme = schemes[url.protocol];
  if (scheme === undefined) throw new UsageError(`--url must be http(s), got "${raw}"`, 'call');
  if (url.username || url.password) throw new UsageError('--url must not carry credentials', 'call');
  return `${scheme}//${url.host}${url.pathname.replace(/\/+$/, '')}`;
}

export function parsePlace(args: readonly string[], env: Env): Parsed<PlacePlan> {
  const { values, positionals } = parseCommand('call', args, PLACE_OPTIONS);
  if (values.help) return { help: true };
  if (positionals.length !== 1)
    throw new UsageError(
      `give one number to call, got ${positionals.length}: ${positionals.join(' ')}`,
      'call',
    );
  const to = positionals[0]!;
  if (values.from === undefined || values.from.trim() === '')
    throw new UsageError('--from CALLER_ID is required (a number the gateway account owns)', 'call');
  const body: Record<string, unknown> = { gateway: values.gateway ?? 'twilio', to, from: values.from };
  if (values.flow !== undefined) body['flow'] = values.flow;
  const parameters = keyValueOptions('param', values.param ?? [], 'call');
  if (Object.keys(parameters).length > 0) body['parameters'] = parameters;
  if (values['ring-seconds'] !== undefined)
    body['ring_seconds'] = integerOption('ring-seconds', values['ring-seconds'], 'call', {
      min: 5,
      max: 600,
    });
  const mode = values['machine-detection'];
  const callback = values['amd-callback'];
  if ((mode === undefined) !== (callback === undefined))
    throw new UsageError('--machine-detection and --amd-callback go together', 'call');
  if (mode !== undefined) {
    if (mode !== 'detect' && mode !== 'detect-message-end')
      throw new UsageError(`--machine-detection is detect or detect-message-end, got "${mode}"`, 'call');
    body['machine_detection'] = { mode, callback_url: callback };
  }
  return {
    help: false,
    plan: {
      baseUrl: instanceUrl(values.url, env),
      controlToken: values['control-token'] ?? (env['CONTROL_TOKEN'] || undefined),
      body,
      wait: values.wait ?? false,
    },
  };
}

/** Whether `voxbridge call …` places a call (a number is given) rather than opening the softphone. */
export function placesCall(args: readonly string[]): boolean {
  try {
    return parseCommand('call', args, { ...PLACE_OPTIONS, ...SOFTPHONE_ONLY }).positionals.length > 0;
  } catch {
    return false;
  }
}

/** The softphone's own options, so that telling the two apart does not trip on them. */
const SOFTPHONE_ONLY = {
  token: { type: 'string' },
  'call-sid': { type: 'string' },
  record: { type: 'string' },
  mic: { type: 'boolean' },
  'no-play': { type: 'boolean' },
  digits: { type: 'string' },
  'hangup-after-ms': { type: 'string' },
} as const;

/** How long the instance may take to answer POST /calls (it answers before the gateway does). */
const ANSWER_TIMEOUT_MS = 15_000;
/**
 * How long `--wait` follows a call: past the longest `calls.control.answerTimeoutMs` (600 s), after
 * which the instance itself fails the call, so only a stream that stopped saying anything reaches it.
 */
const FOLLOW_TIMEOUT_MS = 660_000;
/** The longest event the stream may send (or bytes without an event's end): the instance's are < 4 KiB. */
const MAX_EVENT_BYTES = 256 * 1024;

interface Output {
  out: (text: string) => void;
  err: (text: string) => void;
}

export async function runPlace(plan: PlacePlan, io: Output): Promise<void> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (plan.controlToken) headers['authorization'] = `Bearer ${plan.controlToken}`;
  let res: Response;
  try {
    res = await fetch(`${plan.baseUrl}/calls`, {
      method: 'POST',
      headers,
      body: JSON.stringify(plan.body),
      signal: AbortSignal.timeout(ANSWER_TIMEOUT_MS),
    });
  } catch (error) {
    throw new CliError(`cannot reach voxbridge at ${plan.baseUrl}: ${(error as Error).message}`);
  }
  const answer = (await res.json().catch(() => ({}))) as Record<string, unknown>;
  if (res.status !== 201) {
    const missing = Array.isArray(answer['missing']) ? ` (set ${answer['missing'].join(', ')})` : '';
    const message = typeof answer['error'] === 'string' ? answer['error'] : `HTTP ${res.status}`;
    throw new CliError(`the call was not placed: ${message}${missing}`);
  }
  const id = String(answer['id']);
  io.out(`${id}\n`);
  if (plan.wait) await follow(plan, id, headers, io);
}

/** Reads the call's event stream until `call.answered` (done) or `call.failed` / `call.ended` (fails). */
async function follow(
  plan: PlacePlan,
  id: string,
  headers: Record<string, string>,
  io: Output,
): Promise<void> {
  const res = await fetch(`${plan.baseUrl}/calls/${encodeURIComponent(id)}/events?after=0`, {
    headers: { ...(headers['authorization'] ? { authorization: headers['authorization'] } : {}) },
    signal: AbortSignal.timeout(FOLLOW_TIMEOUT_MS),
  });
  if (!res.ok || !res.body) throw new CliError(`cannot follow call ${id}: HTTP ${res.status}`);
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of res.body) {
    buffer += decoder.decode(chunk as Uint8Array, { stream: true });
    if (buffer.length > MAX_EVENT_BYTES)
      throw new CliError(`call ${id}: the event stream sent ${buffer.length} bytes without an event's end`);
    for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = block
        .split('\n')
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5).trim())
        .join('\n');
      if (data === '') continue;
      let event: Record<string, unknown>;
      try {
        event = JSON.parse(data) as Record<string, unknown>;
      } catch {
        throw new CliError(`call ${id}: the event stream sent an event that is not JSON`);
      }
      const type = event['type'];
      if (type === 'call.ringing')
        io.err(
          `ringing (${typeof event['provider_call_id'] === 'string' ? event['provider_call_id'] : 'no gateway id yet'})\n`,
        );
      if (type === 'call.answered') {
        io.err(`answered after ${String(event['ring_ms'])} ms\n`);
        // Leaving the loop cancels the stream.
        return;
      }
      if (type === 'call.failed' || type === 'call.ended')
        throw new CliError(
          `call ${id} ${type === 'call.failed' ? 'failed' : 'ended'}: ${String(event['reason'])}`,
        );
    }
  }
  throw new CliError(`call ${id}: the event stream ended before the call was answered`);
}
