/**
 * `voxbridge <command>`: global options and `--version` before the command, dispatch, and the one
 * place where failures become messages and exit codes (0 ok, 1 failed, 2 usage error).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../paths.js';
import { CliError, GLOBAL_HELP, UsageError, type Env } from './args.js';
import { CALL_HELP, parseCall, runCall } from './call.js';
import { parsePlace, placesCall, PLACE_HELP, runPlace } from './place-call.js';
import { parseSay, runSay, SAY_HELP } from './say.js';
import { parseVoices, runVoices, VOICES_HELP } from './voices.js';

export const MAIN_HELP = `Usage: voxbridge <command> [options]

Commands:
  say TEXT...      speak TEXT with a voice, to a file, a player or stdout
  voices list      the speech service's voices
  voices add       create a voice from audio samples
  call             a softphone in the terminal that calls the bot's phone flows
  call NUMBER      has a running voxbridge place an outbound call (POST /calls)

\`voxbridge <command> --help\` shows a command's options.

${GLOBAL_HELP}
  -V, --version  voxbridge's version`;

const HELP: Readonly<Record<string, string>> = { say: SAY_HELP, voices: VOICES_HELP, call: CALL_HELP };

export function version(): string {
  const pkg = JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version?: unknown };
  return typeof pkg.version === 'string' ? pkg.version : 'unknown';
}

/** What comes before the command: global options (kept for the command) or a request for help/version. */
type Leading =
  { kind: 'help' } | { kind: 'version' } | { kind: 'command'; globals: string[]; rest: string[] };

const GLOBALS_WITH_VALUE = new Set(['--url', '--key']);

export function splitLeading(argv: readonly string[]): Leading {
  const globals: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--help' || arg === '-h') return { kind: 'help' };
    if (arg === '--version' || arg === '-V') return { kind: 'version' };
    const name = arg.split('=', 1)[0]!;
    if (GLOBALS_WITH_VALUE.has(name)) {
      if (arg.includes('=')) globals.push(arg);
      else {
        const value = argv[i + 1];
        if (value === undefined) throw new UsageError(`option '${arg} <value>' argument missing`);
        globals.push(arg, value);
        i++;
      }
      continue;
    }
    if (arg.startsWith('-')) throw new UsageError(`unknown option '${arg}' before the command`);
    return { kind: 'command', globals, rest: argv.slice(i) };
  }
  throw new UsageError('no command given');
}

interface Io {
  out: (text: string) => void;
  err: (text: string) => void;
}

async function dispatch(argv: readonly string[], env: Env, io: Io): Promise<void> {
  const leading = splitLeading(argv);
  if (leading.kind === 'help') return io.out(`${MAIN_HELP}\n`);
  if (leading.kind === 'version') return io.out(`${version()}\n`);
  const [command, ...rest] = leading.rest;
  const { globals } = leading;
  switch (command) {
    case 'say': {
      const parsed = parseSay([...globals, ...rest], env, { stdoutIsTTY: process.stdout.isTTY === true });
      if (parsed.help) return io.out(`${SAY_HELP}\n`);
      return runSay(parsed.plan);
    }
    case 'voices': {
      // The action comes first: `voices list --url …`.
      const [action, ...more] = rest;
      const args = action === undefined ? [] : [action, ...globals, ...more];
      const parsed = parseVoices(args, env);
      if (parsed.help) return io.out(`${VOICES_HELP}\n`);
      return io.out(`${await runVoices(parsed.plan)}\n`);
    }
    case 'call': {
      const args = [...globals, ...rest];
      if (placesCall(args)) {
        const placing = parsePlace(args, env);
        if (placing.help) return io.out(`${PLACE_HELP}\n`);
        return runPlace(placing.plan, io);
      }
      const parsed = parseCall(args, env);
      if (parsed.help) return io.out(`${CALL_HELP}\n`);
      return runCall(parsed.plan, env);
    }
    default:
      throw new UsageError(`unknown command "${command}" (say, voices, call)`);
  }
}

/** Runs one command line; resolves with the exit code. Never throws. */
export async function runCli(argv: readonly string[], env: Env, io: Io): Promise<number> {
  try {
    await dispatch(argv, env, io);
    return 0;
  } catch (error) {
    if (error instanceof UsageError) {
      const where = error.command ? `voxbridge ${error.command}` : 'voxbridge';
      const help = error.command && HELP[error.command] ? `${where} --help` : 'voxbridge --help';
      io.err(`${where}: ${error.message}\nSee \`${help}\`.\n`);
      return 2;
    }
    if (error instanceof CliError) {
      io.err(`voxbridge: ${error.message}\n`);
      return error.exitCode;
    }
    io.err(
      `voxbridge: unexpected error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    return 1;
  }
}
