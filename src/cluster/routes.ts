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
 * - A request from another instance is answered locally once its signature verifies (`signature.ts`):
 *   the instance that forwarded it checked its client, so it passes the local routes' bearer check. A
 *   request with a signature that does not verify (another instance's, stale, replayed, forged) is 401
 *   `cluster_signature_invalid`, never treated as a client's.
 */
import type { Logger } from 'pino';
import {
  bearerAuthorized,
  pathSegments,
  sendBadPath,
  sendJson,
  sendUnauthorized,
  setPeerProof,
  type RouteHandler,
} from '../http/http.js';
import type { Route } from '../http/router.js';
import type { Forwarder } from './forward.js';
import { gather, type GatherOptions } from './gather.js';
import { ClusterUnavailableError } from './redis.js';
import type { HoldingKind, InstanceInfo } from './instance-entry.js';
import type { ClusterRegistry } from './registry.js';
import { CLUSTER_HEADER, type SignatureFailure, type SignatureVerifier } from './signature.js';

/** What this instance holds, as its local control API describes it. */
export interface LocalHoldings {
  has(id: string): boolean;
  /** The items of the local list answer (`GET /calls` → `calls`). */
  list(): Record<string, unknown>[];
}

export interface ClusterRoutesOptions {
  registry: ClusterRegistry;
  forwarder: Forwarder;
  verifier: SignatureVerifier;
  controlToken: string | undefined;
  calls: LocalHoldings;
  guilds: LocalHoldings;
  /** How long a forwarded Discord join may take to answer (the owner's own join deadline, and more). */
  joinAnswerTimeoutMs: number;
  /** How the lists of every instance are gathered (bounds and deadline). */
  list: Omit<GatherOptions, 'registry' | 'forwarder'>;
  logger: Logger;
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
  const logged = new Set<SignatureFailure>();
  return [
    { prefix: '/calls', handler: front(options, calls, logged) },
    { prefix: '/discord', handler: front(options, guilds, logged) },
  ];
}

function front(
  options: ClusterRoutesOptions,
  resource: Resource,
  logged: Set<SignatureFailure>,
): RouteHandler {
  return async (req, res, path) => {
    if (req.headers[CLUSTER_HEADER] !== undefined) {
      const verdict = options.verifier.verify(req);
      if (verdict.ok) {
        setPeerProof(req, verdict.proof);
        return false; // answered here, never forwarded again
      }
      // Once per kind of failure: a token that differs between instances fails every request.
      if (!logged.has(verdict.reason)) {
        logged.add(verdict.reason);
        options.logger.warn({ reason: verdict.reason, err: verdict.message }, 'cluster request refused');
      }
      req.resume();
      sendJson(res, 401, {
        error: 'cluster_signature_invalid',
        reason: verdict.reason,
        message: verdict.message,
      });
      return true;
    }
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
      const { registry, forwarder } = options;
      const list = { key: resource.listKey, path: resource.listPath, local: resource.local.list() };
      await gather({ registry, forwarder, ...options.list }, list, req, res);
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
    const action = parts[resource.idIndex + 1];
    await options.forwarder.forward(req, res, owner, `${resource.noun} ${id}`, {
      ...(action === 'say' ? { headersWithin: 'speech' as const } : {}),
      ...(action === 'join' ? { headersWithin: options.joinAnswerTimeoutMs } : {}),
    });
    return true;
  };
}
