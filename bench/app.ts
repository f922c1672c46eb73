/** The app as the benchmarks run it: port 0, a temporary data directory, silent logs, a fixed key. */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startApp, type App } from '../src/app/app.js';
import { loadConfig } from '../src/app/config.js';
import { createLogger } from '../src/app/logger.js';

export const BENCH_KEY = 'bench-key-0123456789abcdef';

export interface BenchApp {
  app: App;
  dir: string;
  close(): Promise<void>;
}

/** `overlay` is merged over config/default.yaml, as a user's VOXBRIDGE_CONFIG file would be. */
export async function startBenchApp(
  name: string,
  overlay: Record<string, unknown> = {},
  env: Record<string, string> = {},
): Promise<BenchApp> {
  const dir = await mkdtemp(join(tmpdir(), `voxbridge-bench-${name}-`));
  const file = join(dir, 'bench.json');
  await writeFile(file, JSON.stringify(overlay));
  const app = await startApp(
    loadConfig({
      PORT: '0',
      DATA_DIR: dir,
      LOG_LEVEL: 'silent',
      SPEECH_API_KEY: BENCH_KEY,
      VOXBRIDGE_CONFIG: file,
      ...env,
    }),
    { logger: createLogger('silent') },
  );
  return {
    app,
    dir,
    async close() {
      await app.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
