/**
 * A sharded bot: discord.js's own `ShardingManager` starts each shard as a process running `file`
 * (voxbridge's entry point), which sees `SHARDING_MANAGER`, `SHARDS` and `SHARD_COUNT` and logs its
 * client in as that shard; a shard that dies is started again (the manager's `respawn`). Each shard
 * process gets the environment of this one plus what `env(shardId)` adds.
 */
import { ShardingManager, type Shard } from 'discord.js';
import type { Logger } from 'pino';

export interface ShardsOptions {
  /** The script each shard process runs. */
  file: string;
  token: string;
  /** A count, or `auto`: what Discord's `GET /gateway/bot` recommends (asked of `apiUrl`). */
  total: number | 'auto';
  /** The shards to run here; undefined: all. */
  shardIds: readonly number[] | undefined;
  /** Discord's REST API root (a proxy, a fake); undefined: Discord's own. */
  apiUrl: string | undefined;
  spawnDelayMs: number;
  /** How long a shard may take to become ready before it counts as failed. */
  readyTimeoutMs: number;
  env: (shardId: number) => Record<string, string>;
  logger: Logger;
}

export interface RunningShards {
  readonly total: number;
  readonly ids: readonly number[];
  close(): Promise<void>;
}

/** Discord's recommended shard count for this bot (`GET /gateway/bot`). */
export async function recommendedShards(token: string, apiUrl = 'https://discord.com/api'): Promise<number> {
  const res = await fetch(`${apiUrl}/v10/gateway/bot`, {
    headers: { authorization: `Bot ${token}` },
    signal: AbortSignal.timeout(10_000),
  });
  if (!res.ok)
    throw new Error(`Discord answered ${res.status} to GET /gateway/bot (is DISCORD_TOKEN right?)`);
  const { shards } = (await res.json()) as { shards?: unknown };
  if (typeof shards !== 'number' || !Number.isInteger(shards) || shards < 1 || shards > 10_000)
    throw new Error(`Discord recommended no usable shard count (${String(shards)})`);
  return shards;
}

export async function startShards(options: ShardsOptions): Promise<RunningShards> {
  const { logger } = options;
  const total =
    options.total === 'auto' ? await recommendedShards(options.token, options.apiUrl) : options.total;
  const ids = options.shardIds ?? [...Array(total).keys()];
  const manager = new ShardingManager(options.file, {
    token: options.token,
    totalShards: total,
    shardList: [...ids],
    mode: 'process',
    respawn: true,
    execArgv: process.execArgv,
  });
  manager.on('shardCreate', (shard: Shard) => {
    // `env` is what the shard process is forked with (this process's environment and the shard's ids).
    Object.assign(shard.env as Record<string, string>, options.env(shard.id));
    shard.on('spawn', () => logger.info({ shardId: shard.id, total }, 'Discord shard process started'));
    shard.on('death', () =>
      logger.warn({ shardId: shard.id }, 'Discord shard process exited; starting it again'),
    );
  });
  const stop = async (): Promise<void> => {
    manager.respawn = false;
    await Promise.all(
      [...manager.shards.values()].map(async (shard) => {
        const child = shard.process;
        if (!child || child.exitCode !== null || child.signalCode !== null) return;
        const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
        // The shard leaves its voice channels and the cluster on SIGTERM, as any instance does.
        child.kill('SIGTERM');
        await exited;
      }),
    );
  };
  try {
    await manager.spawn({ amount: total, delay: options.spawnDelayMs, timeout: options.readyTimeoutMs });
  } catch (error) {
    await stop(); // none left running (and respawning) behind a failed start
    throw error;
  }
  logger.info({ shards: ids, total }, 'Discord shards ready');
  return { total, ids, close: stop };
}
