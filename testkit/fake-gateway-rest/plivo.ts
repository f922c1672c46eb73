/**
 * A fake of Plivo's Call API, written from plivo.com/docs/voice/api/call and plivo-node:
 *
 * - HTTP Basic with the auth id and token; the path's `{auth_id}` must be the same id. Else 401.
 * - `DELETE /v1/Account/{auth_id}/Call/{call_uuid}/` hangs up: 204; unknown or over: 404.
 * - `POST /v1/Account/{auth_id}/Call/{call_uuid}/` transfers: JSON; `legs` aleg, bleg or both (default
 *   aleg); `aleg_url` required for aleg; `aleg_method` GET or POST. 202 `{api_id, message: "call
 *   transferred"}`. Plivo then fetches `aleg_url`, as this fake does, and runs the XML it gets.
 * - `POST /v1/Account/{auth_id}/Call/` makes a call: `from`, `to`, `answer_url` required;
 *   `answer_method` GET or POST; `machine_detection` true or hangup. 201 `{api_id, message: "call
 *   fired", request_uuid}`. On answer Plivo fetches `answer_url`: the fake does so at once.
 *
 * Every XML document fetched is read as Plivo would (well-formed, a `<Response>` root) and kept, with
 * the documents a `<Dial>` names (`confirmSound`, `dialMusic`), in `documents`. Errors are
 * `{api_id, error}`.
 */
import { randomUUID } from 'node:crypto';
import { fetchDocument } from './documents.js';
import {
  basicCredentials,
  contentTypeIs,
  empty,
  FakeRestServer,
  json,
  type RecordedRequest,
  type Reply,
} from './server.js';
import { findAll, parseXml, type XmlElement } from './xml.js';

export interface PlivoFakeCall {
  readonly uuid: string;
  alive: boolean;
  /** The XML the call was last sent to (transfer or answer), read. */
  xml: XmlElement | undefined;
  readonly made?: Record<string, unknown>;
}

export interface FetchedXml {
  /** `answer_url`, `aleg_url`, `confirmSound`, `dialMusic`. */
  readonly role: string;
  readonly method: 'GET' | 'POST';
  readonly status: number;
  readonly root: XmlElement | undefined;
  readonly error?: string;
}

function error(status: number, message: string): Reply {
  return json(status, { api_id: randomUUID(), error: message });
}

export class FakePlivoRest {
  readonly calls = new Map<string, PlivoFakeCall>();
  readonly documents: FetchedXml[] = [];

  private constructor(
    readonly server: FakeRestServer,
    readonly authId: string,
    readonly authToken: string,
  ) {}

  static async start(options: { authId: string; authToken: string }): Promise<FakePlivoRest> {
    const server = await FakeRestServer.start();
    const fake = new FakePlivoRest(server, options.authId, options.authToken);
    server.use((req) => fake.route(req));
    return fake;
  }

  get url(): string {
    return this.server.url;
  }

  get requests(): RecordedRequest[] {
    return this.server.requests;
  }

  addCall(alive = true): PlivoFakeCall {
    const call: PlivoFakeCall = { uuid: randomUUID(), alive, xml: undefined };
    this.calls.set(call.uuid, call);
    return call;
  }

  async route(req: RecordedRequest): Promise<Reply> {
    const auth = basicCredentials(req.headers);
    if (auth?.user !== this.authId || auth.password !== this.authToken)
      return error(401, 'Authentication failed');
    const match = /^\/v1\/Account\/([^/]+)\/Call\/(?:([^/]+)\/)?$/.exec(req.path);
    if (!match || match[1] !== this.authId) return error(404, 'not found');
    const uuid = match[2];
    if (uuid === undefined) {
      if (req.method !== 'POST') return error(405, 'method not allowed');
      return this.#make(req);
    }
    const call = this.calls.get(uuid);
    if (!call?.alive) return error(404, 'not found');
    if (req.method === 'DELETE') {
      call.alive = false;
      return empty(204);
    }
    if (req.method !== 'POST') return error(405, 'method not allowed');
    if (!contentTypeIs(req, 'application/json') || typeof req.json !== 'object' || req.json === null)
      return error(400, 'the body must be JSON');
    const body = req.json as Record<string, unknown>;
    const legs = body['legs'] ?? 'aleg';
    if (legs !== 'aleg' && legs !== 'bleg' && legs !== 'both')
      return error(400, 'legs must be aleg, bleg or both');
    const url = body['aleg_url'];
    if (legs !== 'bleg' && typeof url !== 'string')
      return error(400, 'aleg_url is required to transfer the aleg');
    const method = body['aleg_method'] ?? 'POST';
    if (method !== 'GET' && method !== 'POST') return error(400, 'aleg_method must be GET or POST');
    if (typeof url === 'string') call.xml = await this.#fetchXml('aleg_url', url, method);
    return json(202, { api_id: randomUUID(), message: 'call transferred' });
  }

  async #make(req: RecordedRequest): Promise<Reply> {
    if (!contentTypeIs(req, 'application/json') || typeof req.json !== 'object' || req.json === null)
      return error(400, 'the body must be JSON');
    const body = req.json as Record<string, unknown>;
    for (const name of ['from', 'to', 'answer_url'])
      if (typeof body[name] !== 'string' || body[name] === '') return error(400, `${name} is required`);
    const method = body['answer_method'] ?? 'POST';
    if (method !== 'GET' && method !== 'POST') return error(400, 'answer_method must be GET or POST');
    const amd = body['machine_detection'];
    if (amd !== undefined && amd !== 'true' && amd !== 'hangup')
      return error(400, 'machine_detection must be true or hangup');
    const call: PlivoFakeCall = { uuid: randomUUID(), alive: true, xml: undefined, made: body };
    this.calls.set(call.uuid, call);
    call.xml = await this.#fetchXml('answer_url', body['answer_url'] as string, method);
    return json(201, { api_id: randomUUID(), message: 'call fired', request_uuid: randomUUID() });
  }

  async #fetchXml(role: string, url: string, method: 'GET' | 'POST'): Promise<XmlElement | undefined> {
    const fetched = await fetchDocument(url, method);
    let root: XmlElement | undefined;
    let failure: string | undefined;
    try {
      root = parseXml(fetched.body);
      if (root.name !== 'Response') failure = `the root is <${root.name}>`;
    } catch (e) {
      failure = (e as Error).message;
    }
    this.documents.push({
      role,
      method,
      status: fetched.status,
      root,
      ...(failure ? { error: failure } : {}),
    });
    if (root)
      for (const dial of findAll(root, 'Dial'))
        for (const attribute of ['confirmSound', 'dialMusic']) {
          const nested = dial.attributes[attribute];
          // Plivo fetches both with POST.
          if (nested !== undefined) await this.#fetchXml(attribute, nested, 'POST');
        }
    return failure === undefined ? root : undefined;
  }

  async close(): Promise<void> {
    await this.server.close();
  }
}
