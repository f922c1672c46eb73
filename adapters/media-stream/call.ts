/**
 * One phone call on one gateway connection: parses what the gateway sends, speaks through a `Speaker`
 * into a `PhoneSink`, listens for the caller's voice (barge-in) and keys (DTMF), runs the call's IVR
 * flow, and reports everything as call events (for the control API's event stream and webhooks).
 */
import { EventEmitter } from 'node:events';
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { postJson, runFlow, type FlowCall, type FlowSayResult } from '../../src/flows/runner.js';
import type { Flow } from '../../src/flows/schema.js';
import type { Clock } from '../../src/speaker/clock.js';
import type { PhraseCache } from '../../src/speaker/phrase-cache.js';
import type { SpeechSource } from '../../src/speaker/segment-audio.js';
import { Speaker, type SayOptions, type UtteranceHandle } from '../../src/speaker/speaker.js';
import type { WireFormat } from '../../src/speaker/sink.js';
import { publicResult, toWire, type CallEvent, type EventBody } from './call-events.js';
import { decodeCallerAudio, type OnsetDetector } from './caller-audio.js';
import { CLOSE } from './close-codes.js';
import { DigitQueue } from './digit-queue.js';
import { PhoneSink, type MediaTransport } from './phone-sink.js';
import { checkIds, limitParameters } from '../../src/protocols/common.js';
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
  /** The flow run when the call's parameters name none; undefined: none. */
  defaultFlow: string | undefined;
  flows: Readonly<Record<string, Flow>>;
  /** Per gateway: the outbound codec where its start message does not say it. */
  protocolOptions: Readonly<Partial<Record<GatewayName, ProtocolOptions>>>;
}

export interface CallOptions {
  gateway: GatewayProtocol;
  transport: MediaTransport;
  /** Ends the connection (after a hangup where the gateway has none, or bad input). */
  close: (code: number, reason: string) => void;
  source: SpeechSource;
  cache?: PhraseCache;
  clock: Clock;
  logger: Logger;
  settings: CallSettings;
  /** Makes the call's VAD once the inbound format is known; none: no barge-in on voice. */
  detector?: (inbound: WireFormat) => OnsetDetector;
  /** Webhook sender for flows (tests inject their own). */
  post?: (url: string, body: unknown, signal: AbortSignal) => Promise<number>;
  /** The upgrade URL's query parameters (the `token` among them excluded). */
  urlParameters?: Readonly<Record<string, string>>;
  /**
   * Asked once the start message names the call, before anything is set up for it: a refusal (no room,
   * or another connection already has the call's id) closes the connection with its code and reason.
   */
  admit?: (stream: StreamInfo) => CallRefusal | undefined;
}

/** Why a call may not start, as the close frame says it. */
export interface CallRefusal {
  readonly code: number;
  readonly reason: string;
}

type CallState =
  | { status: 'connecting' }
  | {
      status: 'active';
      stream: StreamInfo;
      sink: PhoneSink;
      speaker: Speaker;
      detector: OnsetDetector | undefined;
      flow: AbortController | undefined;
    }
  | { status: 'ended'; reason: string };

const WEBHOOK_TIMEOUT_MS = 3000;
/** Events a call keeps for late subscribers of its event stream (`eventsAfter`). */
const EVENT_HISTORY = 1000;

/**
 * Caller audio waiting for the VAD before newer audio is skipped: a memory bound only (in audio, not in
 * messages, whose size the gateway picks), since the detector falls back to its energy gate when
 * inference lags.
 */
const MAX_VAD_BACKLOG_MS = 10_000;

export class Call extends EventEmitter<{ event: [CallEvent]; ended: [string] }> {
  /** Ours until the gateway's start message names the call; then the gateway's call id. */
  id: string = randomUUID();
  /** The gateway's stream id from the start message on (kept after the call ends, for its last events). */
  streamId: string | undefined;
  readonly gateway: GatewayName;
  readonly createdAt = new Date();
  state: CallState = { status: 'connecting' };
  /** Inbound messages dropped (bad input, media before start), for diagnostics. */
  dropped = 0;
  private seq = 0;
  /** The latest events, oldest first, at most EVENT_HISTORY. */
  private readonly history: CallEvent[] = [];
  private readonly options: CallOptions;
  /** The gateway's logger; once the call starts, with its call and stream ids on every line. */
  private log: Logger;
  private readonly digits: DigitQueue;
  private inboundSamples = 0;
  /** Samples handed to the VAD and not yet through it. */
  private vadBacklog = 0;
  private vadChain: Promise<void> = Promise.resolve();
  private flowName: string | undefined;

  constructor(options: CallOptions) {
    super();
    // Every event-stream subscriber listens (bounded by server.maxConnections), plus the app's own.
    this.setMaxListeners(0);
    this.options = options;
    this.gateway = options.gateway.name;
    this.log = options.logger;
    this.digits = new DigitQueue(options.clock);
  }

  get stream(): StreamInfo | undefined {
    return this.state.status === 'active' ? this.state.stream : undefined;
  }

  get speaker(): Speaker | undefined {
    return this.state.status === 'active' ? this.state.speaker : undefined;
  }

  /**
   * The events after `seq`, oldest first, for a subscriber that joins late or reconnects: a call keeps
   * its last 1000.
   */
  eventsAfter(seq: number): CallEvent[] {
    return this.history.filter((e) => e.seq > seq);
  }

  /** One WebSocket message from the gateway. Bad input is logged and dropped; it never throws. */
  onMessage(data: Uint8Array, isBinary: boolean): void {
    if (this.state.status === 'ended') return;
    let event: InboundEvent;
    try {
      event = this.options.gateway.parse(data, isBinary, this.options.settings.protocolOptions[this.gateway]);
      if (event.type === 'start') checkIds(this.gateway, event.stream);
    } catch (error) {
      this.dropped++;
      if (
        error instanceof ProtocolError &&
        error.code === 'invalid_start' &&
        this.state.status === 'connecting'
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
    const state = this.state;
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
        this.onAudio(state, event.payload, event.timestampMs);
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
    const refusal = this.options.admit?.(started);
    if (refusal) {
      this.refuse(refusal, { callId: started.callId, streamId: started.streamId });
      return;
    }
    // Query parameters of the stream URL count as call parameters (Exotel appends custom parameters
    // there); what the start message says wins. Both are bounded (`PARAMETER_LIMITS`).
    const limited = limitParameters({ ...this.options.urlParameters, ...started.parameters });
    const stream: StreamInfo = { ...started, parameters: limited.parameters };
    const { settings, clock } = this.options;
    this.id = stream.callId;
    this.streamId = stream.streamId;
    this.log = this.options.logger.child({ callId: stream.callId, streamId: stream.streamId });
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
    });
    sink.on('playout', (p) => this.log.debug(p, 'playout'));
    const speaker = new Speaker({
      source: this.options.source,
      sink,
      voiceId: settings.voiceId,
      clock,
      ...(this.options.cache ? { cache: this.options.cache } : {}),
    });
    speaker.on('utteranceEnd', ({ id, result }) =>
      this.emitEvent({ type: 'utterance.finished', utteranceId: id, result: publicResult(result) }),
    );
    const detector = settings.bargeIn ? this.options.detector?.(stream.inbound) : undefined;
    const requested = stream.parameters['flow'];
    let flowName = requested ?? settings.defaultFlow;
    if (requested !== undefined && !(requested in settings.flows)) {
      this.log.warn({ flow: requested }, 'the call asks for an unknown flow; running the default');
      flowName = settings.defaultFlow;
    }
    this.flowName = flowName;
    this.state = { status: 'active', stream, sink, speaker, detector, flow: undefined };
    this.emitEvent({
      type: 'call.started',
      gateway: this.gateway,
      streamId: stream.streamId,
      flow: flowName ?? null,
      parameters: { ...stream.parameters },
    });
    if (flowName !== undefined) this.startFlow(flowName);
  }

  private startFlow(name: string): void {
    const state = this.state;
    const flow = this.options.settings.flows[name];
    if (state.status !== 'active' || !flow) return;
    const controller = new AbortController();
    state.flow = controller;
    const flowCall: FlowCall = {
      id: this.id,
      say: (text, o) => this.sayForFlow(text, o),
      nextDigit: (timeoutMs, signal) => this.digits.next(timeoutMs, signal),
      hangup: () => this.hangup(),
    };
    runFlow(flow, flowCall, {
      name,
      signal: controller.signal,
      onEvent: (event) => this.emitEvent({ type: 'flow', event }),
      ...(this.options.post ? { post: this.options.post } : {}),
    }).catch((error: unknown) => this.log.error({ err: error, flow: name }, 'flow failed'));
  }

  private async sayForFlow(
    text: string,
    o: { voiceId?: string; interruptible: boolean },
  ): Promise<FlowSayResult> {
    const handle = this.say(text, {
      interruptible: o.interruptible,
      ...(o.voiceId ? { voiceId: o.voiceId } : {}),
    });
    const result = await handle.result;
    return { status: result.status };
  }

  /** Speaks on this call (flows and the control API). Throws unless the call is active. */
  say(text: string, options: SayOptions = {}): UtteranceHandle {
    const state = this.state;
    if (state.status !== 'active') throw new CallNotActiveError(this.id, state.status);
    const handle = state.speaker.say(text, options);
    this.emitEvent({ type: 'utterance.started', utteranceId: handle.id, text });
    return handle;
  }

  /** Barge-in from outside (the control API): same as the caller's voice. */
  interrupt(): { interrupted: boolean; playedMs: number; heardText: string } {
    const state = this.state;
    if (state.status !== 'active') return { interrupted: false, playedMs: 0, heardText: '' };
    return state.speaker.interrupt();
  }

  /** Hangs up where the gateway can, else closes the connection; the call ends either way. */
  async hangup(): Promise<void> {
    const state = this.state;
    if (state.status === 'ended') return;
    if (state.status === 'active') {
      const message = this.options.gateway.encodeHangup(state.stream);
      if (message !== undefined) this.options.transport.send(message, () => undefined);
    }
    this.end('hung up');
    this.options.close(CLOSE.normal, 'call ended');
  }

  /** The connection closed (or the gateway said stop): stop speaking at once, release everything. */
  end(reason: string): void {
    const state = this.state;
    if (state.status === 'ended') return;
    this.state = { status: 'ended', reason };
    if (state.status === 'active') {
      state.flow?.abort();
      state.sink.close();
      state.detector?.reset();
      void state.speaker.close();
    }
    this.emitEvent({ type: 'call.ended', reason });
    this.emit('ended', reason);
  }

  private onAudio(
    state: Extract<CallState, { status: 'active' }>,
    payload: Uint8Array,
    timestampMs?: number,
  ): void {
    const { detector, stream } = state;
    if (!detector || payload.length === 0) return;
    const samples = decodeCallerAudio(payload, stream.inbound);
    const rate = stream.inbound.sampleRate;
    const atMs = timestampMs ?? (this.inboundSamples / rate) * 1000;
    this.inboundSamples += samples.length;
    if (this.vadBacklog + samples.length > (MAX_VAD_BACKLOG_MS * rate) / 1000) {
      this.dropped++;
      return;
    }
    this.vadBacklog += samples.length;
    const botAudible = state.sink.playedMs() < state.sink.writtenMs();
    this.vadChain = this.vadChain
      .then(async () => {
        if (this.state !== state) return;
        const onset = await detector.push(samples, { timestampMs: atMs, botAudible });
        if (onset && this.state === state) this.bargeIn(state, onset.onsetMs, atMs);
      })
      .catch((error: unknown) => this.log.error({ err: error }, 'voice activity detection failed'))
      .finally(() => (this.vadBacklog -= samples.length));
  }

  private bargeIn(
    state: Extract<CallState, { status: 'active' }>,
    onsetMs: number,
    detectedMs: number,
  ): void {
    const utteranceId = state.speaker.speakingId;
    const r = state.speaker.interrupt();
    if (!r.interrupted) return;
    this.emitEvent({
      type: 'barge-in',
      utteranceId,
      onsetMs,
      detectedMs,
      playedMs: r.playedMs,
      heardText: r.heardText,
    });
  }

  private onDigit(state: Extract<CallState, { status: 'active' }>, digit: string): void {
    this.emitEvent({ type: 'dtmf', digit });
    // A key press answers the flow's prompt: the prompt stops, as it would for the caller's voice.
    if (state.flow) state.speaker.interrupt();
    this.digits.push(digit);
  }

  private emitEvent(body: EventBody): void {
    const event: CallEvent = { ...body, seq: ++this.seq, at: new Date().toISOString(), callId: this.id };
    this.history.push(event);
    if (this.history.length > EVENT_HISTORY) this.history.shift();
    this.emit('event', event);
    const webhook =
      this.flowName === undefined ? undefined : this.options.settings.flows[this.flowName]?.webhook;
    if (webhook !== undefined) this.postEvent(webhook, event);
  }

  /** A flow's webhook gets every call event, best effort: a slow or failing one never holds the call. */
  private postEvent(url: string, event: CallEvent): void {
    const post = this.options.post ?? postJson;
    post(url, toWire(event), AbortSignal.timeout(WEBHOOK_TIMEOUT_MS)).then(
      (status) => {
        if (status >= 300)
          this.log.warn({ url, status, event: event.type }, 'webhook answered with an error');
      },
      (error: unknown) =>
        this.log.warn({ url, err: (error as Error).message, event: event.type }, 'webhook failed'),
    );
  }

  /** Name of the flow this call runs, if any. */
  get flow(): string | undefined {
    return this.flowName;
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
