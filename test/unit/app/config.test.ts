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
    expect(config.server).toEqual({
      host: '127.0.0.1',
      port: 8080,
      shutdownGraceMs: 10_000,
      allowedHosts: [],
      maxConnections: 4000,
      headersTimeoutMs: 10_000,
      requestTimeoutMs: 120_000,
      keepAliveTimeoutMs: 5000,
      publicUrl: null,
    });
    expect(config.calls.control).toMatchObject({ hangUpAtGateway: true, maxPlacing: 50, ringSeconds: 30 });
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
      MEDIA_STREAM_TOKEN: 'media-token',
      CONTROL_TOKEN: 'control-token',
      ALLOWED_HOSTS: 'voice.example.com, .corp.example,',
    });
    expect(config.server).toMatchObject({
      host: '0.0.0.0',
      port: 9100,
      shutdownGraceMs: 10_000,
      allowedHosts: ['voice.example.com', '.corp.example'],
    });
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
    const template = await overlay('relays:\n  app:\n    url: "wss://app.example/{callSid}/{token}"\n');
    expect(() => loadConfig({ VOXBRIDGE_CONFIG: template })).toThrow(/relays\.app\.url.*\{param\.NAME\}/);
    const good = await overlay('relays:\n  app:\n    url: "wss://app.example/{callSid}?t={param.tenant}"\n');
    expect(loadConfig({ VOXBRIDGE_CONFIG: good }).config.relays['app']!.url).toBe(
      'wss://app.example/{callSid}?t={param.tenant}',
    );
  });

  it('takes an outbound format only for the gateways that use one', async () => {
    const format = '{ encoding: s16le, sampleRate: 16000 }';
    for (const gateway of ['telnyx', 'plivo', 'jambonz']) {
      const ok = await overlay(`calls:\n  formats:\n    ${gateway}: ${format}\n`);
      expect(loadConfig({ VOXBRIDGE_CONFIG: ok }).config.calls.formats).toMatchObject({
        [gateway]: { encoding: 's16le', sampleRate: 16000 },
      });
    }
    // Vonage plays its content-type, Asterisk its start's format, Twilio and Exotel one codec each.
    for (const gateway of ['vonage', 'asterisk', 'twilio', 'exotel']) {
      const ignored = await overlay(`calls:\n  formats:\n    ${gateway}: ${format}\n`);
      expect(() => loadConfig({ VOXBRIDGE_CONFIG: ignored })).toThrow(
        new RegExp(`calls\\.formats\\.${gateway}: ${gateway} plays what its start message or protocol fixes`),
      );
    }
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

  it('refuses a non-loopback host without the media and control tokens, saying what to set', async () => {
    expect(() => loadConfig({ HOST: '0.0.0.0' })).toThrow(/CONTROL_TOKEN.*MEDIA_STREAM_TOKEN/);
    expect(() => loadConfig({ HOST: '0.0.0.0', CONTROL_TOKEN: 'c' })).toThrow(/MEDIA_STREAM_TOKEN/);
    expect(() => loadConfig({ HOST: '192.0.2.7', MEDIA_STREAM_TOKEN: 'm' })).toThrow(/CONTROL_TOKEN/);
    // Twilio's signature protects Twilio only: the other gateways would be open.
    expect(() => loadConfig({ HOST: '0.0.0.0', CONTROL_TOKEN: 'c', TWILIO_AUTH_TOKEN: 't' })).toThrow(
      /telnyx, plivo/,
    );
    const twilioOnly = await overlay('calls:\n  gateways: [twilio]\n');
    const { secrets } = loadConfig({
      VOXBRIDGE_CONFIG: twilioOnly,
      HOST: '0.0.0.0',
      CONTROL_TOKEN: 'c',
      TWILIO_AUTH_TOKEN: 't',
    });
    expect(secrets.twilioAuthToken).toBe('t');
    expect(loadConfig({ HOST: '::', MEDIA_STREAM_TOKEN: 'm', CONTROL_TOKEN: 'c' }).secrets.controlToken).toBe(
      'c',
    );
    // Loopback needs none of them.
    for (const host of ['127.0.0.1', '127.1.2.3', 'localhost', '::1'])
      expect(loadConfig({ HOST: host }).config.server.host).toBe(host);
  });

  it('runs one instance without REDIS_URL; with it, takes the cluster settings and names the token to set', () => {
    expect(loadConfig({}).config.cluster.redisUrl).toBeNull();
    const { config, secrets } = loadConfig({
      REDIS_URL: 'redis://:pw@10.0.0.9:6379/2',
      INSTANCE_ID: 'east-1',
      INSTANCE_URL: 'http://10.0.0.5:8080/',
      CONTROL_TOKEN: 'c',
    });
    expect(config.cluster).toMatchObject({
      redisUrl: 'redis://:pw@10.0.0.9:6379/2',
      instanceId: 'east-1',
      instanceUrl: 'http://10.0.0.5:8080',
    });
    // The control token proves instances to each other unless CLUSTER_TOKEN is set.
    expect(secrets.clusterToken).toBe('c');
    expect(loadConfig({ CONTROL_TOKEN: 'c', CLUSTER_TOKEN: 'k' }).secrets.clusterToken).toBe('k');
    expect(() => loadConfig({ REDIS_URL: 'http://10.0.0.9' })).toThrow(/cluster.redisUrl/);
    expect(() => loadConfig({ REDIS_URL: 'redis://r', INSTANCE_ID: 'a b' })).toThrow(/cluster.instanceId/);
    expect(() => loadConfig({ REDIS_URL: 'redis://r', HOST: '0.0.0.0', MEDIA_STREAM_TOKEN: 'm' })).toThrow(
      /CLUSTER_TOKEN/,
    );
  });

  it('ships a default flow that greets, then answers every key, pressed or said', () => {
    const { config, grammars } = loadConfig({});
    const flow = config.flows['default']!;
    expect(config.calls.defaultFlow).toBe('default');
    const greeting = flow.nodes[flow.start]!;
    expect(greeting).toMatchObject({ type: 'say', bargeIn: true });
    const menu = flow.nodes[(greeting as { next: string }).next]!;
    expect(menu.type).toBe('gather');
    const branches = (menu as { branches: Record<string, string> }).branches;
    for (const key of '0123456789*#') expect(flow.nodes[branches[key]!]).toBeDefined();
    expect(flow.bargeInWaitMs).toBeGreaterThanOrEqual(5000);
    // Its menu listens: saying a key's name works like pressing it, with the grammar built at load.
    expect(menu).toMatchObject({ input: ['dtmf', 'speech'], carriers: false });
    const grammar = grammars.get('default')?.get((greeting as { next: string }).next);
    expect(grammar?.interpret('three')).toEqual({ key: undefined, digits: '3' });
    expect(grammar?.interpret('star').digits).toBe('*');
    expect(grammar?.interpret('pound').digits).toBe('#');
    expect(config.calls.recognition).toEqual({ workers: 1 });
  });

  it('builds every speech gather’s grammar at load; a word the recogniser does not know is named', async () => {
    const menu = (phrases: string): string =>
      'flows:\n  shop:\n    start: m\n    nodes:\n' +
      `      m: { type: gather, input: [dtmf, speech], branches: { '1': a, '2': a }, speech: { '1': [billing], '2': [${phrases}] } }\n` +
      '      a: { type: hangup }\n';
    const good = loadConfig({ VOXBRIDGE_CONFIG: await overlay(menu("'talk to support'")) });
    expect(good.grammars.get('shop')?.get('m')?.interpret('talk to support').key).toBe('2');
    expect(good.grammars.get('shop')?.get('a')).toBeUndefined();
    const unknownWord = await overlay(menu('zxqvbnorf'));
    expect(() => loadConfig({ VOXBRIDGE_CONFIG: unknownWord })).toThrow(ConfigError);
    expect(() => loadConfig({ VOXBRIDGE_CONFIG: unknownWord })).toThrow(
      /^invalid configuration: flows\.shop\.nodes\.m\.speech: .*zxqvbnorf/,
    );
    // Keys only: no grammar, nothing to start.
    const keysOnly = await overlay(
      "flows:\n  shop:\n    start: m\n    nodes:\n      m: { type: gather, branches: { '1': m } }\n",
    );
    expect(loadConfig({ VOXBRIDGE_CONFIG: keysOnly }).grammars.get('shop')).toBeUndefined();
  });

  it('fails on a bad flow with a message naming the flow and the node', async () => {
    const unknownTarget = await overlay(
      'flows:\n  shop:\n    start: a\n    nodes:\n      a: { type: say, text: hi, next: nowhere }\n',
    );
    expect(() => loadConfig({ VOXBRIDGE_CONFIG: unknownTarget })).toThrow(
      /flows\.shop\.nodes\.a\.next: goes to unknown node "nowhere"/,
    );
    const badType = await overlay('flows:\n  shop:\n    start: a\n    nodes:\n      a: { type: dance }\n');
    expect(() => loadConfig({ VOXBRIDGE_CONFIG: badType })).toThrow(/flows\.shop\.nodes\.a\.type/);
    const badDigits = await overlay(
      "flows:\n  shop:\n    start: m\n    nodes:\n      m: { type: gather, digits: 1, branches: { '12': m } }\n",
    );
    expect(() => loadConfig({ VOXBRIDGE_CONFIG: badDigits })).toThrow(/flows\.shop\.nodes\.m\.branches\.12/);
    const shortWait = await overlay(
      'flows:\n  shop:\n    start: a\n    bargeInWaitMs: 1000\n    nodes:\n      a: { type: hangup }\n',
    );
    expect(() => loadConfig({ VOXBRIDGE_CONFIG: shortWait })).toThrow(/flows\.shop\.bargeInWaitMs/);
    const noFlow = await overlay('calls:\n  defaultFlow: missing\n');
    expect(() => loadConfig({ VOXBRIDGE_CONFIG: noFlow })).toThrow(
      /calls\.defaultFlow: no flow named "missing"/,
    );
  });

  it('takes a transfer node to a number or a SIP URI, with onFail checked like any other target', async () => {
    const good = await overlay(
      'flows:\n  desk:\n    start: t\n    nodes:\n' +
        '      t: { type: transfer, to: "+15551234567", mode: warm, callerId: "+15550001111", summary: Hi, onFail: s }\n' +
        '      s: { type: transfer, to: "sip:agent@pbx.example.com" }\n',
    );
    const node = loadConfig({ VOXBRIDGE_CONFIG: good }).config.flows['desk']!.nodes['t'];
    expect(node).toMatchObject({ type: 'transfer', mode: 'warm', timeoutSeconds: 30, summary: 'Hi' });
    const badTarget = await overlay(
      'flows:\n  desk:\n    start: t\n    nodes:\n      t: { type: transfer, to: "5551234" }\n',
    );
    expect(() => loadConfig({ VOXBRIDGE_CONFIG: badTarget })).toThrow(
      /flows\.desk\.nodes\.t\.to: an E\.164 number/,
    );
    const coldSummary = await overlay(
      'flows:\n  desk:\n    start: t\n    nodes:\n      t: { type: transfer, to: "+15551234567", summary: Hi }\n',
    );
    expect(() => loadConfig({ VOXBRIDGE_CONFIG: coldSummary })).toThrow(/t\.summary: is for a warm transfer/);
    const badFail = await overlay(
      'flows:\n  desk:\n    start: t\n    nodes:\n      t: { type: transfer, to: "+15551234567", onFail: x }\n',
    );
    expect(() => loadConfig({ VOXBRIDGE_CONFIG: badFail })).toThrow(/t\.onFail: goes to unknown node "x"/);
  });

  it('reads PUBLIC_URL and the call-control credentials from the environment, nothing else of it', async () => {
    const { config, secrets } = loadConfig({
      PUBLIC_URL: 'https://voice.example.com/',
      TWILIO_ACCOUNT_SID: 'AC1',
      TWILIO_AUTH_TOKEN: 'secret',
      UNRELATED_SECRET: 'x',
    });
    expect(config.server.publicUrl).toBe('https://voice.example.com');
    expect(secrets.callControl['TWILIO_ACCOUNT_SID']).toBe('AC1');
    expect(secrets.callControl['TELNYX_API_KEY']).toBeUndefined();
    expect(Object.keys(secrets.callControl)).not.toContain('UNRELATED_SECRET');
    expect(() => loadConfig({ PUBLIC_URL: 'https://u:p@voice.example.com' })).toThrow(/server\.publicUrl/);
    const short = await overlay('calls:\n  control:\n    answerTimeoutMs: 20000\n');
    expect(() => loadConfig({ VOXBRIDGE_CONFIG: short })).toThrow(
      /calls\.control\.answerTimeoutMs: must exceed ringSeconds/,
    );
  });
});
