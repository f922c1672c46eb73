/**
 * A fake of the Vonage Voice API, written from developer.vonage.com/en/api/voice, its NCCO reference
 * and its authentication page:
 *
 * - `Authorization: Bearer <JWT>`: RS256, verified with the application's public key; the claims must
 *   carry the `application_id`, an `iat` no later than now (with a minute of leeway) and an `exp` after
 *   it, and a `jti`. Else 401, an RFC 7807 problem.
 * - `PUT /v1/calls/{uuid}`: `action` hangup, mute, unmute, earmuff, unearmuff or transfer; a transfer
 *   needs `destination: {type: "ncco", ncco: [...]}` (or `url: [...]`). 204; an unknown or ended call: 404.
 * - `POST /v1/calls`: `to` (an array of endpoints), `from` (`{type: "phone", number}`), and `ncco` or
 *   `answer_url`; `ringing_timer` 1–120; `advanced_machine_detection.mode` default, detect or
 *   detect_beep. 201 `{uuid, status: "started", direction: "outbound", conversation_uuid}`.
 *
 * Every NCCO is checked (an array of actions; `connect` with an `endpoint` array of phone, sip or
 * websocket endpoints with their fields). A phone endpoint's `onAnswer.url` is fetched, as Vonage does
 * when the callee answers, and its NCCO kept in `fetched`.
 */
import { createPublicKey, randomUUID, verify, type KeyObject } from 'node:crypto';
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

export interface VonageFakeCall {
  readonly uuid: string;
  alive: boolean;
  readonly actions: Array<Record<string, unknown>>;
  readonly created?: Record<string, unknown>;
}

const ACTIONS = new Set(['hangup', 'mute', 'unmute', 'earmuff', 'unearmuff', 'transfer']);

function problem(status: number, slug: string, title: string, detail: string): Reply {
  return json(status, {
    type: `https://developer.nexmo.com/api-errors#${slug}`,
    title,
    detail,
    instance: randomUUID(),
  });
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Why an endpoint is not one Vonage takes, or undefined. */
function badEndpoint(endpoint: unknown): string | undefined {
  if (!isObject(endpoint)) return 'an endpoint must be an object';
  switch (endpoint['type']) {
    case 'phone':
      return typeof endpoint['number'] === 'string' && /^\d{6,15}$/.test(endpoint['number'])
        ? undefined
        : 'a phone endpoint needs a number (digits, E.164 without +)';
    case 'sip':
      return typeof endpoint['uri'] === 'string' && /^sips?:/.test(endpoint['uri'])
        ? undefined
        : 'a sip endpoint needs a uri';
    case 'websocket':
      return typeof endpoint['uri'] === 'string' &&
        /^wss?:\/\//.test(endpoint['uri']) &&
        typeof endpoint['content-type'] === 'string' &&
        /^audio\/l16;rate=(8000|16000|24000)$/.test(endpoint['content-type'])
        ? undefined
        : 'a websocket endpoint needs a ws(s) uri and a content-type audio/l16;rate=8000|16000|24000';
    default:
      return `unknown endpoint type ${String(endpoint['type'])}`;
  }
}

/** Why an NCCO is not one Vonage runs, or undefined. */
export function badNcco(ncco: unknown): string | undefined {
  if (!Array.isArray(ncco) || ncco.length === 0) return 'an NCCO is a non-empty array of actions';
  for (const action of ncco) {
    if (!isObject(action) || typeof action['action'] !== 'string') return 'each NCCO action needs an action';
    if (action['action'] === 'connect') {
      const endpoints = action['endpoint'];
      if (!Array.isArray(endpoints) || endpoints.length === 0) return 'connect needs an endpoint array';
      for (const e of endpoints) {
        const why = badEndpoint(e);
        if (why) return why;
      }
    } else if (action['action'] === 'talk') {
      if (typeof action['text'] !== 'string') return 'talk needs text';
    } else if (action['action'] === 'stream') {
      if (!Array.isArray(action['streamUrl'])) return 'stream needs a streamUrl array';
    }
  }
  return undefined;
}

export class FakeVonageRest {
  readonly calls = new Map<string, VonageFakeCall>();
  /** NCCOs fetched from `onAnswer.url`. */
  readonly fetched: unknown[] = [];
  readonly #publicKey: KeyObject;

  private constructor(
    readonly server: FakeRestServer,
    readonly applicationId: string,
    publicKey: KeyObject,
    readonly now: () => number,
  ) {
    this.#publicKey = publicKey;
  }

  static async start(options: {
    applicationId: string;
    publicKeyPem: string;
    now?: () => number;
  }): Promise<FakeVonageRest> {
    const server = await FakeRestServer.start();
    const fake = new FakeVonageRest(
      server,
      options.applicationId,
      createPublicKey(options.publicKeyPem),
      options.now ?? Date.now,
    );
    server.use((req) => fake.route(req));
    return fake;
  }

  get url(): string {
    return this.server.url;
  }

  get requests(): RecordedRequest[] {
    return this.server.requests;
  }

  addCall(): VonageFakeCall {
    const call: VonageFakeCall = { uuid: randomUUID(), alive: true, actions: [] };
    this.calls.set(call.uuid, call);
    return call;
  }

  /** The claims of a valid token, or why it is not valid. */
  verifyJwt(token: string | undefined): Record<string, unknown> | string {
    if (token === undefined) return 'no bearer token';
    const [header, claims, signature] = token.split('.');
    if (header === undefined || claims === undefined || signature === undefined) return 'not a JWT';
    const head = JSON.parse(Buffer.from(header, 'base64url').toString()) as Record<string, unknown>;
    if (head['alg'] !== 'RS256') return 'not RS256';
    const ok = verify(
      'sha256',
      Buffer.from(`${header}.${claims}`),
      this.#publicKey,
      Buffer.from(signature, 'base64url'),
    );
    if (!ok) return 'bad signature';
    const body = JSON.parse(Buffer.from(claims, 'base64url').toString()) as Record<string, unknown>;
    const now = Math.floor(this.now() / 1000);
    if (body['application_id'] !== this.applicationId) return 'wrong application_id';
    if (typeof body['iat'] !== 'number' || body['iat'] > now + 60) return 'iat in the future';
    if (typeof body['exp'] !== 'number' || body['exp'] <= now) return 'expired';
    if (typeof body['jti'] !== 'string' || body['jti'] === '') return 'no jti';
    return body;
  }

  async route(req: RecordedRequest): Promise<Reply> {
    const claims = this.verifyJwt(bearerToken(req.headers));
    if (typeof claims === 'string')
      return problem(401, 'unauthorized', 'Unauthorized', `Invalid token: ${claims}.`);
    if (!contentTypeIs(req, 'application/json') || !isObject(req.json))
      return problem(400, 'bad-request', 'Bad Request', 'The body must be a JSON object.');
    const body = req.json;
    if (req.path === '/v1/calls' && req.method === 'POST') return this.#create(body);
    const match = /^\/v1\/calls\/([^/]+)$/.exec(req.path);
    if (!match || req.method !== 'PUT') return problem(404, 'not-found', 'Not Found', req.path);
    const call = this.calls.get(match[1] ?? '');
    if (!call?.alive) return problem(404, 'not-found', 'Not Found', `Call ${match[1]} doesn't exist.`);
    const action = body['action'];
    if (typeof action !== 'string' || !ACTIONS.has(action))
      return problem(400, 'bad-request', 'Bad Request', `Invalid action: ${String(action)}`);
    if (action === 'transfer') {
      const destination = body['destination'];
      if (!isObject(destination) || destination['type'] !== 'ncco')
        return problem(400, 'bad-request', 'Bad Request', 'destination.type must be ncco');
      if (destination['url'] === undefined) {
        const why = badNcco(destination['ncco']);
        if (why) return problem(400, 'bad-request', 'Bad Request', why);
        await this.#fetchOnAnswer(destination['ncco'] as unknown[]);
      }
    }
    call.actions.push(body);
    if (action === 'hangup') call.alive = false;
    return empty(204);
  }

  async #fetchOnAnswer(ncco: unknown[]): Promise<void> {
    for (const action of ncco)
      for (const endpoint of (isObject(action) && Array.isArray(action['endpoint'])
        ? action['endpoint']
        : []) as unknown[]) {
        const onAnswer = isObject(endpoint) ? endpoint['onAnswer'] : undefined;
        if (isObject(onAnswer) && typeof onAnswer['url'] === 'string') {
          const doc = await fetchDocument(onAnswer['url']);
          try {
            this.fetched.push(JSON.parse(doc.body));
          } catch {
            this.fetched.push(undefined);
          }
        }
      }
  }

  #create(body: Record<string, unknown>): Reply {
    const to = body['to'];
    if (!Array.isArray(to) || to.length === 0)
      return problem(400, 'bad-request', 'Bad Request', 'to is required');
    for (const e of to) {
      const why = badEndpoint(e);
      if (why) return problem(400, 'bad-request', 'Bad Request', why);
    }
    const from = body['from'];
    if (!isObject(from) || from['type'] !== 'phone' || typeof from['number'] !== 'string')
      return problem(400, 'bad-request', 'Bad Request', 'from must be a phone endpoint');
    if (body['ncco'] === undefined && body['answer_url'] === undefined)
      return problem(400, 'bad-request', 'Bad Request', 'ncco or answer_url is required');
    if (body['ncco'] !== undefined) {
      const why = badNcco(body['ncco']);
      if (why) return problem(400, 'bad-request', 'Bad Request', why);
    }
    const timer = body['ringing_timer'];
    if (timer !== undefined && (typeof timer !== 'number' || timer < 1 || timer > 120))
      return problem(400, 'bad-request', 'Bad Request', 'ringing_timer must be 1 to 120');
    const amd = body['advanced_machine_detection'];
    if (
      amd !== undefined &&
      (!isObject(amd) || !['default', 'detect', 'detect_beep'].includes(amd['mode'] as string))
    )
      return problem(400, 'bad-request', 'Bad Request', 'advanced_machine_detection.mode is invalid');
    const call: VonageFakeCall = { uuid: randomUUID(), alive: true, actions: [], created: body };
    this.calls.set(call.uuid, call);
    return json(201, {
      uuid: call.uuid,
      status: 'started',
      direction: 'outbound',
      conversation_uuid: `CON-${randomUUID()}`,
    });
  }

  async close(): Promise<void> {
    await this.server.close();
  }
}
