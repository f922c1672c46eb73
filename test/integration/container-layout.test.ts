/**
 * The Docker image's runtime stage, without a Docker engine (none runs on these machines): the test
 * reads the Dockerfile's last stage and carries it out in a temporary directory (its COPYs, its
 * `npm ci` and the patches it applies, its ENV), then runs its CMD and its HEALTHCHECK, so that a
 * runtime dependency left in devDependencies, a file the image forgets, a patch it does not apply, or a
 * broken CMD fails here.
 */
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { cp, mkdir, mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/paths.js';
import { freePort } from '../../testkit/ports.js';

const run = promisify(execFile);

interface Stage {
  from: string;
  instructions: Array<{ op: string; args: string }>;
}

/** The Dockerfile's stages, with continuation lines joined and comments dropped. */
function parseDockerfile(text: string): Stage[] {
  const lines = text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  const stages: Stage[] = [];
  for (const line of lines) {
    const [, op = '', args = ''] = /^(\S+)\s*(.*)$/.exec(line) ?? [];
    if (op.toUpperCase() === 'FROM') stages.push({ from: args, instructions: [] });
    else stages.at(-1)?.instructions.push({ op: op.toUpperCase(), args: args.replace(/\s+/g, ' ') });
  }
  return stages;
}

let dir: string;
let appDir: string;
let runtime: Stage;
let env: Record<string, string>;
let cmd: string[];
let healthcheck: string[];
let child: ChildProcess | undefined;
let stderr = '';
let port: number;

beforeAll(async () => {
  const stages = parseDockerfile(await readFile(join(PROJECT_ROOT, 'Dockerfile'), 'utf8'));
  runtime = stages.at(-1)!;
  dir = await mkdtemp(join(tmpdir(), 'voxbridge-image-'));
  appDir = join(dir, 'app');
  await mkdir(appDir);
  env = {};
  for (const { op, args } of runtime.instructions) {
    if (op === 'ENV') for (const [, k, v] of args.matchAll(/(\w+)=(\S+)/g)) env[k!] = v!;
    if (op === 'COPY') {
      const parts = args.split(' ');
      // The build stage ran `COPY . .` and `npm run build` in /app: what it made is the project's own.
      const from = parts[0]!.startsWith('--from=') ? parts.shift() : undefined;
      const dest = parts.pop()!;
      for (const source of parts) {
        const src = join(PROJECT_ROOT, from ? source.replace(/^\/app\/?/, '') : source);
        const target = dest.endsWith('/')
          ? join(appDir, dest, source.split('/').at(-1)!)
          : join(appDir, dest);
        await mkdir(dirname(target), { recursive: true });
        await cp(src, target, { recursive: true });
      }
    }
    if (op === 'RUN')
      for (const step of args.split('&&').map((s) => s.trim())) {
        if (step.startsWith('npm ci'))
          await run('npm', [...step.split(' ').slice(1), '--no-audit', '--no-fund', '--prefer-offline'], {
            cwd: appDir,
          });
        // The installed tools it runs (patch-package, which npm ci --ignore-scripts leaves to it).
        if (step.startsWith('node_modules/.bin/')) {
          const [tool, ...toolArgs] = step.split(' ');
          await run(join(appDir, tool!), toolArgs, { cwd: appDir, env: { ...process.env, ...env } });
        }
      }
    if (op === 'CMD') cmd = JSON.parse(args) as string[];
    if (op === 'HEALTHCHECK') {
      const m = /CMD (node) -e "(.*)"$/.exec(args);
      if (m) healthcheck = [m[1]!, '-e', m[2]!];
    }
  }
  port = await freePort();
}, 240_000);

afterAll(async () => {
  child?.kill('SIGKILL');
  await rm(dir, { recursive: true, force: true });
});

describe('the Docker image, carried out without Docker', () => {
  it('is a slim Node 24 image, non-root, with /data as a volume and a health check', () => {
    expect(runtime.from).toMatch(/^node:24(-\w+)?-slim$/);
    const ops = runtime.instructions.map((i) => i.op);
    expect(runtime.instructions.find((i) => i.op === 'USER')?.args).toBe('node');
    expect(ops).toContain('HEALTHCHECK');
    expect(runtime.instructions.find((i) => i.op === 'VOLUME')?.args).toContain('/data');
    expect(env['DATA_DIR']).toBe('/data');
    expect(healthcheck).toBeDefined();
    expect(healthcheck[2]).toContain('/healthz');
  });

  it('installs production dependencies only', async () => {
    const pkg = JSON.parse(await readFile(join(PROJECT_ROOT, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
      devDependencies: Record<string, string>;
    };
    for (const name of Object.keys(pkg.dependencies))
      expect((await stat(join(appDir, 'node_modules', name))).isDirectory(), name).toBe(true);
    // (opusscript is not in this list: npm keeps it as prism-media's optional peer; nothing loads it.)
    for (const name of ['vitest', 'playwright-core', 'typescript', 'eslint', 'twilio'])
      await expect(stat(join(appDir, 'node_modules', name)), name).rejects.toThrow();
  });

  it('applies the patches in patches/ to its dependencies', async () => {
    const patches = (await readdir(join(PROJECT_ROOT, 'patches'))).filter((f) => f.endsWith('.patch'));
    expect(patches.length).toBeGreaterThan(0);
    for (const patch of patches) {
      // Every line a patch adds is in the file it patches, as installed in the image.
      let file = '';
      for (const line of (await readFile(join(PROJECT_ROOT, 'patches', patch), 'utf8')).split('\n')) {
        const header = /^\+\+\+ b\/(.*)$/.exec(line);
        if (header) file = await readFile(join(appDir, header[1]!), 'utf8');
        else if (line.startsWith('+') && line.trim() !== '+') expect(file, patch).toContain(line.slice(1));
      }
    }
  });

  it('starts with its CMD, turns healthy, serves the page and speaks; SIGTERM exits 0', async () => {
    const childEnv = {
      PATH: process.env['PATH'] ?? '',
      ...env,
      PORT: String(port),
      DATA_DIR: join(dir, 'data'),
      LOG_LEVEL: 'warn',
      SPEECH_API_KEY: 'image-test-key-0123456789',
      CONTROL_TOKEN: 'image-test-control-token',
      MEDIA_STREAM_TOKEN: 'image-test-media-token',
    };
    // The image listens on every address (HOST=0.0.0.0), where the tokens above are required.
    expect(env['HOST']).toBe('0.0.0.0');
    const [command, ...args] = cmd;
    child = spawn(command!, args, { cwd: appDir, env: childEnv, stdio: ['ignore', 'ignore', 'pipe'] });
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
    const exited = once(child, 'exit');

    // The HEALTHCHECK's own command, as Docker would run it, until it passes.
    const deadline = performance.now() + 60_000;
    for (;;) {
      const ok = await run(healthcheck[0]!, healthcheck.slice(1), { env: childEnv }).then(
        () => true,
        () => false,
      );
      if (ok) break;
      if (performance.now() > deadline || child.exitCode !== null)
        throw new Error(`never healthy:\n${stderr}`);
      await new Promise((r) => setTimeout(r, 250));
    }

    const base = `http://127.0.0.1:${port}`;
    const page = await fetch(`${base}/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('/phone/js/web/phone/main.js');
    expect((await fetch(`${base}/phone/js/web/phone/main.js`)).status).toBe(200);
    const speech = await fetch(
      `${base}/api/speech/v1/text-to-speech/voxbridge-default/stream?output_format=pcm_24000`,
      {
        method: 'POST',
        headers: {
          'ServicePlatform-APIKey': 'image-test-key-0123456789',
          'content-type': 'application/json',
        },
        body: JSON.stringify({ text: 'The image speaks.' }),
      },
    );
    expect(speech.status).toBe(200);
    expect((await speech.arrayBuffer()).byteLength).toBeGreaterThan(24_000); // over half a second

    child.kill('SIGTERM');
    const [code] = (await exited) as [number | null];
    expect(code, stderr).toBe(0);
    expect(stderr).not.toContain('image-test-');
  }, 120_000);
});
