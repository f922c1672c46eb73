/**
 * The control API, for apps that drive calls themselves (an LLM agent, a game master): place calls,
 * list them, speak, interrupt, transfer, hang up, and follow a call's events as server-sent events.
 * Mounted at `/calls`.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { WireFormat } from '../../src/audio/framer.js';
import { CallControlError, type CallControlErrorCode } from '../../src/call-control/index.js';
import {
  bearerAuthorized,
  pathSegments,
  readJsonBody,
  sendBadPath,
  sendJson,
  sendMethodNotAllowed,
  sendUnauthorized,
  type RouteHandler,
} from '../../src/http/http.js';
import { PLACE_MAX_BODY_BYTES, placeRequest } from '../../src/control/place-request.js';
import { readSay, sendInvalid } from '../../src/control/say-request.js';
import { TRANSFER_MAX_BODY_BYTES, transferRequest } from '../../src/control/transfer-request.js';
import { requestedTransfer } from '../../src/flows/runner.js';
import { SpeakerQueueFullError } from '../../src/speaker/speaker.js';
import { EventStream } from '../../src/http/event-stream.js';
import { interruptResultJson, utteranceResultJson } from '../../src/control/result.js';
import { toWire, type CallEvent } from './call-events.js';
import { CallNotActiveError, type Call } from './call.js';
import { PlaceRefusal } from './outbound-calls.js';
import type { PlacedCall } from './placed-call.js';
import type { MediaStreamServer } from './server.js';

function formatJson(format: WireFormat | undefined): Record<string, unknown> | null {
  return format
    ? { encoding: format.encoding, sample_rate: format.sampleRate, channels: format.channels }
    : null;
}

/** A call as `GET /calls/{id}` answers it and the event stream's `call.state` snapshot carries it. */
export function describeCall(call: Call): Record<string, unknown> {
  const stream = call.stream;
  return {
    id: call.id,
    gateway: call.gateway,
    direction: call.direction,
    status: call.state.status,
    started_at: call.createdAt.toISOString(),
    flow: call.flow ?? null,
    stream_id: stream?.streamId ?? null,
    inbound: formatJson(stream?.inbound),
    outbound: formatJson(stream?.outbound),
    parameters: stream?.parameters ?? {},
    speaking: call.speaker?.speakingId ?? null,
    queued: call.speaker?.queued ?? 0,
  };
}

/**
 * A call being placed (or failed) as the control API describes it: the fields of a call, with what is
 * not known yet as null, and `error` once it failed. Answered, it is described as the call it became.
 */
export function describePlacement(placed: PlacedCall): Record<string, unknown> {
  const state = placed.state;
  if (state.status === 'answered') return describeCall(state.call);
  return {
    id: placed.id,
    gateway: placed.gateway,
    direction: 'outbound',
    status: state.status,
    started_at: placed.createdAt.toISOString(),
    flow: placed.flow ?? null,
    stream_id: null,
    inbound: null,
    outbound: null,
    parameters: { ...placed.parameters },
    speaking: null,
    queued: 0,
    to: placed.to,
    from: placed.from,
    provider_call_id: placed.providerCallId ?? null,
    ...(state.status === 'failed' ? { error: { code: state.code, reason: state.reason } } : {}),
  };
}

/** Every call of this instance: those connected, then those being placed. */
export function listCalls(calls: MediaStreamServer): Record<string, unknown>[] {
  return [...calls.list().map(describeCall), ...(calls.outbound?.list() ?? []).map(describePlacement)];
}

/** Whether this instance holds `id`: a call connected, or one being placed (or failed a moment ago). */
export function holdsCall(calls: MediaStreamServer, id: string): boolean {
  return calls.get(id) !== undefined || calls.outbound?.get(id) !== undefined;
}

/** What the control API answers for each call-control error code: the app's to fix, or the gateway's. */
const CONTROL_STATUS: Readonly<Record<CallControlErrorCode, number>> = {
  missing_credentials: 409,
  invalid_credentials: 409,
  not_configured: 409,
  unsupported: 409,
  invalid_request: 400,
  call_not_found: 404,
  rejected: 422,
  rate_limited: 429,
  timeout: 504,
  unauthorized: 502,
  provider_error: 502,
  answer_too_large: 502,
  invalid_answer: 502,
  connection_failed: 502,
};

function sendControlError(res: ServerResponse, error: CallControlError): void {
  sendJson(res, CONTROL_STATUS[error.code], {
    error: error.message,
    code: error.code,
    ...(error.missing.length > 0 ? { missing: error.missing } : {}),
    ...(error.providerCode === undefined ? {} : { provider_code: error.providerCode }),
    ...(error.reason === undefined ? {} : { reason: error.reason }),
  });
}

export function controlApi(calls: MediaStreamServer, controlToken: string | undefined): RouteHandler {
  return async (req, res, path, url) => {
    if (!bearerAuthorized(req, controlToken)) {
      sendUnauthorized(res);
      return true;
    }
    const method = req.method ?? 'GET';
    const parts = pathSegments(path);
    if (!parts) return sendBadPath(res);
    if (parts.length === 0) {
      if (method === 'POST') await place(calls, req, res);
      else if (method === 'GET') sendJson(res, 200, { calls: listCalls(calls) });
      else sendMethodNotAllowed(res, 'GET, POST');
      return true;
    }
    const call = calls.get(parts[0]!);
    const placed = call ? undefined : calls.outbound?.get(parts[0]!);
    if (placed) return placement(calls, placed, parts.slice(1).join('/'), req, res, url);
    if (!call) {
      sendJson(res, 404, { error: `no call ${parts[0]!}` });
      return true;
    }
    const action = parts.slice(1).join('/');
    switch (action) {
      case '':
        if (method === 'GET') sendJson(res, 200, describeCall(call));
        else if (method === 'DELETE') {
          await call.hangup();
          res.writeHead(204).end();
        } else sendMethodNotAllowed(res, 'GET, DELETE');
        return true;
      case 'transfer':
        if (method !== 'POST') return sendMethodNotAllowed(res, 'POST');
        await transfer(call, req, res);
        return true;
      case 'say':
        // PUT: a text streamed with `curl -T -`.
        if (method !== 'POST' && method !== 'PUT') return sendMethodNotAllowed(res, 'POST, PUT');
        await say(call, req, res, url);
        return true;
      case 'interrupt':
        if (method !== 'POST') return sendMethodNotAllowed(res, 'POST');
        sendJson(res, 200, interruptResultJson(call.interrupt()));
        return true;
      case 'events':
        if (method !== 'GET') return sendMethodNotAllowed(res, 'GET');
        events(call, req, res, url);
        return true;
      default:
        sendJson(res, 404, { error: `no route for ${method} /calls/${parts.join('/')}` });
        return true;
    }
  };
}

/** `POST /calls`: an outbound call, answered 201 with its id at once; its events say how it goes. */
async function place(calls: MediaStreamServer, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const read = await readJsonBody(req, res, PLACE_MAX_BODY_BYTES);
  if (!read) return;
  const parsed = placeRequest.safeParse(read.body);
  if (!parsed.success) {
    sendInvalid(res, parsed.error);
    return;
  }
  if (!calls.outbound) {
    sendJson(res, 409, { error: 'outbound calls are not available on this server', code: 'not_configured' });
    return;
  }
  try {
    const placed = calls.outbound.place(parsed.data);
    sendJson(res, 201, describePlacement(placed), { location: `/calls/${encodeURIComponent(placed.id)}` });
  } catch (error) {
    if (!(error instanceof PlaceRefusal)) throw error;
    sendJson(
      res,
      error.status,
      {
        error: error.message,
        code: error.code,
        ...(error.missing.length > 0 ? { missing: error.missing } : {}),
      },
      error.status === 429 || error.status === 503 ? { 'retry-after': '1' } : {},
    );
  }
}

/** `/calls/{id}…` of a call still being placed (or failed): described, followed, or cancelled. */
async function placement(
  calls: MediaStreamServer,
  placed: PlacedCall,
  action: string,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
): Promise<true> {
  const method = req.method ?? 'GET';
  switch (action) {
    case '':
      if (method === 'GET') sendJson(res, 200, describePlacement(placed));
      else if (method === 'DELETE') {
        calls.outbound?.cancel(placed.id);
        res.writeHead(204).end();
      } else sendMethodNotAllowed(res, 'GET, DELETE');
      return true;
    case 'events':
      if (method !== 'GET') return sendMethodNotAllowed(res, 'GET');
      follow(
        {
          on: (l) => placed.on('event', l),
          off: (l) => placed.off('event', l),
          eventsAfter: (seq) => placed.eventsAfter(seq),
          snapshot: () => describePlacement(placed),
          over: () => placed.over,
        },
        req,
        res,
        url,
      );
      return true;
    default:
      req.resume();
      sendJson(res, 409, {
        error: `call ${placed.id} is ${placed.state.status}: not answered yet`,
        code: 'not_answered',
      });
      return true;
  }
}

/** `POST /calls/{id}/transfer`: answered once the gateway has the caller (or refused). */
async function transfer(call: Call, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const read = await readJsonBody(req, res, TRANSFER_MAX_BODY_BYTES);
  if (!read) return;
  const parsed = transferRequest.safeParse(read.body);
  if (!parsed.success) {
    sendInvalid(res, parsed.error);
    return;
  }
  try {
    const result = await call.transfer(requestedTransfer(parsed.data));
    sendJson(res, 200, {
      id: call.id,
      mode: parsed.data.mode,
      to: parsed.data.to,
      ...(result.targetCallId === undefined ? {} : { target_call_id: result.targetCallId }),
    });
  } catch (error) {
    if (error instanceof CallControlError) sendControlError(res, error);
    else if (error instanceof CallNotActiveError)
      sendJson(res, 409, { error: error.message, code: 'not_active' });
    else throw error;
  }
}

async function say(call: Call, req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
  const input = await readSay(req, res, url);
  if (!input) return;
  const { text, voice_id, interruptible, now, wait } = input;
  let handle;
  try {
    handle = call.say(text, {
      voiceId: voice_id,
      interruptible,
      ...(now ? { priority: 'now' as const } : {}),
    });
  } catch (error) {
    if (error instanceof CallNotActiveError) {
      sendJson(res, 409, { error: error.message });
      return;
    }
    if (error instanceof SpeakerQueueFullError) {
      sendJson(res, 429, { error: error.message, code: error.code });
      return;
    }
    throw error;
  }
  if (wait === false) {
    sendJson(res, 202, { id: handle.id });
    return;
  }
  // The client hanging up does not cancel the utterance: the caller still hears it.
  const result = await handle.result;
  sendJson(res, 200, { id: handle.id, ...utteranceResultJson(result) });
}

/**
 * Where a subscriber resumes: `Last-Event-ID` (an EventSource reconnecting) or `?after=<seq>` (`0`: the
 * whole call so far). Undefined: only what happens from now on.
 */
function resumeAfter(req: IncomingMessage, url: URL): number | undefined {
  const header = req.headers['last-event-id'];
  const raw = (Array.isArray(header) ? header[0] : header) ?? url.searchParams.get('after') ?? undefined;
  if (raw === undefined || !/^\d{1,15}$/.test(raw.trim())) return undefined;
  return Number(raw.trim());
}

function events(call: Call, req: IncomingMessage, res: ServerResponse, url: URL): void {
  follow(
    {
      on: (l) => call.on('event', l),
      off: (l) => call.off('event', l),
      eventsAfter: (seq) => call.eventsAfter(seq),
      snapshot: () => describeCall(call),
      over: () => call.state.status === 'ended',
    },
    req,
    res,
    url,
  );
}

/** What an event stream follows: a call, or a call being placed. */
interface Followed {
  on(listener: (event: CallEvent) => void): void;
  off(listener: (event: CallEvent) => void): void;
  eventsAfter(seq: number): CallEvent[];
  snapshot(): Record<string, unknown>;
  /** Nothing more will come. */
  over(): boolean;
}

/** The last event of a call: it ended, or (being placed) it failed. */
function isLast(event: CallEvent): boolean {
  return event.type === 'call.ended' || event.type === 'call.failed';
}

function follow(followed: Followed, req: IncomingMessage, res: ServerResponse, url: URL): void {
  const stream = new EventStream(req, res);
  // A snapshot first, so a late subscriber knows where the call stands; then what it missed, if asked.
  stream.send('call.state', followed.snapshot());
  const after = resumeAfter(req, url);
  const missed = after === undefined ? [] : followed.eventsAfter(after);
  for (const event of missed) if (!stream.send(event.type, toWire(event), event.seq)) return;
  if (followed.over()) {
    stream.close();
    return;
  }
  const onEvent = (event: CallEvent): void => {
    stream.send(event.type, toWire(event), event.seq);
    if (isLast(event)) stream.close();
  };
  followed.on(onEvent);
  stream.whenClosed(() => followed.off(onEvent));
}
