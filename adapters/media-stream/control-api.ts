/**
 * The control API, for apps that drive calls themselves (an LLM agent, a game master): list calls,
 * speak, interrupt, hang up, and follow a call's events as server-sent events. Mounted at `/calls`.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { WireFormat } from '../../src/audio/framer.js';
import {
  bearerAuthorized,
  pathSegments,
  sendBadPath,
  sendJson,
  sendMethodNotAllowed,
  sendUnauthorized,
  type RouteHandler,
} from '../../src/http/http.js';
import { readSay } from '../../src/control/say-request.js';
import { SpeakerQueueFullError } from '../../src/speaker/speaker.js';
import { EventStream } from '../../src/http/event-stream.js';
import { interruptResultJson, utteranceResultJson } from '../../src/control/result.js';
import { toWire, type CallEvent } from './call-events.js';
import { CallNotActiveError, type Call } from './call.js';
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
      if (method !== 'GET') return sendMethodNotAllowed(res, 'GET');
      sendJson(res, 200, { calls: calls.list().map(describeCall) });
      return true;
    }
    const call = calls.get(parts[0]!);
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
  const stream = new EventStream(req, res);
  // A snapshot first, so a late subscriber knows where the call stands; then what it missed, if asked.
  stream.send('call.state', describeCall(call));
  const after = resumeAfter(req, url);
  const missed = after === undefined ? [] : call.eventsAfter(after);
  for (const event of missed) if (!stream.send(event.type, toWire(event), event.seq)) return;
  if (call.state.status === 'ended') {
    stream.close();
    return;
  }
  const onEvent = (event: CallEvent): void => {
    stream.send(event.type, toWire(event), event.seq);
    if (event.type === 'call.ended') stream.close();
  };
  call.on('event', onEvent);
  stream.whenClosed(() => call.off('event', onEvent));
}
