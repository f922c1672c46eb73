/**
 * Two instances on one Redis, each holding N Twilio calls (each instance a real process, as
 * `npm start` runs it, with its gateways in a process of their own). Every call is sent its `say`
 * through the instance that does NOT hold it, and the same load is run on one instance without Redis
 * for comparison: frame lateness and underruns, the hop's added latency, Redis commands per call.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { createClient } from '@redis/client';
import { CountingProxy, startInstance, type Instance } from '../testkit/instance.js';
import { TestRedis } from '../testkit/redis.js';
import { SHORT_HOLD_PROMPT as PROMPT } from '../testkit/prompts.js';
import { request, type ClientReport } from './calls.js';
import { fmt, median, percentile, printTable } from './stats.js';

const TOKEN = randomBytes(18).toString('base64url');
const HEADERS = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };

interface Holder {
  instance: Instance;
  client: ChildProcess;
  callSids: string[];
}

async function say(url: string, id: string, text: string, wait: boolean): Promise<Record<string, unknown>> {
  const res = await fetch(`${url}/calls/${id}/say`, {
    method: 'POST',
    headers: HEADERS,
    body: JSON.stringify({ text, wait }),
  });
  const body = (await res.json()) as Record<string, unknown>;
  if (res.status >= 300) throw new Error(`say answered ${res.status}: ${JSON.stringify(body)}`);
  return body;
}

async function hold(
  id: string,
  env: Record<string, string>,
  calls: number,
  idPrefix: string,
): Promise<Holder> {
  const instance = await startInstance(
    id,
    { CONTROL_TOKEN: TOKEN, LOG_LEVEL: 'warn', ...env },
    { calls: { defaultFlow: null, maxCalls: calls + 10 }, server: { shutdownGraceMs: 0 } },
  );
  const client = fork(fileURLToPath(new URL('./load-client.js', import.meta.url)), { stdio: 'inherit' });
  const { callSids } = await request<{ callSids: string[] }>(
    client,
    { cmd: 'open', url: `${instance.url.replace('http:', 'ws:')}/media/twilio`, calls, idPrefix },
    'ready',
  );
  // Every call started (listed by its own instance).
  for (;;) {
    const res = await fetch(`${instance.url}/calls`, { headers: HEADERS });
    const list = (await res.json()) as { calls: Array<{ id: string; status: string; instance?: string }> };
    const mine = list.calls.filter((c) => c.status === 'active' && (c.instance ?? id) === id);
    if (mine.length >= calls) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  return { instance, client, callSids };
}

async function release(h: Holder): Promise<void> {
  h.client.send({ cmd: 'close' });
  await once(h.client, 'exit');
  await h.instance.kill('SIGTERM');
}

/** Every call says PROMPT (cached), its say sent to `via(holder)`; the gateways' report after. */
async function speakAll(
  holders: Holder[],
  via: (h: Holder) => string,
): Promise<{ row: string[]; seconds: number }> {
  for (const h of holders) await request<ClientReport>(h.client, { cmd: 'report' }, 'report');
  const t0 = performance.now();
  const answers = await Promise.all(
    holders.flatMap((h) => h.callSids.map((id) => say(via(h), id, PROMPT, true))),
  );
  const seconds = (performance.now() - t0) / 1000;
  const reports = await Promise.all(
    holders.map((h) => request<ClientReport>(h.client, { cmd: 'report' }, 'report')),
  );
  const lateness = reports.flatMap((r) => r.lateness);
  const underruns = answers.reduce((n, a) => n + (Number(a['underruns']) || 0), 0);
  const failed = answers.filter((a) => a['status'] !== 'played').length;
  return {
    seconds,
    row: [
      fmt(percentile(lateness, 50), 1),
      fmt(percentile(lateness, 99), 1),
      `${underruns} / ${reports.reduce((n, r) => n + r.gaps, 0)}`,
      `${failed} failed, ${reports.reduce((n, r) => n + r.violations, 0)} violations`,
    ],
  };
}

/** Sequential `say` (wait: false) to each call, direct and through the other instance, interleaved. */
async function hopLatency(holders: Holder[]): Promise<{ direct: number[]; hop: number[] }> {
  const direct: number[] = [];
  const hop: number[] = [];
  for (const [i, h] of holders.entries()) {
    const other = holders[(i + 1) % holders.length]!;
    for (const id of h.callSids) {
      for (const [url, into] of [
        [h.instance.url, direct],
        [other.instance.url, hop],
      ] as const) {
        const t0 = performance.now();
        await say(url, id, 'One moment.', false);
        into.push(performance.now() - t0);
      }
    }
    // Stop what was queued before the next instance's turn.
    await Promise.all(
      h.callSids.map((id) =>
        fetch(`${h.instance.url}/calls/${id}/interrupt`, { method: 'POST', headers: HEADERS, body: '{}' }),
      ),
    );
  }
  return { direct, hop };
}

/** The instance's event-loop delay since its last scrape (prom-client resets it on each). */
async function loopLag(h: Holder): Promise<{ p50: number; p99: number; max: number }> {
  const res = await fetch(`${h.instance.url}/metrics`, { headers: HEADERS });
  const text = await res.text();
  const value = (name: string): number =>
    1000 * Number(new RegExp(`^voxbridge_nodejs_eventloop_lag_${name}_seconds (\\S+)$`, 'm').exec(text)?.[1]);
  return { p50: value('p50'), p99: value('p99'), max: value('max') };
}

async function redisCommands(url: string): Promise<number> {
  const c = createClient({ url });
  await c.connect();
  const info = await c.info('stats');
  c.destroy();
  return Number(/total_commands_processed:(\d+)/.exec(info)?.[1] ?? NaN);
}

export async function benchCluster(callsPerInstance = 250): Promise<void> {
  const rows: string[][] = [];
  const n = 2 * callsPerInstance;
  // One instance, no Redis, all the calls: the deployment without a cluster.
  const solo = await hold('solo', {}, n, '1');
  try {
    await say(solo.instance.url, solo.callSids[0]!, PROMPT, true); // warm the phrase cache
    await speakAll([solo], (h) => h.instance.url); // a first burst warms what a first burst warms
    for (let round = 1; round <= 2; round++) {
      const { row } = await speakAll([solo], (h) => h.instance.url);
      rows.push([`1 instance, no Redis`, String(n), 'to the holder', ...row]);
    }
  } finally {
    await release(solo);
  }
  console.log('  one instance done');

  const redis = await TestRedis.start();
  const holders: Holder[] = [];
  try {
    holders.push(await hold('a', { REDIS_URL: redis.url }, callsPerInstance, '2'));
    holders.push(await hold('b', { REDIS_URL: redis.url }, callsPerInstance, '3'));
    const [a, b] = holders as [Holder, Holder];
    const other = (h: Holder): string => (h === a ? b : a).instance.url;
    await say(a.instance.url, a.callSids[0]!, PROMPT, true); // warm a's cache; b finds it in Redis
    await say(b.instance.url, b.callSids[0]!, PROMPT, true);
    const idle0 = await redisCommands(redis.url);
    const idleT0 = performance.now();
    await new Promise((r) => setTimeout(r, 5000));
    const idleRate = ((await redisCommands(redis.url)) - idle0 - 1) / ((performance.now() - idleT0) / 1000);
    await speakAll(holders, (h) => h.instance.url); // warm-up, as above
    let commands = 0;
    let seconds = 0;
    for (let round = 1; round <= 2; round++) {
      const direct = await speakAll(holders, (h) => h.instance.url);
      rows.push([`2 instances on Redis`, String(n), 'to the holder', ...direct.row]);
      const c0 = await redisCommands(redis.url);
      const hop = await speakAll(holders, other);
      commands += (await redisCommands(redis.url)) - c0 - 1;
      seconds += hop.seconds;
      rows.push([`2 instances on Redis`, String(n), 'through the other', ...hop.row]);
    }
    console.log('  two instances done');
    await Promise.all(holders.map((h) => loopLag(h))); // a scrape resets the event-loop histogram
    const latency = await hopLatency(holders);
    const lags = await Promise.all(holders.map((h) => loopLag(h)));
    printTable(
      'Cluster: a cached prompt on every call at once (each instance a process; gateways in processes of their own)',
      [
        'deployment',
        'calls',
        'say sent',
        'lateness p50 ms',
        'p99 ms',
        'underruns (speaker / gateway gaps)',
        'errors',
      ],
      rows,
    );
    printTable(
      `Cluster: control API say (wait: false), ${latency.direct.length} of each, interleaved, ${n} calls connected`,
      ['sent to', 'p50 ms', 'p99 ms'],
      [
        [
          'the instance holding the call',
          fmt(median(latency.direct), 2),
          fmt(percentile(latency.direct, 99), 2),
        ],
        ['the other instance (one hop)', fmt(median(latency.hop), 2), fmt(percentile(latency.hop, 99), 2)],
        [
          'added by the hop',
          fmt(median(latency.hop) - median(latency.direct), 2),
          fmt(percentile(latency.hop, 99) - percentile(latency.direct, 99), 2),
        ],
      ],
    );
    console.log(
      `Event-loop delay of each instance while this was measured (ms, p50 / p99 / max, each with the 10 ms sampling interval of prom-client in it): ${lags
        .map((l) => `${fmt(l.p50, 1)} / ${fmt(l.p99, 1)} / ${fmt(l.max, 1)}`)
        .join(', ')}: every request waits for it on each instance it passes.`,
    );
    console.log(
      `Redis: ${fmt(commands / seconds / n, 3)} commands per second per call while ${n} calls speak, each say ` +
        `forwarded (${commands} commands in ${fmt(seconds, 1)} s); with the calls connected and nothing said: ` +
        `${fmt(idleRate / n, 4)} per second per call (${fmt(idleRate, 1)} per second in all: heartbeats and pings)`,
    );
  } finally {
    for (const h of holders) await release(h);
    await redis.stop();
  }
}

/** One Twilio call on `url`'s media endpoint, held for `ms` (its flow plays), then hung up. */
async function callFor(url: string, ms: number, id: string): Promise<void> {
  const { WebSocket } = await import('ws');
  const ws = new WebSocket(`${url.replace('http:', 'ws:')}/media/twilio`);
  await once(ws, 'open');
  const callSid = `CA${id.padStart(32, '0')}`;
  const streamSid = `MZ${id.padStart(32, '0')}`;
  ws.on('message', () => undefined);
  ws.send(JSON.stringify({ event: 'connected', protocol: 'Call', version: '1.0.0' }));
  ws.send(
    JSON.stringify({
      event: 'start',
      sequenceNumber: '1',
      streamSid,
      start: {
        accountSid: 'AC0',
        streamSid,
        callSid,
        tracks: ['inbound'],
        mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 },
        customParameters: {},
      },
    }),
  );
  await new Promise((r) => setTimeout(r, ms));
  ws.close();
  await once(ws, 'close');
}

/**
 * What N instances ask of a (paid) speech service for the default flow's prompts: calls arrive at each
 * instance in turn, each held 22 s (the greeting and the menu prompt, whole); the requests are counted at a proxy in front
 * of the service, with the cluster's shared phrase cache on and off.
 */
export async function benchSharedPhrases(instances = 3, callsEach = 1): Promise<void> {
  const key = randomBytes(18).toString('base64url');
  const speech = await startInstance('speech', { SPEECH_API_KEY: key, LOG_LEVEL: 'warn' });
  const proxy = await CountingProxy.start(speech.url);
  const redis = await TestRedis.start();
  const rows: string[][] = [];
  try {
    for (const shared of [false, true]) {
      await redis.stop();
      await redis.start(); // empty: nothing cached from the round before
      const before = proxy.texts.length;
      const started = await Promise.all(
        Array.from({ length: instances }, (_, i) =>
          startInstance(
            `i${i}`,
            {
              REDIS_URL: redis.url,
              CONTROL_TOKEN: TOKEN,
              SPEECH_BASE_URL: proxy.url,
              SPEECH_API_KEY: key,
              LOG_LEVEL: 'warn',
            },
            { cluster: { phraseCache: { enabled: shared } }, server: { shutdownGraceMs: 0 } },
          ),
        ),
      );
      try {
        let n = 0;
        for (let round = 0; round < callsEach; round++)
          for (const instance of started) await callFor(instance.url, 22_000, String(++n));
      } finally {
        await Promise.all(started.map((i) => i.kill('SIGTERM')));
      }
      const requests = proxy.texts.length - before;
      rows.push([
        shared ? 'on' : 'off',
        String(instances),
        String(instances * callsEach),
        String(requests),
        fmt(requests / instances, 1),
      ]);
    }
  } finally {
    await redis.stop();
    await proxy.close();
    await speech.kill('SIGTERM');
  }
  printTable(
    "Shared phrase cache: requests to the speech service for the default flow's greeting and menu",
    ['shared cache', 'instances', 'calls (in turn)', 'upstream requests', 'per instance'],
    rows,
  );
}
