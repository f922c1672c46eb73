/**
 * The control API of the whole cluster, on every instance: mounted in front of the local `/calls` and
 * `/discord` routes, it lets through what this instance answers itself and sends the rest where it
 * belongs.
 *
 * - `GET /calls` and `GET /discord/guilds` gather the lists of every live instance, each item with
 *   its `instance`; an instance that does not answer is named in `unreachable_instances`.
 * - `/calls/{id}…` and `/discord/guilds/{id}…` for an id held elsewhere are forwarded to its holder;
 *   held here, or held nowhere, they fall through to the local routes (which answer or 404). A `join`
 *   for a guild nobody holds goes to the instance running the guild's shard, when the bot is sharded.
 * - While Redis is unreachable, a request for an id this instance does not hold answers 503
 *   `cluster_unavailable`: it may be held elsewhere, so it is not a 404.
 * - A request from another instance (valid `x-voxbridge-cluster`) is always answered locally.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  bearerAuthorized,
  pathSegments,
  secretEquals,
  sendBadPath,
  sendJson,
  sendUnauthorized,
  type RouteHandler,
} from '../http/http.js';
import type { Route } from '../http/router.js';
import { CLUSTER_HEADER, type Forwarder } from './forward.js';
import { ClusterUnavailableError } from './redis.js';
import type { ClusterRegistry, HoldingKind, InstanceInfo } from './registry.js';

/** What this instance holds, as its local control API describes it. */
export interface LocalHoldings {
  has(id: string): boolean;
  /** The items of the local list answer (`GET /calls` → `calls`). */
  list(): Record<string, unknown>[];
}

export interface ClusterRoutesOptions {
  registry: ClusterRegistry;
  forwarder: Forwarder;
  controlToken: string | undefined;
  clusterToken: string | undefined;
  calls: LocalHoldings;
  guilds: LocalHoldings;
  /** How long a list waits for each other instance. */
  listTimeoutMs: number;
}

/** Whether `req` comes from another instance of this cluster. */
export function fromCluster(req: IncomingMessage, clusterToken: string | undefined): boolean {
  const given = req.headers[CLUSTER_HEADER];
  if (typeof given !== 'string') return false;
  return clusterToken === undefined || secretEquals(given, clusterToken);
}

interface Resource {
  readonly kind: HoldingKind;
  /** The list's key in the answer, and its path under the mount. */
  readonly listKey: string;
  readonly listPath: string;
  readonly noun: string;
  /** Path segments of the mount (after the prefix) up to the id; the id's index. */
  readonly idIndex: number;
  readonly local: LocalHoldings;
}

export function clusterRoutes(options: ClusterRoutesOptions): Route[] {
  const calls: Resource = {
    kind: 'calls',
    listKey: 'calls',
    listPath: '/calls',
    noun: 'call',
    idIndex: 0,
    local: options.calls,
  };
  const guilds: Resource = {
    kind: 'guilds',
    listKey: 'guilds',
    listPath: '/discord/guilds',
    noun: 'guild',
    idIndex: 1,
    local: options.guilds,
  };
  return [
    { prefix: '/calls', handler: front(options, calls) },
    { prefix: '/discord', handler: front(options, guilds) },
  ];
}

function front(options: ClusterRoutesOptions, resource: Resource): RouteHandler {
  return async (req, res, path) => {
    if (fromCluster(req, options.clusterToken)) return false;
    const parts = pathSegments(path);
    if (!parts) return sendBadPath(res);
    if (resource.kind === 'guilds' && parts[0] !== 'guilds') return false;
    // Everything below answers (or forwards) for the client: it must be allowed to ask.
    if (!bearerAuthorized(req, options.controlToken)) {
      sendUnauthorized(res);
      return true;
    }
    if (parts.length === resource.idIndex) {
      if ((req.method ?? 'GET') !== 'GET') return false; // the local route answers 405
      await gather(options, resource, req, res);
      return true;
    }
    const id = parts[resource.idIndex]!;
    if (resource.local.has(id)) return false;
    let owner: InstanceInfo | undefined;
    try {
      owner = await options.registry.locate(resource.kind, id);
    } catch (error) {
      if (!(error instanceof ClusterUnavailableError)) throw error;
      sendJson(
        res,
        503,
        {
          error: 'cluster_unavailable',
          message: `${resource.noun} ${id} is not on this instance, and the cluster registry (Redis) cannot be reached to find it: ${error.message}`,
        },
        { 'retry-after': '2' },
      );
      return true;
    }
    // A guild nobody is in yet is joined by the instance running its shard (a sharded bot).
    if (!owner && resource.kind === 'guilds' && parts[resource.idIndex + 1] === 'join')
      owner = await options.registry.locateShardOf(id).catch(() => undefined);
    if (!owner || owner.id === options.registry.self.id) return false; // held nowhere: the local 404
    await options.forwarder.forward(req, res, owner, `${resource.noun} ${id}`);
    return true;
  };
}

/** The list answer of every live instance, merged, each item naming its instance. */
async function gather(
  options: ClusterRoutesOptions,
  resource: Resource,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const { registry, forwarder } = options;
  const self = registry.self;
  const others = registry.available
    ? (await registry.currentInstances()).filter((i) => i.id !== self.id)
    : [];
  const answers = await Promise.allSettled(
    others.map((instance) =>
      forwarder.getJson(instance, resource.listPath, req.headers.authorization, options.listTimeoutMs),
    ),
  );
  const items = resource.local.list().map((item) => ({ ...item, instance: self.id }));
  const unreachable: string[] = [];
  for (const [i, answer] of answers.entries()) {
    const instance = others[i]!;
    const list =
      answer.status === 'fulfilled' ? (answer.value as Record<string, unknown>)[resource.listKey] : undefined;
    if (!Array.isArray(list)) {
      // One that left since the last heartbeat is simply gone; one still registered is unreachable.
      if (await registry.stillLive(instance.id)) unreachable.push(instance.id);
      continue;
    }
    for (const item of list as unknown[])
      if (item !== null && typeof item === 'object')
        items.push({ ...(item as Record<string, unknown>), instance: instance.id });
  }
  sendJson(res, 200, {
    [resource.listKey]: items,
    cluster: {
      instances: 1 + others.length,
      registry: registry.available ? 'ok' : 'unreachable',
      unreachable_instances: unreachable,
    },
  });
}
