/**
 * A fake of Exotel's v1 "connect a number to a call flow" API, written from
 * developer.exotel.com/api/outgoing-call-to-connect-number-to-a-call-flow:
 *
 * - HTTP Basic with the API key and token; the path's account sid must be the account's. Else 401.
 * - `POST /v1/Accounts/{sid}/Calls/connect.json`: form-encoded; `From`, `CallerId`, `Url` required;
 *   `Url` of the form `http://my.exotel.com/{sid}/exoml/start_voice/{app_id}`; `TimeOut` and
 *   `TimeLimit` integers; `StatusCallbackEvents[n]` terminal or answered. 200 `{Call: {Sid, Status, …}}`.
 *
 * Errors are `{RestException: {Status, Message}}`. There is no resource for a call in progress.
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

function error(status: number, message: string): Reply {
  return json(status, { RestException: { Status: status, Message: message } });
}

export class FakeExotelRest {
  readonly placed: Array<Readonly<Record<string, readonly string[]>>> = [];

  private constructor(
    readonly server: FakeRestServer,
    readonly accountSid: string,
    readonly apiKey: string,
    readonly apiToken: string,
  ) {}

  static async start(options: {
    accountSid: string;
    apiKey: string;
    apiToken: string;
  }): Promise<FakeExotelRest> {
    const server = await FakeRestServer.start();
    const fake = new FakeExotelRest(server, options.accountSid, options.apiKey, options.apiToken);
    server.use((req) => fake.route(req));
    return fake;
  }

  get url(): string {
    return this.server.url;
  }

  get requests(): RecordedRequest[] {
    return this.server.requests;
  }

  route(req: RecordedRequest): Reply {
    const auth = basicCredentials(req.headers);
    if (auth?.user !== this.apiKey || auth.password !== this.apiToken)
      return error(401, 'Authentication required');
    if (req.path !== `/v1/Accounts/${this.accountSid}/Calls/connect.json` || req.method !== 'POST')
      return error(404, 'Resource not found');
    if (!contentTypeIs(req, 'application/x-www-form-urlencoded'))
      return error(400, 'Form parameters expected');
    for (const name of ['From', 'CallerId', 'Url'])
      if (!field(req, name)) return error(400, `Missing parameter ${name}`);
    const flow = new RegExp(`^http://my\\.exotel\\.com/${this.accountSid}/exoml/start_voice/\\d+$`);
    if (!flow.test(field(req, 'Url') ?? '')) return error(400, 'Url must be a flow of this account');
    for (const name of ['TimeOut', 'TimeLimit']) {
      const value = field(req, name);
      if (value !== undefined && !/^\d+$/.test(value)) return error(400, `${name} must be an integer`);
    }
    for (const [key, values] of Object.entries(req.form ?? {}))
      if (key.startsWith('StatusCallbackEvents') && values.some((v) => v !== 'terminal' && v !== 'answered'))
        return error(400, 'StatusCallbackEvents must be terminal or answered');
    this.placed.push(req.form ?? {});
    return json(200, {
      Call: {
        Sid: hexId(''),
        AccountSid: this.accountSid,
        From: field(req, 'From'),
        PhoneNumberSid: field(req, 'CallerId'),
        Status: 'in-progress',
        Direction: 'outbound-api',
      },
    });
  }

  async close(): Promise<void> {
    await this.server.close();
  }
}
