/**
 * Vonage: the Voice API (`/v1/calls…`), JSON bodies, `Authorization: Bearer <JWT>` signed with the
 * application's private key (jwt.ts). A call is its `uuid`: the NCCO that connects an inbound call to
 * voxbridge passes it in the websocket's headers (`uuid`), which the stream's first message carries.
 *
 * - Hang up: `PUT /v1/calls/{uuid}` `{action: "hangup"}` (204). 404 is `alreadyEnded`.
 * - Cold transfer: `PUT /v1/calls/{uuid}` `{action: "transfer", destination: {type: "ncco", ncco}}`
 *   with one `connect` to a `phone` (digits, no +) or `sip` endpoint, `from` and `timeout`.
 * - Warm transfer: the same `connect` with `ringbackTone` (the hold music, which the caller hears
 *   while the target rings) and, on the endpoint, `onAnswer.url`: an NCCO the target hears when they
 *   answer, before they join the call (`talk` the summary, or `stream` it). Vonage fetches that NCCO
 *   from a URL, so a summary needs the `DocumentHost`; hold music alone does not.
 * - Originate: `POST /v1/calls` with `to`, `from`, an inline `ncco` that connects the callee to a
 *   `websocket` endpoint (the stream URL, the configured `content-type`, the parameters as `headers`,
 *   which the first message carries back), `ringing_timer`, `event_url` for progress and
 *   `advanced_machine_detection` (`detect`, or `detect_beep` to wait for the greeting's end), whose
 *   verdict also goes to the event URL: one URL for both. The answer's `uuid` is the new call; the
 *   stream does not carry it (the NCCO is written before the uuid exists), so the app finds its call
 *   by its own parameter.
 *
 * Errors are RFC 7807 problems: `{type, title, detail, instance}`.
 *
 * Source: developer.vonage.com/en/api/voice (create an outbound call, modify an in-progress call),
 * /voice/voice-api/ncco-reference (connect: endpoints, from, timeout, ringbackTone, onAnswer; talk;
 * stream), /voice/voice-api/concepts/websockets, /getting-started/concepts/authentication (JWT);
 * Vonage/vonage-node-sdk packages/voice/lib/voice.ts and packages/jwt/lib/tokenGenerate.ts.
 */
import type { KeyObject } from 'node:crypto';
import { required, type Credentials } from './credentials.js';
import { invalidRequest, notConfigured } from './errors.js';
import type { DocumentHost } from './documents.js';
import { vonageJwt } from './jwt.js';
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
import { restPath, stringIn, type RestClient } from './rest.js';
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

export const VONAGE_API_BASE_URL = 'https://api.nexmo.com';
/** `connect.timeout` and `ringing_timer`: Vonage allows 1 to 120 s. */
const RING_MIN = 1;
const RING_MAX = 120;

export interface VonageOptions {
  /** Unix ms, for the JWT's `iat`. Default `Date.now`. */
  readonly now?: () => number;
}

function digits(number: string): string {
  return number.replace(/^\+/, '');
}

function endpoint(target: CallTarget): Record<string, unknown> {
  return target.kind === 'number'
    ? { type: 'phone', number: digits(target.number) }
    : { type: 'sip', uri: target.uri };
}

export class VonageCallControl implements CallControl {
  readonly gateway = 'vonage';
  readonly capabilities: CallControlCapabilities;
  readonly #rest: RestClient;
  readonly #documents: DocumentHost | undefined;
  readonly #contentType: string;

  constructor(
    credentials: Credentials,
    key: KeyObject,
    settings: CallControlSettings,
    options: VonageOptions = {},
  ) {
    const applicationId = required(credentials, 'VONAGE_APPLICATION_ID');
    const now = options.now ?? Date.now;
    this.#documents = settings.documents;
    this.#contentType = settings.vonage?.streamContentType ?? 'audio/l16;rate=16000';
    const hosted = this.#documents !== undefined;
    this.capabilities = {
      hangUp: true,
      coldTransfer: true,
      warmTransfer: hosted,
      holdMusic: true,
      summary: hosted ? ['text', 'audio'] : [],
      sipTargets: true,
      originate: true,
      machineDetection: true,
    };
    // The key's base64 lines, each scrubbed wherever it might appear.
    const keyLines = key
      .export({ type: 'pkcs8', format: 'pem' })
      .toString()
      .split('\n')
      .filter((line) => line.length >= 16 && !line.startsWith('-----'));
    this.#rest = restClientFor(settings, {
      gateway: 'vonage',
      defaultBaseUrl: VONAGE_API_BASE_URL,
      authorization: () => `Bearer ${vonageJwt(applicationId, key, now())}`,
      secrets: [...credentials.secrets, ...keyLines],
      providerError: (body) => {
        const title = stringIn(body, 'title');
        const detail = stringIn(body, 'detail');
        const reason =
          title !== undefined && detail !== undefined ? `${title}: ${detail}` : (detail ?? title);
        const type = stringIn(body, 'type');
        const code = type?.split('#')[1];
        return { code, reason };
      },
    });
  }

  #call(call: CallRef): string {
    return restPath('v1', 'calls', call.callId);
  }

  async hangUp(call: CallRef, options: { readonly signal?: AbortSignal } = {}): Promise<HangUpResult> {
    const answer = await this.#rest.send({
      operation: 'hang_up',
      method: 'PUT',
      path: this.#call(call),
      json: { action: 'hangup' },
      signal: options.signal,
      accept: (code) => code === 'call_not_found',
    });
    return { alreadyEnded: answer.error !== undefined };
  }

  async transfer(call: CallRef, target: CallTarget, options: TransferOptions): Promise<TransferResult> {
    const to = endpoint(checkedTarget(target, 'vonage', 'transfer'));
    const connect: Record<string, unknown> = {
      action: 'connect',
      timeout: ringSeconds(options.timeoutSeconds, DEFAULT_RING_SECONDS, RING_MIN, RING_MAX),
      endpoint: [to],
    };
    if (options.callerId !== undefined)
      connect['from'] = digits(checkedNumber(options.callerId, 'callerId', 'vonage', 'transfer'));
    if (options.mode === 'warm') {
      if (options.holdMusicUrl !== undefined)
        connect['ringbackTone'] = checkedUrl(
          options.holdMusicUrl,
          'holdMusicUrl',
          HTTP_SCHEMES,
          'vonage',
          'transfer',
        );
      if (options.summary !== undefined) {
        if (this.#documents === undefined)
          throw notConfigured(
            'vonage',
            'transfer',
            "a document host: Vonage fetches the target's onAnswer NCCO from a URL",
          );
        const ncco =
          'text' in options.summary
            ? [{ action: 'talk', text: options.summary.text }]
            : [
                {
                  action: 'stream',
                  streamUrl: [
                    checkedUrl(
                      options.summary.audioUrl,
                      'summary.audioUrl',
                      HTTP_SCHEMES,
                      'vonage',
                      'transfer',
                    ),
                  ],
                },
              ];
        to['onAnswer'] = {
          url: await this.#documents.publish({ contentType: 'application/json', body: JSON.stringify(ncco) }),
        };
      }
    }
    await this.#rest.send({
      operation: 'transfer',
      method: 'PUT',
      path: this.#call(call),
      json: { action: 'transfer', destination: { type: 'ncco', ncco: [connect] } },
      signal: options.signal,
    });
    return { mode: options.mode };
  }

  async originate(request: OriginateRequest): Promise<OriginateResult> {
    const to = checkedTarget(request.to, 'vonage', 'originate');
    const uri = checkedUrl(request.streamUrl, 'streamUrl', WS_SCHEMES, 'vonage', 'originate');
    const websocket: Record<string, unknown> = { type: 'websocket', uri, 'content-type': this.#contentType };
    if (request.parameters !== undefined && Object.keys(request.parameters).length > 0)
      websocket['headers'] = { ...request.parameters };
    const body: Record<string, unknown> = {
      to: [endpoint(to)],
      from: { type: 'phone', number: digits(checkedNumber(request.from, 'from', 'vonage', 'originate')) },
      ncco: [{ action: 'connect', endpoint: [websocket] }],
      ringing_timer: ringSeconds(request.timeoutSeconds, DEFAULT_RING_SECONDS, RING_MIN, RING_MAX),
    };
    const amd = request.machineDetection;
    const hooks = new Set(
      [request.statusCallbackUrl, amd?.callbackUrl]
        .filter((u): u is string => u !== undefined)
        .map((u) => checkedUrl(u, 'a callback URL', HTTP_SCHEMES, 'vonage', 'originate')),
    );
    if (hooks.size > 1)
      throw invalidRequest(
        'vonage',
        'originate',
        "Vonage sends a call's events, the machine verdict among them, to one event_url: give one URL",
      );
    const [hook] = hooks;
    if (hook !== undefined) Object.assign(body, { event_url: [hook], event_method: 'POST' });
    if (amd !== undefined) {
      const advanced: Record<string, unknown> = {
        behavior: 'continue',
        mode: amd.mode === 'detect' ? 'detect' : 'detect_beep',
      };
      if (amd.timeoutSeconds !== undefined)
        advanced['beep_timeout'] = ringSeconds(amd.timeoutSeconds, 45, 45, 120);
      body['advanced_machine_detection'] = advanced;
    }
    const answer = await this.#rest.send({
      operation: 'originate',
      method: 'POST',
      path: restPath('v1', 'calls'),
      json: body,
      signal: request.signal,
    });
    const callId = stringIn(answer.body, 'uuid');
    if (callId === undefined) throw this.#rest.invalidAnswer('originate', 'uuid');
    return { callId };
  }

  async close(): Promise<void> {
    await this.#rest.close();
  }
}
