/** The tools a user would pick instead of our DSP, run the way they are usually run, and measured. */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface ProcessCost {
  /** User + system CPU of the process (per run when repeated), ms. */
  cpuMs: number;
  /** Peak resident memory, MB. */
  maxRssMb: number;
  output: Buffer;
}

/** Runs `command args` under GNU time with `input` on stdin. */
export function measureProcess(
  command: string,
  args: readonly string[],
  input: Uint8Array,
): Promise<ProcessCost> {
  return new Promise((resolve, reject) => {
    const child = spawn('/usr/bin/time', ['-f', 'VBTIME %U %S %M', command, ...args], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    let err = '';
    child.stdout.on('data', (d: Buffer) => out.push(d));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      const m = /VBTIME ([\d.]+) ([\d.]+) (\d+)/.exec(err);
      if (code !== 0 || !m) {
        reject(new Error(`${command} exited ${code}: ${err.slice(0, 500)}`));
        return;
      }
      resolve({
        cpuMs: (Number(m[1]) + Number(m[2])) * 1000,
        maxRssMb: Number(m[3]) / 1024,
        output: Buffer.concat(out),
      });
    });
    child.stdin.on('error', () => undefined);
    child.stdin.end(input);
  });
}

/**
 * CPU per run of `command args` on `input`, as the mean over `runs` runs back to back under one GNU
 * time (which counts every waited-for descendant). One run is too short for GNU time's 10 ms
 * resolution: ffmpeg's ≈ 50 ms would read as 40 or 60.
 */
export async function measureRuns(
  command: string,
  args: readonly string[],
  input: Uint8Array,
  runs: number,
): Promise<ProcessCost> {
  const dir = await mkdtemp(join(tmpdir(), 'voxbridge-bench-runs-'));
  try {
    const file = join(dir, 'input.raw');
    await writeFile(file, input);
    // The loop's shell adds about a millisecond per run (one fork), counted against the baseline.
    const script = `i=0; while [ $i -lt ${runs} ]; do "$@" < '${file}' > /dev/null || exit 1; i=$((i+1)); done`;
    const total = await measureProcess('sh', ['-c', script, 'sh', command, ...args], new Uint8Array());
    return { ...total, cpuMs: total.cpuMs / runs };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export type Target = 'mulaw8k' | 'stereo48k';

/** ffmpeg reading what the speech service sends (`pcm_24000`: s16le mono 24 kHz) from stdin. */
export const FFMPEG_PCM24K_INPUT = [
  '-hide_banner',
  '-loglevel',
  'error',
  '-f',
  's16le',
  '-ar',
  '24000',
  '-ac',
  '1',
  '-i',
  'pipe:0',
];

/** ffmpeg as Discord bots run it through prism-media: one process per utterance, raw in, raw out. */
export function ffmpegArgs(target: Target): string[] {
  return target === 'mulaw8k'
    ? [...FFMPEG_PCM24K_INPUT, '-f', 'mulaw', '-ar', '8000', '-ac', '1', 'pipe:1']
    : [...FFMPEG_PCM24K_INPUT, '-f', 's16le', '-ar', '48000', '-ac', '2', 'pipe:1'];
}

const SOX_INPUT = ['-t', 'raw', '-r', '24000', '-e', 'signed', '-b', '16', '-c', '1', '-'];
const soxOutput = (rate: number, encoding: 'signed' | 'mu-law', channels: 1 | 2): string[] => [
  '-t',
  'raw',
  '-r',
  String(rate),
  '-e',
  encoding,
  ...(encoding === 'signed' ? ['-b', '16'] : []),
  '-c',
  String(channels),
  '-',
];

/** sox with its default (high-quality) rate effect. */
export function soxArgs(target: Target): string[] {
  return [
    ...SOX_INPUT,
    ...(target === 'mulaw8k' ? soxOutput(8000, 'mu-law', 1) : soxOutput(48_000, 'signed', 2)),
  ];
}

/** sox to 8 kHz 16-bit with its very-high-quality resampler: the reference for our 8 kHz output. */
export function soxReference8kArgs(): string[] {
  return [...SOX_INPUT, ...soxOutput(8000, 'signed', 1), 'rate', '-v'];
}
