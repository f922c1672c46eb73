/**
 * A fake of Twilio's Calls resource, written from twilio.com/docs/voice/api/call-resource:
 *
 * - `POST /2010-04-01/Accounts/{AccountSid}/Calls.json` creates a call: form-encoded; `To` and `From`
 *   required; one of `Url`, `Twiml`, `ApplicationSid`; `Twiml` well-formed with a `<Response>` root;
 *   `Timeout` an integer; `MachineDetection` `Enable` or `DetectMessageEnd`; `AsyncAmd` `true` or
 *   `false`; each `StatusCallbackEvent` one of initiated, ringing, answered, completed. 201 with the
 *   call resource (`sid` "CA…", `status` queued).
 * - `POST …/Calls/{CallSid}.json` updates one: `Status` completed or canceled, or `Twiml`/`Url`. 200
 *   with the resource. A call that is over: 400 with code 21220; an unknown one: 404 with 20404.
 * - HTTP Basic with the account SID (or an API key, not faked) and auth token, else 401 code 20003;
 *   an account in the path other than the authenticated one or one of its subaccounts: 404 20404.
 *
 * Errors are `{code, message, more_info, status}`. Calls the test creates with `addCall` are in
 * progress; what each update did is kept on the call (`calls`).
 */
import {
  basicCredentials,
  contentTypeIs,
  field,
  FakeRestServer,
  hexId,
  json,
  type RecordedRequest,
  type Reply,
} from './server.js';
import { parseXml, type XmlElement } from './xml.js';

export interface TwilioFakeCall {
  readonly sid: string;
  readonly accountSid: string;
  status: 'queued' | 'in-progress' | 'completed' | 'canceled';
  readonly to: string;
  readonly from: string;
  /** The TwiML the call runs: the last one given (create or update), parsed. */
  twiml: XmlElement | undefined;
  /** Every update's fields, in order. */
  readonly updates: Array<Readonly<Record<string, readonly string[]>>>;
  /** The create request's fields (for calls created through the API). */
  readonly created?: Readonly<Record<string, readonly string[]>>;
}

const PATH = /^\/2010-04-01\/Accounts\/([^/]+)\/Calls(?:\/([^/]+))?\.json$/;
const EVENTS = new Set(['initiated', 'ringing', 'answered', 'completed']);

function error(status: number, code: number, message: string): Reply {
  return json(status, { code, message, more_info: `https://www.twilio.com/docs/errors/${code}`, status });
}

export class FakeTwilioRest {
  readonly calls = new Map<string, TwilioFakeCall>();
  readonly #accountSid: string;
  readonly #authToken: string;
  readonly #subaccounts: ReadonlySet<string>;

  private constructor(
    readonly server: FakeRestServer,
    options: { accountSid: string; authToken: string; subaccounts?: readonly string[] },
  ) {
    this.#accountSid = options.accountSid;
    this.#authToken = options.authToken;
    this.#subaccounts = new Set(options.subaccounts ?? []);
  }

  static async start(options: {
    accountSid: string;
    authToken: string;
    subaccounts?: readonly string[];
  }): Promise<FakeTwilioRest> {
    const server = await FakeRestServer.start();
    const fake = new FakeTwilioRest(server, options);
    server.use((req) => fake.route(req));
    return fake;
  }

  get url(): string {
    return this.server.url;
  }

  get requests(): RecordedRequest[] {
    return this.server.requests;
  }

  /**
   * The next call created through the API, once created (its fields checked and recorded), e.g. to
   * answer it: `twilioStream(call)` says where its `<Connect><Stream>` goes.
   */
  async nextCreated(timeoutMs = 10_000): Promise<TwilioFakeCall> {
    const before = new Set(this.calls.keys());
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      for (const [sid, call] of this.calls) if (!before.has(sid) && call.created) return call;
      if (performance.now() > deadline) throw new Error(`no call created within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 2));
    }
  }

  /** A call in progress, as one the gateway had before the test (an inbound call). */
  addCall(accountSid = this.#accountSid): TwilioFakeCall {
    const call: TwilioFakeCall = {
      sid: hexId('CA'),
      accountSid,
      status: 'in-progress',
      to: '+15550000001',
      from: '+15550000002',
      twiml: undefined,
      updates: [],
    };
    this.calls.set(call.sid, call);
    return call;
  }

  route(req: RecordedRequest): Reply {
    const auth = basicCredentials(req.headers);
    if (auth?.user !== this.#accountSid || auth.password !== this.#authToken)
      return error(401, 20003, 'Authenticate');
    const match = PATH.exec(req.path);
    if (!match) return error(404, 20404, `The requested resource ${req.path} was not found`);
    const [, account = '', sid] = match;
    if (account !== this.#accountSid && !this.#subaccounts.has(account))
      return error(404, 20404, `The requested resource ${req.path} was not found`);
    if (req.method !== 'POST') return error(405, 20004, 'Method not allowed');
    if (!contentTypeIs(req, 'application/x-www-form-urlencoded'))
      return error(400, 20001, 'Request body must be form-encoded');
    return sid === undefined ? this.#create(req, account) : this.#update(req, account, sid);
  }

  #twiml(req: RecordedRequest): XmlElement | Reply | undefined {
    const text = field(req, 'Twiml');
    if (text === undefined) return undefined;
    try {
      const root = parseXml(text);
      if (root.name !== 'Response')
        return error(400, 12100, 'Document parse failure: the root is not <Response>');
      return root;
    } catch (e) {
      return error(400, 12100, `Document parse failure: ${(e as Error).message}`);
    }
  }

  #create(req: RecordedRequest, accountSid: string): Reply {
    const to = field(req, 'To');
    const from = field(req, 'From');
    if (!to) return error(400, 21201, "No 'To' number is specified");
    if (!from) return error(400, 21213, "No 'From' number is specified");
    if (
      field(req, 'Url') === undefined &&
      field(req, 'Twiml') === undefined &&
      field(req, 'ApplicationSid') === undefined
    )
      return error(400, 21205, 'Url, Twiml or ApplicationSid is required');
    const timeout = field(req, 'Timeout');
    if (timeout !== undefined && !/^\d+$/.test(timeout))
      return error(400, 21215, 'Timeout must be an integer');
    const amd = field(req, 'MachineDetection');
    if (amd !== undefined && amd !== 'Enable' && amd !== 'DetectMessageEnd')
      return error(400, 21626, `Invalid MachineDetection: ${amd}`);
    const asyncAmd = field(req, 'AsyncAmd');
    if (asyncAmd !== undefined && asyncAmd !== 'true' && asyncAmd !== 'false')
      return error(400, 21626, `Invalid AsyncAmd: ${asyncAmd}`);
    for (const event of req.form?.['StatusCallbackEvent'] ?? [])
      if (!EVENTS.has(event)) return error(400, 21626, `Invalid StatusCallbackEvent: ${event}`);
    const twiml = this.#twiml(req);
    if (twiml !== undefined && 'status' in twiml) return twiml;
    const call: TwilioFakeCall = {
      sid: hexId('CA'),
      accountSid,
      status: 'queued',
      to,
      from,
      twiml,
      updates: [],
      created: req.form ?? {},
    };
    this.calls.set(call.sid, call);
    return json(201, this.#resource(call));
  }

  #update(req: RecordedRequest, accountSid: string, sid: string): Reply {
    const call = this.calls.get(sid);
    if (!call || call.accountSid !== accountSid)
      return error(404, 20404, `The requested resource ${req.path} was not found`);
    const status = field(req, 'Status');
    if (status !== undefined && status !== 'completed' && status !== 'canceled')
      return error(400, 21218, `Invalid Status: ${status}`);
    if (status === undefined && field(req, 'Twiml') === undefined && field(req, 'Url') === undefined)
      return error(400, 21205, 'Status, Url or Twiml is required');
    if (call.status === 'completed' || call.status === 'canceled')
      return error(400, 21220, 'Call is not in-progress. Cannot redirect.');
    const twiml = this.#twiml(req);
    if (twiml !== undefined && 'status' in twiml) return twiml;
    call.updates.push(req.form ?? {});
    if (status !== undefined) call.status = status;
    if (twiml !== undefined) call.twiml = twiml;
    return json(200, this.#resource(call));
  }

  #resource(call: TwilioFakeCall): Record<string, unknown> {
    return {
      sid: call.sid,
      account_sid: call.accountSid,
      to: call.to,
      from: call.from,
      status: call.status,
      api_version: '2010-04-01',
      uri: `/2010-04-01/Accounts/${call.accountSid}/Calls/${call.sid}.json`,
    };
  }

  async close(): Promise<void> {
    await this.server.close();
  }
}

/**
 * Where a call's `<Connect><Stream>` sends its media, as Twilio reads it when the callee answers: the
 * stream URL and each `<Parameter>` (its `customParameters`). Undefined when its TwiML holds none.
 */
export function twilioStream(
  call: TwilioFakeCall,
): { readonly url: string; readonly parameters: Record<string, string> } | undefined {
  const stream = call.twiml?.children
    .find((c) => c.name === 'Connect')
    ?.children.find((c) => c.name === 'Stream');
  const url = stream?.attributes['url'];
  if (!stream || url === undefined) return undefined;
  const parameters: Record<string, string> = {};
  for (const p of stream.children)
    if (p.name === 'Parameter' && p.attributes['name'] !== undefined)
      parameters[p.attributes['name']] = p.attributes['value'] ?? '';
  return { url, parameters };
}
