/**
 * Who holds what, in Redis: every instance (its id and the URL the others reach it at) and the calls
 * and guilds each holds. An instance renews its own entry every `heartbeatMs`; the entry expires
 * `ttlMs` after the last renewal, so a killed instance leaves every view within `ttlMs + heartbeatMs`.
 * A graceful stop removes its entries at once.
 *
 * Keys (under the configured prefix):
 *   instance:{id}   JSON {id, url, started_at}, expiring          (one per instance)
 *   instances       set of instance ids                            (pruned of expired ones)
 *   calls, guilds,  hashes: call, guild or shard id → instance id (pruned of dead owners)
 *   shards
 *   shard-count     how many shards the Discord bot runs with (written by its shards)
 *
 * What is read from Redis is bounded before it is used (`instance-entry.ts`): at most `maxInstances`
 * instances are considered, each entry is size-checked before it is read and validated after, a
 * holder's id is read only when it can be one. An entry skipped is logged once, not every heartbeat.
 *
 * When a renewal finds its entry gone (Redis restarted, or this process was paused past the TTL), the
 * instance writes everything it holds again: a restarted Redis is repopulated within one heartbeat.
 * What must arrive never rides on pub/sub (which drops messages to absent subscribers): lookups read
 * the hashes, and requests are forwarded over HTTP, which answers or fails.
 */
import type { Logger } from 'pino';
import type { HoldingKind, InstanceInfo } from './instance-entry.js';
import type { RedisConnection } from './redis.js';
import { RegistryReads } from './registry-reads.js';

/** What an instance holds: phone calls, Discord guilds with a voice connection, Discord shards it runs. */
const KINDS: readonly HoldingKind[] = ['calls', 'guilds', 'shards'];

export type ClaimResult = { readonly ok: true } | { readonly ok: false; readonly owner: InstanceInfo };

export interface RegistryOptions {
  redis: RedisConnection;
  self: InstanceInfo;
  keyPrefix: string;
  heartbeatMs: number;
  ttlMs: number;
  /** Instances considered at most (this one aside): what a list gathers from, what a lookup trusts. */
  maxInstances: number;
  /** Only instances on this machine are trusted (a cluster without a token). */
  loopbackOnly: boolean;
  logger: Logger;
}

/** A shard count is a few digits; more than this of `shard-count` is not read. */
const SHARD_COUNT_MAX_CHARS = 16;

/** Deletes a holding only if this instance still holds it (another may have taken it over). */
const RELEASE_SCRIPT = `if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then return redis.call('HDEL', KEYS[1], ARGV[1]) end return 0`;

export class ClusterRegistry {
  private readonly held: Record<HoldingKind, Set<string>> = {
    calls: new Set(),
    guilds: new Set(),
    shards: new Set(),
  };
  /** The bot's shard count, when this instance runs one of its shards. */
  private shardCount: number | undefined;
  /** Live instances as of the last heartbeat, this one included. */
  private live = new Map<string, InstanceInfo>();
  private timer: NodeJS.Timeout | undefined;
  private beats = 0;
  private beating: Promise<void> | undefined;
  private registeredOnce = false;
  private stopped = false;
  private readonly reads: RegistryReads;
  private readonly keys: {
    readonly self: string;
    readonly instances: string;
    readonly sweep: string;
    readonly shardCount: string;
    instance(id: string): string;
    holdings(kind: HoldingKind): string;
  };
  private readonly onUp = (): void => void this.heartbeat();

  constructor(private readonly options: RegistryOptions) {
    const p = options.keyPrefix;
    this.keys = {
      self: `${p}instance:${options.self.id}`,
      instances: `${p}instances`,
      sweep: `${p}sweep`,
      shardCount: `${p}shard-count`,
      instance: (id) => `${p}instance:${id}`,
      holdings: (kind) => `${p}${kind}`,
    };
    this.live.set(options.self.id, options.self);
    this.reads = new RegistryReads({
      redis: options.redis,
      selfId: options.self.id,
      keys: this.keys,
      maxInstances: options.maxInstances,
      loopbackOnly: options.loopbackOnly,
      logger: options.logger,
    });
  }

  get self(): InstanceInfo {
    return this.options.self;
  }

  /** Whether Redis is reachable now (the cluster is degraded when it is not). */
  get available(): boolean {
    return this.options.redis.up;
  }

  /** Live instances as Redis has them now (this one first); as of the last heartbeat if Redis cannot say. */
  async currentInstances(): Promise<InstanceInfo[]> {
    await this.refreshLive().catch(() => undefined);
    return this.instances();
  }

  /** Live instances as of the last heartbeat (this one first). */
  instances(): InstanceInfo[] {
    return [this.self, ...[...this.live.values()].filter((i) => i.id !== this.self.id)];
  }

  /** Registers now if Redis is up, then renews every heartbeat (and at once whenever Redis comes back). */
  start(): void {
    this.options.redis.on('up', this.onUp);
    this.timer = setInterval(() => void this.heartbeat(), this.options.heartbeatMs);
    this.timer.unref();
    void this.heartbeat();
  }

  /**
   * Records that this instance holds `id`. The first live holder wins: when another live instance
   * already holds it, the answer names that instance and nothing is recorded. A holder that is no
   * longer live is replaced. While Redis is down the claim is kept locally and written when it returns.
   */
  async claim(kind: HoldingKind, id: string): Promise<ClaimResult> {
    this.held[kind].add(id);
    const { redis } = this.options;
    if (!redis.up) return { ok: true };
    const key = this.keys.holdings(kind);
    const me = this.self.id;
    try {
      if (await redis.run('claim', () => redis.client.hSetNX(key, id, me))) return { ok: true };
      const ownerId = await this.reads.holder('claim', kind, id);
      if (ownerId === undefined || ownerId === me) {
        await redis.run('claim', () => redis.client.hSet(key, id, me));
        return { ok: true };
      }
      const owner = await this.reads.entry('claim', ownerId);
      if (owner) {
        this.held[kind].delete(id);
        return { ok: false, owner };
      }
      // The holder is gone (expired): take it over.
      await redis.run('claim', () => redis.client.hSet(key, id, me));
      return { ok: true };
    } catch (error) {
      this.options.logger.warn(
        { kind, id, err: (error as Error).message },
        'claim not recorded; retried when redis returns',
      );
      return { ok: true };
    }
  }

  /** This instance no longer holds `id`. */
  async release(kind: HoldingKind, id: string): Promise<void> {
    if (!this.held[kind].delete(id)) return;
    const { redis } = this.options;
    if (!redis.up) return;
    await redis
      .run('release', () =>
        redis.client.eval(RELEASE_SCRIPT, {
          keys: [this.keys.holdings(kind)],
          arguments: [id, this.self.id],
        }),
      )
      .catch(() => undefined); // a leftover is pruned by the sweep once this instance is gone
  }

  /**
   * The live instance holding `id`, or undefined when none does. Throws `ClusterUnavailableError`
   * while Redis is unreachable: the caller cannot know, and must not answer 404.
   */
  async locate(kind: HoldingKind, id: string): Promise<InstanceInfo | undefined> {
    if (this.held[kind].has(id)) return this.self;
    const ownerId = await this.reads.holder('lookup', kind, id);
    if (ownerId === undefined) return undefined;
    if (ownerId === this.self.id) return undefined; // a leftover of this instance: it holds nothing now
    const known = this.live.get(ownerId);
    if (known) return known;
    // Not live at the last heartbeat: it may have just started, or be gone.
    return this.reads.entry('lookup', ownerId);
  }

  /** This instance runs shard `id` of `count` of the Discord bot: guilds of that shard are joined here. */
  async holdShard(id: number, count: number): Promise<void> {
    this.shardCount = count;
    await this.claim('shards', String(id));
    const { redis } = this.options;
    if (redis.up)
      await redis
        .run('shards', () => redis.client.set(this.keys.shardCount, String(count)))
        .catch(() => undefined);
  }

  /**
   * The instance running the shard that guild `guildId` belongs to (Discord's `(id >> 22) % count`), or
   * undefined when the bot runs no shards in the cluster. Throws like `locate`.
   */
  async locateShardOf(guildId: string): Promise<InstanceInfo | undefined> {
    if (!/^\d{1,25}$/.test(guildId)) return undefined;
    const { redis } = this.options;
    const count = Number(
      await redis.run('shards', () =>
        redis.client.getRange(this.keys.shardCount, 0, SHARD_COUNT_MAX_CHARS - 1),
      ),
    );
    if (!Number.isInteger(count) || count < 1) return undefined;
    const shard = (BigInt(guildId) >> 22n) % BigInt(count);
    if (this.held.shards.has(String(shard))) return this.self;
    return this.locate('shards', String(shard));
  }

  /**
   * Which of `ids` are still registered, asked of Redis now in one round trip (the live list is as of
   * the last heartbeat): an instance that left since is dropped from it. All of them when Redis cannot say.
   */
  async stillLive(ids: readonly string[]): Promise<Set<string>> {
    const { redis } = this.options;
    if (ids.length === 0) return new Set();
    let found: unknown[];
    try {
      const multi = redis.client.multi();
      for (const id of ids) multi.exists(this.keys.instance(id));
      found = await redis.run('instance', () => multi.exec());
    } catch {
      return new Set(ids);
    }
    const live = new Set<string>();
    ids.forEach((id, i) => {
      if (Number(found[i]) > 0) live.add(id);
      else this.live.delete(id);
    });
    return live;
  }

  /** Leaves the cluster: its entry and everything it held are removed at once (SIGTERM). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    const { redis } = this.options;
    redis.off('up', this.onUp);
    await this.beating;
    if (!redis.up) return;
    const multi = redis.client.multi().del(this.keys.self).sRem(this.keys.instances, this.self.id);
    for (const kind of KINDS)
      for (const id of this.held[kind])
        multi.eval(RELEASE_SCRIPT, { keys: [this.keys.holdings(kind)], arguments: [id, this.self.id] });
    await redis
      .run('leave', () => multi.exec())
      .catch((error: unknown) =>
        this.options.logger.warn({ err: (error as Error).message }, 'could not leave the cluster cleanly'),
      );
  }

  /** Renews this instance's entry (or writes everything again), then refreshes the live instances. */
  heartbeat(): Promise<void> {
    // One at a time: `stop()` waits for the one under way, which must not write the entry back after it.
    this.beating ??= this.beat().finally(() => (this.beating = undefined));
    return this.beating;
  }

  private async beat(): Promise<void> {
    const { redis, ttlMs, logger } = this.options;
    if (this.stopped || !redis.up) return;
    try {
      const entry = JSON.stringify({ id: this.self.id, url: this.self.url, started_at: this.self.startedAt });
      // The set of instances is renewed too: another instance may have pruned this one from it in a
      // moment its entry was missing (a late heartbeat), and nothing else would put it back.
      const [renewed] = await redis.run('heartbeat', () =>
        redis.client
          .multi()
          .set(this.keys.self, entry, { PX: ttlMs, XX: true })
          .sAdd(this.keys.instances, this.self.id)
          .exec(),
      );
      if (this.stopped) return;
      // The first heartbeat of a process always registers in full (a predecessor may have left an entry).
      if (renewed === null || !this.registeredOnce) await this.register(entry);
      await this.refreshLive();
      if (++this.beats % 5 === 0) await this.sweep();
    } catch (error) {
      logger.debug({ err: (error as Error).message }, 'heartbeat missed');
    }
  }

  private async register(entry: string): Promise<void> {
    const { redis, ttlMs, logger } = this.options;
    const multi = redis.client
      .multi()
      .set(this.keys.self, entry, { PX: ttlMs })
      .sAdd(this.keys.instances, this.self.id);
    for (const kind of KINDS)
      for (const id of this.held[kind]) multi.hSet(this.keys.holdings(kind), id, this.self.id);
    if (this.shardCount !== undefined) multi.set(this.keys.shardCount, String(this.shardCount));
    await redis.run('register', () => multi.exec());
    if (!this.registeredOnce) {
      // A process that restarts under the same id (a shard respawned, INSTANCE_ID fixed) holds nothing
      // of what its predecessor held: those entries go now, not when a request finds them stale.
      this.registeredOnce = true;
      await this.dropLeftovers();
    }
    logger.info(
      {
        instance: this.self.id,
        url: this.self.url,
        calls: this.held.calls.size,
        guilds: this.held.guilds.size,
      },
      'registered in the cluster',
    );
  }

  private async dropLeftovers(): Promise<void> {
    const { redis, logger } = this.options;
    let dropped = 0;
    for (const kind of KINDS) {
      const all = await redis.run('leftovers', () => redis.client.hGetAll(this.keys.holdings(kind)));
      for (const [id, owner] of Object.entries(all))
        if (owner === this.self.id && !this.held[kind].has(id)) {
          await redis.run('leftovers', () =>
            redis.client.eval(RELEASE_SCRIPT, { keys: [this.keys.holdings(kind)], arguments: [id, owner] }),
          );
          dropped++;
        }
    }
    if (dropped > 0) logger.info({ dropped }, 'dropped what a previous process under this id held');
  }

  private async refreshLive(): Promise<void> {
    const { redis } = this.options;
    const ids = await this.reads.instanceIds();
    const { valid, present } = await this.reads.entries('instances', ids);
    this.live = new Map<string, InstanceInfo>([[this.self.id, this.self], ...valid]);
    const gone = ids.filter((id) => !present.has(id));
    if (gone.length) await redis.run('prune', () => redis.client.sRem(this.keys.instances, gone));
  }

  /** One instance at a time drops holdings whose instance is gone (a killed instance's calls). */
  private async sweep(): Promise<void> {
    const { redis, heartbeatMs } = this.options;
    const locked = await redis.run('sweep', () =>
      redis.client.set(this.keys.sweep, this.self.id, { PX: heartbeatMs * 4, NX: true }),
    );
    if (locked === null) return;
    for (const kind of KINDS) {
      const all = await redis.run('sweep', () => redis.client.hGetAll(this.keys.holdings(kind)));
      // Owners not live at the last heartbeat, asked again now (whether their entry exists, never the
      // entry itself: it may be huge): one may have registered since. A bounded number per sweep.
      const suspects = [...new Set(Object.values(all))]
        .filter((owner) => !this.live.has(owner))
        .slice(0, this.options.maxInstances);
      if (suspects.length === 0) continue;
      const alive = await this.stillLive(suspects);
      const dead = new Set(suspects.filter((owner) => !alive.has(owner)));
      for (const [id, owner] of Object.entries(all))
        if (dead.has(owner))
          await redis.run('sweep', () =>
            redis.client.eval(RELEASE_SCRIPT, { keys: [this.keys.holdings(kind)], arguments: [id, owner] }),
          );
    }
  }
}
