/**
 * A list of the whole cluster (`GET /calls`, `GET /discord/guilds`): this instance's own, and each other
 * live instance's, asked over HTTP and merged, each item naming its instance. Every other instance is a
 * registry entry anyone with write access to Redis could have added, so the fan-out is bounded: the
 * registry considers `cluster.maxInstances` at most, `FANOUT_CONCURRENCY` are asked at once, the whole
 * of it ends within `timeoutMs` (those not answered by then are named as unreachable), each answer is
 * read up to `maxAnswerBytes`, and once `maxTotalBytes` came in all, the rest are not waited for.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { sendJson } from '../http/http.js';
import type { Forwarder } from './forward.js';
import type { InstanceInfo } from './instance-entry.js';
import type { ClusterRegistry } from './registry.js';

/** Instances asked at once for their list. */
export const FANOUT_CONCURRENCY = 8;

export interface GatherOptions {
  readonly registry: ClusterRegistry;
  readonly forwarder: Forwarder;
  /** The whole fan-out's deadline. */
  readonly timeoutMs: number;
  /** The largest list answer read from one instance. */
  readonly maxAnswerBytes: number;
  /** The most read from all of them together. */
  readonly maxTotalBytes: number;
}

export interface GatheredList {
  /** The list's key in the answer (`calls`), and its path (`/calls`). */
  readonly key: string;
  readonly path: string;
  /** This instance's own items. */
  readonly local: Record<string, unknown>[];
}

/** Answers `req` with the list of every live instance, merged. */
export async function gather(
  options: GatherOptions,
  list: GatheredList,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const { registry, forwarder } = options;
  const self = registry.self;
  const others = registry.available
    ? (await registry.currentInstances()).filter((i) => i.id !== self.id)
    : [];
  const stop = new AbortController();
  const onClose = (): void => stop.abort();
  res.once('close', onClose);
  const signal = AbortSignal.any([stop.signal, AbortSignal.timeout(options.timeoutMs)]);
  const bearer = req.headers.authorization !== undefined;
  const lists = new Map<string, unknown[]>();
  let remaining = options.maxTotalBytes;

  const ask = async (instance: InstanceInfo): Promise<void> => {
    const { value, bytes } = await forwarder.getJson(
      instance,
      list.path,
      bearer,
      options.maxAnswerBytes,
      signal,
    );
    remaining -= bytes;
    if (remaining < 0) {
      stop.abort(); // enough: the others are not waited for
      return;
    }
    const items = (value as Record<string, unknown> | null)?.[list.key];
    if (Array.isArray(items)) lists.set(instance.id, items);
  };
  const queue = others.values();
  const worker = async (): Promise<void> => {
    for (let next = queue.next(); !next.done && !signal.aborted; next = queue.next())
      await ask(next.value).catch(() => undefined); // not in `lists`: named below
  };
  try {
    await Promise.all(Array.from({ length: Math.min(FANOUT_CONCURRENCY, others.length) }, worker));
  } finally {
    res.off('close', onClose);
  }
  if (res.destroyed) return;

  const items = list.local.map((item) => ({ ...item, instance: self.id }));
  for (const [id, answered] of lists)
    for (const item of answered)
      if (item !== null && typeof item === 'object' && !Array.isArray(item))
        items.push({ ...(item as Record<string, unknown>), instance: id });
  // One that left since the last heartbeat is simply gone; one still registered is unreachable.
  const missing = others.filter((i) => !lists.has(i.id)).map((i) => i.id);
  const live = await registry.stillLive(missing);
  sendJson(res, 200, {
    [list.key]: items,
    cluster: {
      instances: 1 + others.length,
      registry: registry.available ? 'ok' : 'unreachable',
      unreachable_instances: missing.filter((id) => live.has(id)),
    },
  });
}
