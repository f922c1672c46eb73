/**
 * voxbridge instances as a user starts them (`npm start`'s compiled entry point, configured by the
 * environment and an overlay file), for tests that need several processes: a cluster, a kill.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { request } from 'undici';
import { freePort } from './ports.js';
import { compiledModule } from '../src/paths.js';

export interface Instance {
  readonly id: string;
  /** `http://127.0.0.1:port` */
  readonly url: string;
  readonly child: ChildProcess;
  /** stdout and stderr so far (JSON log lines). */
  output(): string;
  /** Sends `signal` and waits for the exit. */
  kill(signal: NodeJS.Signals): Promise<number | null>;
}

export async function startInstance(
  id: string,
  env: Record<string, string>,
  overlay: Record<string, unknown> = {},
): Promise<Instance> {
  const dir = await mkdtemp(join(tmpdir(), `voxbridge-${id}-`));
  const port = await freePort();
  const configFile = join(dir, 'config.json');
  await writeFile(configFile, JSON.stringify(overlay));
  const child = spawn(process.execPath, [compiledModule('app/main.js').pathname], {
    env: {
      PATH: process.env['PATH'] ?? '',
      HOST: '127.0.0.1',
      PORT: String(port),
      DATA_DIR: dir,
      LOG_LEVEL: 'info',
      INSTANCE_ID: id,
      VOXBRIDGE_CONFIG: configFile,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  void exited.then(() => rm(dir, { recursive: true, force: true }));
  // Ready when `/healthz` answers 200 (at any log level).
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`instance ${id} exited at start:\n${output}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL'); // nothing left running behind a failed start
      throw new Error(`instance ${id}: not ready within 30 s:\n${output}`);
    }
    const status = await fetch(`${url}/healthz`).then(
      (r) => r.status,
      () => 0,
    );
    if (status === 200) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    id,
    url,
    child,
    output: () => output,
    async kill(signal) {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

/** An HTTP proxy in front of a speech service that counts the synthesis requests it passes on. */
export class CountingProxy {
  private constructor(
    private readonly server: Server,
    readonly url: string,
    /** The text of every `…/text-to-speech/…` request, in order. */
    readonly texts: string[],
  ) {}

  static async start(target: string): Promise<CountingProxy> {
    const texts: string[] = [];
    const server = createServer((req, res) => {
      void (async () => {
        const body: Buffer[] = [];
        for await (const chunk of req) body.push(chunk as Buffer);
        const raw = Buffer.concat(body);
        if ((req.url ?? '').includes('/text-to-speech/'))
          texts.push((JSON.parse(raw.toString('utf8')) as { text: string }).text);
        const headers = { ...req.headers };
        delete headers.host;
        delete headers.connection;
        const answer = await request(`${target}${req.url ?? '/'}`, {
          method: req.method as 'GET',
          headers,
          body: raw.length > 0 ? raw : null,
        });
        res.writeHead(answer.statusCode, answer.headers as Record<string, string>);
        await pipeline(answer.body, res);
      })().catch(() => res.destroy());
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    return new CountingProxy(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`, texts);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}
