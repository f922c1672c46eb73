import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // A certificate for the fake Discord voice server (testkit/discord/voice-server.ts), trusted
    // by every worker through NODE_EXTRA_CA_CERTS.
    globalSetup: ['test/tls-setup.ts'],
  },
});
