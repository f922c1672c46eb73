/**
 * A fake of Telnyx's Call Control API v2, written from developers.telnyx.com/api-reference/call-commands
 * and the request shapes of team-telnyx/telnyx-node:
 *
 * - `Authorization: Bearer <API key>`, else 401 (code 10009); bodies `application/json`.
 * - `POST /v2/calls/{call_control_id}/actions/hangup` and `…/actions/transfer` (`to` required, a number
 *   or SIP URI; `timeout_secs` 5–600; `audio_url` an http(s) URL): 200 `{data: {result: "ok"}}`. A call
 *   that has ended: 422 with code 90018 "Call has already ended"; unknown: 404.
 * - `POST /v2/calls` (dial): `connection_id` (the application's), `to`, `from` required;
 *   `stream_url` ws(s); `stream_track` inbound_track, outbound_track or both_tracks;
 *   `stream_bidirectional_mode` mp3 or rtp; `stream_bidirectional_codec` PCMU, PCMA, G722, OPUS, AMR-WB
 *   or L16; `answering_machine_detection` premium, detect, detect_beep, detect_words, greeting_end or
 *   disabled. 200 with `data.call_control_id`, `call_leg_id`, `call_session_id`, `is_alive: false`.
 *
 * Errors are `{errors: [{code, title, detail}]}`.
 */
import { randomUUID } from 'node:crypto';
import {
  bearerToken,
  contentTypeIs,
  FakeRestServer,
  json,
  type RecordedRequest,
  type Reply,
} from './server.js';

export interface TelnyxFakeCall {
  readonly callControlId: string;
  alive: boolean;
  /** Each command's name and body, in order. */
  readonly commands: Array<{ readonly action: string; readonly body: Record<string, unknown> }>;
  readonly dialed?: Record<string, unknown>;
}

const CODECS = new Set(['PCMU', 'PCMA', 'G722', 'OPUS', 'AMR-WB', 'L16']);
const AMD = new Set(['premium', 'detect', 'detect_beep', 'detect_words', 'greeting_end', 'disabled']);
const TARGET = /^(\+[1-9]\d{1,14}|sips?:\S+)$/;

function error(status: number, code: string, title: string, detail: string): Reply {
  return json(status, { errors: [{ code, title, detail }] });
}

function isUrl(value: unknown, schemes: readonly string[]): boolean {
  if (typeof value !== 'string') return false;
  try {
    return schemes.includes(new URL(value).protocol);
  } catch {
    return false;
  }
}

export class FakeTelnyxRest {
  readonly calls = new Map<string, TelnyxFakeCall>();

  private constructor(
    readonly server: FakeRestServer,
    readonly apiKey: string,
    readonly connectionId: string,
  ) {}

  static async start(options: { apiKey: string; connectionId: string }): Promise<FakeTelnyxRest> {
    const server = await FakeRestServer.start();
    const fake = new FakeTelnyxRest(server, options.apiKey, options.connectionId);
    server.use((req) => fake.route(req));
    return fake;
  }

  get url(): string {
    return this.server.url;
  }

  get requests(): RecordedRequest[] {
    return this.server.requests;
  }

  addCall(alive = true): TelnyxFakeCall {
    const call: TelnyxFakeCall = { callControlId: `v3:${randomUUID()}`, alive, commands: [] };
    this.calls.set(call.callControlId, call);
    return call;
  }

  route(req: RecordedRequest): Reply {
    if (bearerToken(req.headers) !== this.apiKey)
      return error(401, '10009', 'Authentication failed', 'The API key is missing or invalid.');
    if (req.method !== 'POST') return error(405, '10015', 'Method not allowed', req.method);
    if (!contentTypeIs(req, 'application/json') || typeof req.json !== 'object' || req.json === null)
      return error(400, '10015', 'Bad request', 'The body must be a JSON object.');
    const body = req.json as Record<string, unknown>;
    if (req.path === '/v2/calls') return this.#dial(body);
    const match = /^\/v2\/calls\/([^/]+)\/actions\/([a-z_]+)$/.exec(req.path);
    if (!match) return error(404, '10005', 'Resource not found', req.path);
    const [, id = '', action = ''] = match;
    const call = this.calls.get(id);
    if (!call) return error(404, '10005', 'Resource not found', `No call with call_control_id ${id}.`);
    if (!call.alive)
      return error(
        422,
        '90018',
        'Call has already ended',
        "This call is no longer active and can't receive commands.",
      );
    if (action === 'hangup') {
      call.commands.push({ action, body });
      call.alive = false;
      return json(200, { data: { result: 'ok' } });
    }
    if (action === 'transfer') {
      if (typeof body['to'] !== 'string' || !TARGET.test(body['to']))
        return error(422, '10032', 'Invalid parameter', 'to must be a number in E.164 or a SIP URI.');
      const timeout = body['timeout_secs'];
      if (timeout !== undefined && (typeof timeout !== 'number' || timeout < 5 || timeout > 600))
        return error(422, '10032', 'Invalid parameter', 'timeout_secs must be between 5 and 600.');
      if (body['audio_url'] !== undefined && !isUrl(body['audio_url'], ['http:', 'https:']))
        return error(422, '10032', 'Invalid parameter', 'audio_url must be a URL.');
      call.commands.push({ action, body });
      return json(200, { data: { result: 'ok' } });
    }
    return error(404, '10005', 'Resource not found', `Unknown action ${action}.`);
  }

  #dial(body: Record<string, unknown>): Reply {
    if (body['connection_id'] !== this.connectionId)
      return error(
        422,
        '10032',
        'Invalid parameter',
        'connection_id does not name a Call Control application.',
      );
    for (const name of ['to', 'from'])
      if (typeof body[name] !== 'string' || !TARGET.test(body[name]))
        return error(422, '10032', 'Invalid parameter', `${name} is required.`);
    if (body['stream_url'] !== undefined && !isUrl(body['stream_url'], ['ws:', 'wss:']))
      return error(422, '10032', 'Invalid parameter', 'stream_url must be a WebSocket URL.');
    const track = body['stream_track'];
    if (track !== undefined && !['inbound_track', 'outbound_track', 'both_tracks'].includes(track as string))
      return error(422, '10032', 'Invalid parameter', 'stream_track is invalid.');
    const mode = body['stream_bidirectional_mode'];
    if (mode !== undefined && mode !== 'mp3' && mode !== 'rtp')
      return error(422, '10032', 'Invalid parameter', 'stream_bidirectional_mode is invalid.');
    const codec = body['stream_bidirectional_codec'];
    if (codec !== undefined && !CODECS.has(codec as string))
      return error(422, '10032', 'Invalid parameter', 'stream_bidirectional_codec is invalid.');
    const amd = body['answering_machine_detection'];
    if (amd !== undefined && !AMD.has(amd as string))
      return error(422, '10032', 'Invalid parameter', 'answering_machine_detection is invalid.');
    const call: TelnyxFakeCall = {
      callControlId: `v3:${randomUUID()}`,
      alive: true,
      commands: [],
      dialed: body,
    };
    this.calls.set(call.callControlId, call);
    return json(200, {
      data: {
        call_control_id: call.callControlId,
        call_leg_id: randomUUID(),
        call_session_id: randomUUID(),
        is_alive: false,
        record_type: 'call',
      },
    });
  }

  async close(): Promise<void> {
    await this.server.close();
  }
}
