import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../src/app/config.js';

async function overlay(text: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'voxbridge-config-'));
  const path = join(dir, 'overlay.yaml');
  await writeFile(path, text);
  return path;
}

describe('loadConfig', () => {
  it('has working defaults', () => {
    const { config, secrets } = loadConfig({});
    expect(config.server).toEqual({ host: '127.0.0.1', port: 8080 });
    expect(config.dataDir).toBe('./data');
    expect(config.speech.baseUrl).toBeNull();
    expect(secrets.speechApiKey).toBeUndefined();
  });

  it('merges the overlay file, then the environment wins', async () => {
    const path = await overlay('server:\n  port: 9000\nlogLevel: debug\nspeech:\n  maxRetries: 5\n');
    const { config, secrets } = loadConfig({
      VOXBRIDGE_CONFIG: path,
      PORT: '9100',
      HOST: '0.0.0.0',
      SPEECH_BASE_URL: 'https://speech.example/',
      SPEECH_API_KEY: 'k',
      DATA_DIR: '/tmp/d',
    });
    expect(config.server).toEqual({ host: '0.0.0.0', port: 9100 });
    expect(config.logLevel).toBe('debug');
    expect(config.speech.maxRetries).toBe(5);
    expect(config.speech.authHeader).toBe('ServicePlatform-APIKey');
    expect(config.speech.baseUrl).toBe('https://speech.example');
    expect(config.dataDir).toBe('/tmp/d');
    expect(secrets.speechApiKey).toBe('k');
  });

  it('names the bad key', async () => {
    expect(() => loadConfig({ PORT: 'eighty' })).toThrow(/server\.port/);
    expect(() => loadConfig({ LOG_LEVEL: 'loud' })).toThrow(/logLevel/);
    expect(() => loadConfig({ SPEECH_BASE_URL: 'ftp://x' })).toThrow(/speech\.baseUrl/);
    const unknown = await overlay('speech:\n  retries: 3\n');
    expect(() => loadConfig({ VOXBRIDGE_CONFIG: unknown })).toThrow(/speech.*retries/);
    const scope = await overlay(
      'service:\n  keys:\n    - { id: ro, keyEnv: RO_KEY, scopes: [voices:delete] }\n',
    );
    expect(() => loadConfig({ VOXBRIDGE_CONFIG: scope, RO_KEY: 'x' })).toThrow(/service\.keys\.0\.scopes\.0/);
  });

  it('reads service keys from the variables the config names, never from the file', async () => {
    const path = await overlay(
      'service:\n  keys:\n    - { id: ro, keyEnv: RO_KEY, scopes: [voices:read] }\n',
    );
    expect(loadConfig({ VOXBRIDGE_CONFIG: path, RO_KEY: 'secret' }).secrets.serviceKeys.get('ro')).toBe(
      'secret',
    );
    expect(() => loadConfig({ VOXBRIDGE_CONFIG: path })).toThrow(ConfigError);
    expect(() => loadConfig({ VOXBRIDGE_CONFIG: path })).toThrow(/RO_KEY/);
  });

  it('says which file is unreadable or not YAML', async () => {
    expect(() => loadConfig({ VOXBRIDGE_CONFIG: '/nonexistent/x.yaml' })).toThrow(
      /cannot read config file \/nonexistent/,
    );
    const bad = await overlay('server: [unclosed');
    expect(() => loadConfig({ VOXBRIDGE_CONFIG: bad })).toThrow(/not valid YAML/);
  });
});
