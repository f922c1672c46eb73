/**
 * What a call needs of the gateways' call control (src/call-control): the port of its gateway, or why
 * there is none, and a hang-up and a transfer done through it; and, for a call voxbridge placed, what
 * the placement knows that the stream's start message may not say (the gateway's id of the call).
 */
import type { Logger } from 'pino';
import {
  CallControlError,
  parseCallTarget,
  type CallControl,
  type CallControlAvailability,
  type CallRef,
  type TransferOptions,
  type TransferResult,
} from '../../src/call-control/index.js';
import type { FlowTransfer } from '../../src/flows/runner.js';
import type { GatewayName, StreamInfo } from '../../src/protocols/types.js';
import type { EventLog } from './event-log.js';

/** The ports of every gateway, made once at start from the environment. */
export interface CallControls {
  /** The gateway's port, or why there is none (`missing_credentials` naming the variables, …). */
  port(gateway: GatewayName): CallControlAvailability;
  /**
   * Whether a hang-up ends the call at the gateway (its REST API) before the stream is closed, where
   * a port can. Off: only the stream is closed, and the gateway goes on with what follows it.
   */
  readonly hangUpAtGateway: boolean;
}

/** What a call placed by voxbridge brings to the `Call` its media stream starts. */
export interface PlacedCallLink {
  /** voxbridge's id of the call: the call keeps it (the one `POST /calls` answered with). */
  readonly id: string;
  /** The placement's events (`call.ringing`, `call.answered`): the call's continue them. */
  readonly events: EventLog;
  readonly to: string;
  readonly from: string;
  /** The gateway's id of the call from its REST answer, once known (Vonage's stream cannot carry it). */
  providerCallId(): string | undefined;
}

/** The gateway's port for `operation`, or the `CallControlError` that says why there is none. */
export function controlOf(
  controls: CallControls | undefined,
  gateway: GatewayName,
  operation: string,
): CallControl {
  if (controls === undefined)
    throw new CallControlError({
      code: 'not_configured',
      gateway,
      operation,
      message: `${gateway} ${operation}: call control is not configured on this server`,
    });
  const available = controls.port(gateway);
  if (!available.ok) throw available.error;
  return available.control;
}

/** The call at the gateway: the id its REST API answered with where voxbridge placed it, else the stream's. */
export function callRefOf(stream: StreamInfo, placed: PlacedCallLink | undefined): CallRef {
  const callId = placed?.providerCallId() ?? stream.callId;
  return stream.accountSid === undefined ? { callId } : { callId, accountSid: stream.accountSid };
}

/**
 * Ends the call at the gateway (its REST API), where there is a port that can and hang-ups at the
 * gateway are on; never throws: a hang-up the gateway refuses is logged, and the stream is closed all
 * the same by the caller.
 */
export async function hangUpAtGateway(
  controls: CallControls | undefined,
  gateway: GatewayName,
  ref: CallRef,
  options: { log: Logger; signal?: AbortSignal | undefined },
): Promise<void> {
  if (!controls?.hangUpAtGateway) return;
  const available = controls.port(gateway);
  if (!available.ok || !available.control.capabilities.hangUp) return;
  try {
    const result = await available.control.hangUp(ref, options.signal ? { signal: options.signal } : {});
    options.log.info({ alreadyEnded: result.alreadyEnded }, 'hung up at the gateway');
  } catch (error) {
    options.log.warn(
      { code: error instanceof CallControlError ? error.code : undefined, err: (error as Error).message },
      'the gateway could not hang up the call: closing its stream only',
    );
  }
}

/**
 * Sends the call `ref` to `request.to` through its gateway's port. Throws a `CallControlError` when the
 * gateway has no port, the target is no number or SIP URI, or the gateway refuses.
 */
export async function transferAtGateway(
  controls: CallControls | undefined,
  gateway: GatewayName,
  ref: CallRef,
  request: FlowTransfer,
  signal: AbortSignal | undefined,
): Promise<TransferResult> {
  const control = controlOf(controls, gateway, 'transfer');
  const target = parseCallTarget(request.to, control.gateway, 'transfer');
  const options: TransferOptions = {
    mode: request.mode,
    ...(request.callerId === undefined ? {} : { callerId: request.callerId }),
    ...(request.timeoutSeconds === undefined ? {} : { timeoutSeconds: request.timeoutSeconds }),
    ...(request.summary === undefined ? {} : { summary: request.summary }),
    ...(request.holdMusicUrl === undefined ? {} : { holdMusicUrl: request.holdMusicUrl }),
    ...(signal ? { signal } : {}),
  };
  return control.transfer(ref, target, options);
}
