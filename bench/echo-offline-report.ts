/**
 * The tables of `bench echo-offline` (bench/echo-offline.ts): its per-line results grouped by echo and
 * line noise, per line, and digests of every echo verdict and every onset decided.
 */
import { createHash } from 'node:crypto';
import type { EchoPath } from '../testkit/echo-line.js';
import { fmt, percentile, printTable } from './stats.js';

/** A call's first seconds, while the echo path is being found: false barge-ins there are counted apart. */
const EARLY_MS = 3000;

export interface Line {
  index: number;
  path: EchoPath | undefined;
  noiseDbfs: number | undefined;
}

/** One line's results, each onset as decided (ms on the inbound timeline) or onset → decision (ms). */
export interface LineResult {
  line: Line;
  /**
   * (a), the detector's CPU while the bot talks and the caller only echoes it: % of one core per call
   * (CPU time over the call's length). On stderr: it varies from run to run.
   */
  cpuPct: number;
  echoMinutes: number;
  /** (a): false barge-ins on the echo alone (ms, as decided), and where the path was found (ms). */
  steady: number[];
  steadyAtReplyStart: number;
  pathFoundMs: number | undefined;
  delayMs: number | undefined;
  erlDb: number | undefined;
  placedOff: number[];
  gaps: number[];
  /** (b): onset → decision of each caught talk-over, by where the onset fell; misses; other barge-ins. */
  talkOverMs: number[];
  talkOverAtReplyStartMs: number[];
  talkOverInPauseMs: number[];
  talkOverMissed: number;
  talkOverStray: number;
  /** (c): onset → decision in a call's first seconds; calls cut before the caller spoke; misses. */
  earlyMs: number[];
  earlyCut: number;
  earlyMissed: number;
}

/** What the run was, for the tables' titles and groups. */
export interface RunSettings {
  echoSeconds: number;
  talkFromMs: number;
  talkOvers: number;
  earlyCalls: number;
  /** The lines' noise levels (dBFS against −20 dBFS speech; undefined: none). */
  noises: ReadonlyArray<number | undefined>;
  /** sha256 (hex) of every echo verdict given. */
  verdictDigest: string;
}

function lineName(line: Line): string {
  const path = line.path ? `${line.path.delayMs} ms, ${line.path.erlDb} dB` : 'no echo';
  const snr = line.noiseDbfs === undefined ? 'no noise' : `${-20 - line.noiseDbfs} dB SNR`;
  return `${path}, ${snr}`;
}

const p50p95 = (xs: readonly number[]): string =>
  `${fmt(percentile(xs, 50), 0)} / ${fmt(percentile(xs, 95), 0)}`;

function falseRow(rs: readonly LineResult[]): string[] {
  const minutes = rs.reduce((n, r) => n + r.echoMinutes, 0);
  const count = (pick: (r: LineResult) => readonly number[]): string => {
    const n = rs.reduce((s, r) => s + pick(r).length, 0);
    return `${n} (${fmt((n * 10) / Math.max(1e-9, minutes), 2)})`;
  };
  return [
    String(rs.length),
    fmt(minutes, 1),
    count((r) => r.steady),
    String(rs.reduce((n, r) => n + r.steady.filter((d) => d < EARLY_MS).length, 0)),
    String(rs.reduce((n, r) => n + r.steadyAtReplyStart, 0)),
    count((r) => r.placedOff),
    count((r) => r.gaps),
  ];
}

function talkOverRow(rs: readonly LineResult[]): string[] {
  const all = rs.flatMap((r) => r.talkOverMs);
  const missed = rs.reduce((n, r) => n + r.talkOverMissed, 0);
  return [
    String(all.length + missed),
    p50p95(all),
    fmt(Math.max(...all), 0),
    String(missed),
    p50p95(rs.flatMap((r) => r.talkOverAtReplyStartMs)),
    p50p95(rs.flatMap((r) => r.talkOverInPauseMs)),
    String(rs.reduce((n, r) => n + r.talkOverStray, 0)),
  ];
}

function earlyRow(rs: readonly LineResult[]): string[] {
  const all = rs.flatMap((r) => r.earlyMs);
  const missed = rs.reduce((n, r) => n + r.earlyMissed, 0);
  return [
    String(all.length + missed),
    String(rs.reduce((n, r) => n + r.earlyCut, 0)),
    p50p95(all),
    fmt(Math.max(...all), 0),
    String(missed),
  ];
}

export function printReport(results: readonly LineResult[], run: RunSettings): void {
  const groups: Array<[string, (r: LineResult) => boolean]> = [
    ...run.noises.flatMap((n): Array<[string, (r: LineResult) => boolean]> => {
      const snr = n === undefined ? 'no noise' : `${-20 - n} dB SNR`;
      return [
        [`with echo, ${snr}`, (r) => r.line.path !== undefined && r.line.noiseDbfs === n],
        [`without echo, ${snr}`, (r) => r.line.path === undefined && r.line.noiseDbfs === n],
      ];
    }),
    ['all lines with echo', (r) => r.line.path !== undefined],
    ['all lines without echo', (r) => r.line.path === undefined],
  ];
  const grouped = (row: (rs: readonly LineResult[]) => string[]): string[][] =>
    groups
      .map(([name, match]): [string, LineResult[]] => [name, results.filter(match)])
      .filter(([, rs]) => rs.length > 0)
      .map(([name, rs]) => [name, ...row(rs)]);
  printTable(
    `(a) The echo alone: false barge-ins (per 10 min), ${run.echoSeconds} s a line`,
    [
      'lines',
      'n',
      'min',
      'steady',
      'of which in the first 3 s',
      'at a reply start',
      'replies placed ±30 ms off',
      'a playout gap every 3–6 s',
    ],
    grouped(falseRow),
  );
  printTable(
    `(b) Talk-overs from ${run.talkFromMs / 1000} s into the call: onset → decision (ms, inbound timeline), ${run.talkOvers} a line`,
    [
      'lines',
      'onsets',
      'p50 / p95',
      'max',
      'missed',
      "in a reply's first 1 s: p50 / p95",
      'in a pause: p50 / p95',
      'other onsets (later words of a talk-over, or the echo)',
    ],
    grouped(talkOverRow),
  );
  printTable(
    `(c) Onsets in a call's first 3 s (0.3–2.7 s in), ${run.earlyCalls} calls a line: onset → decision (ms)`,
    ['lines', 'calls', 'cut before the caller spoke', 'p50 / p95', 'max', 'missed'],
    grouped(earlyRow),
  );
  printTable(
    'Per line',
    [
      'line',
      'path found at (s)',
      'delay (ms) / ERL (dB) found',
      '(a) steady / first 3 s / off / gaps',
      '(b) p50 / p95, missed',
      '(c) p50 / p95, cut, missed',
    ],
    results.map((r) => [
      lineName(r.line),
      r.pathFoundMs === undefined ? 'never' : fmt(r.pathFoundMs / 1000, 2),
      r.delayMs === undefined ? 'none' : `${fmt(r.delayMs, 0)} / ${fmt(r.erlDb ?? Number.NaN, 1)}`,
      `${r.steady.length} / ${r.steady.filter((d) => d < EARLY_MS).length} / ${r.placedOff.length} / ${r.gaps.length}`,
      `${p50p95(r.talkOverMs)}, ${r.talkOverMissed}`,
      `${p50p95(r.earlyMs)}, ${r.earlyCut}, ${r.earlyMissed}`,
    ]),
  );
  const onsets = createHash('sha256');
  for (const r of results)
    for (const xs of [r.steady, r.placedOff, r.gaps, r.talkOverMs, r.earlyMs])
      onsets.update(`${xs.join(',')};`);
  printTable(
    'Digests (sha256, first 16 hex digits): a refactor must leave them as they are',
    ['of', 'digest'],
    [
      ['every echo verdict', run.verdictDigest.slice(0, 16)],
      ['every onset decided', onsets.digest('hex').slice(0, 16)],
    ],
  );
  // Not on stdout, which must not change from run to run.
  const cpu = (rs: readonly LineResult[]): string =>
    fmt(rs.reduce((sum, r) => sum + r.cpuPct, 0) / rs.length, 3);
  console.error(
    'Detector CPU per call, the echo alone (% of one core):\n' +
      grouped((rs) => [cpu(rs)])
        .map(([name, value]) => `  ${name}: ${value}`)
        .join('\n') +
      `\n  per line: ${results.map((r) => `${lineName(r.line)} ${cpu([r])}`).join('; ')}`,
  );
}
