#!/usr/bin/env node
/** `npm start`: one process, one HTTP server, the embedded speech service unless SPEECH_BASE_URL is set. */
import { ConfigError, loadConfig } from './config.js';
import { startApp } from './app.js';
import { createLogger } from './logger.js';

async function main(): Promise<void> {
  let loaded;
  try {
    loaded = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`voxbridge: ${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }
  const logger = createLogger(loaded.config.logLevel);
  const app = await startApp(loaded, { logger });
  if (app.generatedApiKey) {
    // Printed once, to the console only: the structured log never carries a key.
    process.stderr.write(
      `\nvoxbridge: no SPEECH_API_KEY was set; this run's embedded speech service accepts this generated key:\n` +
        `  export SPEECH_API_KEY=${app.generatedApiKey}\n` +
        `  curl -H "ServicePlatform-APIKey: $SPEECH_API_KEY" ${app.url}/api/speech/v2/voices\n\n`,
    );
  }
  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) {
      logger.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    stopping = true;
    logger.info({ signal, graceMs: loaded.config.server.shutdownGraceMs }, 'shutting down');
    app.close({ graceMs: loaded.config.server.shutdownGraceMs }).then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

main().catch((error: unknown) => {
  process.stderr.write(
    `voxbridge: failed to start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exit(1);
});
