/**
 * A real Redis for tests and benchmarks: Debian's `redis-server` (installed by
 * `scripts/install-tools.sh`) on a free loopback port, with no persistence, stopped with the test.
 * `stop()` and `start()` again on the same port play "Redis went away and came back".
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { connect } from 'node:net';
import { freePort } from './ports.js';

/** Whether a PING on `port` answers PONG. */
async function pong(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let answer = '';
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => done(false));
    socket.on('error', () => done(false));
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (d: Buffer) => {
      answer += d.toString();
      if (answer.includes('\r\n')) done(answer.startsWith('+PONG'));
    });
  });
}

export class TestRedis {
  private child: ChildProcess | undefined;

  private constructor(readonly port: number) {}

  /** Starts a Redis on a free port and waits until it answers. */
  static async start(): Promise<TestRedis> {
    const redis = new TestRedis(await freePort());
    await redis.start();
    return redis;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  get running(): boolean {
    return this.child !== undefined;
  }

  /** (Re)starts the server on its port, empty. */
  async start(): Promise<void> {
    if (this.child) return;
    const child = spawn(
      'redis-server',
      ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      { stdio: 'ignore' },
    );
    this.child = child;
    child.once('exit', () => {
      if (this.child === child) this.child = undefined;
    });
    const deadline = Date.now() + 10_000;
    while (!(await pong(this.port))) {
      if (!this.child)
        throw new Error('redis-server exited at start (is it installed? scripts/install-tools.sh)');
      if (Date.now() > deadline)
        throw new Error(`redis-server did not answer on port ${this.port} within 10 s`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Kills the server (SIGKILL: connections drop as when a Redis host dies). Its data is gone. */
  async stop(): Promise<void> {
    const child = this.child;
    if (!child) return;
    this.child = undefined;
    const exited = once(child, 'exit');
    child.kill('SIGKILL');
    await exited;
  }
}
