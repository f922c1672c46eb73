/**
 * Outbound calls (`POST /calls`): each is placed through its gateway's call-control port with a media
 * stream URL back to this instance (`server.publicUrl`, `wss://…/media/<gateway>`) and voxbridge's own
 * id in the stream's parameters; the stream's start message brings the id back, and the `Call` it
 * starts takes over the placement (`adopt`). Bounded: calls being placed at once
 * (`calls.control.maxPlacing`), and with the calls connected, `calls.maxCalls`. A call whose stream does
 * not come within `calls.control.answerTimeoutMs` fails (`no_media`) and is hung up at the gateway, so
 * none rings on unheard; a failed one is kept a minute for an app that subscribes late.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import {
  CallControlError,
  parseCallTarget,
  type CallControl,
  type GatewayMachineDetection,
  type OriginateResult,
} from '../../src/call-control/index.js';
import { OUTBOUND_CALL_PARAMETER, type PlaceRequest } from '../../src/control/place-request.js';
import { CLOSE } from '../../src/http/ws-close.js';
import type { GatewayName, StreamInfo } from '../../src/protocols/types.js';
import type { Clock } from '../../src/speaker/clock.js';
import type { CallEvent, EventBody } from './call-events.js';
import type { CallControls } from './call-control-link.js';
import type { Call, CallAdmission } from './call.js';
import type { GatewayAmdVerdict } from './amd-verdict.js';
import type { AmdCallbacks } from './amd-callbacks.js';
import { gatewayAmdFields } from './call-events.js';
import { PlacedCall } from './placed-call.js';
import { postEvent, type PostJson } from './webhooks.js';

/** A failed call stays reachable (`GET /calls/{id}`, its events) this long: the app may subscribe late. */
export const FAILED_KEPT_MS = 60_000;
/** Failed calls kept at most (the oldest go first). */
const FAILED_KEPT_MAX = 1000;
/** A hang-up of a call left ringing (it failed, or was cancelled) may take this long. */
const CLEANUP_HANG_UP_MS = 5000;

export interface OutboundSettings {
  /** `server.publicUrl`: where the gateways reach this instance; undefined refuses every outbound call. */
  readonly publicUrl: string | undefined;
  /** MEDIA_STREAM_TOKEN: the stream URL carries it as its last path segment (every gateway can). */
  readonly mediaStreamToken: string | undefined;
  /** `calls.gateways`: the media endpoints this instance serves. */
  readonly gateways: readonly GatewayName[];
  /** The flows a call may name. */
  readonly flows: ReadonlySet<string>;
  readonly defaultFlow: string | undefined;
  /** Where a flow posts its call events (its `webhook`), if anywhere. */
  readonly webhookOf: (flow: string) => string | undefined;
  readonly maxPlacing: number;
  readonly maxCalls: number;
  readonly answerTimeoutMs: number;
  /** How long the callee may ring when the request does not say (s). */
  readonly ringSeconds: number;
}

export interface OutboundCallsOptions {
  readonly controls: CallControls;
  readonly settings: OutboundSettings;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Calls connected now (started or not). */
  readonly activeCalls: () => number;
  readonly post?: PostJson | undefined;
  /**
   * Where the gateways post their own machine-detection verdicts to voxbridge (`machine_detection`
   * without `callback_url`); undefined without `server.publicUrl`.
   */
  readonly amdCallbacks?: AmdCallbacks | undefined;
}

/** Why a call is not placed, as the control API answers it. */
export class PlaceRefusal extends Error {
  override readonly name = 'PlaceRefusal';
  constructor(
    readonly status: 400 | 409 | 429 | 503,
    readonly code: string,
    message: string,
    /** `missing_credentials`: the environment variables to set. */
    readonly missing: readonly string[] = [],
  ) {
    super(message);
  }
}

/**
 * The URL a gateway opens the call's media stream to: `publicUrl` as a WebSocket URL (`https:` →
 * `wss:`), `/media/<gateway>` after its path, and the media-stream token as the last segment.
 */
export function mediaStreamUrl(publicUrl: string, gateway: GatewayName, token: string | undefined): string {
  const url = new URL(publicUrl);
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  const base = url.pathname.replace(/\/+$/, '');
  url.pathname = `${base}/media/${gateway}${token === undefined ? '' : `/${encodeURIComponent(token)}`}`;
  url.search = '';
  url.hash = '';
  return url.href;
}

export class OutboundCalls {
  /** Placing or ringing, by id. */
  readonly #waiting = new Map<string, PlacedCall>();
  /** Failed ones kept for late subscribers, by id, oldest first, with when each goes. */
  readonly #failed = new Map<string, { placed: PlacedCall; untilMs: number }>();
  #closed = false;

  constructor(private readonly options: OutboundCallsOptions) {}

  /** Calls being placed now (placing or ringing). */
  get placing(): number {
    return this.#waiting.size;
  }

  /** Those being placed, oldest first. */
  list(): PlacedCall[] {
    return [...this.#waiting.values()];
  }

  /** One being placed, or failed within the last minute. */
  get(id: string): PlacedCall | undefined {
    this.prune();
    return this.#waiting.get(id) ?? this.#failed.get(id)?.placed;
  }

  /**
   * Places a call: checks everything it can first (throwing `PlaceRefusal`), then answers at once with
   * the placement while the gateway's REST request goes on; its events say how that went.
   */
  place(request: PlaceRequest): PlacedCall {
    const { settings, controls, clock } = this.options;
    const { gateway } = request;
    if (this.#closed) throw new PlaceRefusal(503, 'shutting_down', 'voxbridge is shutting down');
    if (!settings.gateways.includes(gateway))
      throw new PlaceRefusal(400, 'gateway_not_served', `${gateway} is not among calls.gateways`);
    const flow = request.flow ?? settings.defaultFlow;
    if (request.flow !== undefined && !settings.flows.has(request.flow))
      throw new PlaceRefusal(400, 'unknown_flow', `no flow named "${request.flow}"`);
    const available = controls.port(gateway);
    if (!available.ok) {
      const { error } = available;
      throw new PlaceRefusal(409, error.code, error.message, error.missing);
    }
    const control = available.control;
    if (!control.capabilities.originate)
      throw new PlaceRefusal(
        409,
        'unsupported',
        `${gateway} cannot place calls as configured (docs/gateways.md, "Call control")`,
      );
    if (request.machine_detection && !control.capabilities.machineDetection)
      throw new PlaceRefusal(409, 'unsupported', `${gateway} has no answering-machine detection of its own`);
    const amdToUs =
      request.machine_detection !== undefined && request.machine_detection.callback_url === undefined;
    if (amdToUs && settings.publicUrl !== undefined && !this.options.amdCallbacks?.reads(gateway))
      throw new PlaceRefusal(
        409,
        'unsupported',
        `voxbridge cannot read ${gateway}'s machine-detection verdicts: give machine_detection.callback_url`,
      );
    if (settings.publicUrl === undefined)
      throw new PlaceRefusal(
        409,
        'public_url_unset',
        'server.publicUrl (PUBLIC_URL) is not set: the gateway needs the address at which it opens the ' +
          "call's media stream to this instance, e.g. PUBLIC_URL=https://voice.example.com",
      );
    const ringSeconds = request.ring_seconds ?? settings.ringSeconds;
    if (ringSeconds * 1000 >= settings.answerTimeoutMs)
      throw new PlaceRefusal(
        400,
        'invalid_request',
        `ring_seconds must be under calls.control.answerTimeoutMs (${settings.answerTimeoutMs} ms)`,
      );
    let target;
    try {
      target = parseCallTarget(request.to, gateway, 'originate');
    } catch (error) {
      if (error instanceof CallControlError) throw new PlaceRefusal(400, error.code, error.message);
      throw error;
    }
    if (this.#waiting.size >= settings.maxPlacing)
      throw new PlaceRefusal(
        429,
        'too_many_placing',
        `${this.#waiting.size} calls are being placed (calls.control.maxPlacing): try again shortly`,
      );
    if (this.options.activeCalls() + this.#waiting.size >= settings.maxCalls)
      throw new PlaceRefusal(503, 'at_capacity', `this instance is at calls.maxCalls (${settings.maxCalls})`);

    const id = `VB${randomUUID().replaceAll('-', '')}`;
    const placed = new PlacedCall({
      id,
      gateway,
      to: request.to,
      from: request.from,
      flow,
      parameters: { ...request.parameters },
      placedAtMs: clock.now(),
    });
    // The gateway's verdict comes here: a callback of its own, open while the call lasts.
    const amdCallback = amdToUs
      ? this.options.amdCallbacks?.open(gateway, (verdict) => this.onGatewayAmd(placed, verdict))
      : undefined;
    if (amdToUs && !amdCallback)
      throw new PlaceRefusal(503, 'at_capacity', 'too many calls wait for a machine-detection verdict');
    placed.amdCallbackId = amdCallback?.id;
    this.#waiting.set(id, placed);
    const md = request.machine_detection;
    const machineDetection: GatewayMachineDetection | undefined = md && {
      mode: md.mode,
      callbackUrl: md.callback_url ?? amdCallback!.url,
      ...(md.timeout_seconds === undefined ? {} : { timeoutSeconds: md.timeout_seconds }),
    };
    const originating = control.originate({
      to: target,
      from: request.from,
      streamUrl: mediaStreamUrl(settings.publicUrl, gateway, settings.mediaStreamToken),
      parameters: {
        ...request.parameters,
        ...(request.flow === undefined ? {} : { flow: request.flow }),
        [OUTBOUND_CALL_PARAMETER]: id,
      },
      timeoutSeconds: ringSeconds,
      ...(machineDetection ? { machineDetection } : {}),
      signal: placed.request.signal,
    });
    void originating.then(
      (result) => this.onPlaced(placed, control, result),
      (error: unknown) => this.onRefused(placed, error),
    );
    // No stream in time: the callee did not answer (or the gateway could not reach us).
    clock.sleepUntil(placed.placedAtMs + settings.answerTimeoutMs, placed.streamWait.signal).then(
      () => {
        if (!placed.waiting) return;
        this.fail(
          placed,
          'no_media',
          `no media stream within ${settings.answerTimeoutMs} ms of placing the call`,
        );
        this.hangUpLeftover(placed, control);
      },
      () => undefined,
    );
    this.options.logger.info({ callId: id, gateway, flow }, 'placing a call');
    return placed;
  }

  private onPlaced(placed: PlacedCall, control: CallControl, result: OriginateResult): void {
    placed.providerCallId = result.callId;
    if (placed.state.status === 'failed') {
      // Cancelled, or out of time, while the gateway was still answering: the call exists now.
      this.hangUpLeftover(placed, control);
      return;
    }
    if (placed.state.status !== 'placing') return;
    placed.ringing();
    this.report(placed, {
      type: 'call.ringing',
      gateway: placed.gateway,
      to: placed.to,
      from: placed.from,
      providerCallId: result.callId ?? null,
    });
  }

  /** The gateway's own verdict came: an `amd` event on the placement, or on the call it became. */
  private onGatewayAmd(placed: PlacedCall, verdict: GatewayAmdVerdict): void {
    const { logger } = this.options;
    const state = placed.state;
    if (
      verdict.providerCallId !== undefined &&
      placed.providerCallId !== undefined &&
      verdict.providerCallId !== placed.providerCallId
    ) {
      logger.warn({ callId: placed.id }, "a machine-detection verdict about another of the gateway's calls");
      return;
    }
    if (state.status === 'answered') {
      if (!state.call.reportGatewayAmd(verdict))
        logger.info(
          { callId: placed.id, answeredBy: verdict.answeredBy },
          'gateway amd after the call ended',
        );
    } else if (state.status === 'failed')
      logger.info({ callId: placed.id, answeredBy: verdict.answeredBy }, 'gateway amd after the call failed');
    else this.report(placed, { type: 'amd', source: 'gateway', ...gatewayAmdFields(verdict) });
  }

  private closeAmdCallback(placed: PlacedCall): void {
    if (placed.amdCallbackId !== undefined) this.options.amdCallbacks?.close(placed.amdCallbackId);
  }

  private onRefused(placed: PlacedCall, error: unknown): void {
    if (placed.state.status !== 'placing') return;
    if (error instanceof CallControlError)
      this.fail(placed, error.code, error.reason ?? error.message, {
        providerCode: error.providerCode,
        status: error.status,
      });
    else this.fail(placed, 'error', (error as Error).message);
  }

  /** Hangs up a call that rang on after its placement failed or was cancelled; best effort. */
  private hangUpLeftover(placed: PlacedCall, control: CallControl): void {
    const callId = placed.providerCallId;
    if (callId === undefined) return;
    control.hangUp({ callId }, { signal: AbortSignal.timeout(CLEANUP_HANG_UP_MS) }).then(
      () =>
        this.options.logger.info(
          { callId: placed.id },
          'hung up an outbound call that was not answered here',
        ),
      (error: unknown) =>
        this.options.logger.warn(
          { callId: placed.id, err: (error as Error).message },
          'could not hang up an outbound call that was not answered here',
        ),
    );
  }

  private fail(
    placed: PlacedCall,
    code: string,
    reason: string,
    extra: { providerCode?: string | undefined; status?: number | undefined } = {},
  ): void {
    placed.failed(code, reason);
    this.closeAmdCallback(placed);
    this.#waiting.delete(placed.id);
    this.prune();
    this.#failed.set(placed.id, { placed, untilMs: this.options.clock.now() + FAILED_KEPT_MS });
    while (this.#failed.size > FAILED_KEPT_MAX) this.#failed.delete(this.#failed.keys().next().value!);
    this.report(placed, { type: 'call.failed', gateway: placed.gateway, code, reason, ...extra });
  }

  private prune(): void {
    const now = this.options.clock.now();
    for (const [id, kept] of this.#failed) {
      if (kept.untilMs > now) break;
      this.#failed.delete(id);
    }
  }

  /** One of the placement's own events: kept, emitted, logged, and posted to its flow's webhook. */
  private report(placed: PlacedCall, body: EventBody): CallEvent {
    const event = placed.report(body);
    const { seq: _seq, at: _at, callId, type, ...fields } = event;
    this.options.logger.info({ callId, ...fields }, type);
    const webhook = placed.flow === undefined ? undefined : this.options.settings.webhookOf(placed.flow);
    if (webhook !== undefined)
      postEvent(webhook, event, {
        ...(this.options.post ? { post: this.options.post } : {}),
        log: this.options.logger,
      });
    return event;
  }

  /**
   * A stream that starts: undefined when it is no outbound call of ours (an inbound one); the
   * placement it continues; or a refusal for one that names a call no longer waiting (it failed,
   * or it was never placed here).
   */
  adopt(stream: StreamInfo, call: Call): CallAdmission | undefined {
    const id = stream.parameters[OUTBOUND_CALL_PARAMETER];
    if (id === undefined) return undefined;
    const placed = this.#waiting.get(id);
    if (!placed || placed.gateway !== call.gateway) {
      const shown = id.length > 40 ? `${id.slice(0, 40)}…` : id;
      return { refused: { code: CLOSE.policy, reason: `no outbound call ${shown} waits for a stream` } };
    }
    this.#waiting.delete(id);
    const link = placed.answered(call);
    if (placed.amdCallbackId !== undefined) call.once('ended', () => this.closeAmdCallback(placed));
    this.report(placed, {
      type: 'call.answered',
      gateway: placed.gateway,
      streamId: stream.streamId,
      providerCallId: placed.providerCallId ?? null,
      ringMs: Math.round(this.options.clock.now() - placed.placedAtMs),
    });
    return { placed: link };
  }

  /** The server refused a placed call's stream (no room): it fails now rather than at its deadline. */
  refused(stream: StreamInfo, reason: string): void {
    const id = stream.parameters[OUTBOUND_CALL_PARAMETER];
    const placed = id === undefined ? undefined : this.#waiting.get(id);
    if (!placed) return;
    this.fail(placed, 'refused', `its stream was refused: ${reason}`);
    const available = this.options.controls.port(placed.gateway);
    if (available.ok) this.hangUpLeftover(placed, available.control);
  }

  /** Cancels a call being placed (`DELETE /calls/{id}`): its request stopped, the call hung up at the gateway. */
  cancel(id: string): boolean {
    const placed = this.#waiting.get(id);
    if (!placed) return false;
    this.fail(placed, 'canceled', 'cancelled before it was answered');
    const available = this.options.controls.port(placed.gateway);
    if (available.ok) this.hangUpLeftover(placed, available.control);
    return true;
  }

  /** Shutting down: nothing more is placed, and every call still ringing is cancelled. */
  close(): void {
    this.#closed = true;
    for (const id of [...this.#waiting.keys()]) this.cancel(id);
  }
}
