/**
 * A fake of Asterisk's ARI channels resource, written from docs.asterisk.org's Channels REST API page:
 *
 * - HTTP Basic with an ari.conf user, else 401 `{"message": "Authentication required"}`.
 * - `DELETE /ari/channels/{channelId}?reason=…` (reason one of ARI's list): 204; unknown: 404
 *   "Channel not found".
 * - `POST /ari/channels/{channelId}/redirect?endpoint=…`: 204; no endpoint: 400; unknown: 404; a
 *   channel not in a Stasis application: 409; an endpoint of another technology than the channel's:
 *   422 "Endpoint technology does not match channel".
 * - `POST /ari/channels/{channelId}/continue?context&extension&priority`: 204; 404; 409 (not in Stasis).
 * - `POST /ari/channels?endpoint&extension&context&priority&callerId&timeout` with `{variables}` in a
 *   JSON body: 200 the channel `{id, name, state, caller, dialplan, creationtime}`; no endpoint: 400.
 *
 * Parameters are read from the query string (and a JSON body's `variables`), as ARI reads them.
 */
import { randomUUID } from 'node:crypto';
import {
  basicCredentials,
  contentTypeIs,
  empty,
  FakeRestServer,
  json,
  type RecordedRequest,
  type Reply,
} from './server.js';

export interface AsteriskFakeChannel {
  readonly id: string;
  /** The channel's technology, as in `PJSIP/alice-00000001`. */
  readonly technology: string;
  inStasis: boolean;
  alive: boolean;
  /** Each command on it: `redirect` with its endpoint, `continue` with its dialplan location. */
  readonly commands: Array<{ readonly command: string; readonly query: Readonly<Record<string, string>> }>;
  readonly originated?: { readonly query: Readonly<Record<string, string>>; readonly variables: unknown };
}

const REASONS = new Set([
  'normal',
  'busy',
  'congestion',
  'no_answer',
  'timeout',
  'rejected',
  'unallocated',
  'normal_unspecified',
  'number_incomplete',
  'codec_mismatch',
  'interworking',
  'failure',
  'answered_elsewhere',
]);

function message(status: number, text: string): Reply {
  return json(status, { message: text });
}

export class FakeAsteriskAri {
  readonly channels = new Map<string, AsteriskFakeChannel>();

  private constructor(
    readonly server: FakeRestServer,
    readonly user: string,
    readonly password: string,
  ) {}

  static async start(options: { user: string; password: string }): Promise<FakeAsteriskAri> {
    const server = await FakeRestServer.start();
    const fake = new FakeAsteriskAri(server, options.user, options.password);
    server.use((req) => fake.route(req));
    return fake;
  }

  /** The ARI base URL, `…/ari`. */
  get url(): string {
    return `${this.server.url}/ari`;
  }

  get requests(): RecordedRequest[] {
    return this.server.requests;
  }

  addChannel(options: { inStasis?: boolean; technology?: string } = {}): AsteriskFakeChannel {
    const channel: AsteriskFakeChannel = {
      id: `${Math.floor(Date.now() / 1000)}.${this.channels.size + 1}`,
      technology: options.technology ?? 'PJSIP',
      inStasis: options.inStasis ?? true,
      alive: true,
      commands: [],
    };
    this.channels.set(channel.id, channel);
    return channel;
  }

  route(req: RecordedRequest): Reply {
    const auth = basicCredentials(req.headers);
    if (auth?.user !== this.user || auth.password !== this.password)
      return message(401, 'Authentication required');
    if (req.path === '/ari/channels' && req.method === 'POST') return this.#originate(req);
    const match = /^\/ari\/channels\/([^/]+)(?:\/(redirect|continue))?$/.exec(req.path);
    if (!match) return message(404, 'Resource not found');
    const [, id = '', command] = match;
    const channel = this.channels.get(id);
    if (command === undefined) {
      if (req.method !== 'DELETE') return message(405, 'Method not allowed');
      const reason = req.query['reason'];
      if (reason !== undefined && !REASONS.has(reason))
        return message(400, 'Invalid reason for hangup provided');
      if (!channel?.alive) return message(404, 'Channel not found');
      channel.alive = false;
      return empty(204);
    }
    if (req.method !== 'POST') return message(405, 'Method not allowed');
    if (command === 'redirect' && !req.query['endpoint'])
      return message(400, 'Endpoint parameter not provided');
    if (!channel?.alive) return message(404, 'Channel not found');
    if (!channel.inStasis) return message(409, 'Channel not in a Stasis application');
    if (command === 'redirect') {
      const technology = (req.query['endpoint'] ?? '').split('/')[0];
      if (technology !== channel.technology)
        return message(422, 'Endpoint technology does not match channel');
    }
    channel.commands.push({ command, query: req.query });
    return empty(204);
  }

  #originate(req: RecordedRequest): Reply {
    const endpoint = req.query['endpoint'];
    if (!endpoint) return message(400, 'Endpoint must be specified');
    if (req.body !== '' && !contentTypeIs(req, 'application/json')) return message(400, 'Body must be JSON');
    const variables = (req.json as { variables?: unknown } | undefined)?.variables;
    const channel: AsteriskFakeChannel = {
      id: randomUUID(),
      technology: endpoint.split('/')[0] ?? '',
      inStasis: false,
      alive: true,
      commands: [],
      originated: { query: req.query, variables },
    };
    this.channels.set(channel.id, channel);
    return json(200, {
      id: channel.id,
      name: `${endpoint}-00000001`,
      state: 'Down',
      caller: { name: '', number: req.query['callerId'] ?? '' },
      connected: { name: '', number: '' },
      dialplan: {
        context: req.query['context'] ?? 'default',
        exten: req.query['extension'] ?? 's',
        priority: Number(req.query['priority'] ?? 1),
      },
      creationtime: new Date().toISOString(),
      language: 'en',
    });
  }

  async close(): Promise<void> {
    await this.server.close();
  }
}
