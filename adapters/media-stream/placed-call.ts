/**
 * One outbound call voxbridge placed (`POST /calls`), from the request until its media stream comes back
 * and a `Call` takes over (or it fails). It has voxbridge's id from the start and keeps the call's
 * events from the first (`call.ringing`), so the app follows it by one id and one event stream; once
 * answered, the `Call` continues its id and its events, and this forwards them to whoever followed the
 * placement.
 */
import { EventEmitter } from 'node:events';
import type { GatewayName } from '../../src/protocols/types.js';
import type { CallEvent, EventBody } from './call-events.js';
import type { Call } from './call.js';
import type { PlacedCallLink } from './call-control-link.js';
import { EventLog } from './event-log.js';

/**
 * Placing: the gateway's REST request is on its way. Ringing: the gateway took it; the stream is awaited.
 * Answered: the stream came, and `call` is the call. Failed: the gateway refused, no stream came in
 * time, or the app cancelled it (`code`).
 */
export type PlacementState =
  | { readonly status: 'placing' }
  | { readonly status: 'ringing' }
  | { readonly status: 'answered'; readonly call: Call }
  | { readonly status: 'failed'; readonly code: string; readonly reason: string };

export interface PlacedCallEvents {
  event: [CallEvent];
}

export interface PlacementFields {
  readonly id: string;
  readonly gateway: GatewayName;
  readonly to: string;
  readonly from: string;
  /** The flow it runs once answered (the default flow when none was named). */
  readonly flow: string | undefined;
  /** The app's own parameters, as it sent them. */
  readonly parameters: Readonly<Record<string, string>>;
  /** On the outbound calls' clock: when it was asked for. */
  readonly placedAtMs: number;
}

export class PlacedCall extends EventEmitter<PlacedCallEvents> {
  readonly id: string;
  readonly gateway: GatewayName;
  readonly to: string;
  readonly from: string;
  readonly flow: string | undefined;
  readonly parameters: Readonly<Record<string, string>>;
  readonly placedAtMs: number;
  readonly createdAt = new Date();
  /** Its events from the first; the `Call` appends to the same log once answered. */
  readonly events = new EventLog();
  /** The gateway's id of the call, from its REST answer (Plivo answers with a request id only). */
  providerCallId: string | undefined;
  /** Its callback for the gateway's machine-detection verdict, while open (adapters/media-stream/amd-callbacks.ts). */
  amdCallbackId: string | undefined;
  /** Stops the REST request (a cancel, a failure); an answer before the REST answer leaves it be. */
  readonly request = new AbortController();
  /** Stops the wait for the stream (it came, or the placement failed). */
  readonly streamWait = new AbortController();
  #state: PlacementState = { status: 'placing' };

  constructor(fields: PlacementFields) {
    super();
    // Every event-stream subscriber listens (bounded by server.maxConnections).
    this.setMaxListeners(0);
    this.id = fields.id;
    this.gateway = fields.gateway;
    this.to = fields.to;
    this.from = fields.from;
    this.flow = fields.flow;
    this.parameters = fields.parameters;
    this.placedAtMs = fields.placedAtMs;
  }

  get state(): PlacementState {
    return this.#state;
  }

  /** Still waiting for its stream: what `calls.control.maxPlacing` counts. */
  get waiting(): boolean {
    return this.#state.status === 'placing' || this.#state.status === 'ringing';
  }

  /** Nothing more will happen: it failed, or the call it became has ended. */
  get over(): boolean {
    const state = this.#state;
    return state.status === 'failed' || (state.status === 'answered' && state.call.state.status === 'ended');
  }

  eventsAfter(seq: number): CallEvent[] {
    return this.events.after(seq);
  }

  /** Appends and emits one of its own events (before the `Call` takes over). */
  report(body: EventBody): CallEvent {
    const event = this.events.append(body, this.id);
    this.emit('event', event);
    return event;
  }

  /** The gateway took the request: the callee's phone rings. */
  ringing(): void {
    if (this.#state.status === 'placing') this.#state = { status: 'ringing' };
  }

  /** Its stream came: `call` continues it; its events reach this placement's followers too. */
  answered(call: Call): PlacedCallLink {
    this.#state = { status: 'answered', call };
    const forward = (event: CallEvent): void => {
      this.emit('event', event);
      if (event.type === 'call.ended') call.off('event', forward);
    };
    call.on('event', forward);
    this.streamWait.abort();
    return {
      id: this.id,
      events: this.events,
      to: this.to,
      from: this.from,
      providerCallId: () => this.providerCallId,
    };
  }

  /** It will not be answered here: refused, no stream in time, or cancelled. */
  failed(code: string, reason: string): void {
    this.#state = { status: 'failed', code, reason };
    this.request.abort();
    this.streamWait.abort();
  }
}
