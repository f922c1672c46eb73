/** What a call reports (the control API's event stream, flow webhooks), and how it goes on the wire. */
import type { GatewayAmdVerdict } from './amd-verdict.js';
import type { FlowEvent, GatherResult } from '../../src/flows/runner.js';
import { resultJson, type PublicResult } from '../../src/control/result.js';
import type { GatewayName } from '../../src/protocols/types.js';
import type { TurnGap } from '../../src/relay/host.js';

/** Re-exported for the call, which builds `utterance.finished` from a speaker's result. */
export { publicResult, type PublicResult } from '../../src/control/result.js';

/** What a call reports, in order; `seq` numbers them per call. */
export type CallEvent = { seq: number; at: string; callId: string } & (
  | {
      type: 'call.started';
      gateway: GatewayName;
      streamId: string;
      flow: string | null;
      parameters: Record<string, string>;
    }
  | { type: 'utterance.started'; utteranceId: string; text: string | null }
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
  | {
      /** A false barge-in taken back: the cut utterance goes on as a new one, from `fromText`. */
      type: 'barge-in.resumed';
      utteranceId: string;
      resumedUtteranceId: string;
      /** The rest of its text, from the first word the caller did not hear whole. */
      fromText: string;
    }
  | { type: 'dtmf'; digit: string }
  | { type: 'flow'; event: FlowEvent }
  | ({
      /** What answered a flow's gather (keys, or the caller's turn as recognised), and where it went. */
      type: 'gather.result';
      flow: string;
    } & GatherResult)
  | { type: 'call.ended'; reason: string; handoffData?: string }
  /** An outbound call the gateway accepted: the callee's phone rings (`POST /calls`). */
  | { type: 'call.ringing'; gateway: GatewayName; to: string; from: string; providerCallId: string | null }
  /** The callee answered: the call's media stream came back to voxbridge. */
  | {
      type: 'call.answered';
      gateway: GatewayName;
      streamId: string;
      providerCallId: string | null;
      /** From the request to the stream's start message (ms). */
      ringMs: number;
    }
  /**
   * An outbound call that never got to voxbridge: the gateway refused it (its code and reason), or no
   * media stream came within `calls.control.answerTimeoutMs` (`no_media`), or it was cancelled.
   */
  | {
      type: 'call.failed';
      gateway: GatewayName;
      code: string;
      reason: string;
      providerCode?: string | undefined;
      status?: number | undefined;
    }
  /** A transfer through the gateway's call control: done (the caller left voxbridge), or failed. */
  | {
      type: 'transfer';
      status: 'done' | 'failed';
      mode: 'cold' | 'warm';
      to: string;
      targetCallId?: string | undefined;
      code?: string | undefined;
      error?: string | undefined;
    }
  /**
   * Who answered, as the answering-machine detector decided from the callee's audio (`source: audio`):
   * times in ms of that audio from the stream's start.
   */
  | {
      type: 'amd';
      source: 'audio';
      result: 'human' | 'machine' | 'unknown';
      reason: string;
      decidedAtMs: number;
      speechMs: number;
      greetingMs: number;
      /** The beep that decided it (reason `beep`). */
      beepHz?: number | undefined;
    }
  /**
   * Who answered, as the gateway's own detection said (`machine_detection` in `POST /calls`, its verdict
   * posted to voxbridge): `answeredBy` in the gateway's words, `detectionMs` how long it listened.
   */
  | {
      type: 'amd';
      source: 'gateway';
      result: 'human' | 'machine' | 'unknown';
      answeredBy: string;
      detectionMs?: number | undefined;
    }
  | {
      type: 'relay';
      relay: string;
      sessionId: string;
      status: 'started' | 'ended';
      /** How it ended: `end` (the app's), `closed` (its socket). */
      reason?: string;
      detail?: string;
      handoffData?: string | undefined;
    }
  | ({
      /**
       * A caller's turn answered: from their last speech to the first audio of the app's answer handed
       * to the gateway, and its parts.
       */
      type: 'relay.turn';
      relay: string;
      sessionId: string;
    } & TurnGap)
);

/** An `amd` event's fields from a gateway's verdict. */
export function gatewayAmdFields(verdict: GatewayAmdVerdict): {
  result: GatewayAmdVerdict['result'];
  answeredBy: string;
  detectionMs?: number;
} {
  return {
    result: verdict.result,
    answeredBy: verdict.answeredBy,
    ...(verdict.detectionMs === undefined ? {} : { detectionMs: verdict.detectionMs }),
  };
}

type DistributiveOmit<T, K extends keyof never> = T extends unknown ? Omit<T, K> : never;
export type EventBody = DistributiveOmit<CallEvent, 'seq' | 'at' | 'callId'>;

/**
 * A call event as it goes on the wire (the event stream, flow webhooks): the one place its shape is
 * decided. snake_case like the rest of the control API; the type stays camelCase for the code that
 * follows a call in-process. `parameters` are the caller's own keys and go out as they came.
 */
export function toWire(event: CallEvent): Record<string, unknown> {
  const head = { type: event.type, seq: event.seq, at: event.at, call_id: event.callId };
  switch (event.type) {
    case 'call.started':
      return {
        ...head,
        gateway: event.gateway,
        stream_id: event.streamId,
        flow: event.flow,
        parameters: { ...event.parameters },
      };
    case 'utterance.started':
      return { ...head, utterance_id: event.utteranceId, text: event.text };
    case 'utterance.finished':
      return { ...head, utterance_id: event.utteranceId, result: resultJson(event.result) };
    case 'barge-in':
      return {
        ...head,
        utterance_id: event.utteranceId ?? null,
        onset_ms: event.onsetMs,
        detected_ms: event.detectedMs,
        played_ms: event.playedMs,
        heard_text: event.heardText,
      };
    case 'barge-in.resumed':
      return {
        ...head,
        utterance_id: event.utteranceId,
        resumed_utterance_id: event.resumedUtteranceId,
        from_text: event.fromText,
      };
    case 'dtmf':
      return { ...head, digit: event.digit };
    case 'flow':
      return { ...head, event: flowEventWire(event.event) };
    case 'gather.result':
      return {
        ...head,
        flow: event.flow,
        node: event.node,
        input: event.input,
        digits: event.digits ?? null,
        text: event.text ?? null,
        words: event.words.map((w) => ({ word: w.word, start_ms: w.startMs, end_ms: w.endMs })),
        confidence: event.confidence ?? null,
        latency_ms: event.latencyMs ?? null,
        next: event.next ?? null,
      };
    case 'call.ended':
      return {
        ...head,
        reason: event.reason,
        ...(event.handoffData === undefined ? {} : { handoff_data: event.handoffData }),
      };
    case 'call.ringing':
      return {
        ...head,
        gateway: event.gateway,
        to: event.to,
        from: event.from,
        provider_call_id: event.providerCallId,
      };
    case 'call.answered':
      return {
        ...head,
        gateway: event.gateway,
        stream_id: event.streamId,
        provider_call_id: event.providerCallId,
        ring_ms: event.ringMs,
      };
    case 'call.failed':
      return {
        ...head,
        gateway: event.gateway,
        code: event.code,
        reason: event.reason,
        ...(event.providerCode === undefined ? {} : { provider_code: event.providerCode }),
        ...(event.status === undefined ? {} : { status: event.status }),
      };
    case 'transfer':
      return {
        ...head,
        status: event.status,
        mode: event.mode,
        to: event.to,
        ...(event.targetCallId === undefined ? {} : { target_call_id: event.targetCallId }),
        ...(event.code === undefined ? {} : { code: event.code }),
        ...(event.error === undefined ? {} : { error: event.error }),
      };
    case 'amd':
      if (event.source === 'gateway')
        return {
          ...head,
          source: event.source,
          result: event.result,
          answered_by: event.answeredBy,
          ...(event.detectionMs === undefined ? {} : { detection_ms: Math.round(event.detectionMs) }),
        };
      return {
        ...head,
        source: event.source,
        result: event.result,
        reason: event.reason,
        decided_at_ms: Math.round(event.decidedAtMs),
        speech_ms: Math.round(event.speechMs),
        greeting_ms: Math.round(event.greetingMs),
        ...(event.beepHz === undefined ? {} : { beep_hz: Math.round(event.beepHz) }),
      };
    case 'relay':
      return {
        ...head,
        relay: event.relay,
        session_id: event.sessionId,
        status: event.status,
        ...(event.reason === undefined ? {} : { reason: event.reason }),
        ...(event.detail === undefined ? {} : { detail: event.detail }),
        ...(event.handoffData === undefined ? {} : { handoff_data: event.handoffData }),
      };
    case 'relay.turn':
      return {
        ...head,
        relay: event.relay,
        session_id: event.sessionId,
        utterance_id: event.utteranceId,
        stt: event.via,
        gap_ms: Math.round(event.gapMs),
        endpointing_ms: Math.round(event.endpointingMs),
        stt_ms: Math.round(event.sttMs),
        app_ms: Math.round(event.appMs),
        first_byte_ms: event.firstByteMs === undefined ? null : Math.round(event.firstByteMs),
        first_frame_ms: Math.round(event.firstFrameMs),
      };
    default:
      return unknownEvent(event);
  }
}

function flowEventWire(event: FlowEvent): Record<string, unknown> {
  return {
    type: event.type,
    flow: event.flow,
    ...(event.node === undefined ? {} : { node: event.node }),
    ...(event.detail === undefined ? {} : { detail: snakeKeys(event.detail) }),
  };
}

/** A flow event's detail is the runner's own (`digits`, `next`, `status`, …), so its keys follow the wire. */
function snakeKeys(record: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(record))
    out[key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)] = value;
  return out;
}

/** Not reached while every event type has its case above: a new one fails to compile here first. */
function unknownEvent(event: never): never {
  throw new Error(`no wire shape for call event ${JSON.stringify(event)}`);
}
