/**
 * A fake of jambonz's REST API, written from jambonz-api-server (lib/swagger/swagger.yaml and the
 * checks in lib/routes/api/accounts.js):
 *
 * - `Authorization: Bearer <API key>`; the path's account must be the key's. Else 401 (no body).
 * - `PUT` (or the legacy `POST`) `/v1/Accounts/{sid}/Calls/{callSid}` (updateCall): JSON, exactly one
 *   of its options (`call_hook`, `call_status`, `listen_status`, …; `whisper` may come alone),
 *   `call_status` completed or no-answer, `call_hook` a `{url}` (or a URL string) that is absolute.
 *   202, no body; an unknown call: 404; otherwise 400 `{msg}`.
 * - `POST /v1/Accounts/{sid}/Calls` (createCall): `from`; `to` `{type: phone|teams, number}`,
 *   `{type: user, name}` or `{type: sip, sipUri}`; `call_hook` or `application_sid`; without an
 *   application, the five speech settings. 201 `{sid}`.
 *
 * A `call_hook` is fetched as the feature server fetches it and its verbs (a JSON array of
 * `{verb, …}`) kept in `fetched`, with a dial's `confirmHook`.
 */
import { randomUUID } from 'node:crypto';
import { fetchDocument } from './documents.js';
import {
  bearerToken,
  contentTypeIs,
  empty,
  FakeRestServer,
  json,
  type RecordedRequest,
  type Reply,
} from './server.js';

export interface JambonzFakeCall {
  readonly callSid: string;
  alive: boolean;
  readonly updates: Array<Record<string, unknown>>;
  readonly created?: Record<string, unknown>;
}

export interface FetchedVerbs {
  readonly role: 'call_hook' | 'confirmHook';
  readonly verbs: unknown;
}

const UPDATE_OPTIONS = [
  'call_hook',
  'child_call_hook',
  'call_status',
  'listen_status',
  'transcribe_status',
  'conf_hold_status',
  'conf_mute_status',
  'mute_status',
  'sip_request',
  'record',
  'tag',
  'dtmf',
  'conferenceParticipantAction',
  'dub',
  'boostAudioSignal',
  'media_path',
];
const SPEECH = [
  'speech_synthesis_vendor',
  'speech_synthesis_language',
  'speech_synthesis_voice',
  'speech_recognizer_vendor',
  'speech_recognizer_language',
];

function bad(message: string): Reply {
  return json(400, { msg: message });
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function hookUrl(hook: unknown): string | undefined {
  const url = typeof hook === 'string' ? hook : isObject(hook) ? hook['url'] : undefined;
  return typeof url === 'string' && /^(https?|wss?):/.test(url) ? url : undefined;
}

function validTo(to: unknown): boolean {
  if (!isObject(to)) return false;
  switch (to['type']) {
    case 'phone':
    case 'teams':
      return typeof to['number'] === 'string';
    case 'user':
      return typeof to['name'] === 'string';
    case 'sip':
      return typeof to['sipUri'] === 'string';
    default:
      return false;
  }
}

export class FakeJambonzRest {
  readonly calls = new Map<string, JambonzFakeCall>();
  readonly fetched: FetchedVerbs[] = [];

  private constructor(
    readonly server: FakeRestServer,
    readonly accountSid: string,
    readonly apiKey: string,
  ) {}

  static async start(options: { accountSid: string; apiKey: string }): Promise<FakeJambonzRest> {
    const server = await FakeRestServer.start();
    const fake = new FakeJambonzRest(server, options.accountSid, options.apiKey);
    server.use((req) => fake.route(req));
    return fake;
  }

  get url(): string {
    return this.server.url;
  }

  get requests(): RecordedRequest[] {
    return this.server.requests;
  }

  addCall(): JambonzFakeCall {
    const call: JambonzFakeCall = { callSid: randomUUID(), alive: true, updates: [] };
    this.calls.set(call.callSid, call);
    return call;
  }

  async route(req: RecordedRequest): Promise<Reply> {
    const match = /^\/v1\/Accounts\/([^/]+)\/Calls(?:\/([^/]+))?$/.exec(req.path);
    if (bearerToken(req.headers) !== this.apiKey || (match && match[1] !== this.accountSid))
      return { status: 401, text: 'Unauthorized' };
    if (!match) return empty(404);
    if (!contentTypeIs(req, 'application/json') || !isObject(req.json)) return bad('the body must be JSON');
    const body = req.json;
    const callSid = match[2];
    if (callSid === undefined) return req.method === 'POST' ? this.#create(body) : empty(405);
    if (req.method !== 'PUT' && req.method !== 'POST') return empty(405);
    const count = UPDATE_OPTIONS.filter((option) => body[option] !== undefined).length;
    if (count === 0 && body['whisper'] === undefined) return bad('no valid options supplied to updateCall');
    if (count > 1 && !(count === 2 && body['call_hook'] && body['child_call_hook']))
      return bad('multiple options are not allowed in updateCall');
    if (
      body['call_status'] !== undefined &&
      !['completed', 'no-answer'].includes(body['call_status'] as string)
    )
      return bad('invalid call_status');
    if (body['call_hook'] !== undefined && hookUrl(body['call_hook']) === undefined)
      return bad('call_hook url be an absolute url');
    const call = this.calls.get(callSid);
    if (!call?.alive) return empty(404);
    call.updates.push(body);
    if (body['call_status'] === 'completed') call.alive = false;
    if (body['call_hook'] !== undefined) await this.#fetchHook(body['call_hook']);
    return empty(202);
  }

  async #fetchHook(hook: unknown, role: FetchedVerbs['role'] = 'call_hook', method?: unknown): Promise<void> {
    const url = hookUrl(hook) ?? '';
    const verb = method ?? (isObject(hook) ? hook['method'] : undefined) ?? 'POST';
    const doc = await fetchDocument(url, verb === 'GET' ? 'GET' : 'POST');
    let verbs: unknown;
    try {
      verbs = JSON.parse(doc.body);
    } catch {
      verbs = undefined;
    }
    this.fetched.push({ role, verbs });
    if (Array.isArray(verbs))
      for (const v of verbs)
        if (isObject(v) && v['verb'] === 'dial' && typeof v['confirmHook'] === 'string')
          await this.#fetchHook(v['confirmHook'], 'confirmHook', v['confirmMethod']);
  }

  async #create(body: Record<string, unknown>): Promise<Reply> {
    if (typeof body['from'] !== 'string' || body['from'] === '') return bad('missing from parameter');
    if (!validTo(body['to'])) return bad(`missing or invalid to property: ${JSON.stringify(body['to'])}`);
    if (body['application_sid'] === undefined) {
      if (SPEECH.some((name) => typeof body[name] !== 'string'))
        return bad(`either application_sid or set of ${SPEECH.join(', ')} required`);
      if (body['call_hook'] === undefined) return bad('either call_hook or application_sid required');
    }
    if (body['call_hook'] !== undefined && hookUrl(body['call_hook']) === undefined)
      return bad('call_hook url be an absolute url');
    if (body['call_status_hook'] !== undefined && hookUrl(body['call_status_hook']) === undefined)
      return bad('call_status_hook url be an absolute url');
    if (body['amd'] !== undefined && !isObject(body['amd'])) return bad('Invalid amd');
    const call: JambonzFakeCall = { callSid: randomUUID(), alive: true, updates: [], created: body };
    this.calls.set(call.callSid, call);
    await this.#fetchHook(body['call_hook']);
    return json(201, { sid: call.callSid });
  }

  async close(): Promise<void> {
    await this.server.close();
  }
}
