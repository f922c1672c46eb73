/**
 * Asterisk: ARI, the REST interface (`http://<pbx>:8088/ari/channels…`), parameters in the query
 * string and channel variables in a JSON body, HTTP Basic with an `ari.conf` user. A call is a channel
 * id. The stream's `MEDIA_START` gives the chan_websocket channel's id (`channel_id`): hanging that up
 * ends voxbridge's leg, and the caller goes on in the dialplan. To act on the caller's own channel the
 * dialplan should hand its id over (a channel variable in the JSON `MEDIA_START`, e.g.
 * `caller_channel=${UNIQUEID}`), and the app pass that id.
 *
 * - Hang up: `DELETE /channels/{id}?reason=normal` (204). 404 is `alreadyEnded`.
 * - Cold transfer: `POST /channels/{id}/redirect?endpoint=…` (the configured template): Asterisk asks
 *   the channel's driver to transfer the call (PJSIP sends a REFER, or a 302 before it is answered).
 *   ARI acts so only on a channel in a Stasis application (409 otherwise). Or, with `transferContext`,
 *   `POST /channels/{id}/continue?context=…&extension=<number>&priority=1`: the dialplan dials it.
 * - Warm transfer: not offered. It takes a bridge, a second channel and hold music driven by the
 *   channels' events (StasisStart, ChannelStateChange), which come over ARI's WebSocket, not its REST
 *   interface; this port holds no event stream.
 * - Originate: `POST /channels?endpoint=<dial string>&context=…&extension=…&priority=1&callerId&timeout`
 *   with the variables `VOXBRIDGE_STREAM_URL` and `VOXBRIDGE_STREAM_PARAMS` (the parameters as a query
 *   string): once answered, the channel runs the configured context, which connects it to voxbridge
 *   with chan_websocket (whose connection, in websocket_client.conf, points at voxbridge's
 *   `/media/asterisk`) and passes the parameters on as the URL's query. The answer's `id` is the channel.
 * - Answering-machine detection: not through ARI (the dialplan's `AMD()` could, in that context).
 *
 * Errors are `{message}`.
 *
 * Source: docs.asterisk.org Latest_API/API_Documentation/Asterisk_REST_Interface/Channels_REST_API
 * (hangup, redirect, continue, originate: their parameters and error statuses), the ARI
 * "Getting started" pages (Basic auth, JSON bodies for `variables`), and the chan_websocket
 * configuration page.
 */
import { basicAuthorization, required, type Credentials } from './credentials.js';
import { invalidRequest, notConfigured, unsupported } from './errors.js';
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
import { restClientFor, type AsteriskSettings, type CallControlSettings } from './settings.js';
import { checkedTarget, checkedUrl, DEFAULT_RING_SECONDS, ringSeconds, WS_SCHEMES } from './targets.js';

export const ASTERISK_API_BASE_URL = 'http://127.0.0.1:8088/ari';
const RING_MIN = 1;
const RING_MAX = 600;
/** A caller id as ARI takes it (`"Name" <number>` or a number): no characters that end a dial string. */
const CALLER_ID = /^[^\r\n,&|]{1,128}$/;

function fill(template: string, key: string, value: string): string {
  return template.split(`{${key}}`).join(value);
}

export class AsteriskCallControl implements CallControl {
  readonly gateway = 'asterisk';
  readonly capabilities: CallControlCapabilities;
  readonly #rest: RestClient;
  readonly #settings: AsteriskSettings;

  constructor(credentials: Credentials, settings: CallControlSettings) {
    const authorization = basicAuthorization(
      required(credentials, 'ASTERISK_ARI_USER'),
      required(credentials, 'ASTERISK_ARI_PASSWORD'),
    );
    this.#settings = settings.asterisk ?? {};
    const templates = this.#settings.dialTemplates ?? {};
    this.capabilities = {
      hangUp: true,
      coldTransfer: true,
      warmTransfer: false,
      holdMusic: false,
      summary: [],
      sipTargets: this.#settings.transferContext === undefined,
      originate:
        this.#settings.originateContext !== undefined &&
        (templates.number !== undefined || templates.sip !== undefined),
      machineDetection: false,
    };
    this.#rest = restClientFor(settings, {
      gateway: 'asterisk',
      defaultBaseUrl: ASTERISK_API_BASE_URL,
      authorization: () => authorization,
      secrets: [...credentials.secrets, authorization.slice('Basic '.length)],
      providerError: (body) => ({ reason: stringIn(body, 'message') ?? stringIn(body, 'error') }),
    });
  }

  async hangUp(call: CallRef, options: { readonly signal?: AbortSignal } = {}): Promise<HangUpResult> {
    const answer = await this.#rest.send({
      operation: 'hang_up',
      method: 'DELETE',
      path: restPath('channels', call.callId),
      query: { reason: 'normal' },
      signal: options.signal,
      accept: (code) => code === 'call_not_found',
    });
    return { alreadyEnded: answer.error !== undefined };
  }

  async transfer(call: CallRef, target: CallTarget, options: TransferOptions): Promise<TransferResult> {
    if (options.mode === 'warm')
      throw unsupported(
        'asterisk',
        'transfer',
        "a warm transfer needs ARI's event stream (bridges driven by channel events), which this port does not hold",
      );
    const to = checkedTarget(target, 'asterisk', 'transfer');
    const context = this.#settings.transferContext;
    if (context !== undefined) {
      if (to.kind !== 'number')
        throw invalidRequest(
          'asterisk',
          'transfer',
          'with transferContext the target is an extension: a number, not a SIP URI',
        );
      await this.#rest.send({
        operation: 'transfer',
        method: 'POST',
        path: restPath('channels', call.callId, 'continue'),
        query: { context, extension: to.number, priority: '1' },
        signal: options.signal,
      });
      return { mode: 'cold' };
    }
    const endpoint = fill(
      this.#settings.redirectTemplate ?? 'PJSIP/{target}',
      'target',
      to.kind === 'number' ? to.number : to.uri,
    );
    await this.#rest.send({
      operation: 'transfer',
      method: 'POST',
      path: restPath('channels', call.callId, 'redirect'),
      query: { endpoint },
      signal: options.signal,
    });
    return { mode: 'cold' };
  }

  async originate(request: OriginateRequest): Promise<OriginateResult> {
    if (request.machineDetection !== undefined)
      throw unsupported(
        'asterisk',
        'originate',
        "ARI has no answering-machine detection (the dialplan's AMD() does)",
      );
    const context = this.#settings.originateContext;
    if (context === undefined)
      throw notConfigured(
        'asterisk',
        'originate',
        'asterisk.originateContext: the dialplan context that connects the answered channel to voxbridge',
      );
    const to = checkedTarget(request.to, 'asterisk', 'originate');
    const templates = this.#settings.dialTemplates ?? {};
    const template = to.kind === 'number' ? templates.number : templates.sip;
    if (template === undefined)
      throw notConfigured(
        'asterisk',
        'originate',
        `asterisk.dialTemplates.${to.kind === 'number' ? 'number' : 'sip'}: how to dial ${to.kind === 'number' ? 'a number' : 'a SIP URI'}`,
      );
    const endpoint =
      to.kind === 'number' ? fill(template, 'number', to.number) : fill(template, 'uri', to.uri);
    if (!CALLER_ID.test(request.from))
      throw invalidRequest(
        'asterisk',
        'originate',
        'from must be a caller id of 1 to 128 characters without , & | or line breaks',
      );
    const streamUrl = checkedUrl(request.streamUrl, 'streamUrl', WS_SCHEMES, 'asterisk', 'originate');
    const params = new URLSearchParams(request.parameters ?? {}).toString();
    const answer = await this.#rest.send({
      operation: 'originate',
      method: 'POST',
      path: restPath('channels'),
      query: {
        endpoint,
        context,
        extension: this.#settings.originateExtension ?? 's',
        priority: '1',
        callerId: request.from,
        timeout: String(ringSeconds(request.timeoutSeconds, DEFAULT_RING_SECONDS, RING_MIN, RING_MAX)),
      },
      json: { variables: { VOXBRIDGE_STREAM_URL: streamUrl, VOXBRIDGE_STREAM_PARAMS: params } },
      signal: request.signal,
    });
    const callId = stringIn(answer.body, 'id');
    if (callId === undefined) throw this.#rest.invalidAnswer('originate', 'channel id');
    return { callId };
  }

  async close(): Promise<void> {
    await this.#rest.close();
  }
}
