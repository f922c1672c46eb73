/**
 * Telnyx: the Call Control API v2 (`/v2/calls…`), JSON bodies, `Authorization: Bearer <API key>`. A
 * call is its `call_control_id`, as the stream's start message gives it (`start.call_control_id`).
 *
 * - Hang up: `POST /v2/calls/{id}/actions/hangup`. Telnyx answers 422 with code 90018 ("Call has
 *   already ended") for a call that is over: `alreadyEnded`.
 * - Cold transfer: `actions/transfer` with `to` (a number or a SIP URI), `from`, `timeout_secs`. Telnyx
 *   dials the target and bridges it; the caller hears its ringing (early media).
 * - Warm transfer, in part: the same command with `audio_url`, which Telnyx plays to the target when
 *   they answer and before it bridges the call. So the summary must be an audio file; the caller hears
 *   the target ring, not hold music (`holdMusicUrl` is not used). Telnyx's transfer takes no text.
 * - Originate: `POST /v2/calls` (dial) through the Call Control application `TELNYX_CONNECTION_ID`,
 *   with `stream_url` (the parameters added to its query, which the media server reads as the call's
 *   parameters: dial has no custom parameters of its own), `stream_track: inbound_track` and
 *   `stream_bidirectional_mode: rtp` with the configured codec, so the stream is the one the Telnyx
 *   protocol module speaks. `answering_machine_detection` (`detect`, or `greeting_end` to wait for the
 *   end of a machine's greeting) reports to the webhook, which is also where progress goes: Telnyx has
 *   one `webhook_url` per call.
 *
 * Errors are `{errors: [{code, title, detail}]}`.
 *
 * Source: developers.telnyx.com/api-reference/call-commands (hangup, transfer, dial), the
 * sending-commands guide (Bearer API key), team-telnyx/telnyx-node src/resources/calls (the request
 * shapes), pipecat's Telnyx serializer (90018 as already ended).
 */
import { required, type Credentials } from './credentials.js';
import { CallControlError, invalidRequest, unsupported } from './errors.js';
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
import { restPath, stringIn, type ProviderError, type RestClient } from './rest.js';
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

export const TELNYX_API_BASE_URL = 'https://api.telnyx.com';
/** `timeout_secs` of transfer and dial: 5 to 600 s. */
const RING_MIN = 5;
const RING_MAX = 600;
const ALREADY_ENDED = '90018';

const CAPABILITIES: CallControlCapabilities = {
  hangUp: true,
  coldTransfer: true,
  warmTransfer: true,
  holdMusic: false,
  summary: ['audio'],
  sipTargets: true,
  originate: true,
  machineDetection: true,
};

function address(target: CallTarget): string {
  return target.kind === 'number' ? target.number : target.uri;
}

function firstError(body: unknown): ProviderError {
  const errors =
    typeof body === 'object' && body !== null ? (body as { errors?: unknown }).errors : undefined;
  const first: unknown = Array.isArray(errors) ? errors[0] : undefined;
  const code = stringIn(first, 'code');
  const title = stringIn(first, 'title');
  const detail = stringIn(first, 'detail');
  const reason = title !== undefined && detail !== undefined ? `${title}: ${detail}` : (detail ?? title);
  return { code, reason };
}

export class TelnyxCallControl implements CallControl {
  readonly gateway = 'telnyx';
  readonly capabilities = CAPABILITIES;
  readonly #rest: RestClient;
  readonly #connectionId: string | undefined;
  readonly #codec: string;

  constructor(credentials: Credentials, settings: CallControlSettings) {
    const authorization = `Bearer ${required(credentials, 'TELNYX_API_KEY')}`;
    this.#connectionId = credentials.values['TELNYX_CONNECTION_ID'];
    this.#codec = settings.telnyx?.streamCodec ?? 'PCMU';
    this.#rest = restClientFor(settings, {
      gateway: 'telnyx',
      defaultBaseUrl: TELNYX_API_BASE_URL,
      authorization: () => authorization,
      secrets: credentials.secrets,
      providerError: firstError,
      classify: (_status, code) => (code === ALREADY_ENDED ? 'call_not_found' : undefined),
    });
  }

  #action(call: CallRef, action: string): string {
    return restPath('v2', 'calls', call.callId, 'actions', action);
  }

  async hangUp(call: CallRef, options: { readonly signal?: AbortSignal } = {}): Promise<HangUpResult> {
    const answer = await this.#rest.send({
      operation: 'hang_up',
      method: 'POST',
      path: this.#action(call, 'hangup'),
      json: {},
      signal: options.signal,
      accept: (code) => code === 'call_not_found',
    });
    return { alreadyEnded: answer.error !== undefined };
  }

  async transfer(call: CallRef, target: CallTarget, options: TransferOptions): Promise<TransferResult> {
    const to = checkedTarget(target, 'telnyx', 'transfer');
    const body: Record<string, unknown> = {
      to: address(to),
      timeout_secs: ringSeconds(options.timeoutSeconds, DEFAULT_RING_SECONDS, RING_MIN, RING_MAX),
    };
    if (options.callerId !== undefined)
      body['from'] = checkedNumber(options.callerId, 'callerId', 'telnyx', 'transfer');
    if (options.mode === 'warm' && options.summary !== undefined) {
      if (!('audioUrl' in options.summary))
        throw unsupported(
          'telnyx',
          'transfer',
          "Telnyx's transfer plays its summary from an audio file (audio_url), not text",
        );
      body['audio_url'] = checkedUrl(
        options.summary.audioUrl,
        'summary.audioUrl',
        HTTP_SCHEMES,
        'telnyx',
        'transfer',
      );
    }
    await this.#rest.send({
      operation: 'transfer',
      method: 'POST',
      path: this.#action(call, 'transfer'),
      json: body,
      signal: options.signal,
    });
    return { mode: options.mode };
  }

  async originate(request: OriginateRequest): Promise<OriginateResult> {
    if (this.#connectionId === undefined)
      throw new CallControlError({
        code: 'missing_credentials',
        gateway: 'telnyx',
        operation: 'originate',
        message:
          'telnyx originate needs TELNYX_CONNECTION_ID (the Call Control application to dial through) to be set',
        missing: ['TELNYX_CONNECTION_ID'],
      });
    const to = checkedTarget(request.to, 'telnyx', 'originate');
    const streamUrl = new URL(checkedUrl(request.streamUrl, 'streamUrl', WS_SCHEMES, 'telnyx', 'originate'));
    for (const [name, value] of Object.entries(request.parameters ?? {}))
      streamUrl.searchParams.set(name, value);
    const body: Record<string, unknown> = {
      connection_id: this.#connectionId,
      to: address(to),
      from: checkedNumber(request.from, 'from', 'telnyx', 'originate'),
      timeout_secs: ringSeconds(request.timeoutSeconds, DEFAULT_RING_SECONDS, RING_MIN, RING_MAX),
      stream_url: streamUrl.href,
      stream_track: 'inbound_track',
      stream_bidirectional_mode: 'rtp',
      stream_bidirectional_codec: this.#codec,
    };
    const amd = request.machineDetection;
    const hooks = new Set(
      [request.statusCallbackUrl, amd?.callbackUrl]
        .filter((u): u is string => u !== undefined)
        .map((u) => checkedUrl(u, 'a callback URL', HTTP_SCHEMES, 'telnyx', 'originate')),
    );
    if (hooks.size > 1)
      throw invalidRequest(
        'telnyx',
        'originate',
        'Telnyx sends every event of a call to one webhook_url: give one URL',
      );
    const [hook] = hooks;
    if (hook !== undefined) body['webhook_url'] = hook;
    if (amd !== undefined) {
      body['answering_machine_detection'] = amd.mode === 'detect' ? 'detect' : 'greeting_end';
      if (amd.timeoutSeconds !== undefined)
        body['answering_machine_detection_config'] = {
          total_analysis_time_millis: Math.round(ringSeconds(amd.timeoutSeconds, 30, 1, 60) * 1000),
        };
    }
    const answer = await this.#rest.send({
      operation: 'originate',
      method: 'POST',
      path: restPath('v2', 'calls'),
      json: body,
      signal: request.signal,
    });
    const callId = stringIn(answer.body, 'data', 'call_control_id');
    if (callId === undefined) throw this.#rest.invalidAnswer('originate', 'data.call_control_id');
    return { callId };
  }

  async close(): Promise<void> {
    await this.#rest.close();
  }
}
