/**
 * The registry's reads of what other instances wrote, each bounded before anything is sized by it: a
 * few hundred ids at most, each id and holder no longer than an id can be, each entry size-checked in
 * Redis before it crosses the wire (a Lua script answers its size instead of a larger one), then
 * validated (`instance-entry.ts`). An entry skipped is logged once, not on every heartbeat.
 */
import type { Logger } from 'pino';
import { INSTANCE_ENTRY_MAX_BYTES, parseEntry } from './instance-entry.js';
import type { RedisConnection } from './redis.js';
import type { HoldingKind, InstanceInfo } from './instance-entry.js';

/** Longer than any instance id (`INSTANCE_ID`): a member or holder past this is not read. */
const ID_MAX_CHARS = 255;

/**
 * KEYS: entries. ARGV[1]: the largest entry read. For each key, in order: the entry; or its size, when
 * larger (not read); or 0 when there is none (or it is not a string).
 */
const READ_ENTRIES_SCRIPT = `
local limit = tonumber(ARGV[1])
local out = {}
for i, key in ipairs(KEYS) do
  if redis.call('TYPE', key).ok ~= 'string' then
    out[i] = 0
  else
    local size = redis.call('STRLEN', key)
    if size > limit then out[i] = size else out[i] = redis.call('GET', key) end
  end
end
return out`;

/**
 * KEYS[1]: the set of instance ids. ARGV[1]: how many to return at most; ARGV[2]: the longest id.
 * At most that many members, drawn at random when there are more (SRANDMEMBER); members longer than an
 * id can be are removed from the set, never returned. The answer ends with how many there are in all.
 */
const READ_IDS_SCRIPT = `
if redis.call('TYPE', KEYS[1]).ok ~= 'set' then return {0} end
local ids = redis.call('SRANDMEMBER', KEYS[1], tonumber(ARGV[1]))
local longest = tonumber(ARGV[2])
local out = {}
for _, id in ipairs(ids) do
  if #id > longest then redis.call('SREM', KEYS[1], id) else out[#out + 1] = id end
end
out[#out + 1] = redis.call('SCARD', KEYS[1])
return out`;

/**
 * KEYS[1]: a hash of holdings. ARGV[1]: the field; ARGV[2]: the longest value read. The holder's id, or
 * nil when there is none or it is longer than an id can be (not read).
 */
const READ_HOLDER_SCRIPT = `
if redis.call('TYPE', KEYS[1]).ok ~= 'hash' then return nil end
if redis.call('HSTRLEN', KEYS[1], ARGV[1]) > tonumber(ARGV[2]) then return nil end
return redis.call('HGET', KEYS[1], ARGV[1])`;

export interface RegistryReadsOptions {
  redis: RedisConnection;
  selfId: string;
  keys: { readonly instances: string; instance(id: string): string; holdings(kind: HoldingKind): string };
  /** Instances considered at most (this one aside). */
  maxInstances: number;
  /** Only instances on this machine are trusted (a cluster without a token). */
  loopbackOnly: boolean;
  logger: Logger;
}

/** Entries read: the valid ones, and the ids whose entry exists at all (valid or skipped). */
export interface EntriesRead {
  readonly valid: Map<string, InstanceInfo>;
  readonly present: Set<string>;
}

export class RegistryReads {
  /** Entries skipped (id → why), each logged once; rebuilt on every refresh, so bounded like it. */
  private skipped = new Map<string, string>();
  /** Whether the last refresh found more instances than are considered (logged once per episode). */
  private overflowing = false;

  constructor(private readonly options: RegistryReadsOptions) {}

  /** Ids of other instances in the set, `maxInstances` at most (drawn at random when there are more). */
  async instanceIds(): Promise<string[]> {
    const { redis, keys, maxInstances, selfId, logger } = this.options;
    const answer = (await redis.run('instances', () =>
      redis.client.eval(READ_IDS_SCRIPT, {
        keys: [keys.instances],
        // One more than considered: this instance may be among those drawn.
        arguments: [String(maxInstances + 1), String(ID_MAX_CHARS)],
      }),
    )) as unknown[];
    const total = Number(answer.pop());
    if (total > maxInstances + 1 !== this.overflowing) {
      this.overflowing = !this.overflowing;
      if (this.overflowing)
        logger.warn(
          { registered: total, considered: maxInstances },
          'more instances registered than cluster.maxInstances: a random subset of them is considered',
        );
      else logger.info({ registered: total }, 'instances registered are within cluster.maxInstances again');
    }
    return answer
      .filter((id): id is string => typeof id === 'string' && id !== selfId)
      .slice(0, maxInstances);
  }

  /** The holder of `id` recorded in Redis: undefined when none, or when it cannot be an instance id. */
  async holder(what: string, kind: HoldingKind, id: string): Promise<string | undefined> {
    const { redis, keys } = this.options;
    const holder = await redis.run(what, () =>
      redis.client.eval(READ_HOLDER_SCRIPT, {
        keys: [keys.holdings(kind)],
        arguments: [id, String(ID_MAX_CHARS)],
      }),
    );
    return typeof holder === 'string' ? holder : undefined;
  }

  /** The valid entry of instance `id`, if any (a lookup between heartbeats). */
  async entry(what: string, id: string): Promise<InstanceInfo | undefined> {
    return (await this.entries(what, [id], false)).valid.get(id);
  }

  /**
   * The entries of `ids` (`maxInstances` at most). Each one skipped (too large: never read; not a valid
   * entry) is logged the first time it is seen. `refresh`: these are all the instances considered, and
   * what is skipped now replaces the record of what was.
   */
  async entries(what: string, ids: readonly string[], refresh = true): Promise<EntriesRead> {
    const { redis, keys, loopbackOnly, maxInstances, logger } = this.options;
    const read: EntriesRead = { valid: new Map(), present: new Set() };
    const skipped = refresh ? new Map<string, string>() : this.skipped;
    if (ids.length > 0) {
      const entries = (await redis.run(what, () =>
        redis.client.eval(READ_ENTRIES_SCRIPT, {
          keys: ids.slice(0, maxInstances).map((id) => keys.instance(id)),
          arguments: [String(INSTANCE_ENTRY_MAX_BYTES)],
        }),
      )) as unknown[];
      ids.slice(0, maxInstances).forEach((id, i) => {
        const raw = entries[i];
        if (raw === 0 || raw === undefined) return; // gone
        read.present.add(id);
        const verdict =
          typeof raw === 'string'
            ? parseEntry(raw, id, loopbackOnly)
            : { ok: false as const, reason: `it is ${Number(raw)} bytes, over ${INSTANCE_ENTRY_MAX_BYTES}` };
        if (verdict.ok) {
          read.valid.set(id, verdict.info);
          return;
        }
        const known = this.skipped.get(id);
        if (skipped.size < 2 * maxInstances) skipped.set(id, verdict.reason);
        if (known !== verdict.reason)
          logger.warn({ instance: id, reason: verdict.reason }, 'instance entry skipped');
      });
    }
    if (refresh) this.skipped = skipped;
    return read;
  }
}
