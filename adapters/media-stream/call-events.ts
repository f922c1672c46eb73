/** What a call reports (the control API's event stream, flow webhooks), and an utterance's public result. */
import type { FlowEvent } from '../../src/flows/runner.js';
import type { UtteranceResult } from '../../src/speaker/speaker.js';
import type { GatewayName } from '../../src/protocols/types.js';

/** What a call reports, in order; `seq` numbers them per call. */
export type CallEvent = { seq: number; at: string; callId: string } & (
  | {
      type: 'call.started';
      gateway: GatewayName;
      streamId: string;
      flow: string | null;
      parameters: Record<string, string>;
    }
  | { type: 'utterance.started'; utteranceId: string; text: string }
  | { type: 'utterance.finished'; utteranceId: string; result: PublicResult }
  | {
      type: 'barge-in';
      utteranceId: string | undefined;
      /** Speech onset on the inbound timeline, and when it was confirmed there. */
      onsetMs: number;
      detectedMs: number;
      playedMs: number;
      heardText: string;
    }
  | { type: 'dtmf'; digit: string }
  | { type: 'flow'; event: FlowEvent }
  | { type: 'call.ended'; reason: string }
);

type DistributiveOmit<T, K extends keyof never> = T extends unknown ? Omit<T, K> : never;
export type EventBody = DistributiveOmit<CallEvent, 'seq' | 'at' | 'callId'>;

export interface PublicResult {
  status: UtteranceResult['status'];
  playedMs: number;
  heardText: string;
  error?: { code: string; message: string };
  firstByteMs: number | undefined;
  firstFrameMs: number | undefined;
  underruns: number;
}

export function publicResult(result: UtteranceResult): PublicResult {
  const error = result.error as { code?: unknown; message?: unknown } | undefined;
  return {
    status: result.status,
    playedMs: result.playedMs,
    heardText: result.heardText,
    ...(error
      ? {
          error: {
            code: typeof error.code === 'string' ? error.code : 'error',
            message: typeof error.message === 'string' ? error.message : 'utterance failed',
          },
        }
      : {}),
    firstByteMs: result.metrics.firstByteMs,
    firstFrameMs: result.metrics.firstFrameMs,
    underruns: result.metrics.underruns,
  };
}

/**
 * A call event as it goes on the wire (the event stream, flow webhooks): the one place its shape is
 * decided.
 */
export function toWire(event: CallEvent): Record<string, unknown> {
  return { ...event };
}
