/**
 * `voxbridge say`: one text, spoken by the speech service's streaming endpoint, written to a file, to
 * stdout or to a player as it arrives.
 */
import { wavHeader } from '../audio/wav.js';
import {
  DEFAULT_OUTPUT_FORMAT,
  isOutputFormat,
  OUTPUT_FORMATS,
  type OutputFormat,
} from '../speech/formats.js';
import type { SpeechStream } from '../speech/client.js';
import {
  CliError,
  GLOBAL_HELP,
  GLOBAL_OPTIONS,
  parseCommand,
  serviceTarget,
  UsageError,
  type Env,
  type Parsed,
  type ServiceTarget,
} from './args.js';
import { AudioFile } from './audio-file.js';
import { findPlayer, NO_PLAYER_HINT, Player } from './player.js';
import { Progress } from './progress.js';
import { explainSpeechError, openClient } from './service.js';

export const DEFAULT_VOICE = 'voxbridge-default';

export const SAY_HELP = `Usage: voxbridge say [options] TEXT...
       voxbridge say [options] -          (reads the text from stdin)

Speaks TEXT with a voice of the speech service. The audio is streamed to its destination as it
arrives; on a terminal, stderr shows how much has come.

Options:
  --voice ID          the voice (default ${DEFAULT_VOICE}; see \`voxbridge voices list\`)
  --format FORMAT     ${OUTPUT_FORMATS.join(' | ')} (default ${DEFAULT_OUTPUT_FORMAT})
  --model ID          the model (default: the service's)
  -o, --output FILE   write the audio to FILE ("-": stdout; the default when stdout is not a terminal)
  --play              play it through sox's \`play\`, \`ffplay\` or \`aplay\` (with -o too: both)

${GLOBAL_HELP}

Examples:
  voxbridge say "Hello from voxbridge." -o hello.wav
  voxbridge say --voice my-voice --play "Your table is ready."
  echo "Read from a pipe." | voxbridge say - --format mp3_44100_192 -o out.mp3`;

const SAY_OPTIONS = {
  ...GLOBAL_OPTIONS,
  voice: { type: 'string' },
  format: { type: 'string' },
  model: { type: 'string' },
  output: { type: 'string', short: 'o' },
  play: { type: 'boolean' },
} as const;

export interface SayPlan {
  /** Undefined: read it from stdin. */
  text: string | undefined;
  voiceId: string;
  format: OutputFormat;
  modelId: string | undefined;
  /** A file, `-` for stdout, or undefined (played only). */
  output: string | undefined;
  play: boolean;
  target: ServiceTarget;
}

export function parseSay(args: readonly string[], env: Env, io: { stdoutIsTTY: boolean }): Parsed<SayPlan> {
  const { values, positionals } = parseCommand('say', args, SAY_OPTIONS);
  if (values.help) return { help: true };
  if (positionals.length === 0)
    throw new UsageError('missing the text to speak (or "-" to read it from stdin)', 'say');
  const text = positionals.length === 1 && positionals[0] === '-' ? undefined : positionals.join(' ');
  const format = values.format ?? DEFAULT_OUTPUT_FORMAT;
  if (!isOutputFormat(format))
    throw new UsageError(`--format must be one of ${OUTPUT_FORMATS.join(', ')}, got "${format}"`, 'say');
  const voiceId = values.voice ?? DEFAULT_VOICE;
  if (voiceId.trim() === '') throw new UsageError('--voice must not be empty', 'say');
  if (values.model !== undefined && values.model.trim() === '')
    throw new UsageError('--model must not be empty', 'say');
  if (values.output === '') throw new UsageError('--output must name a file (or "-" for stdout)', 'say');
  const play = values.play ?? false;
  let output = values.output;
  if (output === undefined && !play) {
    if (io.stdoutIsTTY)
      throw new UsageError(
        'nowhere to put the audio: give -o FILE or --play (or redirect stdout to a file or a pipe)',
        'say',
      );
    output = '-';
  }
  return {
    help: false,
    plan: {
      text,
      voiceId,
      format,
      modelId: values.model,
      output,
      play,
      target: serviceTarget(values, env, 'say'),
    },
  };
}

async function readStdin(): Promise<string> {
  const parts: Buffer[] = [];
  for await (const chunk of process.stdin) parts.push(chunk as Buffer);
  return Buffer.concat(parts).toString('utf8');
}

/** Where the audio goes: each write resolves when the destination can take more. */
interface Destination {
  write(bytes: Uint8Array): Promise<void>;
  finish(): Promise<void>;
  abort(): Promise<void>;
}

function stdoutDestination(): Destination {
  const out = process.stdout;
  let failed: Error | undefined;
  // Stays on: a reader that went away (EPIPE) must end the command, not crash it.
  out.on('error', (error) => {
    failed ??= error;
  });
  const check = (): void => {
    if (failed) throw new CliError(`cannot write to stdout: ${failed.message}`);
  };
  return {
    write: async (bytes) => {
      check();
      if (!out.write(bytes))
        await new Promise<void>((resolve) => {
          const done = (): void => {
            out.off('drain', done);
            out.off('error', done);
            resolve();
          };
          out.on('drain', done);
          out.on('error', done);
        });
      check();
    },
    finish: async () => check(),
    abort: async () => undefined,
  };
}

async function fileDestination(path: string, format: OutputFormat): Promise<Destination> {
  let file: AudioFile;
  try {
    file = await AudioFile.create(path);
  } catch (error) {
    throw new CliError(`cannot write ${path}: ${(error as Error).message}`);
  }
  return {
    write: (bytes) => file.write(bytes),
    finish: () => file.close({ wav: format === 'wav_24000' }),
    abort: () => file.discard(),
  };
}

/** `alone`: nothing else takes the audio, so a player that quit stops the command at once. */
function playerDestination(player: Player, format: OutputFormat, alone: boolean): Destination {
  // Raw PCM gets a WAV header (sizes unknown), so every player knows what it is.
  let first = format === 'pcm_24000';
  return {
    write: async (bytes) => {
      // It quit half way (no sound device, say): stop here with its reason, unless a file still
      // wants the audio (then `finish` reports it).
      if (!player.alive) return alone ? player.end() : undefined;
      if (first) {
        first = false;
        await player.write(wavHeader({ sampleRate: 24_000, channels: 1, bitsPerSample: 16 }));
      }
      await player.write(bytes);
    },
    finish: () => player.end(),
    abort: async () => player.stop(),
  };
}

async function openDestinations(plan: SayPlan, player: Player | undefined): Promise<Destination[]> {
  const out: Destination[] = [];
  if (plan.output === '-') out.push(stdoutDestination());
  else if (plan.output !== undefined) out.push(await fileDestination(plan.output, plan.format));
  if (player) out.push(playerDestination(player, plan.format, out.length === 0));
  return out;
}

async function pump(stream: SpeechStream, destinations: Destination[], progress: Progress): Promise<void> {
  for await (const chunk of stream) {
    progress.add(chunk.byteLength);
    await Promise.all(destinations.map((d) => d.write(chunk)));
  }
}

export async function runSay(plan: SayPlan): Promise<void> {
  const text = plan.text ?? (await readStdin()).replace(/\s+$/, '');
  if (text.trim() === '') throw new UsageError('there is no text to speak on stdin', 'say');
  let player: Player | undefined;
  if (plan.play) {
    const command = findPlayer(plan.format === 'mp3_44100_192' ? 'mp3' : 'wav', process.env);
    if (!command)
      throw new CliError(`no audio player found to --play with: ${NO_PLAYER_HINT}; or write a file with -o`);
    player = new Player(command);
  }
  const client = openClient(plan.target);
  const abort = new AbortController();
  const onSignal = (): void => abort.abort(new CliError('interrupted', 130));
  process.once('SIGINT', onSignal);
  const progress = new Progress(plan.format, process.stderr);
  let destinations: Destination[] = [];
  try {
    let stream: SpeechStream;
    try {
      stream = await client.stream(
        {
          voiceId: plan.voiceId,
          text,
          outputFormat: plan.format,
          ...(plan.modelId === undefined ? {} : { modelId: plan.modelId }),
        },
        { signal: abort.signal },
      );
    } catch (error) {
      throw explainSpeechError(error, plan.target, 'say');
    }
    try {
      destinations = await openDestinations(plan, player);
      await pump(stream, destinations, progress);
    } catch (error) {
      stream.cancel();
      throw explainSpeechError(error, plan.target, 'say');
    }
    // A player that failed does not cost the file that was written.
    const finished = await Promise.allSettled(destinations.map((d) => d.finish()));
    const failed = finished.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) {
      destinations = destinations.filter((_, i) => finished[i]?.status === 'rejected');
      throw failed.reason;
    }
    const where = plan.output === undefined || plan.output === '-' ? 'done' : `wrote ${plan.output}`;
    progress.done(where);
  } catch (error) {
    progress.abandon();
    player?.stop();
    await Promise.all(destinations.map((d) => d.abort().catch(() => undefined)));
    throw error;
  } finally {
    process.off('SIGINT', onSignal);
    await client.close();
  }
}
