/**
 * `voxbridge`, the compiled CLI, run as a user runs it (a child process, its own environment) against
 * the real app with the local speech service: `say`, `voices`, and `call` on the app's Twilio
 * media-stream endpoint with the default flow. A fake `play` on PATH (a shell script that keeps what
 * it is given) stands in for the system's player.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compiledModule, PROJECT_ROOT } from '../../src/paths.js';
import { parseWav } from '../../src/audio/wav.js';
import { builtInVoices } from '../../src/service/voices/builtin.js';
import { KEYS, startTestApp, type TestApp } from '../helpers/app.js';
import { espeakSpeech, probeWithFfmpeg, wavFile } from '../../testkit/audio.js';
import { SseReader } from '../../testkit/sse.js';
import { freePort } from '../../testkit/ports.js';

const CLI = compiledModule('cli/main.js').pathname;
const MEDIA_TOKEN = 'cli-test-media-token-0123456789';

let t: TestApp;
let work: string;
/** A PATH with a fake `play` that copies its stdin to $FAKE_PLAYER_OUT, and nothing else. */
let fakeBin: string;
let emptyBin: string;

beforeAll(async () => {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run \`npm run build\` first`);
  // The default flow with short texts, so a call gets through greeting, menu and an answer quickly.
  t = await startTestApp(
    {
      flows: {
        default: {
          nodes: {
            greeting: { text: 'Hello from voxbridge.' },
            menu: { prompt: 'Press a key.' },
          },
        },
      },
    },
    undefined,
    { MEDIA_STREAM_TOKEN: MEDIA_TOKEN },
  );
  work = await mkdtemp(join(tmpdir(), 'voxbridge-cli-'));
  fakeBin = join(work, 'bin');
  emptyBin = join(work, 'empty');
  await mkdir(fakeBin);
  await mkdir(emptyBin);
  await writeFile(join(fakeBin, 'play'), '#!/bin/sh\nexec /bin/cat > "$FAKE_PLAYER_OUT"\n');
  await chmod(join(fakeBin, 'play'), 0o755);
});

afterAll(async () => {
  await t.close();
  await rm(work, { recursive: true, force: true });
});

interface Run {
  code: number | null;
  stdout: Buffer;
  stderr: string;
}

/** Runs the CLI with only the environment given (and a PATH), feeding `input` to its stdin. */
function cli(args: string[], options: { env?: Record<string, string>; input?: string } = {}): Promise<Run> {
  const child = spawn(process.execPath, [CLI, ...args], {
    cwd: work,
    env: { PATH: process.env['PATH'] ?? '', ...options.env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const stdout: Buffer[] = [];
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => stdout.push(d));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
  child.stdin.end(options.input ?? '');
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout: Buffer.concat(stdout), stderr }));
  });
}

const service = (): string[] => ['--url', t.api, '--key', KEYS.main];

/** Root mean square of samples (-1..1). */
function rms(samples: Float32Array): number {
  let sum = 0;
  for (const s of samples) sum += s * s;
  return Math.sqrt(sum / Math.max(1, samples.length));
}

/** Milliseconds of `samples` in 20 ms windows louder than -40 dBFS: how much of it is speech. */
function voicedMs(samples: Float32Array, sampleRate: number): number {
  const win = sampleRate / 50;
  let voiced = 0;
  for (let i = 0; i + win <= samples.length; i += win) if (rms(samples.subarray(i, i + win)) > 0.01) voiced++;
  return voiced * 20;
}

describe('voxbridge say', () => {
  it('streams a WAV of the right rate, with speech in it and its real sizes in the header', async () => {
    const out = join(work, 'hello.wav');
    const run = await cli([
      'say',
      ...service(),
      '--voice',
      'voxbridge-default',
      '--format',
      'wav_24000',
      '-o',
      out,
      'Hello from the voxbridge command line.',
    ]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const bytes = await readFile(out);
    expect(bytes.readUInt32LE(4)).toBe(bytes.length - 8);
    expect(bytes.readUInt32LE(40)).toBe(bytes.length - 44);
    const wav = parseWav(bytes);
    expect(wav).toMatchObject({ sampleRate: 24_000, channels: 1 });
    expect(wav.samples.length / 24_000).toBeGreaterThan(1);
    expect(voicedMs(wav.samples, 24_000)).toBeGreaterThan(500);
    const probe = await probeWithFfmpeg(out);
    expect(probe).toMatchObject({ codec: 'pcm_s16le', sampleRate: 24_000, channels: 1 });
    expect(probe.decodedSeconds).toBeCloseTo(wav.samples.length / 24_000, 2);
  });

  it('reads the text from stdin with "-" and writes raw PCM to a piped stdout', async () => {
    const run = await cli(['say', ...service(), '--format', 'pcm_24000', '-'], {
      input: 'Read from standard input.\n',
    });
    expect(run.code).toBe(0);
    expect(run.stdout.length % 2).toBe(0);
    const samples = new Int16Array(run.stdout.buffer, run.stdout.byteOffset, run.stdout.length / 2);
    const float = Float32Array.from(samples, (s) => s / 32768);
    expect(float.length / 24_000).toBeGreaterThan(0.8);
    expect(voicedMs(float, 24_000)).toBeGreaterThan(400);
  });

  it('an unknown voice exits 1 with the service message and code, and leaves no file', async () => {
    const out = join(work, 'never.wav');
    const run = await cli(['say', ...service(), '--voice', 'no-such-voice', '-o', out, 'Hi.']);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/404 voice_not_found: .*no-such-voice/);
    expect(existsSync(out)).toBe(false);
  });

  it('a bad option or format exits 2 saying what is wrong', async () => {
    const bogus = await cli(['say', ...service(), '--bogus', 'Hi.']);
    expect(bogus.code).toBe(2);
    expect(bogus.stderr).toContain("unknown option '--bogus'");
    expect(bogus.stderr).toContain('voxbridge say --help');
    const format = await cli(['say', ...service(), '--format', 'ulaw_8000', '-o', 'x', 'Hi.']);
    expect(format.code).toBe(2);
    expect(format.stderr).toContain('--format must be one of pcm_24000, wav_24000, mp3_44100_192');
    const noText = await cli(['say', ...service(), '-o', 'x']);
    expect(noText.code).toBe(2);
    expect(noText.stderr).toContain('missing the text to speak');
  });

  it('no service, or a wrong key: exit 1, a clear message, and the key is never printed', async () => {
    const port = await freePort(); // free, so nothing answers there
    const absent = await cli(['say', '-o', 'x.wav', 'Hi.'], {
      env: { SPEECH_BASE_URL: `http://127.0.0.1:${port}`, SPEECH_API_KEY: KEYS.main },
    });
    expect(absent.code).toBe(1);
    expect(absent.stderr).toContain(
      `no speech service at http://127.0.0.1:${port}/api/speech: start one with \`npm start\` or set SPEECH_BASE_URL`,
    );
    const wrongKey = 'wrong-key-that-must-stay-secret-42';
    const refused = await cli(['say', '--url', t.api, '-o', 'x.wav', 'Hi.'], {
      env: { SPEECH_API_KEY: wrongKey },
    });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('401 invalid_api_key');
    for (const run of [absent, refused]) {
      expect(run.stderr + run.stdout.toString()).not.toContain(KEYS.main);
      expect(run.stderr + run.stdout.toString()).not.toContain(wrongKey);
    }
  });

  it('--play streams the audio into the system player, and says so when there is none', async () => {
    const played = join(work, 'played.wav');
    const run = await cli(['say', ...service(), '--play', 'Played through the speaker.'], {
      env: { PATH: fakeBin, FAKE_PLAYER_OUT: played },
    });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const wav = parseWav(await readFile(played));
    expect(wav.sampleRate).toBe(24_000);
    expect(voicedMs(wav.samples, 24_000)).toBeGreaterThan(500);

    const none = await cli(['say', ...service(), '--play', 'Nobody hears this.'], {
      env: { PATH: emptyBin },
    });
    expect(none.code).toBe(1);
    expect(none.stderr).toContain('no audio player found');
    expect(none.stderr).toContain('sox');
  });
});

describe('voxbridge voices', () => {
  it('list --json lists every built-in voice with its labels; the table has its columns', async () => {
    const json = await cli(['voices', 'list', '--json', ...service()]);
    expect(json.code).toBe(0);
    const voices = JSON.parse(json.stdout.toString()) as Array<Record<string, unknown>>;
    for (const v of builtInVoices())
      expect(voices).toContainEqual(
        expect.objectContaining({
          voice_id: v.voice_id,
          name: v.name,
          category: 'premade',
          description: v.description,
          labels: v.labels,
        }),
      );
    const table = await cli(['voices', 'list', ...service()]);
    expect(table.code).toBe(0);
    const [header, ...rows] = table.stdout.toString().trim().split('\n');
    expect(header).toMatch(/^ID\s+NAME\s+CATEGORY$/);
    for (const v of builtInVoices())
      expect(
        rows.some((r) => new RegExp(`^${v.voice_id}\\s+.+\\s+premade$`).test(r)),
        v.voice_id,
      ).toBe(true);
  });

  it('add creates a voice from WAV samples and prints its id, which the list then shows', async () => {
    const text = 'Every sample needs a few seconds of clear speech, spoken at an even pace.';
    const first = join(work, 'sample-1.wav');
    const second = join(work, 'sample-2.wav');
    await writeFile(first, wavFile(await espeakSpeech(text, 'en-us+m3', 20), 22_050));
    await writeFile(second, wavFile(await espeakSpeech(`${text} Again.`, 'en-us+m3', 20), 22_050));
    const add = await cli([
      'voices',
      'add',
      ...service(),
      '--name',
      'CLI Voice',
      '--description',
      'made by the CLI test',
      '--label',
      'source=cli-test',
      first,
      second,
    ]);
    expect(add.stderr).toBe('');
    expect(add.code).toBe(0);
    const id = add.stdout.toString().trim();
    expect(id).toMatch(/^[A-Za-z0-9]{20}$/);
    const list = await cli(['voices', 'list', '--json', ...service()]);
    const voices = JSON.parse(list.stdout.toString()) as Array<Record<string, unknown>>;
    expect(voices).toContainEqual(
      expect.objectContaining({
        voice_id: id,
        name: 'CLI Voice',
        category: 'cloned',
        description: 'made by the CLI test',
        labels: { source: 'cli-test' },
      }),
    );
    const missing = await cli(['voices', 'add', ...service(), '--name', 'X', join(work, 'absent.wav')]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('cannot read');
    const noName = await cli(['voices', 'add', ...service(), first]);
    expect(noName.code).toBe(2);
  });
});

describe('voxbridge call', () => {
  it('runs the default flow as a Twilio gateway: hears the greeting, presses 1, hears the answer', async () => {
    const callSid = 'CA' + 'c11'.repeat(10) + 'ab';
    const recording = join(work, 'call.wav');
    const played = join(work, 'call-played.wav');
    const wsUrl = `${t.url.replace('http:', 'ws:')}/media/twilio`;
    const running = cli(
      [
        'call',
        '--url',
        wsUrl,
        '--token',
        MEDIA_TOKEN,
        '--flow',
        'default',
        '--call-sid',
        callSid,
        '--digits',
        '1',
        '--record',
        recording,
        '--hangup-after-ms',
        '8000',
      ],
      { env: { PATH: fakeBin, FAKE_PLAYER_OUT: played } },
    );
    // Follow the call through the control API from its start.
    const deadline = performance.now() + 5000;
    while ((await fetch(`${t.url}/calls/${callSid}`)).status !== 200) {
      if (performance.now() > deadline) throw new Error('the call never showed up in GET /calls');
      await new Promise((r) => setTimeout(r, 20));
    }
    const listed = (await (await fetch(`${t.url}/calls`)).json()) as {
      calls: Array<Record<string, unknown>>;
    };
    expect(listed.calls).toContainEqual(
      expect.objectContaining({ id: callSid, gateway: 'twilio', flow: 'default' }),
    );
    const sse = new SseReader(`${t.url}/calls/${callSid}/events`);
    const run = await running;
    await sse.until((events) => events.some((e) => e.event === 'call.ended'), 3000);
    sse.close();

    expect(run.code).toBe(0);
    expect(run.stderr).toContain(`as ${callSid} (flow default)`);
    expect(run.stderr).toContain('pressed 1');
    expect(run.stderr).toMatch(/you hung up after 8\.\d s/);
    expect(sse.of('dtmf')).toEqual([expect.objectContaining({ digit: '1' })]);
    // The flow took the key at its menu and answered it; the answer played in full, by our marks.
    const flow = sse.of('flow') as Array<{ event: { node?: string; detail?: Record<string, unknown> } }>;
    expect(flow.map((f) => f.event)).toContainEqual(
      expect.objectContaining({ node: 'menu', detail: { digits: '1', next: 'key-1' } }),
    );
    const started = sse.of('utterance.started') as Array<{ utterance_id: string; text: string }>;
    const answer = started.find((u) => u.text === 'You pressed one.');
    expect(answer).toBeDefined();
    const finished = sse.of('utterance.finished') as Array<{
      utterance_id: string;
      result: { status: string; played_ms: number };
    }>;
    const answered = finished.find((f) => f.utterance_id === answer!.utterance_id);
    expect(answered?.result.status).toBe('played');
    expect(answered!.result.played_ms).toBeGreaterThan(500);

    // The recording: the call's 8 s timeline, 8 kHz, with the greeting at its start and more speech after.
    const wav = parseWav(await readFile(recording));
    expect(wav.sampleRate).toBe(8000);
    expect(wav.samples.length / 8000).toBeGreaterThan(7.5);
    expect(wav.samples.length / 8000).toBeLessThan(8.6);
    expect(voicedMs(wav.samples.subarray(0, 8000), 8000)).toBeGreaterThan(300);
    // (Flite's default voice voices about 2.3 s of the 8 s; eSpeak's about 3 s.)
    expect(voicedMs(wav.samples, 8000)).toBeGreaterThan(1800);
    // The player got the same audio, as a WAV stream.
    const heard = parseWav(await readFile(played));
    expect(heard.sampleRate).toBe(8000);
    expect(voicedMs(heard.samples, 8000)).toBeGreaterThan(1800);
  });

  it('without the media token the server refuses it: exit 1, saying which token', async () => {
    const run = await cli(['call', '--url', t.url, '--no-play', '--hangup-after-ms', '1000']);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/refused the media stream \(401.*MEDIA_STREAM_TOKEN/);
  });
});

describe('voxbridge itself', () => {
  it('--version, --help on every command (exit 0), and an unknown command (exit 2)', async () => {
    const pkg = JSON.parse(await readFile(join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version: string };
    const version = await cli(['--version']);
    expect(version.stdout.toString().trim()).toBe(pkg.version);
    for (const command of [[], ['say'], ['voices'], ['voices', 'add'], ['call']]) {
      const help = await cli([...command, '--help']);
      expect(help.code).toBe(0);
      expect(help.stdout.toString()).toMatch(/^Usage: voxbridge/);
    }
    const unknown = await cli(['dance']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('unknown command "dance"');
  });
});
