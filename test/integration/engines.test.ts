/**
 * The engines behind the local service: Flite speaks English by default, eSpeak-NG (an optional
 * dependency) the languages Flite lacks, chosen by `language_code`; and a process where the optional
 * dependencies are not installed (what `npm ci --omit=optional` leaves) still starts and speaks, says
 * why it cannot speak German, and that the ONNX models it was given cannot be loaded without
 * sherpa-onnx-node.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compiledModule } from '../../src/paths.js';
import { analyzeSpeech } from '../../src/service/voices/analyze.js';
import { BUILT_IN_VOICE_ID, BUILT_IN_VOICE_IDS } from '../../src/service/voices/builtin.js';
import { writeVitsTestModel } from '../../testkit/onnx/vits.js';
import { KEYS, NO_PHONE_BARGE_IN, startTestApp, type TestApp } from '../helpers/app.js';

const GERMAN = 'Guten Morgen, wie geht es Ihnen heute?';
const ENGLISH = 'Good morning, how are you today?';

async function speak(
  api: string,
  key: string,
  body: Record<string, unknown>,
  voice = BUILT_IN_VOICE_ID,
): Promise<Response> {
  return fetch(`${api}/v1/text-to-speech/${voice}?output_format=pcm_24000`, {
    method: 'POST',
    headers: { 'xi-api-key': key, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

function samples(bytes: ArrayBuffer): Float32Array {
  const view = new Int16Array(bytes);
  return Float32Array.from(view, (v) => v / 32768);
}

describe('with every engine installed', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(NO_PHONE_BARGE_IN);
  });
  afterAll(async () => {
    await t.close();
  });

  it('has Flite (BSD-style) and eSpeak-NG (GPL-3.0), with their voices and languages', () => {
    const engines = t.app.service!.engines;
    expect(engines.map((e) => [e.id, e.licence.copyleft])).toEqual([
      ['flite', false],
      ['espeak-ng', true],
    ]);
    const espeak = engines[1]!;
    expect(espeak.languages.length).toBeGreaterThan(100);
    expect(espeak.languages).toContain('de');
  });

  it('speaks English with Flite whether language_code says so or not, and German with eSpeak-NG', async () => {
    const plain = await (await speak(t.api, KEYS.main, { text: ENGLISH })).arrayBuffer();
    const english = await (
      await speak(t.api, KEYS.main, { text: ENGLISH, language_code: 'en' })
    ).arrayBuffer();
    expect(Buffer.from(english)).toEqual(Buffer.from(plain));
    const german = await speak(t.api, KEYS.main, { text: GERMAN, language_code: 'de' });
    expect(german.status).toBe(200);
    const audio = samples(await german.arrayBuffer());
    expect(audio.length / 24_000).toBeGreaterThan(1.5);
    // The voice keeps its register in German: eSpeak's settings of the default voice (m3, pitch 50).
    const f0 = analyzeSpeech(audio, 24_000).f0Hz;
    expect(f0).toBeGreaterThan(80);
    expect(f0).toBeLessThan(140);
    // The high voice stays high in German.
    const high = await speak(t.api, KEYS.main, { text: GERMAN, language_code: 'de' }, 'voxbridge-high');
    expect(analyzeSpeech(samples(await high.arrayBuffer()), 24_000).f0Hz).toBeGreaterThan(f0 * 1.5);
  });

  it('refuses a language_code that is not one, or that no engine speaks, as a 400 naming the field', async () => {
    for (const language_code of ['english', 42, 'xx']) {
      const res = await speak(t.api, KEYS.main, { text: ENGLISH, language_code });
      expect(res.status).toBe(400);
      const body = (await res.json()) as { detail: { code: string; param: string } };
      expect(body.detail).toMatchObject({ code: 'invalid_parameters', param: 'language_code' });
    }
    expect((await speak(t.api, KEYS.main, { text: ENGLISH, language_code: null })).status).toBe(200);
  });
});

describe('with the optional engines not installed (npm ci --omit=optional)', () => {
  let child: ChildProcess;
  let dataDir: string;
  let url: string;
  let output = '';
  const key = 'omit-optional-key-0123456789abcdef';

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'voxbridge-no-espeak-'));
    // A model that would load, were sherpa-onnx-node installed.
    const model = await writeVitsTestModel(join(dataDir, 'model'));
    const config = join(dataDir, 'config.json');
    await writeFile(config, JSON.stringify({ service: { engines: { onnx: { models: [model.dir] } } } }));
    const hook = fileURLToPath(new URL('../fixtures/without-optional.mjs', import.meta.url));
    child = spawn(process.execPath, ['--import', hook, compiledModule('app/main.js').pathname], {
      env: {
        PATH: process.env['PATH'] ?? '',
        PORT: '0',
        VOXBRIDGE_CONFIG: config,
        DATA_DIR: dataDir,
        LOG_LEVEL: 'info',
        SPEECH_API_KEY: key,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    const deadline = Date.now() + 30_000;
    while (!/"url":"(http:[^"]+)"/.test(output)) {
      if (Date.now() > deadline || child.exitCode !== null)
        throw new Error(`no start within 30 s:\n${output}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    url = /"url":"(http:[^"]+)"/.exec(output)![1]!;
  });
  afterAll(async () => {
    child.kill('SIGTERM');
    if (child.exitCode === null) await new Promise((r) => child.once('exit', r));
    await rm(dataDir, { recursive: true, force: true });
  });

  it('starts, says eSpeak-NG and the ONNX engine are not available, and speaks every built-in voice with Flite', async () => {
    expect(output).toMatch(/speech engine espeak-ng is not available: its package is not installed/);
    expect(output).toMatch(/speech engine onnx is not available: its package is not installed/);
    const list = (await (
      await fetch(`${url}/api/speech/v2/voices?page_size=100`, { headers: { 'xi-api-key': key } })
    ).json()) as { voices: Array<{ voice_id: string }> };
    expect(list.voices.map((v) => v.voice_id).sort()).toEqual([...BUILT_IN_VOICE_IDS].sort());
    for (const voice of BUILT_IN_VOICE_IDS) {
      const res = await speak(`${url}/api/speech`, key, { text: ENGLISH }, voice);
      expect(res.status, voice).toBe(200);
      expect((await res.arrayBuffer()).byteLength, voice).toBeGreaterThan(24_000);
    }
  });

  it('refuses German with a message that says what to install', async () => {
    const res = await speak(`${url}/api/speech`, key, { text: GERMAN, language_code: 'de' });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { detail: { param: string; message: string } };
    expect(body.detail.param).toBe('language_code');
    expect(body.detail.message).toMatch(/eSpeak-NG.*not installed/);
  });
});
