/**
 * `npm start`'s process, started the way a user starts it: no key set, so one is generated and printed
 * once on the console, never in the structured log; SIGTERM exits 0.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compiledModule } from '../../src/paths.js';

let dataDir: string;
beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'voxbridge-main-'));
});
afterAll(async () => {
  await rm(dataDir, { recursive: true, force: true });
});

describe('the main process', () => {
  it('serves the embedded service with a generated key that never reaches the log', async () => {
    // A Discord token Discord will not accept (or cannot be asked about, offline): the bot says it is
    // not running, everything else runs, and the token is in no output.
    const discordToken = 'MTAwMDAwMDAwMDAwMDAwMDAx.GvbxTe.st-token-that-discord-rejects-0123456789';
    const child = spawn(process.execPath, [compiledModule('app/main.js').pathname], {
      env: {
        PATH: process.env['PATH'] ?? '',
        PORT: '0',
        DATA_DIR: dataDir,
        LOG_LEVEL: 'trace',
        DISCORD_TOKEN: discordToken,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      const deadline = Date.now() + 20_000;
      while (!/SPEECH_API_KEY=(\S+)/.test(stderr) || !/"url":"(http:[^"]+)"/.test(stdout)) {
        if (Date.now() > deadline) throw new Error(`no start within 20 s:\n${stdout}\n${stderr}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      const key = /SPEECH_API_KEY=(\S+)/.exec(stderr)![1]!;
      const url = /"url":"(http:[^"]+)"/.exec(stdout)![1]!;
      expect(key.length).toBeGreaterThanOrEqual(24);
      expect((await fetch(`${url}/healthz`)).status).toBe(200);

      const voices = await fetch(`${url}/api/speech/v2/voices`, {
        headers: { 'ServicePlatform-APIKey': key },
      });
      expect(voices.status).toBe(200);
      const speech = await fetch(
        `${url}/api/speech/v1/text-to-speech/voxbridge-default/stream?output_format=pcm_24000`,
        {
          method: 'POST',
          headers: { 'xi-api-key': key, 'content-type': 'application/json' },
          body: JSON.stringify({ text: 'It speaks out of the box.' }),
        },
      );
      expect(speech.status).toBe(200);
      expect((await speech.arrayBuffer()).byteLength).toBeGreaterThan(24_000);
      const refused = await fetch(`${url}/api/speech/v2/voices`, { headers: { 'xi-api-key': `${key}x` } });
      expect(refused.status).toBe(401);

      while (!stdout.includes('the Discord bot could not log in')) {
        if (Date.now() > deadline + 30_000) throw new Error(`no word about the Discord bot:\n${stdout}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      expect((await fetch(`${url}/discord/guilds`)).status).toBe(200);
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      expect(stdout + stderr).not.toContain(discordToken);
      expect(stdout + stderr).not.toContain(discordToken.split('.')[2]!);
      // Printed once on the console, and nowhere in the structured log, even at trace level.
      expect(stderr.split(key).length - 1).toBe(1);
      expect(stdout).not.toContain(key);
      expect(stdout).toContain('"msg":"voxbridge ready"');
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('refuses a bad configuration with a message naming the key', async () => {
    const child = spawn(process.execPath, [compiledModule('app/main.js').pathname], {
      env: { PATH: process.env['PATH'] ?? '', PORT: 'not-a-port', DATA_DIR: dataDir },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
    expect(code).toBe(2);
    expect(stderr).toMatch(/server\.port/);
  });

  it('refuses to listen beyond loopback without the tokens, saying what to set', async () => {
    const child = spawn(process.execPath, [compiledModule('app/main.js').pathname], {
      env: { PATH: process.env['PATH'] ?? '', HOST: '0.0.0.0', PORT: '0', DATA_DIR: dataDir },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
    expect(code).toBe(2);
    expect(stderr).toMatch(/refusing to listen on 0\.0\.0\.0.*CONTROL_TOKEN.*MEDIA_STREAM_TOKEN/s);
  });
});
