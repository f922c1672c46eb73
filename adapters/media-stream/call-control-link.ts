/**
 * What a call needs of the gateways' call control (src/call-control): the port of its gateway, or why
 * there is none, to hang up at the gateway and to transfer; and, for a call voxbridge placed, what the
 * placement knows that the stream's start message may not say (the gateway's id of the call).
 */
import {
  CallControlError,
  type CallControl,
  type CallControlAvailability,
  type CallRef,
} from '../../src/call-control/index.js';
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
