/**
 * Runs one IVR flow on one call. The call is a port (`FlowCall`): the runner speaks through it, reads
 * the keys the caller pressed, listens for spoken answers to a gather (each gather's grammar is given
 * to it, built at start), transfers it, and hangs it up; it knows nothing of gateways or sockets.
 */
import { readHandoffTransfer, type TransferRequest } from '../control/transfer-request.js';
import type { MenuGrammar } from '../recognition/grammar.js';
import type { RecognizedWord } from '../recognition/recognizer.js';
import type { FlowCall, FlowHeard, FlowListening, FlowTransfer, FlowTransferOutcome } from './port.js';
import type { Flow, GatherNode, TransferNode } from './schema.js';
import { runTwiml } from './twiml.js';

export type {
  FlowCall,
  FlowCallFields,
  FlowGreetingEnd,
  FlowHeard,
  FlowListening,
  FlowMachineDecision,
  FlowRelayOutcome,
  FlowRelaySpec,
  FlowSayResult,
  FlowTransfer,
  FlowTransferOutcome,
} from './port.js';

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
  /** The grammar of each gather that listens for speech, by node name (built once at start). */
  grammars?: ReadonlyMap<string, MenuGrammar> | undefined;
  /** Told what answered a gather (keys, or a spoken turn), and where it sent the flow. */
  onGather?: ((result: GatherResult) => void) | undefined;
}

/** What answered a gather: the keys, or the caller's turn as recognised, and where it sent the flow. */
export interface GatherResult {
  node: string;
  input: 'dtmf' | 'speech';
  /** The keys pressed, or the key (or spoken digits) the words chose; undefined on a no-match. */
  digits: string | undefined;
  /** What was recognised (speech only). */
  text: string | undefined;
  words: readonly RecognizedWord[];
  /** The recognition's confidence (speech only). */
  confidence: number | undefined;
  /** The end of the caller's turn to the result, ms (speech only). */
  latencyMs: number | undefined;
  /** The node the answer sent the flow to (a branch, or `otherwise`); undefined: the retry (or `onFail`). */
  next: string | undefined;
}

type GatherInput = { kind: 'keys'; digits: string } | { kind: 'speech'; heard: FlowHeard };
type FirstAnswer =
  { kind: 'digit'; digit: string } | { kind: 'speech'; heard: FlowHeard } | { kind: 'timeout' };

/** A webhook that has not answered by then is given up on; the flow goes on. */
const WEBHOOK_TIMEOUT_MS = 3000;
/** Nodes that neither speak nor wait, in a row, before the flow is taken to be looping. */
const MAX_SILENT_STEPS = 100;
/**
 * A caller still talking when a gather's wait runs out is waited for this much longer at most: a turn
 * longer than that is no answer to a menu (the call recognises a turn's last 20 s).
 */
const MAX_TURN_WAIT_MS = 35_000;

/** How a flow ended: it hung up, the call went (aborted), it looped, or the caller was transferred. */
export type FlowEnd = 'hangup' | 'aborted' | 'loop' | 'transfer';

/** A transfer node's request, as the call's port takes it. */
function nodeTransfer(node: TransferNode): FlowTransfer {
  return {
    to: node.to,
    mode: node.mode,
    callerId: node.callerId,
    timeoutSeconds: node.timeoutSeconds,
    summary:
      node.summary !== undefined
        ? { text: node.summary }
        : node.summaryAudioUrl !== undefined
          ? { audioUrl: node.summaryAudioUrl }
          : undefined,
    holdMusicUrl: node.holdMusicUrl,
  };
}

/** A transfer as an app asked for it (a relay's handoffData), as the call's port takes it. */
export function requestedTransfer(request: TransferRequest): FlowTransfer {
  return {
    to: request.to,
    mode: request.mode,
    callerId: request.caller_id,
    timeoutSeconds: request.timeout_seconds,
    summary:
      request.summary !== undefined
        ? { text: request.summary }
        : request.summary_audio_url !== undefined
          ? { audioUrl: request.summary_audio_url }
          : undefined,
    holdMusicUrl: request.hold_music_url,
  };
}

/** Transfers through the call's port; a call that cannot be transferred is a failed outcome, not a throw. */
export async function transferThrough(
  call: FlowCall,
  request: FlowTransfer,
  signal: AbortSignal,
): Promise<FlowTransferOutcome> {
  if (!call.transfer) return { ok: false, code: 'unsupported', message: 'this call cannot be transferred' };
  return call.transfer(request, signal);
}

/** A transfer's outcome as a flow event's detail (where to, and how it went). */
function transferDetail(request: FlowTransfer, outcome: FlowTransferOutcome): Record<string, unknown> {
  return {
    transfer: outcome.ok ? 'done' : 'failed',
    to: request.to,
    mode: request.mode,
    ...(outcome.ok
      ? outcome.targetCallId === undefined
        ? {}
        : { targetCallId: outcome.targetCallId }
      : { code: outcome.code, error: outcome.message }),
  };
}

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

  const gather = async (nodeName: string, node: GatherNode): Promise<string> => {
    // No grammar (the runner was given none), or a call that cannot listen: keys only.
    const grammar = node.input.includes('speech') ? options.grammars?.get(nodeName) : undefined;
    for (let attempt = 0; ; attempt++) {
      const input = await gatherInput(node, grammar);
      const retry = attempt >= node.retries ? (node.onFail ?? '') : undefined;
      if (input.kind === 'speech') {
        const { heard } = input;
        const chosen = heard.key ?? heard.digits;
        const matched = chosen !== undefined && heard.confidence >= node.minConfidence;
        const target = matched ? (node.branches[chosen] ?? node.otherwise) : node.otherwise;
        emit('flow.node', nodeName, {
          input: 'speech',
          digits: matched ? chosen : '',
          text: heard.text,
          confidence: heard.confidence,
          ...(target ? { next: target } : {}),
        });
        options.onGather?.({
          node: nodeName,
          input: 'speech',
          digits: matched ? chosen : undefined,
          text: heard.text,
          words: heard.words,
          confidence: heard.confidence,
          latencyMs: heard.latencyMs,
          next: target,
        });
        if (target !== undefined) return target;
        if (retry !== undefined) return retry;
        continue;
      }
      const { digits } = input;
      const target = digits === '' ? undefined : (node.branches[digits] ?? node.otherwise);
      emit('flow.node', nodeName, { digits, ...(target ? { next: target } : {}) });
      if (digits !== '')
        options.onGather?.({
          node: nodeName,
          input: 'dtmf',
          digits,
          text: undefined,
          words: [],
          confidence: undefined,
          latencyMs: undefined,
          next: target,
        });
      if (target !== undefined) return target;
      if (retry !== undefined) return retry;
    }
  };

  /**
   * One attempt of a gather: its prompt, then the caller's answer. With speech the caller's next turn
   * is listened for from before the prompt (a caller who talks over it is heard from the first
   * syllable; a prompt that may not be cut is listened after), and a key still wins: the first key
   * closes the listening and the keys are collected as without speech.
   */
  const gatherInput = async (node: GatherNode, grammar: MenuGrammar | undefined): Promise<GatherInput> => {
    let digits = node.input.includes('dtmf') ? carried : '';
    carried = '';
    const scope = new AbortController();
    const scoped = AbortSignal.any([signal, scope.signal]);
    let listening: FlowListening | undefined;
    const listen = (): FlowListening | undefined =>
      grammar === undefined || digits !== '' ? undefined : call.listen?.(grammar, scoped, node.minConfidence);
    try {
      if (node.bargeIn) listening = listen();
      let firstWaitMs = node.timeoutMs;
      if (digits === '' && node.prompt !== undefined) {
        const said = await call.say(node.prompt, { ...voiceOf(node), interruptible: node.bargeIn });
        if (said.status === 'interrupted') firstWaitMs = Math.max(node.timeoutMs, flow.bargeInWaitMs);
      }
      listening ??= listen();
      if (digits === '') {
        const first = await firstAnswer(node, firstWaitMs, listening);
        if (first.kind === 'speech') return first;
        if (first.kind === 'timeout' || first.digit === node.finishOnKey) return { kind: 'keys', digits: '' };
        digits = first.digit;
      }
      listening?.close();
      while (digits.length < node.digits) {
        const digit = await call.nextDigit(node.timeoutMs, signal);
        if (digit === undefined) break;
        if (digit === node.finishOnKey) break;
        digits += digit;
      }
      return { kind: 'keys', digits };
    } finally {
      listening?.close();
      scope.abort();
    }
  };

  /**
   * The caller's first answer: a key, their recognised turn, or `waitMs` of silence. A caller still in
   * a turn when the wait runs out is waited for (a turn ends with the VAD's silence, or at its bound).
   * A key where the node takes none is passed over, and the wait starts again.
   */
  const firstAnswer = async (
    node: GatherNode,
    waitMs: number,
    listening: FlowListening | undefined,
  ): Promise<FirstAnswer> => {
    let extended = false;
    for (;;) {
      const round = new AbortController();
      const key = call
        .nextDigit(extended ? MAX_TURN_WAIT_MS : waitMs, AbortSignal.any([signal, round.signal]))
        .then((digit): FirstAnswer => (digit === undefined ? { kind: 'timeout' } : { kind: 'digit', digit }));
      let answer: FirstAnswer;
      try {
        answer = listening
          ? await Promise.race([
              key,
              listening.heard.then((heard): FirstAnswer => ({ kind: 'speech', heard })),
            ])
          : await key;
      } finally {
        round.abort();
        key.catch(() => undefined);
      }
      if (answer.kind === 'digit' && !node.input.includes('dtmf')) continue;
      if (answer.kind === 'timeout' && listening?.busy && !extended) {
        extended = true;
        continue;
      }
      return answer;
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
          // An app's `end` may hand the caller to a person: `{"transfer": {"to": …}}` in its handoffData.
          const handoff =
            outcome.reason === 'end' ? readHandoffTransfer(outcome.handoffData) : ({ kind: 'none' } as const);
          if (handoff.kind === 'transfer') {
            const request = requestedTransfer(handoff.request);
            const moved = await transferThrough(call, request, signal);
            emit('flow.node', current, transferDetail(request, moved));
            if (moved.ok) {
              emit('flow.end', current, { reason: 'transfer' });
              return 'transfer';
            }
          } else if (handoff.kind === 'invalid')
            emit('flow.node', current, {
              transfer: 'failed',
              code: 'invalid_request',
              error: handoff.message,
            });
          // The app wanted the caller elsewhere and that failed: onClose may say sorry, or try another way.
          if (handoff.kind !== 'none' && node.onClose !== undefined) {
            current = node.onClose;
            break;
          }
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
          if (outcome.end === 'transfer') {
            emit('flow.end', current, { reason: 'transfer' });
            return 'transfer';
          }
          if (outcome.end === 'error') await call.hangup();
          emit('flow.end', current, { reason: 'hangup' });
          return 'hangup';
        }
        case 'transfer': {
          silentSteps = 0;
          if (node.text !== undefined) await call.say(node.text, { ...voiceOf(node), interruptible: false });
          const request = nodeTransfer(node);
          const outcome = await transferThrough(call, request, signal);
          emit('flow.node', current, transferDetail(request, outcome));
          if (outcome.ok) {
            emit('flow.end', current, { reason: 'transfer' });
            return 'transfer';
          }
          if (node.onFail !== undefined) {
            current = node.onFail;
            break;
          }
          await call.hangup();
          emit('flow.end', current, { reason: 'hangup' });
          return 'hangup';
        }
        case 'detect-machine': {
          // The bot says nothing meanwhile: its own voice would be heard as the callee's.
          silentSteps = 0;
          const decision = call.detectMachine ? await call.detectMachine(node.timeoutMs, signal) : undefined;
          const result = decision?.result ?? 'unknown';
          const target = result === 'unknown' ? (node.unknown ?? node.human) : node[result];
          emit('flow.node', current, {
            result,
            reason: decision?.reason ?? (call.detectMachine ? 'timeout' : 'unsupported'),
            ...(decision ? { decidedAtMs: decision.decidedAtMs, speechMs: decision.speechMs } : {}),
            next: target,
          });
          current = target;
          break;
        }
        case 'voicemail': {
          silentSteps = 0;
          // A call without a detector cannot hear the greeting: the message is left at once.
          const greeting = call.greetingEnd
            ? await call.greetingEnd(node.maxWaitMs, signal)
            : ({ end: 'unsupported' } as const);
          emit('flow.node', current, {
            greeting: greeting.end,
            ...(greeting.end !== 'unsupported' && greeting.atMs !== undefined ? { atMs: greeting.atMs } : {}),
          });
          // Not cut by the greeting's tail, nor by whatever the machine plays after its beep.
          await call.say(node.text, { ...voiceOf(node), interruptible: false });
          if (node.next !== undefined) {
            current = node.next;
            break;
          }
          await call.hangup();
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
