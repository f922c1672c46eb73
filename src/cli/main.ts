#!/usr/bin/env node
/** `npx voxbridge …`: the command line (dispatch and exit codes in cli.ts). */
import { runCli } from './cli.js';

const code = await runCli(process.argv.slice(2), process.env, {
  out: (text) => void process.stdout.write(text),
  err: (text) => void process.stderr.write(text),
});
process.exitCode = code;
// Everything is closed by now; should anything still hold the event loop, it does not hold the exit.
setTimeout(() => process.exit(code), 2000).unref();
