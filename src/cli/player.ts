/**
 * The system's audio player (sox's `play`, ffmpeg's `ffplay`, ALSA's `aplay`, in that order), fed
 * through its stdin, and sox's `rec` for the microphone. Found on PATH; nothing is installed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { CliError, type Env } from './args.js';

/** What is written to the player's stdin: a WAV stream (sizes may be unknown) or MP3. */
export type PlayerInput = 'wav' | 'mp3';

/** A program to spawn: its name (for messages), where it is, and its arguments. */
export interface PlayerCommand {
  name: string;
  path: string;
  args: string[];
}

const PLAYERS: ReadonlyArray<{
  name: 'play' | 'ffplay' | 'aplay';
  args: (input: PlayerInput) => string[] | undefined;
}> = [
  // -V1: errors only (a streamed WAV's placeholder sizes would otherwise draw a warning).
  { name: 'play', args: (input) => ['-q', '-V1', '-t', input, '-'] },
  {
    name: 'ffplay',
    args: (input) => ['-nodisp', '-autoexit', '-loglevel', 'error', '-f', input, '-i', 'pipe:0'],
  },
  { name: 'aplay', args: (input) => (input === 'wav' ? ['-q', '-t', 'wav', '-'] : undefined) },
];

export const NO_PLAYER_HINT =
  'install sox (`play`), ffmpeg (`ffplay`) or alsa-utils (`aplay`), e.g. `sudo apt-get install sox`';

/** The first executable file called `name` in PATH's directories. */
export function findExecutable(name: string, env: Env): string | undefined {
  for (const dir of (env['PATH'] ?? '').split(delimiter)) {
    if (dir === '') continue;
    const candidate = join(dir, name);
    try {
      if (!statSync(candidate).isFile()) continue;
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not there, or not executable
    }
  }
  return undefined;
}

/** The first player on PATH that plays `input`, or undefined. */
export function findPlayer(input: PlayerInput, env: Env): PlayerCommand | undefined {
  for (const player of PLAYERS) {
    const args = player.args(input);
    if (args === undefined) continue;
    const path = findExecutable(player.name, env);
    if (path !== undefined) return { name: player.name, path, args };
  }
  return undefined;
}

/** sox's `rec`, recording mu-law 8 kHz mono to stdout (a phone line's audio). */
export function micCommand(env: Env): PlayerCommand | undefined {
  const path = findExecutable('rec', env);
  return path === undefined
    ? undefined
    : {
        name: 'rec',
        path,
        args: ['-q', '-V1', '-t', 'raw', '-r', '8000', '-e', 'mu-law', '-b', '8', '-c', '1', '-'],
      };
}

/** The last bytes of a child's stderr, to explain its failure. */
function stderrTail(child: ChildProcess): () => string {
  let tail = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    tail = (tail + chunk.toString('utf8')).slice(-2000);
  });
  return () => tail.trim().split('\n').slice(-3).join(' ').trim();
}

/** A running player: audio in through `write`, `end` waits for it to finish playing. */
export class Player {
  readonly name: string;
  readonly #child: ChildProcess;
  readonly #exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  readonly #stderr: () => string;
  #failed: Error | undefined;

  constructor(command: PlayerCommand) {
    this.name = command.name;
    this.#child = spawn(command.path, command.args, { stdio: ['pipe', 'ignore', 'pipe'] });
    this.#stderr = stderrTail(this.#child);
    this.#exited = new Promise((resolve) => {
      this.#child.on('error', (error) => {
        this.#failed ??= error;
        resolve({ code: null, signal: null });
      });
      this.#child.on('close', (code, signal) => resolve({ code, signal }));
    });
    // EPIPE when the player quits early: reported by `end()` through its exit status.
    this.#child.stdin?.on('error', (error) => {
      this.#failed ??= error;
    });
  }

  /** False once the player is gone (it failed, or quit). */
  get alive(): boolean {
    return this.#failed === undefined && this.#child.exitCode === null && this.#child.signalCode === null;
  }

  /** Writes `bytes`; resolves when the pipe takes more (backpressure), or at once if the player is gone. */
  async write(bytes: Uint8Array): Promise<void> {
    const stdin = this.#child.stdin;
    if (!stdin || !this.alive || stdin.destroyed) return;
    if (stdin.write(bytes)) return;
    await new Promise<void>((resolve) => {
      const done = (): void => {
        stdin.off('drain', done);
        stdin.off('close', done);
        resolve();
      };
      stdin.on('drain', done);
      stdin.on('close', done);
    });
  }

  /**
   * Writes without waiting, for audio paced by a clock (a call): when the player has fallen more than
   * `maxQueuedBytes` behind, the audio is dropped instead of piling up.
   */
  feed(bytes: Uint8Array, maxQueuedBytes: number): void {
    const stdin = this.#child.stdin;
    if (!stdin || !this.alive || stdin.destroyed || stdin.writableLength > maxQueuedBytes) return;
    stdin.write(bytes);
  }

  /** Ends the input and waits for the player to play it out; throws if the player failed. */
  async end(): Promise<void> {
    this.#child.stdin?.end();
    const { code, signal } = await this.#exited;
    if (code === 0) return;
    const why = this.#stderr() || this.#failed?.message || (signal ? `killed by ${signal}` : '');
    throw new CliError(
      `${this.name} failed${code === null ? '' : ` (exit code ${code})`}${why ? `: ${why}` : ''}`,
    );
  }

  /** Stops it at once: what it still holds is not played. */
  stop(): void {
    this.#child.stdin?.destroy();
    this.#child.kill('SIGTERM');
  }

  /** Why it stopped early, for a warning. */
  describeFailure(): string {
    return this.#stderr() || this.#failed?.message || 'it exited';
  }
}

/** `rec` from sox: the microphone, as mu-law 8 kHz chunks. */
export class Microphone {
  readonly #child: ChildProcess;
  readonly #stderr: () => string;

  constructor(command: PlayerCommand, onAudio: (bytes: Uint8Array) => void, onEnd: (why: string) => void) {
    this.#child = spawn(command.path, command.args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.#stderr = stderrTail(this.#child);
    this.#child.stdout?.on('data', (chunk: Buffer) => onAudio(new Uint8Array(chunk)));
    this.#child.on('error', (error) => onEnd(error.message));
    this.#child.on('close', (code) => onEnd(this.#stderr() || `rec exited with code ${String(code)}`));
  }

  stop(): void {
    this.#child.removeAllListeners('close');
    this.#child.kill('SIGTERM');
  }
}
