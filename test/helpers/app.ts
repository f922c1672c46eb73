import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startApp, type App, type StartOptions } from '../../src/app/app.js';
import { loadConfig } from '../../src/app/config.js';
import { createLogger } from '../../src/app/logger.js';

/** Keys every test app has: the main key (all scopes) and three narrower ones. */
export const KEYS = {
  main: 'test-main-key-0123456789abcdef',
  readonly: 'test-readonly-key-0123456789',
  speechOnly: 'test-speech-only-key-012345',
  other: 'test-other-tenant-key-012345',
} as const;

/**
 * The overlay of an app that no phone caller speaks to (a test of the speech service, its voices or
 * its clients, or of Discord, whose barge-in is its own, `discord.bargeIn`): the calls' barge-in off,
 * so no VAD worker loads Silero for nothing (about 2 s of CPU an app). Spread it into the overlay.
 */
export const NO_PHONE_BARGE_IN = { calls: { bargeIn: { enabled: false } } } as const;

export interface TestApp {
  app: App;
  /** `http://127.0.0.1:port` */
  url: string;
  /** `${url}/api/speech` */
  api: string;
  dataDir: string;
  close(options?: { keepData?: boolean }): Promise<void>;
}

/**
 * The real app on port 0 with the embedded service, configured the way a user would: an overlay file
 * named by VOXBRIDGE_CONFIG and secrets in the environment.
 */
export async function startTestApp(
  overlay: Record<string, unknown> = {},
  dataDir?: string,
  env: Record<string, string> = {},
  options: Omit<StartOptions, 'logger'> & { logger?: StartOptions['logger'] } = {},
): Promise<TestApp> {
  const dir = dataDir ?? (await mkdtemp(join(tmpdir(), 'voxbridge-test-')));
  const configFile = join(dir, 'test-config.json');
  const service = (overlay['service'] as Record<string, unknown> | undefined) ?? {};
  const calls = (overlay['calls'] as Record<string, unknown> | undefined) ?? {};
  const bargeIn = (calls['bargeIn'] as Record<string, unknown> | undefined) ?? {};
  await writeFile(
    configFile,
    JSON.stringify({
      ...overlay,
      // One worker of each kind unless a test asks for more: every worker loads its WASM (Silero's
      // runtime, warmed up; the engines), and V8 compiles it again in the background, 1.5 to 2 s of
      // CPU per worker for every app a test starts (the defaults are one per core). A test's few
      // calls and requests do not need a second one.
      calls: { ...calls, bargeIn: { workers: 1, ...bargeIn } },
      service: {
        workers: 1,
        keys: [
          { id: 'readonly', keyEnv: 'TEST_READONLY_KEY', scopes: ['voices:read'] },
          { id: 'speech-only', keyEnv: 'TEST_SPEECH_ONLY_KEY', scopes: ['speech'] },
          { id: 'other', keyEnv: 'TEST_OTHER_KEY', scopes: ['speech', 'voices:read', 'voices:write'] },
        ],
        ...service,
      },
    }),
  );
  const loaded = loadConfig({
    VOXBRIDGE_CONFIG: configFile,
    PORT: '0',
    DATA_DIR: dir,
    LOG_LEVEL: 'silent',
    SPEECH_API_KEY: KEYS.main,
    TEST_READONLY_KEY: KEYS.readonly,
    TEST_SPEECH_ONLY_KEY: KEYS.speechOnly,
    TEST_OTHER_KEY: KEYS.other,
    ...env,
  });
  const app = await startApp(loaded, {
    ...options,
    logger: options.logger ?? createLogger(process.env['TEST_LOG_LEVEL'] ?? 'silent'),
  });
  return {
    app,
    url: app.url,
    api: `${app.url}/api/speech`,
    dataDir: dir,
    async close(options) {
      await app.close();
      if (!options?.keepData && !dataDir) await rm(dir, { recursive: true, force: true });
    },
  };
}
