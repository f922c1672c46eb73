// Over 450 lines: one benchmark's phases, sweep and table, around the child process in talker-client.ts.
/**
 * Phone calls under load with real callers (`npm run bench -- talkers [N…] | talkers sweep [from] [to]`):
 * N Twilio-protocol calls on loopback (the gateways in a child process, bench/talker-client.ts; the
 * app in this one), every caller sending line noise (−50 to −40 dBFS, per line) every 20 ms, half of
 * the lines echoing the bot back (testkit's `EchoLine`, fed the audio the fake gateway plays: each line
 * its own delay 40–300 ms and ERL 6–30 dB, through mu-law). Each round the bot says a cached prompt on
 * every call, and a fraction of the callers talk over it (eSpeak utterances at −20 dBFS, once or
 * twice, at random moments while they hear the bot).
 *
 * Measured at the fake gateway: onset → clear (the packet carrying the speech onset sent → the `clear`
 * arrived), onsets caught (a clear within 1.5 s of an onset made while the bot was audible), false
 * barge-ins (a clear that cut the bot with no caller speech in the 1.5 s before it: echo or noise cut
 * it off; also one whose barge-in, by the app's event, began before the caller spoke), frame lateness
 * and underruns of the cached prompt (frames before a call is interrupted); here: CPU of both
 * processes during the prompts (this one's includes the VAD worker threads) and of the rest of the
 * machine, the VAD workers' queue depth (sampled every 20 ms), RSS; and, from the app's `barge-in`
 * events, how much of the caller's audio the detector needed (its decision on the inbound timeline)
 * apart from the time the decision took to reach the gateway. Split by lines with and without echo.
 * `sweep` then looks for the most calls that hold the issue-18 targets (doubling, then bisecting).
 */
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync, readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { App } from '../src/app/app.js';
import { startBenchApp } from './app.js';
import { request } from './calls.js';
import { fmt, median, percentile, printTable } from './stats.js';
import type { ClearRecord, LineConfig, TalkerReport, TalkRecord } from './talker-client.js';
import { FRAME_MS } from '../src/audio/framer.js';
import { TALKERS_PROMPT as PROMPT } from '../testkit/prompts.js';

const DEFAULT_COUNTS = [200, 500];
const ROUNDS = 3;
const SWEEP_ROUNDS = 2;
/** Callers that talk over each prompt, and of those, the ones that try a second time. */
const TALK_FRACTION = 0.4;
const SECOND_TALK_FRACTION = 0.3;
/** A clear this soon after an onset catches it; a clear with no caller speech this long before it is false. */
const CATCH_WINDOW_MS = 1500;
/**
 * A barge-in whose speech (as the app found it) began this long before the caller's onset was not the
 * caller's: the detector's onset may lead the true one by its pre-roll (two 32 ms windows) and a little.
 */
const PREEMPTED_BEFORE_MS = 100;
/** After the prompts end: the last talks finish and late clears arrive. */
const SETTLE_MS = 2000;
/** The VAD queue's depth is sampled this often (ms), RSS every fifth time. */
const SAMPLE_EVERY_MS = 20;
const RSS_EVERY_SAMPLES = 5;
const SEED = 18;

const TARGET = { latenessP99Ms: 20, underruns: 0, onsetToClearP95Ms: 300, caughtPct: 90, falsePer10Min: 1 };

interface SayAnswer {
  status: string;
  underruns: number;
  played_ms: number;
}

interface BargeInEvent {
  onsetMs: number;
  detectedMs: number;
}

interface OnsetFigures {
  /** Caller onsets made while the bot was audible, less the pre-empted. */
  onsets: number;
  /** Onsets the bot was cut before (by echo or noise), just after the caller began. */
  preempted: number;
  caught: number;
  onsetToClear: number[];
  /** The detector's decision, after the true onset, on the inbound timeline (ms). */
  detectedAfter: number[];
  /** The decision's packet sent → the clear at the gateway (ms). */
  decisionToClear: number[];
  falseBargeIns: number;
  botAudioMs: number;
}

interface CaseResult {
  n: number;
  rounds: number;
  lateness: number[];
  underruns: number;
  gaps: number;
  says: number;
  interrupted: number;
  failed: number;
  violations: number;
  skippedTalks: number;
  /** Clears that came when the caller heard nothing (they cut nothing). */
  idleClears: number;
  /** False barge-ins the app took back (the bot went on). */
  resumed: number;
  appCpuPerCallPct: number;
  /** Of the app's: its main thread's (the rest is the VAD worker threads', and V8's and libuv's own). */
  appMainCpuPerCallPct: number;
  /** Of the app's: the threads the process started with, the main thread aside (`STARTING_THREADS`). */
  appV8CpuPerCallPct: number;
  clientCpuPerCallPct: number;
  /** Other processes' CPU during the prompts (% of one core): they compete with the benchmark. */
  othersCpuPct: number;
  queueDepth: number[];
  /** During the prompts: Silero inferences, and windows that wanted Silero but were judged by the gate alone (a worker behind). */
  inferences: number;
  skippedWindows: number;
  rssPeakMb: number;
  rssPerCallKb: number;
  sendLagP99Ms: number;
  echo: OnsetFigures;
  /** Lines with echo from the second round on: each call's echo path was found in its first prompt. */
  echoKnown: OnsetFigures;
  noEcho: OnsetFigures;
  wallS: number;
}

async function sayAll(app: App, callSids: readonly string[], body: object): Promise<SayAnswer[]> {
  return Promise.all(
    callSids.map(async (id) => {
      const res = await fetch(`${app.url}/calls/${id}/say`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return (await res.json()) as SayAnswer;
    }),
  );
}

/** Until no call speaks (polled coarsely: 500 calls are not walked every millisecond). */
async function quiet(app: App, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (app.calls.speaking && performance.now() < deadline) await new Promise((r) => setTimeout(r, 50));
}

function pushTo<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

/** Busy time of every core since boot (ms), from the kernel's counters. */
function machineBusyMs(): number {
  return cpus().reduce((s, c) => s + c.times.user + c.times.nice + c.times.sys + c.times.irq, 0);
}

const cpuMs = (c: NodeJS.CpuUsage): number => (c.user + c.system) / 1000;

/** The kernel's clock ticks a second, in which /proc gives a thread's times (USER_HZ, 100 on Linux). */
const CLOCK_TICKS = 100;

/**
 * A thread of this process's CPU time (ms), from the kernel's counters of that thread alone (Linux; NaN
 * elsewhere): `process.cpuUsage()` adds every thread's, the VAD workers' among them.
 */
function threadCpuMs(tid: number): number {
  try {
    const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
    // After the name in parentheses: the state (field 3), …, utime (14) and stime (15).
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
  } catch {
    return Number.NaN;
  }
}

/** This process's threads (Linux; none elsewhere). */
function threadIds(): number[] {
  try {
    return readdirSync('/proc/self/task').map(Number);
  } catch {
    return [];
  }
}

/**
 * The threads this process had when the benchmarks loaded, the main thread aside: V8's own (its
 * garbage collector's parallel and concurrent helpers, its compilers) and libuv's, before any worker
 * thread started. Under `talkers` they are busy with garbage collection, the workers' heaps' as well
 * as the main thread's.
 */
const STARTING_THREADS = threadIds().filter((tid) => tid !== process.pid);

function mainThreadCpuMs(): number {
  return threadCpuMs(process.pid);
}

/** The CPU time of `STARTING_THREADS` (ms; NaN where threads are not listed). */
function startingThreadsCpuMs(): number {
  if (STARTING_THREADS.length === 0) return Number.NaN;
  return STARTING_THREADS.reduce((sum, tid) => sum + threadCpuMs(tid), 0);
}

/**
 * The app's barge-in that sent a clear: the last one decided before the clear arrived (on the call's
 * inbound timeline, a frame's worth of slack).
 */
function causeOf(clear: ClearRecord, events: readonly BargeInEvent[] | undefined): BargeInEvent | undefined {
  let cause: BargeInEvent | undefined;
  for (const e of events ?? []) if (e.detectedMs <= clear.inboundMs + FRAME_MS) cause = e;
  return cause;
}

/**
 * The barge-in figures of the talks and clears of one kind of line. A talk is caught by the first
 * clear within `CATCH_WINDOW_MS` of its onset, unless the app's barge-in behind that clear began
 * well before the caller spoke (`PREEMPTED_BEFORE_MS`): then echo or noise cut the bot, the talk is
 * pre-empted (counted apart, not an onset) and the clear is false. Any other clear that cut the bot
 * is false unless caller speech was under way in the window before it.
 */
function onsetFigures(
  talks: readonly TalkRecord[],
  clearsByCall: ReadonlyMap<number, readonly ClearRecord[]>,
  eventsByCall: ReadonlyMap<number, BargeInEvent[]>,
  calls: readonly number[],
  botAudioMs: number,
): OnsetFigures {
  const out: OnsetFigures = {
    onsets: 0,
    preempted: 0,
    caught: 0,
    onsetToClear: [],
    detectedAfter: [],
    decisionToClear: [],
    falseBargeIns: 0,
    botAudioMs,
  };
  const byTalk = new Set<ClearRecord>();
  const speechBehind = (t: TalkRecord, cause: BargeInEvent | undefined): boolean =>
    cause === undefined || cause.onsetMs >= t.inboundMs - PREEMPTED_BEFORE_MS;
  for (const t of talks) {
    const clear = clearsByCall.get(t.call)?.find((c) => c.at >= t.sentAt);
    const inTime = clear !== undefined && clear.at - t.sentAt <= CATCH_WINDOW_MS;
    const cause = inTime ? causeOf(clear, eventsByCall.get(t.call)) : undefined;
    if (inTime && !speechBehind(t, cause)) {
      out.preempted++;
      continue;
    }
    out.onsets++;
    if (!inTime) continue;
    byTalk.add(clear);
    out.caught++;
    out.onsetToClear.push(clear.at - t.sentAt);
    if (cause) {
      out.detectedAfter.push(cause.detectedMs - t.inboundMs);
      out.decisionToClear.push(clear.at - t.sentAt - (cause.detectedMs - t.inboundMs));
    }
  }
  const talksByCall = new Map<number, TalkRecord[]>();
  for (const t of talks) pushTo(talksByCall, t.call, t);
  for (const call of calls)
    for (const clear of clearsByCall.get(call) ?? []) {
      if (!clear.audible || byTalk.has(clear)) continue;
      const cause = causeOf(clear, eventsByCall.get(call));
      const late = (talksByCall.get(call) ?? []).some(
        (t) => clear.at >= t.sentAt && clear.at <= t.endAt + CATCH_WINDOW_MS && speechBehind(t, cause),
      );
      if (!late) out.falseBargeIns++;
    }
  return out;
}

async function runCase(n: number, rounds: number): Promise<CaseResult> {
  const started = performance.now();
  // TALKERS_ECHO=false measures the 400 ms rule alone (calls.bargeIn.echo: false), for a baseline;
  // TALKERS_BARGE_IN=false no detection at all (the app's pacing alone: its CPU is the floor).
  const echo = process.env['TALKERS_ECHO'] !== 'false';
  const enabled = process.env['TALKERS_BARGE_IN'] !== 'false';
  const bench = await startBenchApp('talkers', {
    calls: { defaultFlow: null, maxCalls: n + 10, bargeIn: { echo, enabled } },
  });
  const { app } = bench;
  const client = fork(fileURLToPath(new URL('./talker-client.js', import.meta.url)), { stdio: 'inherit' });
  const eventsBySid = new Map<string, BargeInEvent[]>();
  let resumed = 0;
  app.calls.onCall((call) =>
    call.on('event', (e) => {
      // A false barge-in taken back (issue 18); compared as a string, so this runs on trees without it.
      if ((e.type as string) === 'barge-in.resumed') resumed++;
      if (e.type !== 'barge-in') return;
      const list = eventsBySid.get(e.callId) ?? [];
      list.push({ onsetMs: e.onsetMs, detectedMs: e.detectedMs });
      eventsBySid.set(e.callId, list);
    }),
  );
  const gauge = app.metrics.registry.getSingleMetric('voxbridge_vad_queue_depth');
  const reports: TalkerReport[] = [];
  const answers: SayAnswer[] = [];
  const queueDepth: number[] = [];
  let appCpuMs = 0;
  let appMainCpuMs = 0;
  let appV8CpuMs = 0;
  let clientCpuMs = 0;
  const vadCount = async (name: string): Promise<number> => {
    const metric = app.metrics.registry.getSingleMetric(name);
    return metric ? ((await metric.get()).values[0]?.value ?? 0) : 0;
  };
  let skippedWindows = 0;
  let inferences = 0;
  let sayWallMs = 0;
  /** Every core's busy time, ours and other processes'. */
  let machineMs = 0;
  try {
    (globalThis as { gc?: () => void }).gc?.(); // what the app's start left behind is not the calls'
    const rssIdle = process.memoryUsage.rss();
    const ready = await request<{ callSids: string[]; lines: LineConfig[] }>(
      client,
      { cmd: 'open', url: `${app.url.replace('http:', 'ws:')}/media/twilio`, calls: n, seed: SEED },
      'ready',
    );
    const { callSids, lines } = ready;
    while (app.calls.list().filter((c) => c.state.status === 'active').length < n)
      await new Promise((r) => setTimeout(r, 20));
    // Warm the phrase cache (not interruptible: an echo must not cut the warm-up short); its length
    // bounds when callers may start talking.
    const [warm] = await sayAll(app, callSids.slice(0, 1), { text: PROMPT, interruptible: false });
    const promptMs = warm!.played_ms;
    await request(client, { cmd: 'report' }, 'report'); // a fresh start for the client's counters
    resumed = 0;
    let rssPeak = process.memoryUsage.rss();
    let sampling = false;
    let samples = 0;
    const sampler = setInterval(() => {
      if (++samples % RSS_EVERY_SAMPLES === 0) rssPeak = Math.max(rssPeak, process.memoryUsage.rss());
      if (!gauge || sampling) return;
      sampling = true;
      void Promise.resolve(gauge.get()).then((m) => {
        queueDepth.push(m.values[0]?.value ?? 0);
        sampling = false;
      });
    }, SAMPLE_EVERY_MS);
    try {
      for (let round = 0; round < rounds; round++) {
        await request(
          client,
          {
            cmd: 'round',
            promptMs,
            talkFraction: TALK_FRACTION,
            secondTalkFraction: SECOND_TALK_FRACTION,
            seed: SEED * 1000 + round,
          },
          'armed',
        );
        const clientCpu0 = (await request<{ cpu: NodeJS.CpuUsage }>(client, { cmd: 'cpu' }, 'cpu')).cpu;
        const appCpu0 = process.cpuUsage();
        const appMain0 = mainThreadCpuMs();
        const appV80 = startingThreadsCpuMs();
        const skipped0 = await vadCount('voxbridge_vad_windows_skipped_total');
        const inferences0 = await vadCount('voxbridge_vad_inferences_total');
        const machine0 = machineBusyMs();
        const t0 = performance.now();
        answers.push(...(await sayAll(app, callSids, { text: PROMPT })));
        // What a false barge-in resumed may still be playing.
        await quiet(app, 30_000);
        sayWallMs += performance.now() - t0;
        appCpuMs += cpuMs(process.cpuUsage(appCpu0));
        appMainCpuMs += mainThreadCpuMs() - appMain0;
        appV8CpuMs += startingThreadsCpuMs() - appV80;
        skippedWindows += (await vadCount('voxbridge_vad_windows_skipped_total')) - skipped0;
        inferences += (await vadCount('voxbridge_vad_inferences_total')) - inferences0;
        const clientCpu1 = (await request<{ cpu: NodeJS.CpuUsage }>(client, { cmd: 'cpu' }, 'cpu')).cpu;
        clientCpuMs += cpuMs(clientCpu1) - cpuMs(clientCpu0);
        machineMs += machineBusyMs() - machine0;
        await new Promise((r) => setTimeout(r, SETTLE_MS));
        reports.push(await request<TalkerReport>(client, { cmd: 'report' }, 'report'));
      }
    } finally {
      clearInterval(sampler);
    }
    const callIndex = new Map(callSids.map((sid, i) => [sid, i]));
    const eventsByCall = new Map<number, BargeInEvent[]>();
    for (const [sid, list] of eventsBySid) eventsByCall.set(callIndex.get(sid)!, list);
    const callsOf = (echo: boolean): number[] => lines.flatMap((l, i) => (l.echo === echo ? [i] : []));
    /** The figures of one kind of line, over the rounds from `fromRound` on. */
    const kind = (echo: boolean, fromRound = 0): OnsetFigures => {
      const rounds = reports.slice(fromRound);
      const clearsByCall = new Map<number, ClearRecord[]>();
      for (const r of rounds) for (const c of r.clears) pushTo(clearsByCall, c.call, c);
      return onsetFigures(
        rounds.flatMap((r) => r.talks).filter((t) => t.echo === echo),
        clearsByCall,
        eventsByCall,
        callsOf(echo),
        rounds.reduce((s, r) => s + (echo ? r.botAudioMs.echo : r.botAudioMs.noEcho), 0),
      );
    };
    const sayWallS = sayWallMs / 1000;
    return {
      n,
      rounds,
      lateness: reports.flatMap((r) => r.lateness),
      underruns: answers.reduce((s, a) => s + (a.underruns ?? 0), 0),
      gaps: reports.reduce((s, r) => s + r.gaps, 0),
      says: answers.length,
      interrupted: answers.filter((a) => a.status === 'interrupted').length,
      failed: answers.filter((a) => a.status !== 'played' && a.status !== 'interrupted').length,
      violations: reports.at(-1)?.violations ?? 0,
      skippedTalks: reports.reduce((s, r) => s + r.skippedTalks, 0),
      idleClears: reports.reduce((s, r) => s + r.clears.filter((c) => !c.audible).length, 0),
      resumed,
      appCpuPerCallPct: (appCpuMs / (sayWallS * 1000) / n) * 100,
      appMainCpuPerCallPct: (appMainCpuMs / (sayWallS * 1000) / n) * 100,
      appV8CpuPerCallPct: (appV8CpuMs / (sayWallS * 1000) / n) * 100,
      clientCpuPerCallPct: (clientCpuMs / (sayWallS * 1000) / n) * 100,
      othersCpuPct: (Math.max(0, machineMs - appCpuMs - clientCpuMs) / (sayWallS * 1000)) * 100,
      queueDepth,
      inferences,
      skippedWindows,
      rssPeakMb: rssPeak / 2 ** 20,
      rssPerCallKb: (rssPeak - rssIdle) / n / 1024,
      sendLagP99Ms: Math.max(...reports.map((r) => r.sendLag.p99)),
      echo: kind(true),
      echoKnown: kind(true, 1),
      noEcho: kind(false),
      wallS: (performance.now() - started) / 1000,
    };
  } finally {
    client.send({ cmd: 'close' });
    await once(client, 'exit');
    await bench.close();
  }
}

function combined(a: OnsetFigures, b: OnsetFigures): OnsetFigures {
  return {
    onsets: a.onsets + b.onsets,
    preempted: a.preempted + b.preempted,
    caught: a.caught + b.caught,
    onsetToClear: [...a.onsetToClear, ...b.onsetToClear],
    detectedAfter: [...a.detectedAfter, ...b.detectedAfter],
    decisionToClear: [...a.decisionToClear, ...b.decisionToClear],
    falseBargeIns: a.falseBargeIns + b.falseBargeIns,
    botAudioMs: a.botAudioMs + b.botAudioMs,
  };
}

const caughtPct = (f: OnsetFigures): number => (f.onsets === 0 ? Number.NaN : (f.caught / f.onsets) * 100);

/** The load targets: the prompt plays on time on every call. */
function loadFailures(r: CaseResult): string[] {
  const out: string[] = [];
  const p99 = percentile(r.lateness, 99);
  if (!(p99 <= TARGET.latenessP99Ms)) out.push(`lateness p99 ${fmt(p99, 1)} ms`);
  if (r.underruns > TARGET.underruns) out.push(`${r.underruns} underruns`);
  if (r.failed > 0) out.push(`${r.failed} says failed`);
  return out;
}

/** The barge-in targets, on lines with echo and without alike. */
function bargeInFailures(r: CaseResult): string[] {
  const out: string[] = [];
  for (const [name, f] of [
    ['echo', r.echo],
    ['no echo', r.noEcho],
  ] as const) {
    const p95 = percentile(f.onsetToClear, 95);
    if (!(p95 <= TARGET.onsetToClearP95Ms)) out.push(`${name}: onset → clear p95 ${fmt(p95, 0)} ms`);
    const pct = caughtPct(f);
    if (!(pct >= TARGET.caughtPct)) out.push(`${name}: ${fmt(pct, 0)} % caught`);
  }
  return out;
}

function verdict(r: CaseResult): string {
  const failures = [...loadFailures(r), ...bargeInFailures(r)];
  return failures.length === 0 ? 'holds the targets' : `misses: ${failures.join(', ')}`;
}

function summaryLine(r: CaseResult): string {
  const all = combined(r.echo, r.noEcho);
  return (
    `  ${r.n} calls (${fmt(r.wallS, 0)} s): lateness p99 ${fmt(percentile(r.lateness, 99), 1)} ms, ` +
    `underruns ${r.underruns}, onset → clear p95 ${fmt(percentile(all.onsetToClear, 95), 0)} ms, ` +
    `caught ${fmt(caughtPct(all), 0)} %, false ${all.falseBargeIns}: ${verdict(r)}`
  );
}

function printResults(results: readonly CaseResult[]): void {
  printTable(
    'Talkers: the cached prompt under load (server in this process, gateways and callers in a child process)',
    [
      'calls',
      `lateness p50 / p99 (≤ ${TARGET.latenessP99Ms}) / p99.9 ms`,
      `underruns (${TARGET.underruns}) / gateway gaps`,
      "app CPU per call (main thread; V8's)",
      'client CPU per call',
      'other processes',
      'VAD queue p50 / p95 / max',
      'Silero run / skipped (behind)',
      'RSS peak / per call',
      'callers send lag p99',
      'says (interrupted, failed)',
      'resumed',
      'idle clears',
      'violations',
    ],
    results.map((r) => [
      String(r.n),
      `${fmt(percentile(r.lateness, 50), 1)} / ${fmt(percentile(r.lateness, 99), 1)} / ${fmt(percentile(r.lateness, 99.9), 1)}`,
      `${r.underruns} / ${r.gaps}`,
      `${fmt(r.appCpuPerCallPct, 3)} % (${fmt(r.appMainCpuPerCallPct, 3)}; ${fmt(r.appV8CpuPerCallPct, 3)} %)`,
      `${fmt(r.clientCpuPerCallPct, 3)} %`,
      `${fmt(r.othersCpuPct, 0)} %`,
      `${fmt(median(r.queueDepth), 0)} / ${fmt(percentile(r.queueDepth, 95), 0)} / ${fmt(Math.max(0, ...r.queueDepth), 0)}`,
      `${r.inferences} / ${r.skippedWindows} (${fmt((100 * r.skippedWindows) / Math.max(1, r.inferences + r.skippedWindows), 2)} %)`,
      `${fmt(r.rssPeakMb, 0)} MB / ${fmt(r.rssPerCallKb, 0)} KB`,
      `${fmt(r.sendLagP99Ms, 1)} ms`,
      `${r.says} (${r.interrupted}, ${r.failed})`,
      String(r.resumed),
      String(r.idleClears),
      String(r.violations),
    ]),
  );
  const rows: string[][] = [];
  for (const r of results)
    for (const [name, f] of [
      ['echo', r.echo],
      ['echo, from round 2 (path known)', r.echoKnown],
      ['no echo', r.noEcho],
      ['all', combined(r.echo, r.noEcho)],
    ] as const) {
      const minutes = f.botAudioMs / 60_000;
      rows.push([
        String(r.n),
        name,
        `${f.onsets} (${f.preempted})`,
        `${f.caught} (${fmt(caughtPct(f), 0)} %)`,
        `${fmt(percentile(f.onsetToClear, 50), 0)} / ${fmt(percentile(f.onsetToClear, 95), 0)} / ${fmt(Math.max(...f.onsetToClear), 0)}`,
        `${fmt(median(f.detectedAfter), 0)} / ${fmt(percentile(f.detectedAfter, 95), 0)}`,
        `${fmt(median(f.decisionToClear), 0)} / ${fmt(percentile(f.decisionToClear, 95), 0)}`,
        `${f.falseBargeIns} (${fmt(minutes > 0 ? (f.falseBargeIns / minutes) * 10 : Number.NaN, 1)})`,
        fmt(minutes, 1),
      ]);
    }
  printTable(
    'Talkers: callers talking over the bot (measured at the gateway)',
    [
      'calls',
      'lines',
      'onsets over the bot (pre-empted)',
      `caught (≥ ${TARGET.caughtPct} %)`,
      `onset → clear p50 / p95 (≤ ${TARGET.onsetToClearP95Ms}) / max ms`,
      'decided after onset p50 / p95 ms',
      'decision → clear p50 / p95 ms',
      `false barge-ins (per 10 min of bot; ≤ ${TARGET.falsePer10Min})`,
      'bot audio min',
    ],
    rows,
  );
  console.log(
    `Onsets: caller speech begun while the bot was audible at the caller (${fmt(TALK_FRACTION * 100, 0)} % of callers per prompt, ` +
      `${fmt(SECOND_TALK_FRACTION * 100, 0)} % of them twice); caught: a clear within ${CATCH_WINDOW_MS} ms; pre-empted: the app's barge-in behind that clear ` +
      `began over ${PREEMPTED_BEFORE_MS} ms before the caller spoke (echo or noise cut the bot: not an onset, and a false barge-in); ` +
      `false: a clear that cut the bot with no caller speech in the ${CATCH_WINDOW_MS} ms before it. Decided after onset: the app's barge-in decision on the inbound timeline (the speech it ` +
      'needed); decision → clear: the rest (queues, inference, the wire). CPU per call: % of one core during the prompts ' +
      "(the app's includes its VAD worker threads; in brackets, its main thread's alone, then that of the threads it started with, V8's garbage collection and compilers); other processes: the rest of the machine's busy time then, which " +
      "competes with both (the figures mean little when it is large). Silero run / skipped: the model's inferences, and the windows that wanted it but were judged by the energy gate alone, their VAD worker too far behind. Callers send lag: how late this machine sent the callers' frames " +
      '(late frames reach the detector late). Resumed: false barge-ins the app took back; idle clears: clears that ' +
      'came when the caller heard nothing.',
  );
  for (const r of results)
    console.log(
      `${r.n} calls, ${r.rounds} prompts each (${r.skippedTalks} talks not made: the bot was already quiet), ${fmt(r.wallS, 0)} s: ${verdict(r)}`,
    );
}

/**
 * The largest count on the grid `from + k·step` (up to `to`) that passes: doubling from `from` until
 * one fails, then bisecting (so the machine is not asked for far more calls than it holds). Undefined
 * if `from` fails.
 */
async function search(
  from: number,
  to: number,
  step: number,
  passes: (r: CaseResult) => boolean,
  run: (n: number) => Promise<CaseResult>,
): Promise<number | undefined> {
  if (!passes(await run(from))) return undefined;
  let lo = from;
  let hi: number;
  for (;;) {
    if (lo >= to) return to;
    const next = Math.min(to, from + Math.ceil((2 * lo - from) / step) * step);
    if (!passes(await run(next))) {
      hi = next;
      break;
    }
    lo = next;
  }
  while (hi - lo > step) {
    const mid = lo + Math.round((hi - lo) / 2 / step) * step;
    if (passes(await run(mid))) lo = mid;
    else hi = mid;
  }
  return lo;
}

async function sweep(from: number, to: number): Promise<void> {
  const step = 50;
  const done = new Map<number, CaseResult>();
  const run = async (n: number): Promise<CaseResult> => {
    const known = done.get(n);
    if (known) return known;
    const r = await runCase(n, SWEEP_ROUNDS);
    done.set(n, r);
    console.log(summaryLine(r));
    return r;
  };
  const all = await search(
    from,
    to,
    step,
    (r) => [...loadFailures(r), ...bargeInFailures(r)].length === 0,
    run,
  );
  let loadOnly: number | undefined;
  if (all === undefined) loadOnly = await search(from, to, step, (r) => loadFailures(r).length === 0, run);
  printResults([...done.values()].sort((a, b) => a.n - b.n));
  console.log(
    all !== undefined
      ? `\nThis machine holds ${all}${all === to ? '+' : ''} calls at the targets (searched ${from}–${to} by ${step}).`
      : `\nNo count from ${from} holds the barge-in targets; the load targets alone (lateness, underruns) hold up to ` +
          `${loadOnly === undefined ? `fewer than ${from}` : `${loadOnly}${loadOnly === to ? '+' : ''}`} calls (searched ${from}–${to} by ${step}).`,
  );
}

/** `args`: call counts (default 200 and 500), or `sweep [from] [to]` to find the most calls that hold the targets. */
export async function benchTalkers(args: readonly string[] = []): Promise<void> {
  if (args[0] === 'sweep') {
    const [from, to] = [Number(args[1] ?? 50), Number(args[2] ?? 800)];
    if (!Number.isInteger(from) || !Number.isInteger(to) || from < 1 || to < from)
      throw new Error('usage: talkers sweep [from] [to]');
    await sweep(from, to);
    return;
  }
  const counts = args.length > 0 ? args.map(Number) : DEFAULT_COUNTS;
  if (counts.some((n) => !Number.isInteger(n) || n < 1))
    throw new Error('usage: talkers [N…] | talkers sweep [from] [to]');
  const results: CaseResult[] = [];
  for (const n of counts) {
    const r = await runCase(n, ROUNDS);
    console.log(summaryLine(r));
    results.push(r);
  }
  printResults(results);
}
