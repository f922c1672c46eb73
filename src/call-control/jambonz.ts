/**
 * jambonz: its REST API (`/v1/Accounts/{account_sid}/Calls…`), JSON bodies, `Authorization: Bearer
 * <API key>`. A call is its `callSid`, as the `listen` verb's first message gives it.
 *
 * jambonz takes a call's new instructions (verbs) only from a webhook (`call_hook`), so transfer and
 * originate need the `DocumentHost`; without one they are `not_configured`.
 *
 * - Hang up: `PUT …/Calls/{callSid}` `{call_status: "completed"}` (202). 404 is `alreadyEnded`.
 * - Cold transfer: `PUT …/Calls/{callSid}` `{call_hook}`, a published `dial` verb to a `phone` (digits,
 *   no +) or `sip` target, `callerId` and `timeout`: the `listen` ends and the caller is dialled through.
 * - Warm transfer: the same `dial` with `dialMusic` (the hold music, played to the caller while the
 *   target rings) and `confirmHook` (verbs the target hears when they answer, before the bridge: `say`
 *   the summary, or `play` it).
 * - Originate: `POST …/Calls` (createCall) with `from`, `to`, `call_hook` a published `listen` verb
 *   (the stream URL, `bidirectionalAudio` streaming at the configured rate, `passDtmf`, the
 *   parameters as `metadata`, which the first message carries, and an `actionHook` that hangs up
 *   once voxbridge ends the stream), `call_status_hook`, `timeout`, `amd` (`actionHook`
 *   gets the verdict) and the speech settings createCall requires when no application is named.
 *   The answer's `sid` is the new call and the stream's `callSid`.
 *
 * Errors are `{msg}` (or plain text).
 *
 * Source: jambonz/jambonz-api-server lib/swagger/swagger.yaml and lib/routes/api/accounts.js
 * (createCall, updateCall and their checks: one update per request, call_status completed,
 * call_hook; createCall's speech settings), jambonz/jambonz-feature-server lib/tasks/dial.js
 * (dialMusic, confirmHook, confirmMethod) and lib/tasks/listen.js, lib/http-routes/schemas
 * (createCall's amd), docs.jambonz.org/verbs/verbs/listen and /dial.
 */
import { required, type Credentials } from './credentials.js';
import { notConfigured } from './errors.js';
import { fetchedInstructionCapabilities, type DocumentHost } from './documents.js';
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
import { restClientFor, type CallControlSettings, type JambonzSettings } from './settings.js';
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

export const JAMBONZ_API_BASE_URL = 'https://api.jambonz.cloud';
const RING_MIN = 5;
const RING_MAX = 300;
const JSON_TYPE = 'application/json';

function jambonzTarget(target: CallTarget): Record<string, string> {
  return target.kind === 'number'
    ? { type: 'phone', number: withoutPlus(target.number) }
    : { type: 'sip', sipUri: target.uri };
}

function speech(settings: JambonzSettings | undefined): Record<string, string> {
  const s = settings?.speech;
  return {
    speech_synthesis_vendor: s?.synthesisVendor ?? 'google',
    speech_synthesis_language: s?.synthesisLanguage ?? 'en-US',
    speech_synthesis_voice: s?.synthesisVoice ?? 'en-US-Standard-C',
    speech_recognizer_vendor: s?.recognizerVendor ?? 'google',
    speech_recognizer_language: s?.recognizerLanguage ?? 'en-US',
  };
}

export class JambonzCallControl implements CallControl {
  readonly gateway = 'jambonz';
  readonly capabilities: CallControlCapabilities;
  readonly #rest: RestClient;
  readonly #accountSid: string;
  readonly #documents: DocumentHost | undefined;
  readonly #settings: JambonzSettings | undefined;

  constructor(credentials: Credentials, settings: CallControlSettings) {
    this.#accountSid = required(credentials, 'JAMBONZ_ACCOUNT_SID');
    const authorization = `Bearer ${required(credentials, 'JAMBONZ_API_KEY')}`;
    this.#documents = settings.documents;
    this.#settings = settings.jambonz;
    this.capabilities = fetchedInstructionCapabilities(this.#documents !== undefined);
    this.#rest = restClientFor(settings, {
      gateway: 'jambonz',
      defaultBaseUrl: JAMBONZ_API_BASE_URL,
      authorization: () => authorization,
      secrets: credentials.secrets,
      providerError: (body) => ({
        reason: stringIn(body, 'msg') ?? stringIn(body, 'message') ?? stringIn(body, 'error'),
      }),
    });
  }

  #calls(...rest: string[]): string {
    return restPath('v1', 'Accounts', this.#accountSid, 'Calls', ...rest);
  }

  async #publish(operation: string, verbs: unknown[]): Promise<string> {
    if (this.#documents === undefined)
      throw notConfigured(
        'jambonz',
        operation,
        "a document host: jambonz fetches a call's verbs from a webhook",
      );
    return this.#documents.publish({ contentType: JSON_TYPE, body: JSON.stringify(verbs) });
  }

  async hangUp(call: CallRef, options: { readonly signal?: AbortSignal } = {}): Promise<HangUpResult> {
    const answer = await this.#rest.send({
      operation: 'hang_up',
      method: 'PUT',
      path: this.#calls(call.callId),
      json: { call_status: 'completed' },
      signal: options.signal,
      accept: (code) => code === 'call_not_found',
    });
    return { alreadyEnded: answer.error !== undefined };
  }

  async transfer(call: CallRef, target: CallTarget, options: TransferOptions): Promise<TransferResult> {
    const to = checkedTarget(target, 'jambonz', 'transfer');
    const dial: Record<string, unknown> = {
      verb: 'dial',
      target: [jambonzTarget(to)],
      timeout: ringSeconds(options.timeoutSeconds, DEFAULT_RING_SECONDS, RING_MIN, RING_MAX),
    };
    if (options.callerId !== undefined)
      dial['callerId'] = withoutPlus(checkedNumber(options.callerId, 'callerId', 'jambonz', 'transfer'));
    if (options.mode === 'warm') {
      if (options.holdMusicUrl !== undefined)
        dial['dialMusic'] = checkedUrl(
          options.holdMusicUrl,
          'holdMusicUrl',
          HTTP_SCHEMES,
          'jambonz',
          'transfer',
        );
      if (options.summary !== undefined) {
        dial['confirmHook'] = await this.#publish('transfer', [
          'text' in options.summary
            ? { verb: 'say', text: options.summary.text }
            : {
                verb: 'play',
                url: checkedUrl(
                  options.summary.audioUrl,
                  'summary.audioUrl',
                  HTTP_SCHEMES,
                  'jambonz',
                  'transfer',
                ),
              },
        ]);
        dial['confirmMethod'] = 'GET';
      }
    }
    const hook = await this.#publish('transfer', [dial]);
    await this.#rest.send({
      operation: 'transfer',
      method: 'PUT',
      path: this.#calls(call.callId),
      json: { call_hook: { url: hook, method: 'GET' } },
      signal: options.signal,
    });
    return { mode: options.mode };
  }

  async originate(request: OriginateRequest): Promise<OriginateResult> {
    const to = checkedTarget(request.to, 'jambonz', 'originate');
    const from = withoutPlus(checkedNumber(request.from, 'from', 'jambonz', 'originate'));
    const url = checkedUrl(request.streamUrl, 'streamUrl', WS_SCHEMES, 'jambonz', 'originate');
    const sampleRate = this.#settings?.streamSampleRate ?? 8000;
    const listen: Record<string, unknown> = {
      verb: 'listen',
      url,
      // jambonz requires it; when voxbridge ends the stream, the call ends too.
      actionHook: await this.#publish('originate', [{ verb: 'hangup' }]),
      sampleRate,
      mixType: 'mono',
      passDtmf: true,
      bidirectionalAudio: { enabled: true, streaming: true, sampleRate },
    };
    if (request.parameters !== undefined && Object.keys(request.parameters).length > 0)
      listen['metadata'] = { ...request.parameters };
    const hook = await this.#publish('originate', [listen]);
    const body: Record<string, unknown> = {
      from,
      to: jambonzTarget(to),
      call_hook: { url: hook, method: 'GET' },
      timeout: ringSeconds(request.timeoutSeconds, DEFAULT_RING_SECONDS, RING_MIN, RING_MAX),
      ...speech(this.#settings),
    };
    if (request.statusCallbackUrl !== undefined)
      body['call_status_hook'] = {
        url: checkedUrl(request.statusCallbackUrl, 'statusCallbackUrl', HTTP_SCHEMES, 'jambonz', 'originate'),
        method: 'POST',
      };
    const amd = request.machineDetection;
    if (amd !== undefined) {
      const detection: Record<string, unknown> = {
        actionHook: checkedUrl(
          amd.callbackUrl,
          'machineDetection.callbackUrl',
          HTTP_SCHEMES,
          'jambonz',
          'originate',
        ),
      };
      if (amd.timeoutSeconds !== undefined)
        detection['timers'] = {
          decisionTimeoutMs: Math.round(ringSeconds(amd.timeoutSeconds, 15, 1, 60) * 1000),
        };
      body['amd'] = detection;
    }
    const answer = await this.#rest.send({
      operation: 'originate',
      method: 'POST',
      path: this.#calls(),
      json: body,
      signal: request.signal,
    });
    const callId = stringIn(answer.body, 'sid');
    if (callId === undefined) throw this.#rest.invalidAnswer('originate', 'sid');
    return { callId };
  }

  async close(): Promise<void> {
    await this.#rest.close();
  }
}
