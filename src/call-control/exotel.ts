/**
 * Exotel: the v1 Calls API (`/v1/Accounts/{sid}/Calls/connect.json`), form fields, HTTP Basic with an
 * API key and token. The stream's start message gives the call's `call_sid`.
 *
 * What Exotel's documentation allows, and no more:
 * - Hang up and transfer: not offered. The v1 API has no operation on a call in progress (its Calls
 *   resource creates calls and reads their details). The Voicebot applet ends when voxbridge closes the
 *   stream and the flow moves on to its next applet, so a flow that should end the call there ends with
 *   a Hangup applet, and one that should reach a person goes on to a Connect applet: it is the flow, set
 *   up in Exotel's dashboard, not voxbridge, that decides. (Exotel's newer CPaaS "legs" API has a hangup
 *   action on a leg, but a Voicebot stream gives a v1 call sid, not a leg sid.)
 * - Originate: `Calls/connect` to a flow: Exotel calls `From` (the person: Exotel's naming), shows
 *   `CallerId` (an ExoPhone), and once answered runs the flow `Url`
 *   (`http://my.exotel.com/{sid}/exoml/start_voice/{flowAppId}`), whose Voicebot applet opens the
 *   stream. So the stream URL is the applet's, set in the dashboard; the request's `streamUrl` cannot
 *   change it. The parameters go as `CustomField` (JSON), which Exotel hands to the flow's applets;
 *   whether the Voicebot applet passes it to the stream, its docs do not say. `StatusCallback` with
 *   `StatusCallbackEvents` terminal and answered takes progress. No answering-machine detection.
 *
 * Errors are `{RestException: {Status, Message}}`.
 *
 * Source: developer.exotel.com/api/outgoing-call-to-connect-number-to-a-call-flow and
 * /docs/voice-v1/api-reference/connect-to-flow (fields, regional hosts api.exotel.com and
 * api.in.exotel.com), /api/statuscallback, /docs/agentstream (the Voicebot applet).
 */
import { basicAuthorization, required, type Credentials } from './credentials.js';
import { notConfigured, unsupported } from './errors.js';
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
} from './targets.js';

/** Singapore; Mumbai accounts use `https://api.in.exotel.com`. */
export const EXOTEL_API_BASE_URL = 'https://api.exotel.com';
const NO_LIVE_CALL_API =
  "Exotel's API has no operation on a call in progress: the flow's next applet decides what follows the stream";

const CAPABILITIES: CallControlCapabilities = {
  hangUp: false,
  coldTransfer: false,
  warmTransfer: false,
  holdMusic: false,
  summary: [],
  sipTargets: false,
  originate: true,
  machineDetection: false,
};

export class ExotelCallControl implements CallControl {
  readonly gateway = 'exotel';
  readonly capabilities: CallControlCapabilities;
  readonly #rest: RestClient;
  readonly #accountSid: string;
  readonly #flowAppId: string | undefined;

  constructor(credentials: Credentials, settings: CallControlSettings) {
    this.#accountSid = required(credentials, 'EXOTEL_ACCOUNT_SID');
    const authorization = basicAuthorization(
      required(credentials, 'EXOTEL_API_KEY'),
      required(credentials, 'EXOTEL_API_TOKEN'),
    );
    this.#flowAppId = settings.exotel?.flowAppId;
    this.capabilities = { ...CAPABILITIES, originate: this.#flowAppId !== undefined };
    this.#rest = restClientFor(settings, {
      gateway: 'exotel',
      defaultBaseUrl: EXOTEL_API_BASE_URL,
      authorization: () => authorization,
      secrets: [...credentials.secrets, authorization.slice('Basic '.length)],
      providerError: (body) => {
        return {
          code: stringIn(body, 'RestException', 'Code'),
          reason: stringIn(body, 'RestException', 'Message'),
        };
      },
    });
  }

  hangUp(_call: CallRef): Promise<HangUpResult> {
    return Promise.reject(unsupported('exotel', 'hang_up', NO_LIVE_CALL_API));
  }

  transfer(_call: CallRef, _target: CallTarget, _options: TransferOptions): Promise<TransferResult> {
    return Promise.reject(unsupported('exotel', 'transfer', NO_LIVE_CALL_API));
  }

  async originate(request: OriginateRequest): Promise<OriginateResult> {
    if (request.machineDetection !== undefined)
      throw unsupported(
        'exotel',
        'originate',
        'Exotel offers no answering-machine detection on its calls API',
      );
    if (this.#flowAppId === undefined)
      throw notConfigured(
        'exotel',
        'originate',
        'exotel.flowAppId: the flow whose Voicebot applet streams to voxbridge',
      );
    const to = checkedTarget(request.to, 'exotel', 'originate');
    if (to.kind !== 'number') throw unsupported('exotel', 'originate', 'Exotel calls phone numbers only');
    const form: Record<string, FormFields[string]> = {
      From: to.number,
      CallerId: checkedNumber(request.from, 'from', 'exotel', 'originate'),
      Url: `http://my.exotel.com/${encodeURIComponent(this.#accountSid)}/exoml/start_voice/${encodeURIComponent(this.#flowAppId)}`,
      TimeOut: String(ringSeconds(request.timeoutSeconds, DEFAULT_RING_SECONDS, 5, 600)),
    };
    if (request.parameters !== undefined && Object.keys(request.parameters).length > 0)
      form['CustomField'] = JSON.stringify(request.parameters);
    if (request.statusCallbackUrl !== undefined) {
      form['StatusCallback'] = checkedUrl(
        request.statusCallbackUrl,
        'statusCallbackUrl',
        HTTP_SCHEMES,
        'exotel',
        'originate',
      );
      form['StatusCallbackEvents[0]'] = 'terminal';
      form['StatusCallbackEvents[1]'] = 'answered';
    }
    const answer = await this.#rest.send({
      operation: 'originate',
      method: 'POST',
      path: `${restPath('v1', 'Accounts', this.#accountSid, 'Calls')}/connect.json`,
      form,
      signal: request.signal,
    });
    const callId = stringIn(answer.body, 'Call', 'Sid');
    if (callId === undefined) throw this.#rest.invalidAnswer('originate', 'Call.Sid');
    return { callId };
  }

  async close(): Promise<void> {
    await this.#rest.close();
  }
}
