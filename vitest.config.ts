import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // Three files at once on two cores: most integration files wait on real time (audio played at
    // its pace, a timeout running out) far more than they compute, and one at a time (vitest's
    // default here, cores − 1) left the machine idle for most of the suite's ten minutes.
    maxWorkers: Number(process.env['VOXBRIDGE_TEST_WORKERS'] ?? 3),
    // A certificate for the fake Discord voice server (testkit/discord/voice-server.ts), trusted
    // by every worker through NODE_EXTRA_CA_CERTS.
    globalSetup: ['test/tls-setup.ts'],
  },
});
