/**
 * The Discord benchmark's second half, run in a child process that trusts the fake voice server's
 * certificate (NODE_EXTRA_CA_CERTS is read at process start): guilds joined through the real
 * `@discordjs/voice` connection to a fake voice server on loopback, speaking through the local speech
 * service. Measures the time from `say()` to the first packet, barge-in, and how many guilds can
 * speak at once without an underrun.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { DiscordGuilds, type DiscordSettings } from '../adapters/discord/guilds.js';
import type { BargeInEvent, GuildVoice } from '../adapters/discord/guild-voice.js';
import { startApp, type App } from '../src/app/app.js';
import { loadConfig } from '../src/app/config.js';
import { createLogger } from '../src/app/logger.js';
import { PhraseCache } from '../src/speaker/phrase-cache.js';
import type { SpeechAudio, SpeechSource } from '../src/speaker/segment-audio.js';
import type { SpeechRequest } from '../src/speech/client.js';
import { BUILT_IN_VOICE_ID } from '../src/service/voices/builtin.js';
import {
  FakeMainGateway,
  FakeVoiceServer,
  type ReceivedPacket,
  loudVoice,
  speechRun,
} from '../testkit/discord/voice-server.js';
import { cpuUs, fmt, median, percentile, printTable } from './stats.js';

const KEY = 'bench-key-0123456789abcdef';
const BOT = '500000000000000001';
const MEMBER = '400000000000000001';

const SETTINGS: DiscordSettings = {
  voiceId: BUILT_IN_VOICE_ID,
  bargeIn: { enabled: true, minSpeechMs: 200, maxGapMs: 120, minLevelDbfs: -45 },
  reconnect: { maxAttempts: 3, baseDelayMs: 500, maxDelayMs: 2000, settleMs: 5000, readyTimeoutMs: 20_000 },
  guilds: {},
  narration: { narrator: 'Narrator', cast: { Narrator: { voiceId: BUILT_IN_VOICE_ID } } },
  joinTimeoutMs: 20_000,
};

const guildId = (i: number): string => String(100_000_000_000_000_000n + BigInt(i));
/** Each guild's voice channel (its own DAVE group). */
const channelId = (i: number): string => String(200_000_000_000_000_000n + BigInt(i));

interface Rig {
  server: FakeVoiceServer;
  guilds: DiscordGuilds;
  join(i: number): Promise<GuildVoice>;
  close(): Promise<void>;
}

async function rig(
  app: App,
  cache?: PhraseCache,
  source: SpeechSource = app.client,
  dave = true,
): Promise<Rig> {
  const tls = {
    cert: readFileSync(process.env['VOXBRIDGE_TEST_TLS_CERT']!, 'utf8'),
    key: readFileSync(process.env['VOXBRIDGE_TEST_TLS_KEY']!, 'utf8'),
  };
  // With DAVE (as Discord requires) each channel has a listening member that decrypts every packet.
  const server = await FakeVoiceServer.start({ ...tls, decode: false, dave });
  const guilds = new DiscordGuilds({
    settings: SETTINGS,
    source,
    ...(cache ? { cache } : {}),
    logger: pino({ level: 'silent' }),
  });
  return {
    server,
    guilds,
    async join(i) {
      const voice = await guilds.join(
        guildId(i),
        channelId(i),
        new FakeMainGateway(server, { guildId: guildId(i), userId: BOT }).adapterCreator,
      );
      // Speech starts once the channel's group is established (before, the library sends in the clear).
      if (dave)
        await server.waitFor(() => server.earOf(guildId(i))?.ready === true, 20_000, 'the DAVE group');
      return voice;
    },
    async close() {
      await guilds.close();
      await server.close();
    },
  };
}

const speechOf = (packets: readonly ReceivedPacket[]): ReceivedPacket[] => packets.filter((p) => !p.silence);

/** say() → first speech packet at the server, cached and not. */
async function benchFirstPacket(app: App): Promise<void> {
  const r = await rig(app, new PhraseCache({ maxBytes: 64 * 1024 * 1024 }));
  try {
    const voice = await r.join(0);
    const ssrc = r.server.ssrcOf(guildId(0))!;
    const rows: string[][] = [];
    for (const cached of [false, true]) {
      const times: number[] = [];
      for (let k = 0; k < 15; k++) {
        const text = cached
          ? 'Roll for initiative.'
          : `Roll number ${k} for initiative, adventurer ${k * 7}.`;
        if (cached && k === 0) await voice.say(text).result; // fill the cache
        const before = r.server.received(ssrc).length;
        const t0 = performance.now();
        const handle = voice.say(text);
        await r.server.waitFor(
          () => speechOf(r.server.received(ssrc).slice(before)).length > 0,
          10_000,
          'a packet',
        );
        times.push(speechOf(r.server.received(ssrc).slice(before))[0]!.arrivalMs - t0);
        await handle.result;
        await new Promise((res) => setTimeout(res, 150)); // the run ends; the next say starts a fresh one
      }
      rows.push([
        cached ? 'cached phrase' : 'new text (local service)',
        fmt(median(times), 0),
        fmt(percentile(times, 95), 0),
        fmt(Math.max(...times), 0),
      ]);
    }
    printTable(
      'Discord: say() → first packet at the voice server (one guild, 15 utterances each; includes the 100 ms pre-buffer)',
      ['speech', 'p50 ms', 'p95 ms', 'max ms'],
      rows,
    );
  } finally {
    await r.close();
  }
}

/** The speech client, noting when the speaker aborts a request (the HTTP stream is cancelled then). */
class AbortTimingSource implements SpeechSource {
  lastAbortMs = 0;
  constructor(private readonly inner: SpeechSource) {}
  stream(request: SpeechRequest, options: { signal?: AbortSignal } = {}): Promise<SpeechAudio> {
    options.signal?.addEventListener('abort', () => (this.lastAbortMs = performance.now()), { once: true });
    return this.inner.stream(request, options);
  }
}

/** A member talks over the bot: to the decision, to the last packet, to the request closed. */
async function benchBargeIn(app: App): Promise<void> {
  const source = new AbortTimingSource(app.client);
  const r = await rig(app, undefined, source);
  try {
    const voice = await r.join(0);
    const ssrc = r.server.ssrcOf(guildId(0))!;
    const decide: number[] = [];
    const toLast: number[] = [];
    const fromSpeech: number[] = [];
    const closed: number[] = [];
    const aborted: number[] = [];
    const trials = 12;
    for (let k = 0; k < trials; k++) {
      // One long sentence, so its response is still open when the member talks.
      const text = `${'The goblin speaks on, and on, '.repeat(100)}until dawn ${k}.`;
      const handle = voice.say(text);
      const start = r.server.received(ssrc).length;
      await r.server.waitFor(
        () => speechOf(r.server.received(ssrc).slice(start)).length >= 25,
        10_000,
        'speech',
      );
      const disconnected = app.service!.requestStats.disconnected;
      const event = new Promise<BargeInEvent>((res) => voice.once('bargeIn', res));
      const injected = r.server.injectSpeech(guildId(0), MEMBER, loudVoice(700));
      const e = await event;
      const { startedAt } = await injected;
      const t = performance.now();
      while (app.service!.requestStats.disconnected === disconnected && performance.now() - t < 2000)
        await new Promise((res) => setTimeout(res, 1));
      closed.push(performance.now() - e.decidedAtMs);
      aborted.push(source.lastAbortMs - e.decidedAtMs);
      await handle.result;
      await new Promise((res) => setTimeout(res, 300));
      const last = speechOf(r.server.received(ssrc)).at(-1)!;
      decide.push(e.decidedAtMs - startedAt);
      toLast.push(last.arrivalMs - e.decidedAtMs);
      fromSpeech.push(last.arrivalMs - startedAt);
    }
    const row = (name: string, v: number[]): string[] => [
      name,
      fmt(median(v), 1),
      fmt(percentile(v, 95), 1),
      fmt(Math.max(...v), 1),
    ];
    printTable(
      `Discord barge-in (${trials} trials: a member's voice injected over the bot's speech; rule: 200 ms of audible speech)`,
      ['interval', 'p50 ms', 'p95 ms', 'max ms'],
      [
        row("member's first packet → barge-in decided", decide),
        row('barge-in decided → last speech packet at the server', toLast),
        row("member's first packet → last speech packet", fromSpeech),
        row('barge-in decided → HTTP request aborted (client side)', aborted),
        row('barge-in decided → the service sees the request gone', closed),
      ],
    );
  } finally {
    await r.close();
  }
}

/** N guilds speaking at once: underruns heard (silence inside speech), lateness, CPU. */
async function benchGuildsAtOnce(app: App): Promise<void> {
  const rows: string[][] = [];
  const prompt =
    'Welcome back, adventurers. Last time, you had just entered the goblin caves, torches in hand, ' +
    'and the smell of smoke was growing stronger with every step.';
  const cache = new PhraseCache({ maxBytes: 128 * 1024 * 1024 });
  const sizes = (process.env['BENCH_DISCORD_GUILDS'] ?? '10,50,100,200').split(',').map(Number);
  for (const n of sizes) {
    for (const [kind, dave] of [
      ['cached', false],
      ['cached', true],
      ['new text', false],
      ['new text', true],
    ] as const) {
      const r = await rig(app, cache, app.client, dave);
      try {
        const voices: GuildVoice[] = [];
        for (let i = 0; i < n; i++) voices.push(await r.join(i));
        if (kind === 'cached') await voices[0]!.say(prompt).result;
        await new Promise((res) => setTimeout(res, 300));
        const starts = voices.map((_, i) => r.server.received(r.server.ssrcOf(guildId(i))).length);
        const cpu0 = cpuUs() / 1000;
        const wall0 = performance.now();
        const results = await Promise.all(
          voices.map(
            (v, i) => v.say(kind === 'cached' ? prompt : `${prompt} Guild ${i} rolls first.`).result,
          ),
        );
        const wall = performance.now() - wall0;
        const cpu = cpuUs() / 1000 - cpu0;
        await new Promise((res) => setTimeout(res, 300));
        let holes = 0;
        let speechPackets = 0;
        let undecrypted = 0;
        const lateness: number[] = [];
        for (let i = 0; i < n; i++) {
          const packets = r.server.received(r.server.ssrcOf(guildId(i))).slice(starts[i]);
          if (dave)
            undecrypted += packets.filter((p) => p.heard !== 'decrypted' && p.heard !== 'silence').length;
          const run = speechRun(packets);
          if (!run) continue;
          holes += run.holes;
          speechPackets += run.packets;
          lateness.push(...run.drift);
        }
        const underruns = results.reduce((s, x) => s + x.metrics.underruns, 0);
        const failed = results.filter((x) => x.status !== 'played').length;
        const problem = results.find((x) => x.status !== 'played');
        if (problem && process.env['BENCH_DEBUG']) console.error(problem.status, problem.error);
        rows.push([
          String(n),
          kind,
          dave ? 'on' : 'off',
          String(holes),
          String(underruns),
          fmt(percentile(lateness, 50), 1),
          fmt(percentile(lateness, 99), 1),
          fmt((cpu / wall) * 100, 0),
          fmt((cpu * 1000) / speechPackets, 0),
          String(failed),
          dave ? String(undecrypted) : '–',
        ]);
      } finally {
        await r.close();
      }
    }
  }
  printTable(
    'Discord: guilds speaking at once, DAVE off and on (one process; the fake voice server runs in it too, decrypting every packet, and with DAVE a listening member per channel decrypts it end to end; drift = arrival − (first packet + k × 20 ms))',
    [
      'guilds',
      'speech',
      'DAVE',
      'silence holes in speech',
      'speaker underruns',
      'drift p50 ms',
      'drift p99 ms',
      'process CPU %',
      'µs CPU per packet',
      'failed',
      'frames a member could not decrypt',
    ],
    rows,
  );
}

const dir = await mkdtemp(join(tmpdir(), 'voxbridge-bench-discord-voice-'));
const app = await startApp(
  loadConfig({ PORT: '0', DATA_DIR: dir, LOG_LEVEL: 'silent', SPEECH_API_KEY: KEY }),
  { logger: createLogger('silent') },
);
try {
  if (process.argv[2] !== 'guilds') await benchFirstPacket(app);
  if (process.argv[2] !== 'guilds') await benchBargeIn(app);
  if (process.argv[2] !== 'barge-in') await benchGuildsAtOnce(app);
} finally {
  await app.close();
  await rm(dir, { recursive: true, force: true });
}
