// Over 450 lines: one fake Discord (gateway, voice server, REST) set up once for every scenario of a guild.
/**
 * Discord voice end to end, with no Discord account: the real `@discordjs/voice` connection connects
 * to a fake voice server on loopback (TLS WebSocket + UDP, the real protocol), and the guild's speaker
 * speaks through the real local speech service. The server decrypts and decodes every packet.
 */
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DiscordGuilds, type DiscordSettings } from '../../adapters/discord/guilds.js';
import type { GuildVoice } from '../../adapters/discord/guild-voice.js';
import { bytesToInt16 } from '../../src/audio/pcm.js';
import { FramePipeline } from '../../src/speaker/frame-pipeline.js';
import { parseScript } from '../../src/speaker/script.js';
import type { UtteranceResult } from '../../src/speaker/utterance.js';
import { analyzeSpeech } from '../../src/service/voices/analyze.js';
import { builtInVoices } from '../../src/service/voices/builtin.js';
import { PROJECT_ROOT } from '../../src/paths.js';
import { spectralCentroidHz } from '../../testkit/spectrum.js';
import { handleCommand, type CommandContext } from '../../adapters/discord/commands.js';
import { NO_PHONE_BARGE_IN, startTestApp, type TestApp } from '../helpers/app.js';
import { FakeGuildAccess, FakeInteraction } from '../helpers/discord/fake-interaction.js';
import {
  FakeMainGateway,
  FakeVoiceServer,
  testTls,
  type ReceivedPacket,
  loudVoice,
} from '../../testkit/discord/voice-server.js';

const GUILD = '100000000000000001';
const CHANNEL = '200000000000000001';
const BOT = '500000000000000001';
const MEMBER = '400000000000000001';
/** Readings of a line by its own voice, to know how far apart two readings fall (odd: one median). */
const OWN_READINGS = 5;
/** Asymmetric matchers, typed `unknown` so they sit in expected objects without an unsafe any. */
const A_NUMBER: unknown = expect.any(Number);
const A_STRING: unknown = expect.any(String);
const NAMES_THE_VOICE: unknown = expect.stringContaining('no-such-voice');
const VOICE = 'voxbridge-default';
/** The narrator's voice in config/default.yaml's cast, which the app's own guilds use. */
const NARRATOR_VOICE = 'voxbridge-narrator';

const SETTINGS: DiscordSettings = {
  voiceId: VOICE,
  bargeIn: { enabled: true, minSpeechMs: 200, maxGapMs: 120, minLevelDbfs: -45 },
  reconnect: { maxAttempts: 3, baseDelayMs: 100, maxDelayMs: 400, settleMs: 300, readyTimeoutMs: 5000 },
  guilds: {},
  narration: { narrator: 'Narrator', cast: { Narrator: { voiceId: VOICE }, Goblin: { voiceId: VOICE } } },
  joinTimeoutMs: 5000,
};

let app: TestApp;
let server: FakeVoiceServer;
let guilds: DiscordGuilds;
/** What the test started, freed after it (guilds before their server). */
const cleanup: Array<() => Promise<void>> = [];
let gateway: FakeMainGateway;

beforeAll(async () => {
  app = await startTestApp(NO_PHONE_BARGE_IN);
});
afterAll(async () => {
  await app.close();
});
afterEach(async () => {
  for (const free of cleanup.splice(0).reverse()) await free();
});

async function startServer(): Promise<FakeVoiceServer> {
  const started = await FakeVoiceServer.start(testTls());
  cleanup.push(() => started.close());
  return started;
}

async function setUp(settings: Partial<DiscordSettings> = {}): Promise<void> {
  server = await startServer();
  gateway = new FakeMainGateway(server, { guildId: GUILD, userId: BOT });
  guilds = new DiscordGuilds({
    settings: { ...SETTINGS, ...settings },
    source: app.app.client,
    logger: pino({ level: process.env['TEST_LOG_LEVEL'] ?? 'silent' }),
  });
  const created = guilds;
  cleanup.push(() => created.close());
}

async function join(settings: Partial<DiscordSettings> = {}): Promise<GuildVoice> {
  await setUp(settings);
  return guilds.join(GUILD, CHANNEL, gateway.adapterCreator);
}

const speech = (packets: readonly ReceivedPacket[]): ReceivedPacket[] => packets.filter((p) => !p.silence);

/** Left channel of the decoded packets, in order. */
function leftOf(packets: readonly ReceivedPacket[]): Int16Array {
  const out = new Int16Array(packets.length * 960);
  packets.forEach((p, k) => {
    for (let i = 0; i < 960; i++) out[k * 960 + i] = p.pcm![2 * i]!;
  });
  return out;
}

/** RMS per 20 ms block. */
function envelope(samples: Int16Array, blockSize: number): number[] {
  const out: number[] = [];
  for (let o = 0; o + blockSize <= samples.length; o += blockSize) {
    let sum = 0;
    for (let i = o; i < o + blockSize; i++) sum += samples[i]! * samples[i]!;
    out.push(Math.sqrt(sum / blockSize));
  }
  return out;
}

function correlation(a: readonly number[], b: readonly number[]): number {
  const n = Math.min(a.length, b.length);
  const mean = (x: readonly number[]): number => x.slice(0, n).reduce((s, v) => s + v, 0) / n;
  const ma = mean(a);
  const mb = mean(b);
  let ab = 0;
  let aa = 0;
  let bb = 0;
  for (let i = 0; i < n; i++) {
    ab += (a[i]! - ma) * (b[i]! - mb);
    aa += (a[i]! - ma) ** 2;
    bb += (b[i]! - mb) ** 2;
  }
  return ab / Math.sqrt(aa * bb);
}

interface VoiceFeatures {
  f0Hz: number;
  centroidHz: number;
}

/** Median F0 and spectral centroid (to 11 kHz, where the engine's audio ends) of mono samples in -1..1. */
function voiceFeatures(samples: Float32Array, sampleRate: number): VoiceFeatures {
  return {
    f0Hz: analyzeSpeech(samples, sampleRate).f0Hz,
    centroidHz: spectralCentroidHz(samples, sampleRate, { maxHz: 11_000 }),
  };
}

/** How far apart two recordings sound: the log ratios of F0 and of centroid (voiced and unvoiced: far). */
function voiceDistance(a: VoiceFeatures, b: VoiceFeatures): number {
  const f0 = a.f0Hz > 0 && b.f0Hz > 0 ? Math.abs(Math.log(a.f0Hz / b.f0Hz)) : a.f0Hz === b.f0Hz ? 0 : 1;
  return f0 + Math.abs(Math.log(a.centroidHz / b.centroidHz));
}

describe('Discord voice through the real @discordjs/voice connection', () => {
  it('connects, and what the bot says arrives encrypted, whole to the last frame, as the speech service said it', async () => {
    const voice = await join();
    expect(server.identifies[0]).toMatchObject({ server_id: GUILD, user_id: BOT });
    // The bot joined undeafened: it must hear members to be interrupted.
    expect(gateway.sent[0]?.d).toMatchObject({ guild_id: GUILD, channel_id: CHANNEL, self_deaf: false });

    const text = 'The goblin raises its spear and the torchlight flickers on the wet stones.';
    const result = await voice.say(text).result;
    expect(result.status).toBe('played');
    const ssrc = server.ssrcOf(GUILD)!;
    await server.waitFor(
      () => server.received(ssrc).some((p) => p.silence),
      2000,
      'silence after the speech',
    );
    const packets = speech(server.received(ssrc));

    // Every 20 ms the service's audio makes is one packet: nothing dropped, the last frame included.
    const reference = (await app.app.client.synthesize({ voiceId: VOICE, text, outputFormat: 'pcm_24000' }))
      .audio;
    const pipeline = new FramePipeline(24_000, { encoding: 's16le', sampleRate: 48_000, channels: 2 }, 20);
    const expectedFrames = pipeline.push(reference).length + pipeline.finish().length;
    expect(packets.length).toBe(expectedFrames);
    expect(result.playedMs).toBe(expectedFrames * 20);

    // The content: the loudness contour of what arrived follows the service's own audio.
    const ref = new Int16Array(reference.buffer, reference.byteOffset, reference.byteLength / 2);
    const got = envelope(leftOf(packets), 960);
    const want = envelope(ref, 480);
    expect(Math.max(...got)).toBeGreaterThan(1000);
    expect(correlation(got, want)).toBeGreaterThan(0.9);
    // Real-time pace: 20 ms apart on average (a generous bound on a busy machine).
    const span = packets.at(-1)!.arrivalMs - packets[0]!.arrivalMs;
    expect(span / (packets.length - 1)).toBeGreaterThan(15);
    expect(span / (packets.length - 1)).toBeLessThan(30);
  });

  it('a member talking over the bot stops it: no speech packet 100 ms after the decision, the request closed', async () => {
    const voice = await join();
    const ssrc = server.ssrcOf(GUILD)!;
    const disconnectedBefore = app.app.service!.requestStats.disconnected;
    // One long sentence: its response is still streaming (held back by the speaker's bounded buffer).
    const long = `${'The goblin speaks on, and on, '.repeat(118)}until dawn.`;
    const handle = voice.say(long);
    await server.waitFor(() => speech(server.received(ssrc)).length >= 25, 5000, 'half a second of speech');
    const bargeIn = new Promise<import('../../adapters/discord/guild-voice.js').BargeInEvent>((resolve) =>
      voice.once('bargeIn', resolve),
    );
    const injected = server.injectSpeech(GUILD, MEMBER, loudVoice(800));
    const event = await bargeIn;
    const result = await handle.result;
    await injected;
    expect(event).toMatchObject({ userId: MEMBER, interrupted: true });
    expect(result.status).toBe('interrupted');
    // Detection needs ≥ 200 ms of the member's voice; well under a second on loopback.
    expect(event.decidedAtMs - event.speakingSinceMs).toBeGreaterThanOrEqual(180);
    expect(event.decidedAtMs - event.speakingSinceMs).toBeLessThan(1000);
    await new Promise((r) => setTimeout(r, 300));
    const spoken = speech(server.received(ssrc));
    const last = spoken.at(-1)!;
    expect(last.arrivalMs - event.decidedAtMs).toBeLessThan(100);
    // After the stop: Discord's silence frames, then nothing.
    const after = server.received(ssrc).filter((p) => p.arrivalMs > last.arrivalMs);
    expect(after.length).toBeGreaterThan(0);
    expect(after.every((p) => p.silence)).toBe(true);
    await server.waitFor(
      () => app.app.service!.requestStats.disconnected > disconnectedBefore,
      2000,
      'the speech request closed by its client',
    );
    // The next utterance starts clean: its first packet is not a leftover of the interrupted one.
    const before = server.received(ssrc).length;
    const next = await voice.say('Yes?').result;
    expect(next.status).toBe('played');
    // 'played' means the player took the last packet; it is sent on the next 20 ms tick.
    await server.waitFor(
      () =>
        server
          .received(ssrc)
          .slice(before)
          .some((p, i, all) => p.silence && i > 0 && !all[i - 1]!.silence),
      2000,
      'the silence after the reply',
    );
    const nextPackets = speech(server.received(ssrc).slice(before));
    const pipeline = new FramePipeline(24_000, { encoding: 's16le', sampleRate: 48_000, channels: 2 }, 20);
    const yes = (await app.app.client.synthesize({ voiceId: VOICE, text: 'Yes?', outputFormat: 'pcm_24000' }))
      .audio;
    expect(nextPackets.length).toBe(pipeline.push(yes).length + pipeline.finish().length);
  });

  it('with barge-in off for the guild, members talking do not interrupt', async () => {
    const voice = await join({ guilds: { [GUILD]: { bargeIn: false } } });
    let bargedIn = false;
    voice.on('bargeIn', () => (bargedIn = true));
    const handle = voice.say(
      'The narrator keeps reading, whatever the table says about it, to the very end.',
    );
    await server.waitFor(() => speech(server.received(server.ssrcOf(GUILD))).length >= 10, 5000, 'speech');
    await server.injectSpeech(GUILD, MEMBER, loudVoice(600));
    expect((await handle.result).status).toBe('played');
    expect(bargedIn).toBe(false);
  });

  it('narration: lines in two voices play back to back with no gap; /skip ends a line and the queue goes on', async () => {
    await join();
    const ssrc = server.ssrcOf(GUILD)!;
    const { lines, handles } = guilds.narrate(
      GUILD,
      '[Narrator] The door creaks open. [Goblin] You shall not pass! [Narrator] The goblin raises its spear.',
    );
    expect(lines.map((l) => l.character)).toEqual(['Narrator', 'Goblin', 'Narrator']);
    const results = await Promise.all(handles.map((h) => h.result));
    expect(results.map((r) => r.status)).toEqual(['played', 'played', 'played']);
    await server.waitFor(() => server.received(ssrc).some((p) => p.silence), 2000, 'the end');
    const packets = server.received(ssrc);
    const firstSilence = packets.findIndex((p) => p.silence);
    // One run: every speech packet comes before the closing silence, none missing between the lines.
    expect(packets.slice(firstSilence).every((p) => p.silence)).toBe(true);
    const total = results.reduce((n, r) => n + r.playedMs / 20, 0);
    expect(firstSilence).toBe(total);
    const gaps = packets.slice(1, firstSilence).map((p, i) => p.arrivalMs - packets[i]!.arrivalMs);
    expect(Math.max(...gaps)).toBeLessThan(80);

    const skipped = guilds.narrate(
      GUILD,
      'This first line is long enough to be skipped before it ends, surely. [Goblin] Next!',
    );
    await server.waitFor(() => speech(server.received(ssrc)).length >= total + 10, 5000, 'the first line');
    expect(guilds.get(GUILD)!.skip()).toBe(true);
    const [first, second] = await Promise.all(skipped.handles.map((h) => h.result));
    expect(first!.status).toBe('interrupted');
    expect(second!.status).toBe('played');
  });

  it('reconnects after the voice socket drops (1006): resumed, and speech goes on', async () => {
    const voice = await join();
    server.closeSocket(1006);
    await server.waitFor(() => server.resumes === 1, 5000, 'a resume');
    await voice.ready(5000);
    const before = server.packets.length;
    expect((await voice.say('Still here.').result).status).toBe('played');
    expect(speech(server.packets.slice(before)).length).toBeGreaterThan(10);
    expect(guilds.list()).toEqual([voice]);
  });

  it('follows a move to another channel, and a region change to another voice server', async () => {
    const voice = await join();
    const other = '200000000000000002';
    gateway.move(other);
    await server.waitFor(() => voice.channelId === other, 3000, 'the move');
    await new Promise((r) => setTimeout(r, 400)); // longer than settleMs: a move is not a kick
    await voice.ready(5000);
    const region = await startServer();
    {
      gateway.changeEndpoint(region);
      await region.waitFor(() => region.identifies.length === 1, 5000, 'a connection to the new region');
      await voice.ready(5000);
      expect((await voice.say('New region.').result).status).toBe('played');
      expect(speech(region.packets).length).toBeGreaterThan(10);
      expect(guilds.get(GUILD)).toBe(voice);
    }
  });

  it('a kick ends the guild and frees it; a shard going away ends it as lost, to rejoin later', async () => {
    const voice = await join();
    const ended = voice.whenEnded();
    gateway.kick();
    expect(await ended).toEqual({ kind: 'kicked' });
    expect(guilds.list()).toEqual([]);
    expect(voice.speaker.audible).toBe(false);
    expect((await voice.say('anyone?').result).status).toBe('failed');

    const again = await guilds.join(GUILD, CHANNEL, gateway.adapterCreator);
    gateway.destroyAdapter();
    expect(await again.whenEnded()).toEqual({ kind: 'lost' });
    expect([...guilds.lostGuilds()]).toEqual([[GUILD, CHANNEL]]);
  });

  it('gives up after the configured attempts when the gateway stays down', async () => {
    const voice = await join();
    const attempts: number[] = [];
    voice.on('reconnecting', (e) => attempts.push(e.attempt));
    gateway.available = false;
    server.closeSocket(4006); // session invalid: the library must rejoin through the (down) gateway
    const reason = await voice.whenEnded();
    expect(reason).toMatchObject({ kind: 'gave-up', attempts: 3 });
    expect(attempts).toEqual([1, 2, 3]);
    expect(guilds.list()).toEqual([]);
  });
});

describe('slash commands and the control API, joined for real', () => {
  it('/join, /say, /narrate, /stop and /leave from a member in a voice channel', async () => {
    await setUp();
    const access = new FakeGuildAccess().addChannel({ id: CHANNEL, name: 'tavern' });
    access.members.set(MEMBER, CHANNEL);
    access.adapter = gateway.adapterCreator;
    const ctx: CommandContext = {
      guilds,
      access,
      listVoices: async () => (await app.app.client.listVoices()).voices,
      logger: pino({ level: 'silent' }),
    };
    const joinCmd = new FakeInteraction('join', { guildId: GUILD, userId: MEMBER });
    await handleCommand(joinCmd, ctx);
    expect(joinCmd.last).toEqual({ content: `Joined <#${CHANNEL}>.`, ephemeral: false });
    expect(guilds.get(GUILD)?.status).toBe('ready');

    const say = new FakeInteraction('say', {
      guildId: GUILD,
      userId: MEMBER,
      strings: { text: 'Roll for initiative.' },
    });
    await handleCommand(say, ctx);
    expect(say.last?.ephemeral).toBe(true);
    expect(say.last?.content).toMatch(/^Said it \(\d+\.\d s\)\.$/);
    expect(speech(server.received(server.ssrcOf(GUILD))).length).toBeGreaterThan(20);

    const narrate = new FakeInteraction('narrate', {
      guildId: GUILD,
      userId: MEMBER,
      strings: { script: '[Narrator] The door opens. [Goblin] Who goes there?' },
    });
    await handleCommand(narrate, ctx);
    expect(narrate.answers.map((a) => a.content)).toEqual([
      'Narrating 2 line(s): Narrator, Goblin.',
      'Narrated 2 line(s).',
    ]);

    const long = new FakeInteraction('say', {
      guildId: GUILD,
      userId: MEMBER,
      strings: { text: `${'And the tale goes on, '.repeat(30)}the end.` },
    });
    const saying = handleCommand(long, ctx);
    await server.waitFor(() => guilds.get(GUILD)!.speaker.audible, 5000, 'speech');
    const stop = new FakeInteraction('stop', { guildId: GUILD, userId: MEMBER });
    await handleCommand(stop, ctx);
    expect(stop.last?.content).toBe('Stopped.');
    await saying;
    expect(long.last?.content).toMatch(/^(Interrupted after|Stopped before)/);

    const voices = new FakeInteraction('voices', { guildId: GUILD });
    await handleCommand(voices, ctx);
    for (const v of builtInVoices()) expect(voices.last?.content).toContain(`${v.name} — \`${v.voice_id}\``);

    const leave = new FakeInteraction('leave', { guildId: GUILD });
    await handleCommand(leave, ctx);
    expect(leave.last).toEqual({ content: 'Left the voice channel.', ephemeral: false });
    expect(guilds.list()).toEqual([]);
    // The library told the gateway it left.
    expect(gateway.sent.at(-1)?.d.channel_id).toBeNull();
  });

  it("/narrate with the README's script and the default cast: every character in its own voice", async () => {
    const readme = await readFile(resolve(PROJECT_ROOT, 'README.md'), 'utf8');
    const script = /^\/narrate script: (.+)$/m.exec(readme)?.[1];
    expect(script, 'the README shows a /narrate script').toBeDefined();
    expect(await readFile(resolve(PROJECT_ROOT, 'docs', 'discord.md'), 'utf8')).toContain(script!);
    // The app's own guilds: the cast of config/default.yaml.
    const discord = app.app.discord;
    const { cast, narrator } = discord.settings.narration;
    const lines = parseScript(script!, cast, narrator);
    expect(lines.map((l) => l.character).sort()).toEqual(Object.keys(cast).sort());
    const voices = Object.values(cast).map((m) => m.voiceId);
    expect(new Set(voices).size).toBe(voices.length);

    server = await startServer();
    gateway = new FakeMainGateway(server, { guildId: GUILD, userId: BOT });
    const access = new FakeGuildAccess().addChannel({ id: CHANNEL, name: 'tavern' });
    access.members.set(MEMBER, CHANNEL);
    access.adapter = gateway.adapterCreator;
    const ctx: CommandContext = {
      guilds: discord,
      access,
      listVoices: async () => (await app.app.client.listVoices({ pageSize: 100 })).voices,
      logger: pino({ level: 'silent' }),
    };
    try {
      await handleCommand(new FakeInteraction('join', { guildId: GUILD, userId: MEMBER }), ctx);
      const results: UtteranceResult[] = [];
      discord.get(GUILD)!.speaker.on('utteranceEnd', ({ result }) => results.push(result));
      const narrate = new FakeInteraction('narrate', {
        guildId: GUILD,
        userId: MEMBER,
        strings: { script: script! },
      });
      await handleCommand(narrate, ctx);
      expect(narrate.answers.map((a) => a.content)).toEqual([
        `Narrating ${lines.length} line(s): ${lines.map((l) => l.character).join(', ')}.`,
        `Narrated ${lines.length} line(s).`,
      ]);
      expect(results.map((r) => r.status)).toEqual(lines.map(() => 'played'));

      const ssrc = server.ssrcOf(GUILD)!;
      await server.waitFor(() => server.received(ssrc).some((p) => p.silence), 2000, 'the end');
      // One run of speech, the lines back to back, then the closing silence.
      const packets = server.received(ssrc);
      const firstSilence = packets.findIndex((p) => p.silence);
      expect(packets.slice(firstSilence).every((p) => p.silence)).toBe(true);
      const spoken = packets.slice(0, firstSilence);
      expect(spoken.length).toBe(results.reduce((n, r) => n + r.playedMs / 20, 0));

      let first = 0;
      for (const [i, line] of lines.entries()) {
        const frames = results[i]!.playedMs / 20;
        const heard = Float32Array.from(leftOf(spoken.slice(first, first + frames)), (v) => v / 32768);
        first += frames;
        // The same line read by every voice of the cast, straight from the service; the line's own voice
        // several times, since its pseudo-random flutter moves a reading's median F0 (up to 9 % apart
        // between two readings of the Goblin's line, 0.5 % of its centroid).
        const references = new Map<string, VoiceFeatures>();
        const own: VoiceFeatures[] = [];
        for (const voiceId of voices) {
          const readings = voiceId === line.voiceId ? OWN_READINGS : 1;
          for (let k = 0; k < readings; k++) {
            const pcm = (
              await app.app.client.synthesize({ voiceId, text: line.text, outputFormat: 'pcm_24000' })
            ).audio;
            if (voiceId === line.voiceId && k === 0) {
              // As long as this voice's reading, to two frames: the flutter and roughness of some variants
              // make a reading's length vary from one to the next (30 readings of the Goblin's line spread
              // over 25 ms, 2192-2218 ms, so two readings may be two 20 ms frames apart).
              const pipeline = new FramePipeline(
                24_000,
                { encoding: 's16le', sampleRate: 48_000, channels: 2 },
                20,
              );
              const expected = pipeline.push(pcm).length + pipeline.finish().length;
              expect(Math.abs(frames - expected), `${line.character}'s frames`).toBeLessThanOrEqual(2);
            }
            const features = voiceFeatures(
              Float32Array.from(bytesToInt16(pcm), (v) => v / 32768),
              24_000,
            );
            if (k === 0) references.set(voiceId, features);
            if (voiceId === line.voiceId) own.push(features);
          }
        }
        // What the channel heard sounds like this character's voice, and like no other of the cast.
        const got = voiceFeatures(heard, 48_000);
        const nearest = [...references].sort(
          ([, a], [, b]) => voiceDistance(got, a) - voiceDistance(got, b),
        )[0]![0];
        expect(nearest, `${line.character}: "${line.text}"`).toBe(line.voiceId);
        // Through Opus and back, F0 and brightness stay within 3 % of the voice's own readings: of their
        // median, beyond what the readings themselves spread (a 44.1/48 kHz mix-up would be 8.5 % off).
        for (const feature of ['f0Hz', 'centroidHz'] as const) {
          const logs = own.map((f) => Math.log(f[feature])).sort((a, b) => a - b);
          const median = logs[(logs.length - 1) / 2]!;
          const spread = logs.at(-1)! - logs[0]!;
          if (feature === 'f0Hz' && got.f0Hz === 0) {
            expect(
              own.every((f) => f.f0Hz === 0),
              `${line.character}: unvoiced as read`,
            ).toBe(true);
            continue;
          }
          expect(Math.abs(Math.log(got[feature]) - median), `${line.character}'s ${feature}`).toBeLessThan(
            0.03 + spread,
          );
        }
      }
    } finally {
      await handleCommand(new FakeInteraction('leave', { guildId: GUILD }), ctx);
    }
  }, 60_000); // the script plays in real time: about 18 s

  it('POST /discord/guilds/{id}/say speaks narration markup in the guild; errors are clear', async () => {
    server = await startServer();
    gateway = new FakeMainGateway(server, { guildId: GUILD, userId: BOT });
    const discord = app.app.discord;
    const post = async (
      path: string,
      body: unknown,
    ): Promise<{ status: number; json: Record<string, unknown> }> => {
      const res = await fetch(`${app.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return { status: res.status, json: (await res.json()) as Record<string, unknown> };
    };
    expect((await post(`/discord/guilds/${GUILD}/say`, { text: 'Hello?' })).status).toBe(404);
    // Without a bot the API cannot join by itself.
    expect((await post(`/discord/guilds/${GUILD}/join`, { channel_id: CHANNEL })).status).toBe(503);
    try {
      await discord.join(GUILD, CHANNEL, gateway.adapterCreator);
      const listed = await (await fetch(`${app.url}/discord/guilds`)).json();
      expect(listed).toEqual({
        guilds: [
          expect.objectContaining({ guild_id: GUILD, channel_id: CHANNEL, status: 'ready', barge_in: true }),
        ],
      });
      // End to end encrypted (the fake requires DAVE), with the code Discord's clients show for the call.
      await server.waitFor(() => server.earOf(GUILD)?.ready === true, 5000, 'the DAVE group');
      const one = (await (await fetch(`${app.url}/discord/guilds/${GUILD}`)).json()) as Record<
        string,
        unknown
      >;
      expect(one['e2ee']).toEqual({
        protocol_version: 1,
        voice_privacy_code: server.earOf(GUILD)!.voicePrivacyCode,
      });
      expect(server.earOf(GUILD)!.voicePrivacyCode).toMatch(/^\d{30}$/);
      const said = await post(`/discord/guilds/${GUILD}/say`, {
        text: '[Narrator] The torch gutters. It goes out.',
      });
      expect(said.status).toBe(200);
      // The result shape /calls answers with too: every field there.
      expect(said.json['utterances']).toEqual([
        {
          id: A_STRING,
          character: 'Narrator',
          voice_id: NARRATOR_VOICE,
          text: 'The torch gutters. It goes out.',
          status: 'played',
          played_ms: A_NUMBER,
          heard_text: 'The torch gutters. It goes out.',
          first_byte_ms: A_NUMBER,
          first_frame_ms: A_NUMBER,
          underruns: A_NUMBER,
        },
      ]);
      // A failure is {code, message}, as on /calls; never a bare string.
      const failed = await post(`/discord/guilds/${GUILD}/say`, {
        text: 'Hello?',
        voice_id: 'no-such-voice',
      });
      expect(failed.status).toBe(200);
      expect(failed.json['utterances']).toEqual([
        expect.objectContaining({
          status: 'failed',
          played_ms: 0,
          error: { code: 'voice_not_found', message: NAMES_THE_VOICE },
          first_byte_ms: null,
          first_frame_ms: null,
        }),
      ]);
      expect(speech(server.received(server.ssrcOf(GUILD))).length).toBeGreaterThan(30);

      const typo = await post(`/discord/guilds/${GUILD}/say`, { text: '[Gobbo] Halt!' });
      expect(typo.status).toBe(400);
      expect(typo.json['error']).toMatch(/Gobbo/);
      expect(typo.json['characters']).toEqual(Object.keys(discord.settings.narration.cast));
      expect(typo.json['characters']).toContain('Narrator');
      expect((await post(`/discord/guilds/${GUILD}/say`, { text: '' })).status).toBe(400);

      const queued = await post(`/discord/guilds/${GUILD}/say`, {
        text: `${'On and on, '.repeat(40)}done.`,
        wait: false,
      });
      expect(queued.status).toBe(202);
      await server.waitFor(() => discord.get(GUILD)!.speaker.audible, 5000, 'speech');
      expect((await post(`/discord/guilds/${GUILD}/stop`, {})).json).toEqual({ stopped: true });
      const off = await fetch(`${app.url}/discord/guilds/${GUILD}/barge-in`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ enabled: false }),
      });
      expect(await off.json()).toEqual({ guild_id: GUILD, barge_in: false });
      expect(discord.get(GUILD)!.bargeInEnabled).toBe(false);
      expect((await fetch(`${app.url}/discord/guilds/${GUILD}`, { method: 'DELETE' })).status).toBe(204);
      expect(discord.list()).toEqual([]);
    } finally {
      await discord.close().catch(() => undefined);
    }
  });

  it('the control API wants CONTROL_TOKEN when it is set', async () => {
    const secured = await startTestApp(NO_PHONE_BARGE_IN, undefined, {
      CONTROL_TOKEN: 'control-token-0123456789',
    });
    try {
      const bare = await fetch(`${secured.url}/discord/guilds`);
      expect(bare.status).toBe(401);
      expect(bare.headers.get('www-authenticate')).toBe('Bearer');
      const ok = await fetch(`${secured.url}/discord/guilds`, {
        headers: { authorization: 'Bearer control-token-0123456789' },
      });
      expect(ok.status).toBe(200);
    } finally {
      await secured.close();
    }
  });
});
