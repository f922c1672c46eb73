/**
 * Twilio: the Calls resource of the REST API (`/2010-04-01/Accounts/{AccountSid}/Calls…json`), form
 * fields, HTTP Basic with the account SID and auth token. A call is its `CallSid`, as the stream's
 * start message gives it (`start.callSid`); a call of a subaccount is addressed under that account
 * (`CallRef.accountSid`, the start message's `accountSid`), which the parent's credentials may act on.
 *
 * - Hang up: update the call with `Status=completed` (which ends a ringing call as well as one in
 *   progress). A call Twilio no longer has (20404) or that is over (21220) is `alreadyEnded`.
 * - Cold transfer: update the call with TwiML `<Dial><Number>` (or `<Sip>`): the `<Connect><Stream>`
 *   that feeds voxbridge ends at once and the caller hears the target ring.
 * - Warm transfer: a conference, since a `<Dial>` can only give the callee a whisper from a URL. The
 *   target is called first (Calls create, `Twiml`: the summary, `<Say>` or `<Play>`, then the
 *   conference room, which it starts); only if that is accepted is the caller moved into the same room
 *   (not starting it, so they hear `waitUrl`: the hold music, Twilio's own by default). Either leaving
 *   ends the room. If moving the caller fails, the target's call is hung up again. If the target never
 *   answers, the caller stays on hold: the app watches `targetCallId` (or its status callback) and acts.
 * - Originate: Calls create with `Twiml` `<Connect><Stream url>` and a `<Parameter>` per parameter,
 *   `StatusCallback` with every progress event, and `MachineDetection` (`Enable` or
 *   `DetectMessageEnd`) with `AsyncAmd`, so the stream starts at once and the verdict is posted to
 *   `AsyncAmdStatusCallback`.
 *
 * Errors are `{code, message, more_info, status}`.
 *
 * Source: twilio.com/docs/voice/api/call-resource (create, update), /docs/voice/twiml/dial,
 * /docs/voice/twiml/conference (waitUrl, waitMethod GET for an audio file), /docs/voice/twiml/stream,
 * /docs/voice/answering-machine-detection, /docs/api/errors/20404 and /21220; twilio-node 6.2.
 */
import { randomUUID } from 'node:crypto';
import { basicAuthorization, required, type Credentials } from './credentials.js';
import { invalidRequest } from './errors.js';
import { xmlElement, xmlResponse, xmlText } from './markup.js';
import type {
  CallControl,
  CallControlCapabilities,
  CallRef,
  CallTarget,
  HangUpResult,
  OriginateRequest,
  OriginateResult,
  TransferOptions,
  TransferResult,
} from './port.js';
import { restPath, stringIn, type FormFields, type RestClient } from './rest.js';
import { restClientFor, type CallControlSettings } from './settings.js';
import {
  checkedNumber,
  checkedTarget,
  checkedUrl,
  DEFAULT_RING_SECONDS,
  HTTP_SCHEMES,
  ringSeconds,
  WS_SCHEMES,
} from './targets.js';

export const TWILIO_API_BASE_URL = 'https://api.twilio.com';
const API_VERSION = '2010-04-01';
/** Twilio's documented range for `Timeout` (ring time) and `<Dial timeout>`. */
const RING_MIN = 5;
const RING_MAX = 600;
/** "The requested resource … was not found" and "Call is not in-progress". */
const GONE_CODES = new Set(['20404', '21220']);
/** Every progress event of an outbound call, for `StatusCallbackEvent`. */
const PROGRESS_EVENTS = ['initiated', 'ringing', 'answered', 'completed'] as const;

const CAPABILITIES: CallControlCapabilities = {
  hangUp: true,
  coldTransfer: true,
  warmTransfer: true,
  holdMusic: true,
  summary: ['text', 'audio'],
  sipTargets: true,
  originate: true,
  machineDetection: true,
};

function dialNoun(target: CallTarget): string {
  return target.kind === 'number' ? xmlText('Number', {}, target.number) : xmlText('Sip', {}, target.uri);
}

function targetAddress(target: CallTarget): string {
  return target.kind === 'number' ? target.number : target.uri;
}

export class TwilioCallControl implements CallControl {
  readonly gateway = 'twilio';
  readonly capabilities = CAPABILITIES;
  readonly #rest: RestClient;
  readonly #accountSid: string;

  constructor(credentials: Credentials, settings: CallControlSettings) {
    this.#accountSid = required(credentials, 'TWILIO_ACCOUNT_SID');
    const token = required(credentials, 'TWILIO_AUTH_TOKEN');
    const authorization = basicAuthorization(this.#accountSid, token);
    this.#rest = restClientFor(settings, {
      gateway: 'twilio',
      defaultBaseUrl: TWILIO_API_BASE_URL,
      authorization: () => authorization,
      secrets: [...credentials.secrets, authorization.slice('Basic '.length)],
      providerError: (body) => ({ code: stringIn(body, 'code'), reason: stringIn(body, 'message') }),
      classify: (_status, code) =>
        code !== undefined && GONE_CODES.has(code) ? 'call_not_found' : undefined,
    });
  }

  #callPath(call: CallRef): string {
    return (
      restPath(API_VERSION, 'Accounts', call.accountSid ?? this.#accountSid, 'Calls') +
      `/${encodeURIComponent(call.callId)}.json`
    );
  }

  #callsPath(accountSid: string): string {
    return restPath(API_VERSION, 'Accounts', accountSid, 'Calls') + '.json';
  }

  async hangUp(call: CallRef, options: { readonly signal?: AbortSignal } = {}): Promise<HangUpResult> {
    const answer = await this.#rest.send({
      operation: 'hang_up',
      method: 'POST',
      path: this.#callPath(call),
      form: { Status: 'completed' },
      signal: options.signal,
      accept: (code) => code === 'call_not_found',
    });
    return { alreadyEnded: answer.error !== undefined };
  }

  async transfer(call: CallRef, target: CallTarget, options: TransferOptions): Promise<TransferResult> {
    const to = checkedTarget(target, 'twilio', 'transfer');
    const timeout = ringSeconds(options.timeoutSeconds, DEFAULT_RING_SECONDS, RING_MIN, RING_MAX);
    const callerId =
      options.callerId === undefined
        ? undefined
        : checkedNumber(options.callerId, 'callerId', 'twilio', 'transfer');
    if (options.mode === 'cold') {
      await this.#update(
        call,
        xmlResponse(xmlElement('Dial', { callerId, timeout }, dialNoun(to))),
        options.signal,
      );
      return { mode: 'cold' };
    }
    if (callerId === undefined)
      throw invalidRequest(
        'twilio',
        'transfer',
        'a warm transfer places a call: callerId (a number the account owns) is required',
      );
    const room = `voxbridge-transfer-${randomUUID()}`;
    const summary =
      options.summary === undefined
        ? ''
        : 'text' in options.summary
          ? xmlText('Say', {}, options.summary.text)
          : xmlText(
              'Play',
              {},
              checkedUrl(options.summary.audioUrl, 'summary.audioUrl', HTTP_SCHEMES, 'twilio', 'transfer'),
            );
    const holdMusic =
      options.holdMusicUrl === undefined
        ? undefined
        : checkedUrl(options.holdMusicUrl, 'holdMusicUrl', HTTP_SCHEMES, 'twilio', 'transfer');
    const accountSid = call.accountSid ?? this.#accountSid;
    const placed = await this.#rest.send({
      operation: 'transfer',
      method: 'POST',
      path: this.#callsPath(accountSid),
      form: {
        To: targetAddress(to),
        From: callerId,
        Timeout: String(timeout),
        Twiml: xmlResponse(
          summary,
          xmlElement(
            'Dial',
            {},
            xmlText(
              'Conference',
              { startConferenceOnEnter: true, endConferenceOnExit: true, beep: false },
              room,
            ),
          ),
        ),
      },
      signal: options.signal,
    });
    const targetCallId = stringIn(placed.body, 'sid');
    if (targetCallId === undefined)
      throw this.#rest.invalidAnswer('transfer', 'sid of the call placed to the target');
    try {
      await this.#update(
        call,
        xmlResponse(
          xmlElement(
            'Dial',
            {},
            xmlText(
              'Conference',
              {
                startConferenceOnEnter: false,
                endConferenceOnExit: true,
                beep: false,
                waitUrl: holdMusic,
                waitMethod: holdMusic === undefined ? undefined : 'GET',
              },
              room,
            ),
          ),
        ),
        options.signal,
      );
    } catch (error) {
      // The caller stays where they were; the target must not be left ringing into an empty room.
      await this.hangUp({ callId: targetCallId, accountSid }).catch(() => undefined);
      throw error;
    }
    return { mode: 'warm', targetCallId };
  }

  async #update(call: CallRef, twiml: string, signal: AbortSignal | undefined): Promise<void> {
    await this.#rest.send({
      operation: 'transfer',
      method: 'POST',
      path: this.#callPath(call),
      form: { Twiml: twiml },
      signal,
    });
  }

  async originate(request: OriginateRequest): Promise<OriginateResult> {
    const to = checkedTarget(request.to, 'twilio', 'originate');
    const from = checkedNumber(request.from, 'from', 'twilio', 'originate');
    const url = checkedUrl(request.streamUrl, 'streamUrl', WS_SCHEMES, 'twilio', 'originate');
    if (new URL(url).search !== '')
      throw invalidRequest(
        'twilio',
        'originate',
        'a Twilio stream URL may not carry a query string (put the token in the path)',
      );
    const parameters = Object.entries(request.parameters ?? {}).map(([name, value]) =>
      xmlElement('Parameter', { name, value }),
    );
    const form: Record<string, FormFields[string]> = {
      To: targetAddress(to),
      From: from,
      Timeout: String(ringSeconds(request.timeoutSeconds, DEFAULT_RING_SECONDS, RING_MIN, RING_MAX)),
      Twiml: xmlResponse(xmlElement('Connect', {}, xmlElement('Stream', { url }, ...parameters))),
    };
    if (request.statusCallbackUrl !== undefined) {
      form['StatusCallback'] = checkedUrl(
        request.statusCallbackUrl,
        'statusCallbackUrl',
        HTTP_SCHEMES,
        'twilio',
        'originate',
      );
      form['StatusCallbackEvent'] = PROGRESS_EVENTS;
      form['StatusCallbackMethod'] = 'POST';
    }
    const amd = request.machineDetection;
    if (amd !== undefined) {
      form['MachineDetection'] = amd.mode === 'detect' ? 'Enable' : 'DetectMessageEnd';
      form['AsyncAmd'] = 'true';
      form['AsyncAmdStatusCallback'] = checkedUrl(
        amd.callbackUrl,
        'machineDetection.callbackUrl',
        HTTP_SCHEMES,
        'twilio',
        'originate',
      );
      form['AsyncAmdStatusCallbackMethod'] = 'POST';
      if (amd.timeoutSeconds !== undefined)
        form['MachineDetectionTimeout'] = String(ringSeconds(amd.timeoutSeconds, 30, 3, 59));
    }
    const answer = await this.#rest.send({
      operation: 'originate',
      method: 'POST',
      path: this.#callsPath(this.#accountSid),
      form,
      signal: request.signal,
    });
    const callId = stringIn(answer.body, 'sid');
    if (callId === undefined) throw this.#rest.invalidAnswer('originate', 'call sid');
    return { callId };
  }

  async close(): Promise<void> {
    await this.#rest.close();
  }
}
