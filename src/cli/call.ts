/** `voxbridge call`: a terminal softphone on the app's Twilio media-stream endpoint. */
import {
  integerOption,
  keyValueOptions,
  noPositionals,
  parseCommand,
  UsageError,
  type Env,
  type Parsed,
} from './args.js';
import { DTMF_KEYS } from './keyboard.js';
import { DIGIT_SPACING_MS, PROMPT_END_QUIET_MS, runSoftphone, type SoftphoneOptions } from './softphone.js';
import { twilioSid } from '../protocols/twilio-caller.js';

export const CALL_HELP = `Usage: voxbridge call [options]

A softphone in the terminal: it calls the bot the way a Twilio Media Stream does (connected, start
with a callSid and the custom parameter "flow", the caller's audio, keys as dtmf, marks answered,
clear obeyed), plays what the bot says through sox's \`play\` (or ffplay, aplay), and hangs up with q.

Options:
  --url URL             the media-stream endpoint (default ws://127.0.0.1:$PORT/media/twilio, PORT
                        defaulting to 8080); http(s) becomes ws(s), and a URL that is not a
                        /media/... path gets /media/twilio
  --token TOKEN         the server's MEDIA_STREAM_TOKEN (default: $MEDIA_STREAM_TOKEN)
  --flow NAME           the IVR flow to run (default: the server's calls.defaultFlow)
  --param KEY=VALUE     another custom parameter of the stream (repeatable)
  --call-sid SID        the call's id (default: a random CA...)
  --record FILE         record what the bot says (16-bit 8 kHz WAV, the call's whole timeline)
  --mic                 send the microphone (sox's \`rec\`) instead of silence
  --no-play             do not play the bot's audio
  --digits KEYS         press KEYS (0-9 * # A-D) once the bot's first prompt has ended (after
                        ${PROMPT_END_QUIET_MS} ms of quiet), ${DIGIT_SPACING_MS} ms apart
  --hangup-after-ms N   hang up N ms after the call started
  -h, --help            this help

During the call: 0-9 * # A-D press that key; q (or Ctrl-C) hangs up.

\`voxbridge call NUMBER --from CALLER_ID\` instead has a running voxbridge place an outbound call
(\`voxbridge call NUMBER --help\`).

Examples:
  voxbridge call --flow default
  voxbridge call --flow default --digits 1 --record call.wav --hangup-after-ms 15000 --no-play
  voxbridge call --url wss://voice.example.com/media/twilio --token "$MEDIA_STREAM_TOKEN" --mic`;

const CALL_OPTIONS = {
  url: { type: 'string' },
  // Global, accepted everywhere; a call does not use the speech service's key.
  key: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  token: { type: 'string' },
  flow: { type: 'string' },
  param: { type: 'string', multiple: true },
  'call-sid': { type: 'string' },
  record: { type: 'string' },
  mic: { type: 'boolean' },
  'no-play': { type: 'boolean' },
  digits: { type: 'string' },
  'hangup-after-ms': { type: 'string' },
} as const;

export type CallPlan = Omit<SoftphoneOptions, 'env' | 'log'>;

/** A day: longer is a typo. */
const MAX_HANGUP_AFTER_MS = 86_400_000;

const MEDIA_PATH = /\/media\/[a-z]+(\/[^/]+)?$/;

/** The endpoint to dial: ws(s), and `/media/twilio` unless the URL names a media path already. */
export function mediaStreamUrl(given: string | undefined, env: Env): string {
  const raw = given ?? `ws://127.0.0.1:${env['PORT'] || '8080'}/media/twilio`;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UsageError(`--url is not a URL: "${raw}"`, 'call');
  }
  const schemes: Record<string, string> = { 'http:': 'ws:', 'https:': 'wss:', 'ws:': 'ws:', 'wss:': 'wss:' };
  const scheme = schemes[url.protocol];
  if (scheme === undefined) throw new UsageError(`--url must be ws(s) or http(s), got "${raw}"`, 'call');
  let path = url.pathname.replace(/\/+$/, '');
  if (!MEDIA_PATH.test(path)) path = `${path.replace(/\/api\/speech$/, '')}/media/twilio`;
  return `${scheme}//${url.host}${path}${url.search}`;
}

function parseDigits(value: string | undefined): string {
  if (value === undefined) return '';
  const digits = value.toUpperCase();
  if (digits === '' || ![...digits].every((d) => DTMF_KEYS.test(d)))
    throw new UsageError(`--digits takes keys 0-9 * # A-D, got "${value}"`, 'call');
  return digits;
}

export function parseCall(args: readonly string[], env: Env): Parsed<CallPlan> {
  const { values, positionals } = parseCommand('call', args, CALL_OPTIONS);
  if (values.help) return { help: true };
  noPositionals(positionals, 'call');
  const parameters = keyValueOptions('param', values.param ?? [], 'call');
  if (values.flow !== undefined) {
    if (values.flow.trim() === '') throw new UsageError('--flow must name a flow', 'call');
    parameters['flow'] = values.flow;
  }
  const callSid = values['call-sid'] ?? twilioSid('CA');
  if (callSid.trim() === '') throw new UsageError('--call-sid must not be empty', 'call');
  if (values.record === '') throw new UsageError('--record must name a file', 'call');
  const hangup = values['hangup-after-ms'];
  return {
    help: false,
    plan: {
      url: mediaStreamUrl(values.url, env),
      token: values.token ?? (env['MEDIA_STREAM_TOKEN'] || undefined),
      callSid,
      parameters,
      record: values.record,
      play: !(values['no-play'] ?? false),
      mic: values.mic ?? false,
      digits: parseDigits(values.digits),
      hangupAfterMs:
        hangup === undefined
          ? undefined
          : integerOption('hangup-after-ms', hangup, 'call', { min: 1, max: MAX_HANGUP_AFTER_MS }),
    },
  };
}

export async function runCall(plan: CallPlan, env: Env): Promise<void> {
  const log = (line: string): void => void process.stderr.write(`${line}\n`);
  const flow = plan.parameters['flow'];
  log(
    `calling ${plan.url} as ${plan.callSid}${flow ? ` (flow ${flow})` : ''}` +
      (process.stdin.isTTY ? '; keys 0-9 * # A-D press them, q hangs up' : ''),
  );
  const summary = await runSoftphone({ ...plan, env, log });
  log(
    `${summary.reason} after ${(summary.durationMs / 1000).toFixed(1)} s; the bot spoke for ` +
      `${(summary.botAudioMs / 1000).toFixed(1)} s` +
      (plan.record ? `; recorded to ${plan.record}` : ''),
  );
}
