/**
 * Plivo: the Call API (`/v1/Account/{auth_id}/Call/…`), JSON bodies, HTTP Basic with the auth id and
 * token. A call is its CallUUID, as the stream's start message gives it (`start.callId`).
 *
 * Plivo takes a call's instructions only from a URL that answers with Plivo XML, so everything but the
 * hang-up needs the `DocumentHost`: without one, transfer and originate are `not_configured`.
 *
 * - Hang up: `DELETE …/Call/{uuid}/` (204). A call Plivo does not know (404) is `alreadyEnded`.
 * - Cold transfer: `POST …/Call/{uuid}/` with `legs: aleg` and `aleg_url`, a published
 *   `<Dial callerId timeout>` of the `<Number>` (digits, no +) or `<User>` (a SIP URI).
 * - Warm transfer: the same `<Dial>` with `dialMusic` (a document with the hold music's `<Play
 *   loop="0">`, which the caller hears while the target rings; 0 as "until stopped" is
 *   unconfirmed) and `confirmSound` (a document the target hears when they answer, before the call
 *   is bridged: `<Speak>` the summary, or `<Play>` it).
 * - Originate: `POST …/Call/` with `answer_url` a published `<Stream bidirectional="true"
 *   keepCallAlive="true">` to the stream URL, its parameters in `extraHeaders` (`k=v,k=v`, which
 *   the start message hands back as `extra_headers`). Plivo answers with `request_uuid` only: the
 *   CallUUID is first known to the answer URL and the stream. `ring_url`/`hangup_url` take the status
 *   callback; `machine_detection` with `machine_detection_url` the verdict, asynchronously.
 *
 * Errors are `{api_id, error}`.
 *
 * Source: plivo.com/docs/voice/api/call (make, transfer, hangup a call), /docs/voice/xml/dial (callerId,
 * timeout, confirmSound, dialMusic), /docs/voice/xml/the-stream-element, /docs/voice/xml/play,
 * /docs/voice/xml/speak; plivo/plivo-node lib/resources/call.js; pipecat's Plivo serializer
 * (DELETE, 204, 404 already ended).
 */
import { basicAuthorization, required, type Credentials } from './credentials.js';
import { invalidRequest, notConfigured } from './errors.js';
import { fetchedInstructionCapabilities, type DocumentHost } from './documents.js';
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
import { restPath, stringIn, type RestClient } from './rest.js';
import { restClientFor, type CallControlSettings } from './settings.js';
import {
  checkedNumber,
  checkedTarget,
  checkedUrl,
  DEFAULT_RING_SECONDS,
  HTTP_SCHEMES,
  ringSeconds,
  withoutPlus,
  WS_SCHEMES,
} from './targets.js';

export const PLIVO_API_BASE_URL = 'https://api.plivo.com';
const RING_MIN = 5;
const RING_MAX = 600;
const XML = 'application/xml';
/** What `extraHeaders` can carry: its `k=v,k=v` form has no escaping. */
const HEADER_TEXT = /^[A-Za-z0-9_.\-+:/@]*$/;

function address(target: CallTarget): string {
  return target.kind === 'number' ? withoutPlus(target.number) : target.uri;
}

function dialNoun(target: CallTarget): string {
  return target.kind === 'number'
    ? xmlText('Number', {}, withoutPlus(target.number))
    : xmlText('User', {}, target.uri);
}

export class PlivoCallControl implements CallControl {
  readonly gateway = 'plivo';
  readonly capabilities: CallControlCapabilities;
  readonly #rest: RestClient;
  readonly #authId: string;
  readonly #documents: DocumentHost | undefined;
  readonly #contentType: string;

  constructor(credentials: Credentials, settings: CallControlSettings) {
    this.#authId = required(credentials, 'PLIVO_AUTH_ID');
    const authorization = basicAuthorization(this.#authId, required(credentials, 'PLIVO_AUTH_TOKEN'));
    this.#documents = settings.documents;
    this.#contentType = settings.plivo?.streamContentType ?? 'audio/x-mulaw;rate=8000';
    this.capabilities = fetchedInstructionCapabilities(this.#documents !== undefined);
    this.#rest = restClientFor(settings, {
      gateway: 'plivo',
      defaultBaseUrl: PLIVO_API_BASE_URL,
      authorization: () => authorization,
      secrets: [...credentials.secrets, authorization.slice('Basic '.length)],
      providerError: (body) => ({ reason: stringIn(body, 'error') ?? stringIn(body, 'message') }),
    });
  }

  #account(...segments: string[]): string {
    // Plivo's paths end with a slash.
    return `${restPath('v1', 'Account', this.#authId, ...segments)}/`;
  }

  async #publish(operation: string, ...children: string[]): Promise<string> {
    if (this.#documents === undefined)
      throw notConfigured(
        'plivo',
        operation,
        'a document host: Plivo fetches its instructions (XML) from a URL',
      );
    return this.#documents.publish({ contentType: XML, body: xmlResponse(...children) });
  }

  async hangUp(call: CallRef, options: { readonly signal?: AbortSignal } = {}): Promise<HangUpResult> {
    const answer = await this.#rest.send({
      operation: 'hang_up',
      method: 'DELETE',
      path: this.#account('Call', call.callId),
      signal: options.signal,
      accept: (code) => code === 'call_not_found',
    });
    return { alreadyEnded: answer.error !== undefined };
  }

  async transfer(call: CallRef, target: CallTarget, options: TransferOptions): Promise<TransferResult> {
    const to = checkedTarget(target, 'plivo', 'transfer');
    const callerId =
      options.callerId === undefined
        ? undefined
        : withoutPlus(checkedNumber(options.callerId, 'callerId', 'plivo', 'transfer'));
    const timeout = ringSeconds(options.timeoutSeconds, DEFAULT_RING_SECONDS, RING_MIN, RING_MAX);
    let dialMusic: string | undefined;
    let confirmSound: string | undefined;
    if (options.mode === 'warm') {
      if (options.holdMusicUrl !== undefined)
        dialMusic = await this.#publish(
          'transfer',
          xmlText(
            'Play',
            { loop: 0 },
            checkedUrl(options.holdMusicUrl, 'holdMusicUrl', HTTP_SCHEMES, 'plivo', 'transfer'),
          ),
        );
      if (options.summary !== undefined)
        confirmSound = await this.#publish(
          'transfer',
          'text' in options.summary
            ? xmlText('Speak', {}, options.summary.text)
            : xmlText(
                'Play',
                {},
                checkedUrl(options.summary.audioUrl, 'summary.audioUrl', HTTP_SCHEMES, 'plivo', 'transfer'),
              ),
        );
    }
    const alegUrl = await this.#publish(
      'transfer',
      xmlElement('Dial', { callerId, timeout, dialMusic, confirmSound }, dialNoun(to)),
    );
    await this.#rest.send({
      operation: 'transfer',
      method: 'POST',
      path: this.#account('Call', call.callId),
      json: { legs: 'aleg', aleg_url: alegUrl, aleg_method: 'GET' },
      signal: options.signal,
    });
    return { mode: options.mode };
  }

  async originate(request: OriginateRequest): Promise<OriginateResult> {
    const to = checkedTarget(request.to, 'plivo', 'originate');
    const from = withoutPlus(checkedNumber(request.from, 'from', 'plivo', 'originate'));
    const streamUrl = checkedUrl(request.streamUrl, 'streamUrl', WS_SCHEMES, 'plivo', 'originate');
    const headers = Object.entries(request.parameters ?? {});
    for (const [name, value] of headers)
      if (name === '' || !HEADER_TEXT.test(name) || !HEADER_TEXT.test(value))
        throw invalidRequest(
          'plivo',
          'originate',
          "a parameter for Plivo's extraHeaders may hold letters, digits and _ . - + : / @ only",
        );
    const answerUrl = await this.#publish(
      'originate',
      xmlText(
        'Stream',
        {
          bidirectional: true,
          keepCallAlive: true,
          contentType: this.#contentType,
          extraHeaders: headers.length === 0 ? undefined : headers.map(([k, v]) => `${k}=${v}`).join(','),
        },
        streamUrl,
      ),
    );
    const body: Record<string, unknown> = {
      from,
      to: address(to),
      answer_url: answerUrl,
      answer_method: 'GET',
      ring_timeout: ringSeconds(request.timeoutSeconds, DEFAULT_RING_SECONDS, RING_MIN, RING_MAX),
    };
    if (request.statusCallbackUrl !== undefined) {
      const hook = checkedUrl(
        request.statusCallbackUrl,
        'statusCallbackUrl',
        HTTP_SCHEMES,
        'plivo',
        'originate',
      );
      Object.assign(body, { ring_url: hook, ring_method: 'POST', hangup_url: hook, hangup_method: 'POST' });
    }
    const amd = request.machineDetection;
    if (amd !== undefined) {
      Object.assign(body, {
        machine_detection: 'true',
        machine_detection_url: checkedUrl(
          amd.callbackUrl,
          'machineDetection.callbackUrl',
          HTTP_SCHEMES,
          'plivo',
          'originate',
        ),
        machine_detection_method: 'POST',
      });
      if (amd.timeoutSeconds !== undefined)
        body['machine_detection_time'] = Math.round(ringSeconds(amd.timeoutSeconds, 5, 2, 10) * 1000);
    }
    const answer = await this.#rest.send({
      operation: 'originate',
      method: 'POST',
      path: this.#account('Call'),
      json: body,
      signal: request.signal,
    });
    const requestId = stringIn(answer.body, 'request_uuid');
    if (requestId === undefined) throw this.#rest.invalidAnswer('originate', 'request_uuid');
    return { requestId };
  }

  async close(): Promise<void> {
    await this.#rest.close();
  }
}
