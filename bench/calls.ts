/**
 * Phone calls under load: N simultaneous Twilio-protocol calls on loopback (the gateways in a child
 * process), each hearing a cached prompt, then a cached prompt joined to text nobody asked for before.
 * Frame lateness against the gateway's playout clock, underruns, CPU and RSS per call.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import type { App } from '../src/app/app.js';
import { SHORT_HOLD_PROMPT as PROMPT } from '../testkit/prompts.js';
import { startBenchApp } from './app.js';
import { fmt, median, percentile, printTable } from './stats.js';

export interface ClientReport {
  type: 'report';
  lateness: number[];
  gaps: number;
  frames: number;
  violations: number;
}

interface SayAnswer {
  status: string;
  underruns: number;
  /** null when no audio came (the say failed). */
  first_frame_ms: number | null;
  played_ms: number;
}

export function request<T>(child: ChildProcess, message: unknown, type: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const onMessage = (m: { type: string; message?: string }): void => {
      if (m.type === type) {
        child.off('message', onMessage);
        resolve(m as T);
      } else if (m.type === 'error') {
        child.off('message', onMessage);
        reject(new Error(m.message));
      }
    };
    child.on('message', onMessage);
    child.send(message as object);
  });
}

async function sayAll(app: App, callSids: string[], text: (i: number) => string): Promise<SayAnswer[]> {
  return Promise.all(
    callSids.map(async (id, i) => {
      const res = await fetch(`${app.url}/calls/${id}/say`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ text: text(i) }),
      });
      return (await res.json()) as SayAnswer;
    }),
  );
}

async function phase(
  app: App,
  client: ChildProcess,
  callSids: string[],
  text: (i: number) => string,
): Promise<{ row: string[]; answers: SayAnswer[] }> {
  await request<ClientReport>(client, { cmd: 'report' }, 'report'); // reset the client's counters
  const rssBefore = process.memoryUsage().rss;
  let rssPeak = rssBefore;
  const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, process.memoryUsage().rss)), 100);
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const answers = await sayAll(app, callSids, text);
  const wallS = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  clearInterval(sampler);
  const report = await request<ClientReport>(client, { cmd: 'report' }, 'report');
  const underruns = answers.reduce((n, a) => n + (a.underruns ?? 0), 0);
  const failed = answers.filter((a) => a.status !== 'played').length;
  const n = callSids.length;
  const cpuPerCallPct = ((cpu.user + cpu.system) / 1000 / (wallS * 1000) / n) * 100;
  return {
    answers,
    row: [
      fmt(percentile(report.lateness, 50), 1),
      fmt(percentile(report.lateness, 99), 1),
      `${underruns} / ${report.gaps}`,
      fmt(
        percentile(
          answers.flatMap((a) => (a.first_frame_ms === null ? [] : [a.first_frame_ms])),
          50,
        ),
        0,
      ) +
        ' / ' +
        fmt(
          percentile(
            answers.flatMap((a) => (a.first_frame_ms === null ? [] : [a.first_frame_ms])),
            99,
          ),
          0,
        ),
      fmt(cpuPerCallPct, 3) + ' %',
      fmt((rssPeak - rssBefore) / n / 1024, 0) + ' KB',
      `${failed} failed, ${report.violations} protocol violations`,
    ],
  };
}

export async function benchCallsLoad(counts: readonly number[] = [50, 200, 500]): Promise<void> {
  const rows: string[][] = [];
  for (const n of counts) {
    const bench = await startBenchApp('calls', { calls: { defaultFlow: null, maxCalls: n + 10 } });
    const { app } = bench;
    const client = fork(fileURLToPath(new URL('./load-client.js', import.meta.url)), { stdio: 'inherit' });
    try {
      const rssIdle = process.memoryUsage().rss;
      const { callSids } = await request<{ callSids: string[] }>(
        client,
        { cmd: 'open', url: `${app.url.replace('http:', 'ws:')}/media/twilio`, calls: n },
        'ready',
      );
      while (app.calls.list().filter((c) => c.state.status === 'active').length < n)
        await new Promise((r) => setTimeout(r, 20));
      const rssCalls = (process.memoryUsage().rss - rssIdle) / n / 1024;
      // Warm the phrase cache: the prompt's sentences are then served from memory for every call.
      await sayAll(app, callSids.slice(0, 1), () => PROMPT);
      const cached = await phase(app, client, callSids, () => PROMPT);
      rows.push([String(n), 'cached prompt', ...cached.row, fmt(rssCalls, 0) + ' KB']);
      const mixed = await phase(
        app,
        client,
        callSids,
        (i) => `${PROMPT} Your reference number is ${1000 + i}.`,
      );
      rows.push([String(n), 'prompt + new text', ...mixed.row, '']);
      console.log(
        `  ${n} calls done (median played ${fmt(median(cached.answers.map((a) => a.played_ms)), 0)} ms)`,
      );
    } finally {
      client.send({ cmd: 'close' });
      await once(client, 'exit');
      await bench.close();
    }
  }
  printTable(
    'Simultaneous Twilio calls on loopback (server in this process, gateways in a child process)',
    [
      'calls',
      'speech',
      'lateness p50 ms',
      'p99 ms',
      'underruns (speaker / gateway gaps)',
      '1st frame p50 / p99 ms',
      'server CPU per call',
      'RSS per call (speaking)',
      'errors',
      'RSS per idle call',
    ],
    rows,
  );
  console.log(
    'Lateness: arrival of each frame against the moment the gateway needed it (negative = early, by the lead); gaps = frames that arrived after the buffer ran dry inside a run of speech.',
  );
}
