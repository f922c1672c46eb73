// Over 450 lines: the state machine of one connection, from the start message to the end, reads best whole.
/**
 * One phone call: `Call`, its options, its states and its events. (Just over 400 lines on purpose: the
 * state machine of one connection, from the start message to the end, reads best whole; its other jobs
 * are already modules of their own, listed on the class.)
 */
import { EventEmitter } from 'node:events';
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { WireFormat } from '../../src/audio/framer.js';
import type {
  FlowRelayOutcome,
  FlowRelaySpec,
  FlowSayResult,
  FlowTransfer,
  FlowTransferOutcome,
} from '../../src/flows/runner.js';
import type { GatewayAmdVerdict } from './amd-verdict.js';
import { CallControlError, type TransferResult } from '../../src/call-control/index.js';
import type { FlowGrammars } from '../../src/flows/grammars.js';
import { flowDetectsMachines, type Flow } from '../../src/flows/schema.js';
import type { Clock } from '../../src/speaker/clock.js';
import type { PhraseCache } from '../../src/speaker/phrase-cache.js';
import type { SpeechSource } from '../../src/speaker/segment-audio.js';
import {
  Speaker,
  type AudioInput,
  type SayOptions,
  type UtteranceHandle,
} from '../../src/speaker/speaker.js';
import { SPEAKER_SAMPLE_RATE } from '../../src/speaker/segment-audio.js';
import { dtmfTones } from '../../src/audio/dtmf.js';
import { int16ToBytes } from '../../src/audio/pcm.js';
import { BargeInChain } from './barge-in-chain.js';
import { CallAmd } from './call-amd.js';
import { CallFlow, chooseFlow } from './call-flow.js';
import type { Aligner } from '../../src/speaker/word-alignment.js';
import { CallListener, type TurnRecognizer } from './call-listen.js';
import { gatewayAmdFields, publicResult, type CallEvent, type EventBody } from './call-events.js';
import type { DetectorHooks, OnsetDetector } from './caller-audio.js';
import { CallRelay, type CallRelays } from './call-relay.js';
import { CLOSE } from '../../src/http/ws-close.js';
import { EventLog } from './event-log.js';
import {
  callRefOf,
  hangUpAtGateway,
  transferAtGateway,
  type CallControls,
  type PlacedCallLink,
} from './call-control-link.js';
import { FalseBargeIn, type FalseBargeInSettings } from './false-barge-in.js';
import { PhoneSink, type MediaTransport } from './phone-sink.js';
import { postEvent, type PostJson } from './webhooks.js';
import { checkIds, limitParameters } from '../../src/protocols/parameters.js';
import {
  ProtocolError,
  type GatewayName,
  type GatewayProtocol,
  type InboundEvent,
  type ProtocolOptions,
  type StreamInfo,
} from '../../src/protocols/types.js';

export interface CallSettings {
  voiceId: string;
  leadMs: number;
  markIntervalMs: number;
  bargeIn: boolean;
  /** Taking back a false barge-in (`calls.bargeIn.resume`); unset: off. */
  bargeInResume?: FalseBargeInSettings | undefined;
  /** The flow run when the call's parameters name none; undefined: none. */
  defaultFlow: string | undefined;
  flows: Readonly<Record<string, Flow>>;
  /** The grammar of each flow's gathers that listen for speech (by flow, then node); none: keys only. */
  grammars?: FlowGrammars | undefined;
  /** Per gateway: the outbound codec where its start message does not say it. */
  protocolOptions: Readonly<Partial<Record<GatewayName, ProtocolOptions>>>;
}

export interface CallOptions {
  gateway: GatewayProtocol;
  transport: MediaTransport;
  /** Ends the connection (after a hangup where the gateway has none, or bad input). */
  close: (code: number, reason: string) => void;
  source: SpeechSource;
  cache?: PhraseCache | undefined;
  clock: Clock;
  logger: Logger;
  settings: CallSettings;
  /** Makes the call's VAD once the inbound format is known; none: no barge-in on voice. */
  detector?: ((inbound: WireFormat, hooks: DetectorHooks) => OnsetDetector) | undefined;
  /** Relays the call's flows may hand it to; none: relay nodes fail. */
  relays?: CallRelays | undefined;
  /**
   * Recognises the caller's spoken answers to a flow's gathers (the process's one recogniser); none, or
   * no detector: gathers take keys only.
   */
  recognizer?: TurnRecognizer | undefined;
  /** Times the words of speech that came without character timings; none: estimated. */
  aligner?: Aligner | undefined;
  /** Webhook sender for flows (tests inject their own). */
  post?: PostJson | undefined;
  /** The upgrade URL's query parameters (the `token` among them excluded). */
  urlParameters?: Readonly<Record<string, string>>;
  /**
   * Asked once the start message names the call, before anything is set up for it: a refusal (no room,
   * or another connection already has the call's id) closes the connection with its code and reason;
   * a call voxbridge placed itself is given its placement, whose id and events it takes on.
   */
  admit?: (stream: StreamInfo) => CallAdmission;
  /** The gateways' call control: hanging up at the gateway, transfers. None: the stream only. */
  controls?: CallControls | undefined;
}

/** Whether a call may start, and, for one voxbridge placed, its placement. */
export type CallAdmission =
  { readonly refused: CallRefusal } | { readonly refused?: undefined; readonly placed?: PlacedCallLink };

/**
 * Outbound frames paced and sent two at a time (40 ms a message, well inside the 200 ms lead): half the
 * socket writes, timer wake-ups and message encodings per call, the load's largest costs at hundreds of
 * calls (where this was measured: docs/calls.md, «Endpoints»).
 */
const BURST_FRAMES = 2;

/** Why a call may not start, as the close frame says it. */
export interface CallRefusal {
  readonly code: number;
  readonly reason: string;
}

/**
 * A call's life, changed only in `setState`. Active holds everything a started call owns; ended keeps
 * the flow it ran (its name and webhook still name the call's last events).
 */
export type CallState =
  | { status: 'connecting' }
  | {
      status: 'active';
      stream: StreamInfo;
      sink: PhoneSink;
      speaker: Speaker;
      /** Barge-in on the caller's voice; none when barge-in is off or there is no VAD. */
      bargeIn: BargeInChain | undefined;
      /** Whether a barge-in was false, when barge-in and its taking back are on. */
      falseBargeIn: FalseBargeIn | undefined;
      flow: CallFlow | undefined;
      /** The caller's turns heard for the flow's gathers that listen for speech; none when they cannot. */
      listener: CallListener | undefined;
      /** Answering-machine detection: calls voxbridge placed, and those whose flow asks who answered. */
      amd: CallAmd | undefined;
    }
  | { status: 'ended'; reason: string; flow: CallFlow | undefined };

type ActiveState = Extract<CallState, { status: 'active' }>;

export interface CallEvents {
  event: [CallEvent];
  ended: [string];
  /** Every change of `state`, after its teardown. */
  stateChange: [oldState: CallState, newState: CallState];
}

/**
 * One phone call on one gateway connection: parses what the gateway sends, speaks through a `Speaker`
 * into a `PhoneSink`, and reports everything as call events. This class is the protocol dispatch and
 * the lifecycle; its other jobs are modules of their own: barge-in on the caller's voice
 * (`BargeInChain`) and taking back a false one (`FalseBargeIn`), the IVR flow and its keys
 * (`CallFlow`) and spoken answers (`CallListener`), the event history (`EventLog`), webhooks
 * (`postEvent`).
 */
export class Call extends EventEmitter<CallEvents> {
  /** Ours until the gateway's start message names the call; then the gateway's call id. */
  id: string = randomUUID();
  /** The gateway's stream id from the start message on (kept after the call ends, for its last events). */
  streamId: string | undefined;
  readonly gateway: GatewayName;
  readonly createdAt = new Date();
  /** Inbound messages dropped (bad input, media before start), for diagnostics. */
  dropped = 0;
  #state: CallState = { status: 'connecting' };
  /** The relay the call's flow handed it to, while it runs. */
  #relay: CallRelay | undefined;
  private events = new EventLog();
  private readonly options: CallOptions;
  /** The gateway's logger; once the call starts, with its call and stream ids on every line. */
  private log: Logger;
  /** Set when voxbridge placed this call (`POST /calls`): the placement it continues. */
  #placed: PlacedCallLink | undefined;
  /** A hang-up under way (at the gateway, then the stream), so that a second one waits for it. */
  #hangingUp: Promise<void> | undefined;
  /** Why the call is ending when voxbridge ends it: the stream closing meanwhile does not change it. */
  #ending: { reason: string; handoffData?: string | undefined } | undefined;

  constructor(options: CallOptions) {
    super();
    // Every event-stream subscriber listens (bounded by server.maxConnections), plus the app's own.
    this.setMaxListeners(0);
    this.options = options;
    this.gateway = options.gateway.name;
    this.log = options.logger;
  }

  get state(): CallState {
    return this.#state;
  }

  get stream(): StreamInfo | undefined {
    return this.#state.status === 'active' ? this.#state.stream : undefined;
  }

  get speaker(): Speaker | undefined {
    return this.#state.status === 'active' ? this.#state.speaker : undefined;
  }

  /** `outbound` for a call voxbridge placed (`POST /calls`), else `inbound`. */
  get direction(): 'inbound' | 'outbound' {
    return this.#placed === undefined ? 'inbound' : 'outbound';
  }

  /** Name of the flow this call runs (or ran), if any. */
  get flow(): string | undefined {
    return this.#state.status === 'connecting' ? undefined : this.#state.flow?.name;
  }

  /**
   * The events after `seq`, oldest first, for a subscriber that joins late or reconnects: a call keeps
   * its last 1000.
   */
  eventsAfter(seq: number): CallEvent[] {
    return this.events.after(seq);
  }

  /**
   * The one place the state changes. Leaving active tears the call down: the flow is aborted, the sink
   * closed, barge-in stopped and the speaker closed (its last utterances end as interrupted). Ended is
   * final.
   */
  private setState(next: CallState): void {
    const old = this.#state;
    if (old.status === 'ended') return;
    this.#state = next;
    if (old.status === 'active' && next.status !== 'active') {
      old.flow?.abort();
      old.sink.close();
      old.bargeIn?.close();
      void old.speaker.close();
      old.falseBargeIn?.close();
      old.listener?.close();
      old.amd?.close();
    }
    this.emit('stateChange', old, next);
  }

  /** One WebSocket message from the gateway. Bad input is logged and dropped; it never throws. */
  onMessage(data: Uint8Array, isBinary: boolean): void {
    if (this.#state.status === 'ended') return;
    let event: InboundEvent;
    try {
      event = this.options.gateway.parse(data, isBinary, this.options.settings.protocolOptions[this.gateway]);
      if (event.type === 'start') checkIds(this.gateway, event.stream);
    } catch (error) {
      this.dropped++;
      if (
        error instanceof ProtocolError &&
        error.code === 'invalid_start' &&
        this.#state.status === 'connecting'
      )
        // A start we cannot take (a codec or rate the gateway does not stream, no stream id): waiting
        // for another would only hold the connection; the close says why.
        this.refuse({ code: CLOSE.unsupported, reason: error.message }, { code: error.code });
      else if (error instanceof ProtocolError)
        this.log.warn({ code: error.code, err: error.message }, 'inbound message dropped');
      else this.log.error({ err: error }, 'inbound message could not be parsed');
      return;
    }
    try {
      this.handle(event);
    } catch (error) {
      this.dropped++;
      this.log.error({ err: error, event: event.type }, 'inbound event failed');
    }
  }

  private handle(event: InboundEvent): void {
    const state = this.#state;
    if (event.type === 'start') {
      if (state.status !== 'connecting') {
        this.dropped++;
        this.log.warn('second start message ignored');
        return;
      }
      this.start(event.stream);
      return;
    }
    if (state.status !== 'active') {
      // Nothing before the start: media, marks or keys without a stream are ignored.
      if (event.type !== 'connected' && event.type !== 'ignored') this.dropped++;
      return;
    }
    switch (event.type) {
      case 'media':
        if (event.streamId !== undefined && event.streamId !== state.stream.streamId) {
          this.dropped++;
          this.log.warn({ streamId: event.streamId }, 'media for an unknown stream dropped');
          return;
        }
        state.amd?.push(event.payload);
        if (state.bargeIn && !state.bargeIn.push(event.payload, event.timestampMs)) this.dropped++;
        return;
      case 'mark':
        state.sink.onMark(event.name, event.outcome);
        return;
      case 'dtmf':
        this.onDigit(state, event.digit);
        return;
      case 'flow':
        state.sink.setPaused(event.paused);
        return;
      case 'stop':
        this.end(`stopped by the gateway${event.reason ? `: ${event.reason}` : ''}`);
        return;
      case 'connected':
      case 'cleared':
      case 'ignored':
        return;
    }
  }

  /** Closes the connection with `refusal` before the call starts, and ends it. */
  private refuse(refusal: CallRefusal, fields: Record<string, unknown>): void {
    this.log.warn({ ...fields, closeCode: refusal.code, reason: refusal.reason }, 'call refused');
    this.options.close(refusal.code, refusal.reason);
    this.end(refusal.reason);
  }

  private start(started: StreamInfo): void {
    const admission = this.options.admit?.(started);
    if (admission?.refused) {
      this.refuse(admission.refused, { callId: started.callId, streamId: started.streamId });
      return;
    }
    const placed = admission?.placed;
    // Query parameters of the stream URL count as call parameters (Exotel appends custom parameters
    // there); what the start message says wins. Both are bounded (`PARAMETER_LIMITS`).
    const limited = limitParameters({ ...this.options.urlParameters, ...started.parameters });
    const stream: StreamInfo = { ...started, parameters: limited.parameters };
    const { settings, clock } = this.options;
    // A call voxbridge placed keeps the id `POST /calls` answered with, and its events so far.
    this.#placed = placed;
    this.id = placed?.id ?? stream.callId;
    if (placed) this.events = placed.events;
    this.streamId = stream.streamId;
    this.log = this.options.logger.child({
      callId: this.id,
      streamId: stream.streamId,
      ...(placed ? { gatewayCallId: stream.callId } : {}),
    });
    if (limited.dropped > 0)
      this.log.warn(
        {
          dropped: limited.dropped,
          droppedChars: limited.droppedChars,
          kept: Object.keys(limited.parameters).length,
        },
        'call parameters over the limits dropped',
      );
    const sink = new PhoneSink({
      protocol: this.options.gateway,
      stream,
      transport: this.options.transport,
      clock,
      leadMs: settings.leadMs,
      markIntervalMs: settings.markIntervalMs,
      burstFrames: BURST_FRAMES,
    });
    sink.on('playout', (p) => this.log.debug(p, 'playout'));
    const speaker = new Speaker({
      source: this.options.source,
      sink,
      voiceId: settings.voiceId,
      clock,
      cache: this.options.cache,
      aligner: this.options.aligner,
    });
    speaker.on('utteranceEnd', ({ id, result }) =>
      this.emitEvent({ type: 'utterance.finished', utteranceId: id, result: publicResult(result) }),
    );
    const chosen = chooseFlow(stream.parameters['flow'], settings, this.log);
    const grammars = chosen && settings.grammars?.get(chosen.name);
    const { recognizer } = this.options;
    // Spoken answers are the VAD's turns: without barge-in's detector there are none to hear.
    const listener =
      grammars && recognizer && settings.bargeIn && this.options.detector
        ? new CallListener({ recognizer, inboundRate: stream.inbound.sampleRate, log: this.log })
        : undefined;
    // A flow that will listen: the recogniser gets ready while the call's first prompts play.
    if (listener) recognizer?.prepare?.();
    const falseBargeIn =
      settings.bargeIn && settings.bargeInResume?.enabled && this.options.detector
        ? new FalseBargeIn({
            speaker,
            settings: settings.bargeInResume,
            clock,
            say: (text, o) => this.say(text, o),
            // A relay's app owns its talk cycle; a gather listening hears a short turn as an answer.
            canResume: () => this.#relay === undefined && !listener?.listening,
            onResumed: (r) => this.emitEvent({ type: 'barge-in.resumed', ...r }),
          })
        : undefined;
    const detector = settings.bargeIn
      ? this.options.detector?.(stream.inbound, {
          onTurnEnd: (turn) => {
            this.#relay?.turnEnd(turn);
            listener?.turnEnd(turn);
            falseBargeIn?.turnEnded(turn);
          },
          onSilence: (silence) => this.#relay?.silence(silence),
        })
      : undefined;
    const interruptible = falseBargeIn ?? speaker;
    const bargeIn =
      detector &&
      new BargeInChain({
        detector,
        inbound: stream.inbound,
        // A relay that lets backchannels pass holds a barge-in on its app's answer (call-relay.ts).
        speaker: {
          get speakingId() {
            return interruptible.speakingId;
          },
          interrupt: () => {
            const relay = this.#relay;
            return relay?.holdsBargeIns ? relay.interruptHeld() : interruptible.interrupt();
          },
        },
        sink,
        played: sink,
        onBargeIn: (b) => {
          this.emitEvent({ type: 'barge-in', ...b });
          this.#relay?.bargeIn(b);
        },
        onOnset: (onsetMs, speechStartMs) => {
          this.#relay?.onset(onsetMs, speechStartMs);
          // A relay's turn is heard from where the caller's speech began; a gather's from the run
          // that confirmed it (call-listen.ts says why).
          listener?.onset(onsetMs);
        },
        onAudio: (samples, atMs, payload) => {
          this.#relay?.audio(samples, atMs, payload);
          listener?.audio(samples, atMs);
        },
        log: this.log,
      });
    const amd = placed || (chosen && flowDetectsMachines(chosen.flow)) ? this.startAmd(stream) : undefined;
    const flow =
      chosen &&
      new CallFlow({
        ...chosen,
        call: {
          id: this.id,
          fields: placed
            ? {
                from: placed.from,
                to: placed.to,
                direction: 'outbound-api',
                accountSid: stream.accountSid ?? '',
              }
            : {
                from: stream.parameters['from'] ?? stream.parameters['From'] ?? '',
                to: stream.parameters['to'] ?? stream.parameters['To'] ?? '',
                direction: stream.parameters['direction'] ?? 'inbound',
                accountSid: stream.accountSid ?? '',
              },
          say: (text, o) => this.sayForFlow(text, o),
          play: async (audio, o) => ({ status: (await this.say(audio, o).result).status }),
          hangup: (handoffData) => this.hangup(handoffData),
          transfer: (request, signal) => this.transferForFlow(request, signal),
          relay: (spec, signal) => this.runRelay(spec, signal),
          listen:
            listener && ((grammar, signal, minConfidence) => listener.listen(grammar, signal, minConfidence)),
          detectMachine: amd && ((timeoutMs, signal) => amd.waitForDecision(timeoutMs, signal)),
          greetingEnd: amd && ((maxWaitMs, signal) => amd.waitForGreetingEnd(maxWaitMs, signal)),
        },
        clock,
        grammars,
        onEvent: (event) => this.emitEvent({ type: 'flow', event }),
        onGather: (result) => this.emitEvent({ type: 'gather.result', flow: chosen.name, ...result }),
        post: this.options.post,
        twilioAuthToken: this.options.relays?.twilioAuthToken,
        log: this.log,
      });
    this.setState({ status: 'active', stream, sink, speaker, bargeIn, falseBargeIn, flow, listener, amd });
    this.emitEvent({
      type: 'call.started',
      gateway: this.gateway,
      streamId: stream.streamId,
      flow: flow?.name ?? null,
      parameters: { ...stream.parameters },
    });
    flow?.start();
  }

  /** The callee's answering-machine detector; none (logged) for an inbound rate it does not take. */
  private startAmd(stream: StreamInfo): CallAmd | undefined {
    try {
      return new CallAmd({
        inbound: stream.inbound,
        clock: this.options.clock,
        onDecision: (d) => {
          this.log.info({ result: d.result, reason: d.reason, decidedAtMs: d.decidedAtMs }, 'amd');
          this.emitEvent({
            type: 'amd',
            source: 'audio',
            result: d.result,
            reason: d.reason,
            decidedAtMs: d.decidedAtMs,
            speechMs: d.speechMs,
            greetingMs: d.greetingMs,
            ...(d.beep ? { beepHz: d.beep.frequencyHz } : {}),
          });
        },
      });
    } catch (error) {
      if (!(error instanceof RangeError)) throw error;
      this.log.warn({ err: error.message }, 'no answering-machine detection on this call');
      return undefined;
    }
  }

  private async sayForFlow(
    text: string,
    o: { voiceId?: string; interruptible: boolean },
  ): Promise<FlowSayResult> {
    let handle = this.say(text, {
      interruptible: o.interruptible,
      voiceId: o.voiceId,
    });
    // A prompt cut by a false barge-in goes on as its resumed rest: the flow sees how that ended.
    for (;;) {
      const result = await handle.result;
      const state = this.#state;
      const decided =
        result.status === 'interrupted' && state.status === 'active'
          ? await state.falseBargeIn?.decisionFor(handle.id)
          : undefined;
      if (decided?.status !== 'resumed') return { status: result.status };
      handle = decided.handle;
    }
  }

  /** Speaks on this call (flows and the control API). Throws unless the call is active. */
  say(text: string | AsyncIterable<string> | AudioInput, options: SayOptions = {}): UtteranceHandle {
    const state = this.#state;
    if (state.status !== 'active') throw new CallNotActiveError(this.id, state.status);
    const handle = state.speaker.say(text, options);
    if (typeof text === 'string') state.falseBargeIn?.track(handle.id, text, options);
    // Speech that must be heard now: a barge-in being judged counts.
    if (options.priority === 'now') state.falseBargeIn?.real('priority');
    // A streamed text is not known yet: its `utterance.finished` says what was heard.
    this.emitEvent({
      type: 'utterance.started',
      utteranceId: handle.id,
      text: typeof text === 'string' ? text : 'audio' in text ? text.text : null,
    });
    return handle;
  }

  /** Barge-in from outside (the control API): same as the caller's voice. */
  interrupt(): { interrupted: boolean; playedMs: number; heardText: string } {
    const state = this.#state;
    if (state.status !== 'active') return { interrupted: false, playedMs: 0, heardText: '' };
    const result = state.speaker.interrupt();
    state.falseBargeIn?.real('interrupt');
    return result;
  }

  /**
   * Closes the connection with `refusal`'s code and reason and ends the call: for a call that must not
   * go on here (another instance of the cluster already holds its id).
   */
  drop(refusal: CallRefusal): void {
    if (this.#state.status === 'ended') return;
    this.refuse(refusal, { callId: this.id });
  }

  /**
   * Hangs up: at the gateway first (its REST API, where its port has credentials and
   * `calls.control.hangUpAtGateway` is on), then with the gateway's hang-up message where it has one,
   * then the connection is closed; the call ends either way, its `call.ended` carrying `handoffData`
   * when a relay app gave some. A failed REST hang-up is logged and the stream is closed all the same.
   */
  hangup(handoffData?: string, options: { signal?: AbortSignal } = {}): Promise<void> {
    const state = this.#state;
    // Ended, or leaving for a transfer: hanging up now would end the call where it went.
    if (state.status === 'ended' || (this.#ending !== undefined && this.#hangingUp === undefined))
      return Promise.resolve();
    this.#hangingUp ??= this.hangUpNow(handoffData, options.signal);
    return this.#hangingUp;
  }

  private async hangUpNow(handoffData: string | undefined, signal: AbortSignal | undefined): Promise<void> {
    this.#ending = { reason: 'hung up', handoffData };
    const state = this.#state;
    if (state.status === 'active') {
      // Silent at once: the REST request may take a moment, and nothing said meanwhile would be heard.
      state.speaker.interrupt({ force: true });
      await hangUpAtGateway(this.options.controls, this.gateway, callRefOf(state.stream, this.#placed), {
        log: this.log,
        signal,
      });
      const message = this.options.gateway.encodeHangup(state.stream);
      if (message !== undefined && this.#state.status === 'active')
        this.options.transport.send(message, () => undefined);
    }
    this.end('hung up', handoffData);
    this.options.close(CLOSE.normal, 'call ended');
  }

  /**
   * Sends the caller to `request.to` through the gateway's call control (cold, or warm where the
   * gateway can). Once the gateway has them, not one more frame of ours is sent, and the call leaves
   * voxbridge in the next turn of the event loop (a flow that asked first reports it). Throws a
   * `CallControlError` (nothing changed: the call goes on here) or `CallNotActiveError`.
   */
  async transfer(request: FlowTransfer, signal?: AbortSignal): Promise<TransferResult> {
    const state = this.#state;
    if (state.status !== 'active') throw new CallNotActiveError(this.id, state.status);
    // Hanging up, or already transferred: there is no caller left to send anywhere.
    if (this.#ending !== undefined) throw new CallNotActiveError(this.id, 'ended');
    let result: TransferResult;
    try {
      result = await transferAtGateway(
        this.options.controls,
        this.gateway,
        callRefOf(state.stream, this.#placed),
        request,
        signal,
      );
    } catch (error) {
      if (error instanceof CallControlError)
        this.emitEvent({
          type: 'transfer',
          status: 'failed',
          mode: request.mode,
          to: request.to,
          code: error.code,
          error: error.message,
        });
      throw error;
    }
    this.log.info({ mode: request.mode, to: request.to }, 'transferred by the gateway');
    this.emitEvent({
      type: 'transfer',
      status: 'done',
      mode: request.mode,
      to: request.to,
      ...(result.targetCallId === undefined ? {} : { targetCallId: result.targetCallId }),
    });
    const now = this.#state;
    if (now.status === 'active') now.speaker.interrupt({ force: true });
    this.#ending = { reason: 'transferred' };
    setImmediate(() => {
      this.end('transferred');
      this.options.close(CLOSE.normal, 'call transferred');
    });
    return result;
  }

  /** A flow's transfer: what went wrong is an outcome the flow branches on, never a throw (but the call's end). */
  private async transferForFlow(request: FlowTransfer, signal: AbortSignal): Promise<FlowTransferOutcome> {
    try {
      const result = await this.transfer(request, signal);
      return { ok: true, targetCallId: result.targetCallId };
    } catch (error) {
      if (signal.aborted) throw error;
      if (error instanceof CallControlError) return { ok: false, code: error.code, message: error.message };
      if (error instanceof CallNotActiveError)
        return { ok: false, code: 'not_active', message: error.message };
      // A document host that could not publish, and the like: still a transfer that did not happen.
      this.log.error({ err: error }, 'transfer failed');
      return { ok: false, code: 'error', message: (error as Error).message };
    }
  }

  /** The connection closed (or the gateway said stop): stop speaking at once, release everything. */
  end(reason: string, handoffData?: string): void {
    const state = this.#state;
    if (state.status === 'ended') return;
    // Ended by voxbridge (a hang-up, a transfer): the stream closing on the way does not change why.
    const why = this.#ending ?? { reason, handoffData };
    this.setState({
      status: 'ended',
      reason: why.reason,
      flow: state.status === 'active' ? state.flow : undefined,
    });
    this.emitEvent({
      type: 'call.ended',
      reason: why.reason,
      ...(why.handoffData === undefined ? {} : { handoffData: why.handoffData }),
    });
    this.emit('ended', why.reason);
  }

  private onDigit(state: ActiveState, digit: string): void {
    this.emitEvent({ type: 'dtmf', digit });
    if (this.#relay) {
      // The relay app has the keys now; whether one cuts its speech is its talk cycle's to say.
      this.#relay.dtmf(digit);
      return;
    }
    // A key press answers the flow's prompt: the prompt stops, as it would for the caller's voice.
    if (state.flow) state.speaker.interrupt();
    // A key is the caller acting, never a cough: a barge-in being judged counts.
    state.falseBargeIn?.real('dtmf');
    state.flow?.pushDigit(digit);
  }

  /** Runs a relay on this call (a flow's relay or TwiML node) until the app ends it or its socket closes. */
  private async runRelay(spec: FlowRelaySpec, signal: AbortSignal): Promise<FlowRelayOutcome> {
    const { name } = spec;
    const state = this.#state;
    const settings = spec.settings ?? this.options.relays?.settings[name];
    if (state.status !== 'active' || !settings) return { reason: 'closed', detail: `no relay named ${name}` };
    const { stream, speaker } = state;
    const p = stream.parameters;
    const stt = this.options.relays?.stt;
    const relay = new CallRelay({
      name,
      settings,
      stt,
      inbound: stream.inbound,
      speaker,
      clock: this.options.clock,
      log: this.log,
      host: {
        setup: {
          callSid: this.id,
          from: p['from'] ?? p['From'] ?? '',
          to: p['to'] ?? p['To'] ?? '',
          direction: p['direction'] ?? 'inbound',
          callType: 'PSTN',
          customParameters: { ...(spec.customParameters ?? p) },
          ...(stream.accountSid ? { accountSid: stream.accountSid } : {}),
          voxbridge: { gateway: this.gateway, prompts: stt !== undefined && state.bargeIn !== undefined },
        },
        say: (text, o) =>
          this.say(text, {
            interruptible: o.interruptible,
            voiceId: o.voiceId,
            ...(o.first ? { priority: 'now' as const } : {}),
          }),
        interrupt: () => speaker.interrupt({ force: true, keepQueue: true }),
        turnGap: (gap) =>
          this.emitEvent({ type: 'relay.turn', relay: name, sessionId: relay.sessionId, ...gap }),
        // No gateway has a message for sending keys: they go in-band, as tones the far end hears.
        sendDigits: async (digits) => {
          const audio = int16ToBytes(dtmfTones(digits, SPEAKER_SAMPLE_RATE));
          const played = await this.say({ audio, text: '' }, { interruptible: false }).result;
          if (played.status === 'failed') throw new Error('the tones could not be played');
        },
      },
    });
    this.#relay = relay;
    state.falseBargeIn?.real('relay');
    this.emitEvent({ type: 'relay', relay: name, sessionId: relay.sessionId, status: 'started' });
    const startedAt = performance.now();
    try {
      const outcome = await relay.run(signal);
      this.emitEvent({
        type: 'relay',
        relay: name,
        sessionId: relay.sessionId,
        status: 'ended',
        reason: outcome.reason,
        ...(outcome.reason === 'closed' ? { detail: outcome.detail } : { handoffData: outcome.handoffData }),
      });
      return { ...outcome, sessionId: relay.sessionId, durationMs: performance.now() - startedAt };
    } finally {
      this.#relay = undefined;
    }
  }

  /**
   * The gateway's own answering-machine verdict, posted to voxbridge (`machine_detection` without a
   * `callback_url`): an `amd` event of `source: gateway`, beside the audio one; false once the call ended.
   */
  reportGatewayAmd(verdict: GatewayAmdVerdict): boolean {
    if (this.#state.status === 'ended') return false;
    this.log.info({ result: verdict.result, answeredBy: verdict.answeredBy }, 'gateway amd');
    this.emitEvent({ type: 'amd', source: 'gateway', ...gatewayAmdFields(verdict) });
    return true;
  }

  private emitEvent(body: EventBody): void {
    const event = this.events.append(body, this.id);
    this.emit('event', event);
    const webhook = this.#state.status === 'connecting' ? undefined : this.#state.flow?.webhook;
    if (webhook !== undefined) {
      postEvent(webhook, event, { ...(this.options.post ? { post: this.options.post } : {}), log: this.log });
    }
  }
}

export class CallNotActiveError extends Error {
  override readonly name = 'CallNotActiveError';
  constructor(
    readonly callId: string,
    readonly status: CallState['status'],
  ) {
    super(`call ${callId} is ${status}`);
  }
}
