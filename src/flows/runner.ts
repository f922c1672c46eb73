/**
 * Runs one IVR flow on one call. The call is a port (`FlowCall`): the runner speaks through it, reads
 * the keys the caller pressed, and hangs it up; it knows nothing of gateways or sockets.
 */
import type { FlowCall } from './port.js';
import type { Flow, FlowNode } from './schema.js';
import { runTwiml } from './twiml.js';

export type { FlowCall, FlowCallFields, FlowRelayOutcome, FlowRelaySpec, FlowSayResult } from './port.js';

export interface FlowEvent {
  type: 'flow.node' | 'flow.webhook' | 'flow.twiml' | 'flow.end';
  flow: string;
  node?: string;
  detail?: Record<string, unknown>;
}

export interface RunFlowOptions {
  /** Name of the flow, for events. */
  name: string;
  signal: AbortSignal;
  onEvent?: (event: FlowEvent) => void;
  /** Sends a webhook (POST JSON); resolves with the HTTP status, or rejects. Default: global fetch. */
  post?: ((url: string, body: unknown, signal: AbortSignal) => Promise<number>) | undefined;
  /** `TWILIO_AUTH_TOKEN`: a TwiML node signs its webhook requests (and its relay's handshake) with it. */
  twilioAuthToken?: string | undefined;
}

/** A webhook that has not answered by then is given up on; the flow goes on. */
const WEBHOOK_TIMEOUT_MS = 3000;
/** Nodes that neither speak nor wait, in a row, before the flow is taken to be looping. */
const MAX_SILENT_STEPS = 100;

export type FlowEnd = 'hangup' | 'aborted' | 'loop';

/** POSTs `body` as JSON; resolves with the status (the response body is not read). */
export async function postJson(url: string, body: unknown, signal: AbortSignal): Promise<number> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal,
  });
  await res.body?.cancel();
  return res.status;
}

/** Runs `flow` until it hangs up, the call ends (`signal`), or it loops without speaking. */
export async function runFlow(flow: Flow, call: FlowCall, options: RunFlowOptions): Promise<FlowEnd> {
  const { signal, name: flowName } = options;
  const emit = (type: FlowEvent['type'], node?: string, detail?: Record<string, unknown>): void =>
    options.onEvent?.({ type, flow: flowName, ...(node ? { node } : {}), ...(detail ? { detail } : {}) });
  const post = options.post ?? postJson;
  /** Keys read while waiting after a barge-in, handed to the next gather. */
  let carried = '';
  let silentSteps = 0;

  const voiceOf = (node: { voice?: string | undefined }): { voiceId?: string } => {
    const voiceId = node.voice ?? flow.voice;
    return voiceId === undefined ? {} : { voiceId };
  };

  /** After the caller talked over the flow: give them time to press a key before speaking again. */
  const waitAfterBargeIn = async (): Promise<void> => {
    const digit = await call.nextDigit(flow.bargeInWaitMs, signal);
    if (digit !== undefined) carried += digit;
  };

  const gather = async (nodeName: string, node: Extract<FlowNode, { type: 'gather' }>): Promise<string> => {
    for (let attempt = 0; ; attempt++) {
      let digits = carried;
      carried = '';
      let firstWaitMs = node.timeoutMs;
      if (digits === '' && node.prompt !== undefined) {
        const said = await call.say(node.prompt, { ...voiceOf(node), interruptible: node.bargeIn });
        if (said.status === 'interrupted') firstWaitMs = Math.max(node.timeoutMs, flow.bargeInWaitMs);
      }
      while (digits.length < node.digits) {
        const digit = await call.nextDigit(digits === '' ? firstWaitMs : node.timeoutMs, signal);
        if (digit === undefined) break;
        if (digit === node.finishOnKey) break;
        digits += digit;
      }
      const target = digits === '' ? undefined : (node.branches[digits] ?? node.otherwise);
      emit('flow.node', nodeName, { digits, ...(target ? { next: target } : {}) });
      if (target !== undefined) return target;
      if (attempt >= node.retries) return node.onFail ?? '';
    }
  };

  let current = flow.start;
  try {
    for (;;) {
      signal.throwIfAborted();
      const node = flow.nodes[current];
      if (!node) {
        // Only a gather without onFail gets here (''): its retries are spent; hang up.
        await call.hangup();
        emit('flow.end', current, { reason: 'hangup' });
        return 'hangup';
      }
      emit('flow.node', current, { type: node.type });
      switch (node.type) {
        case 'say': {
          silentSteps = 0;
          const said = await call.say(node.text, { ...voiceOf(node), interruptible: node.bargeIn });
          if (said.status === 'interrupted') await waitAfterBargeIn();
          current = node.next;
          break;
        }
        case 'gather':
          silentSteps = 0;
          current = await gather(current, node);
          break;
        case 'webhook': {
          if (++silentSteps > MAX_SILENT_STEPS) {
            emit('flow.end', current, { reason: 'loop' });
            return 'loop';
          }
          const body = { event: node.event, call_id: call.id, flow: flowName, node: current };
          try {
            const status = await post(
              node.url,
              body,
              AbortSignal.any([signal, AbortSignal.timeout(WEBHOOK_TIMEOUT_MS)]),
            );
            emit('flow.webhook', current, { status });
          } catch (error) {
            if (signal.aborted) throw error;
            emit('flow.webhook', current, { error: (error as Error).message });
          }
          current = node.next;
          break;
        }
        case 'relay': {
          silentSteps = 0;
          if (!call.relay)
            throw new Error(`flow ${flowName}: node ${current}: relays cannot run on this call`);
          const outcome = await call.relay({ name: node.relay }, signal);
          emit('flow.node', current, { relay: node.relay, ...outcome });
          if (outcome.reason === 'end') {
            await call.hangup(outcome.handoffData);
            emit('flow.end', current, { reason: 'hangup' });
            return 'hangup';
          }
          if (node.onClose !== undefined) {
            current = node.onClose;
            break;
          }
          await call.hangup();
          emit('flow.end', current, { reason: 'hangup' });
          return 'hangup';
        }
        case 'twiml': {
          silentSteps = 0;
          const at = current;
          const outcome = await runTwiml(node, call, {
            authToken: options.twilioAuthToken,
            flowVoice: flow.voice,
            signal,
            report: (detail) => emit('flow.twiml', at, detail),
          });
          if (outcome.end === 'error' && node.onError !== undefined) {
            current = node.onError;
            break;
          }
          if (outcome.end === 'error') await call.hangup();
          emit('flow.end', current, { reason: 'hangup' });
          return 'hangup';
        }
        case 'hangup':
          if (node.text !== undefined) await call.say(node.text, { ...voiceOf(node), interruptible: false });
          await call.hangup();
          emit('flow.end', current, { reason: 'hangup' });
          return 'hangup';
      }
    }
  } catch (error) {
    if (signal.aborted) {
      emit('flow.end', current, { reason: 'aborted' });
      return 'aborted';
    }
    throw error;
  }
}
