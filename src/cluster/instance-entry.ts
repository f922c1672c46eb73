/**
 * An instance's entry in the registry, as read from Redis: anyone who can write to Redis can write one,
 * so nothing in it is trusted before it is bounded and checked. An entry is read only when it is at most
 * `INSTANCE_ENTRY_MAX_BYTES` (its size is asked of Redis first: a larger one never crosses the wire, let
 * alone reaches `JSON.parse`), its id must be the one it is filed under, and its URL a plain `http(s)`
 * origin with no credentials (without a cluster token, a loopback one: a tokenless cluster is one
 * machine's). Ids in the set of instances are bounded the same way before they name a key.
 */
import { z } from 'zod';
import { isLoopbackHost } from '../http/web-guard.js';

/** What an instance holds, by kind: a hash of ids to instances in Redis for each. */
export type HoldingKind = 'calls' | 'guilds' | 'shards';

/** One instance of the cluster, as its registry entry names it. */
export interface InstanceInfo {
  readonly id: string;
  /** `http://host:port`, where the other instances send requests for what this one holds. */
  readonly url: string;
  readonly startedAt: string;
}

/** Far more than an entry this code writes (`{id, url, started_at}`: an id ≤ 255, a URL ≤ 2048). */
export const INSTANCE_ENTRY_MAX_BYTES = 4096;
/** Letters, digits, `.`, `_`, `-`: what `<hostname>-<pid>`, INSTANCE_ID and `…-shard-<n>` are made of. */
export const INSTANCE_ID = /^[A-Za-z0-9._-]{1,255}$/;
const URL_MAX_CHARS = 2048;

const entrySchema = z.object({
  id: z.string().regex(INSTANCE_ID),
  url: z.string().max(URL_MAX_CHARS),
  started_at: z.string().max(64).optional(),
});

export type EntryVerdict =
  { readonly ok: true; readonly info: InstanceInfo } | { readonly ok: false; readonly reason: string };

/**
 * The address requests are sent to, or why there is none: `http:` or `https:`, a host, no user or
 * password (they would be sent), no query or fragment. `loopbackOnly`: the host must be this machine.
 */
export function peerUrl(raw: string, loopbackOnly: boolean): { url: string } | { reason: string } {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { reason: 'its url is not a URL' };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { reason: 'its url is not http(s)' };
  if (url.hostname === '') return { reason: 'its url has no host' };
  if (url.username !== '' || url.password !== '') return { reason: 'its url carries credentials' };
  if (url.search !== '' || url.hash !== '') return { reason: 'its url has a query or fragment' };
  if (loopbackOnly && !isLoopbackHost(url.hostname))
    return {
      reason: 'its url is not loopback, and without CLUSTER_TOKEN only loopback instances are trusted',
    };
  return { url: url.href };
}

/** The entry filed under `instance:{id}`, checked (its size was, by `readEntries`). */
export function parseEntry(raw: string, id: string, loopbackOnly: boolean): EntryVerdict {
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    return { ok: false, reason: 'it is not JSON' };
  }
  const parsed = entrySchema.safeParse(json);
  if (!parsed.success)
    return { ok: false, reason: `it is not an instance entry (${parsed.error.issues[0]!.message})` };
  if (parsed.data.id !== id) return { ok: false, reason: 'its id is not the one it is filed under' };
  const url = peerUrl(parsed.data.url, loopbackOnly);
  if ('reason' in url) return { ok: false, reason: url.reason };
  return { ok: true, info: { id, url: url.url, startedAt: parsed.data.started_at ?? '' } };
}
