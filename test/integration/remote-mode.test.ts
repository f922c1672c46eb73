/** With SPEECH_BASE_URL set, voxbridge mounts no local service and its client speaks to the remote one. */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startApp } from '../../src/app/app.js';
import { loadConfig } from '../../src/app/config.js';
import { createLogger } from '../../src/app/logger.js';
import { BUILT_IN_VOICE_ID } from '../../src/service/voices/builtin.js';
import { KEYS, NO_PHONE_BARGE_IN, startTestApp } from '../helpers/app.js';

describe('remote speech service', () => {
  it('uses SPEECH_BASE_URL with SPEECH_API_KEY and mounts nothing', async () => {
    const remote = await startTestApp(NO_PHONE_BARGE_IN);
    const dir = await mkdtemp(join(tmpdir(), 'voxbridge-remote-'));
    const app = await startApp(
      loadConfig({
        PORT: '0',
        DATA_DIR: dir,
        LOG_LEVEL: 'silent',
        SPEECH_BASE_URL: remote.url,
        SPEECH_API_KEY: KEYS.speechOnly,
        // One VAD worker, not one per core (about 2 s of CPU each): nothing here hears a caller.
        VAD_WORKERS: '1',
      }),
      { logger: createLogger('silent') },
    );
    try {
      expect(app.service).toBeUndefined();
      expect(app.generatedApiKey).toBeUndefined();
      const local = await fetch(`${app.url}/api/speech/v2/voices`, {
        headers: { 'xi-api-key': KEYS.speechOnly },
      });
      expect(local.status).toBe(404);
      await local.arrayBuffer();
      const speech = await app.client.synthesize({
        voiceId: BUILT_IN_VOICE_ID,
        text: 'Spoken far away.',
        outputFormat: 'pcm_24000',
      });
      expect(speech.audio.length).toBeGreaterThan(10_000);
      // The remote service saw our key's permissions: speech only.
      await expect(app.client.listVoices()).rejects.toMatchObject({
        status: 403,
        code: 'missing_permissions',
      });
    } finally {
      await app.close();
      await remote.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
