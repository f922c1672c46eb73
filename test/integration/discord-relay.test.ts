/**
 * ConversationRelay in a Discord guild, end to end with no Discord account: the real app, its bot
 * logged in to the fake Discord (REST, gateway and voice server on loopback, the real protocols), a
 * relay app written from Twilio's message reference (a plain `ws` server) and a fake speech-to-text
 * service. Members talk by the fake voice server injecting their Opus packets, as Discord delivers
 * them; what the bot says is decrypted and decoded there.
 */
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { handleCommand, type CommandContext } from '../../adapters/discord/commands.js';
import type { UtteranceResult } from '../../src/speaker/speaker.js';
import { FakeDiscord } from '../../testkit/discord/gateway.js';
import { loudVoice, testTls, type FakeVoiceServer } from '../../testkit/discord/voice-server.js';
import { FakeStt, FAKE_STT_KEY } from '../../testkit/fake-stt.js';
import { freePort } from '../../testkit/ports.js';
import { NO_PHONE_BARGE_IN, startTestApp, type TestApp } from '../helpers/app.js';
import { FakeGuildAccess, FakeInteraction } from '../helpers/discord/fake-interaction.js';
import { RelayApp, until, type RelayAppSession } from '../helpers/relay-app.js';
import { tavern } from '../helpers/discord/tavern.js';

const GUILD = '910000000000000001';
const TEXT = '920000000000000001';
const VOICE = '920000000000000002';
const MEMBER = '940000000000000001';
const TOKEN = 'fake-bot-token.relay0123456789';
const TRANSCRIPT = 'Roll for initiative, please.';
const END_OF_TURN_MS = 500;
/** loudVoice's level (its three partials' RMS, as a fraction of full scale) and its pitch. */
const LOUD_VOICE_RMS = Math.sqrt((6000 ** 2 + 3000 ** 2 + 1500 ** 2) / 2) / 32_768;
const LOUD_VOICE_HZ = 180;
const A_NUMBER: unknown = expect.any(Number);

let discord: FakeDiscord;
let voiceServer: FakeVoiceServer;
let relayApp: RelayApp;
let stt: FakeStt;
let t: TestApp;

beforeAll(async () => {
  const closedPort = await freePort();
  relayApp = await RelayApp.start();
  stt = await FakeStt.start({ transcribe: () => TRANSCRIPT });
  discord = await FakeDiscord.start({
    token: TOKEN,
    guilds: [tavern({ guild: GUILD, text: TEXT, voice: VOICE, member: MEMBER })],
    voice: testTls(),
  });
  voiceServer = discord.voice!;
  t = await startTestApp(
    {
      ...NO_PHONE_BARGE_IN,
      stt: { baseUrl: stt.url, endOfTurnMs: END_OF_TURN_MS },
      relays: {
        helper: { url: relayApp.url },
        other: { url: relayApp.url },
        // Nothing listens there: the connection is refused.
        gone: { url: `ws://127.0.0.1:${closedPort}/relay`, connectTimeoutMs: 1000 },
      },
      discord: { commandGuildIds: [GUILD] },
    },
    undefined,
    { STT_API_KEY: FAKE_STT_KEY, DISCORD_TOKEN: TOKEN, DISCORD_API_URL: `${discord.url}/api` },
  );
  await until(() => t.app.discordBot() !== undefined, 15_000, 'the bot to log in');
}, 60_000);
afterAll(async () => {
  await t?.close();
  await relayApp?.close();
  await stt?.close();
  await discord?.close();
});
afterEach(async () => {
  await t.app.discord.stopRelay(GUILD);
  await t.app.discord.leave(GUILD);
});

async function api(
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(`${t.url}/discord/guilds/${GUILD}${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, json: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

/** The bot joins the voice channel through the control API (the bot's own voice adapter). */
async function join(): Promise<void> {
  const joined = await api('POST', '/join', { channel_id: VOICE });
  expect(joined.status).toBe(200);
}

/** Starts relay `name` over HTTP and resolves with the app's side of the session, once it has `setup`. */
async function startRelay(name = 'helper'): Promise<RelayAppSession> {
  const before = relayApp.sessions.length;
  const started = await api('POST', '/relay', { relay: name });
  expect(started.status).toBe(201);
  await until(
    () => relayApp.sessions.length > before && relayApp.latest().received.some((m) => m.type === 'setup'),
    5000,
    'setup',
  );
  return relayApp.latest();
}

/** Speech packets the bot has sent in the guild so far. */
function botSpeech(): number {
  return voiceServer.received(voiceServer.ssrcOf(GUILD)).filter((p) => !p.silence).length;
}

/** Every utterance result of the guild's speaker from now on, in order. */
function results(): UtteranceResult[] {
  const out: UtteranceResult[] = [];
  t.app.discord.get(GUILD)!.speaker.on('utteranceEnd', ({ result }) => out.push(result));
  return out;
}

/** The fundamental of a steady voiced stretch: the shortest lag whose autocorrelation is near the best. */
function pitchHz(samples: Float32Array, sampleRate: number): number {
  const n = Math.round(sampleRate * 0.2);
  const lags: number[] = [];
  for (let lag = Math.round(sampleRate / 500); lag <= Math.round(sampleRate / 50); lag++) {
    let dot = 0;
    for (let i = 0; i < n; i++) dot += samples[i]! * samples[i + lag]!;
    lags[lag] = dot;
  }
  const best = Math.max(...lags.filter((v) => v !== undefined));
  return sampleRate / lags.findIndex((v) => v !== undefined && v >= 0.95 * best);
}

function rms(samples: Float32Array): number {
  let sum = 0;
  for (const s of samples) sum += s * s;
  return Math.sqrt(sum / Math.max(1, samples.length));
}

describe('a Discord guild handed to a relay app', () => {
  it('POST /relay: 404 outside a voice channel, 400 for a bad body or an unknown relay, 201, then 409; DELETE stops it', async () => {
    const outside = await api('POST', '/relay', { relay: 'helper' });
    expect(outside.status).toBe(404);
    expect(outside.json['error']).toMatch(/not in a voice channel.*\/join/);
    await join();
    expect((await api('POST', '/relay', {})).json).toEqual({
      error: expect.any(String) as unknown,
      param: 'relay',
    });
    expect((await api('POST', '/relay', { relay: 'helper', extra: 1 })).status).toBe(400);
    const unknown = await api('POST', '/relay', { relay: 'nobody' });
    expect(unknown.status).toBe(400);
    expect(unknown.json).toMatchObject({ param: 'relay', relays: ['helper', 'other', 'gone'] });
    expect(unknown.json['error']).toMatch(/no relay named "nobody"; relays: helper, other, gone/);
    expect((await api('GET', '/relay')).status).toBe(404);
    expect((await api('DELETE', '/relay')).status).toBe(404);

    const sessions = relayApp.sessions.length;
    const started = await api('POST', '/relay', { relay: 'helper' });
    expect(started.status).toBe(201);
    expect(started.json).toEqual({
      guild_id: GUILD,
      channel_id: VOICE,
      relay: 'helper',
      session_id: expect.stringMatching(/^VX[0-9a-f]{32}$/) as unknown,
      prompts: true,
    });
    // One relay per guild: a second, of any name, is a conflict.
    const again = await api('POST', '/relay', { relay: 'other' });
    expect(again.status).toBe(409);
    expect(again.json).toMatchObject({ relay: 'helper' });
    expect(again.json['error']).toMatch(/already runs in guild .*DELETE \/discord\/guilds\/\d+\/relay/);
    expect((await api('PUT', '/relay', { relay: 'helper' })).status).toBe(405);

    // setup names the guild, its channel and the bot.
    await until(() => relayApp.sessions.length > sessions, 5000, 'the relay socket');
    const session = relayApp.latest();
    await until(() => session.received.length > 0, 5000, 'setup');
    expect(session.received[0]).toEqual({
      type: 'setup',
      sessionId: started.json['session_id'],
      callSid: GUILD,
      accountSid: '',
      parentCallSid: '',
      from: VOICE,
      to: discord.user.id,
      forwardedFrom: '',
      callerName: '',
      direction: 'inbound',
      callType: 'discord',
      callStatus: 'in-progress',
      customParameters: {},
      voxbridge: { gateway: 'discord', guildId: GUILD, channelId: VOICE, prompts: true },
    });
    expect((await api('GET', '')).json).toMatchObject({ guild_id: GUILD, relay: 'helper' });
    expect((await api('GET', '/relay')).json).toMatchObject({
      relay: 'helper',
      session_id: started.json['session_id'],
    });

    expect((await api('DELETE', '/relay')).status).toBe(204);
    await until(() => session.closed, 5000, 'the relay socket to close');
    expect((await api('GET', '/relay')).status).toBe(404);
    expect((await api('GET', '')).json).toMatchObject({ status: 'ready', relay: null });
    // Stopped, it can start again.
    await startRelay('other');
  });

  it('an app that cannot be reached ends the relay at once, and the guild can start another', async () => {
    await join();
    const started = await api('POST', '/relay', { relay: 'gone' });
    expect(started.status).toBe(201);
    await until(() => t.app.discord.relayOf(GUILD) === undefined, 3000, 'the relay to end');
    expect((await api('GET', '/relay')).status).toBe(404);
    await startRelay('helper');
  });

  it("turns a member's spoken turn into a prompt naming them, and speaks the app's tokens into the channel", async () => {
    await join();
    const session = await startRelay();
    const said = results();
    const requests = stt.requests.length;
    const speech = await voiceServer.injectSpeech(GUILD, MEMBER, loudVoice(1200));
    await until(() => session.received.some((m) => m.type === 'prompt'), 10_000, 'the prompt');
    const promptAt = performance.now();
    expect(session.received.find((m) => m.type === 'prompt')).toEqual({
      type: 'prompt',
      voicePrompt: TRANSCRIPT,
      // The STT's ISO 639-3 'eng', in ConversationRelay's form.
      lang: 'en-US',
      last: true,
      voxbridge: { member: { id: MEMBER, name: `member-${MEMBER}` } },
    });
    // The turn ended endOfTurnMs after the member's last packet, not before.
    expect(promptAt - speech.endedAt).toBeGreaterThan(END_OF_TURN_MS - 50);
    // One transcription: the member's turn, 16 kHz mono 16-bit, about as long and as loud as they spoke.
    const heard = stt.requests.slice(requests);
    expect(heard).toHaveLength(1);
    const wav = heard[0]!.wav!;
    expect(wav).toMatchObject({ sampleRate: 16_000, channels: 1, bitsPerSample: 16 });
    expect(wav.durationMs).toBeGreaterThan(1200 * 0.9);
    expect(wav.durationMs).toBeLessThan(1200 + 400);
    expect(rms(wav.samples)).toBeGreaterThan(LOUD_VOICE_RMS * 0.7);
    expect(rms(wav.samples)).toBeLessThan(LOUD_VOICE_RMS * 1.3);
    // At its own pitch: a wrong rate anywhere on the way would shift it.
    const middle = wav.samples.subarray(Math.round(wav.samples.length / 2) - 4000);
    expect(pitchHz(middle, wav.sampleRate)).toBeGreaterThan(LOUD_VOICE_HZ * 0.95);
    expect(pitchHz(middle, wav.sampleRate)).toBeLessThan(LOUD_VOICE_HZ * 1.05);

    // The app's answer, token by token, is spoken in the channel: whole, and heard at the voice server.
    const before = botSpeech();
    await until(() => said.length >= 1, 20_000, 'the answer to be spoken');
    expect(said[0]).toMatchObject({
      status: 'played',
      heardText: `You said: ${TRANSCRIPT}. What else can I do for you today?`,
    });
    await voiceServer.waitFor(() => botSpeech() - before >= said[0]!.playedMs / 20, 2000, 'every packet');
    expect(said[0]!.playedMs).toBeGreaterThan(2000);
  });

  it('tells the app what the channel heard when a member talks over its speech, and their words come next', async () => {
    await join();
    const session = await startRelay();
    const said = results();
    const long =
      'The dragon wakes beneath the mountain, and its breath fills the hall with smoke, while the party ' +
      'hides behind the pillars and the treasure glitters in the dark, waiting for the bravest to reach it.';
    void relayApp.answer(session.socket, long);
    const before = botSpeech();
    await voiceServer.waitFor(() => botSpeech() - before >= 75, 15_000, '1.5 s of the answer');
    void voiceServer.injectSpeech(GUILD, MEMBER, loudVoice(800));
    await until(() => session.received.some((m) => m.type === 'interrupt'), 5000, 'the interrupt');
    const interrupt = session.received.find((m) => m.type === 'interrupt')!;
    await until(() => said.length >= 1, 5000, 'the cut utterance');
    // Exactly what the speaker says the channel heard of the cut answer.
    expect(said[0]).toMatchObject({ status: 'interrupted' });
    expect(interrupt).toEqual({
      type: 'interrupt',
      utteranceUntilInterrupt: said[0]!.heardText,
      durationUntilInterruptMs: said[0]!.playedMs,
    });
    expect(interrupt['durationUntilInterruptMs']).toEqual(A_NUMBER);
    expect(said[0]!.playedMs).toBeGreaterThan(1000);
    expect(long.startsWith(said[0]!.heardText)).toBe(true);
    expect(said[0]!.heardText.length).toBeGreaterThan(10);
    // The member's words are the next prompt, after the interrupt.
    await until(() => session.received.some((m) => m.type === 'prompt'), 10_000, 'the prompt');
    const types = session.received.map((m) => m.type);
    expect(types.indexOf('prompt')).toBeGreaterThan(types.indexOf('interrupt'));
  });

  it("ends on the app's end with the bot still in the channel; leaving the channel closes the app's socket", async () => {
    await join();
    const voice = t.app.discord.get(GUILD)!;
    const listeners = (): number[] => [voice.listenerCount('bargeIn'), voice.listenerCount('ended')];
    const idle = listeners();
    const first = await startRelay();
    expect(listeners()).toEqual([idle[0]! + 1, idle[1]! + 1]);
    first.socket.send(JSON.stringify({ type: 'text', token: 'Farewell, adventurers.', last: true }));
    first.socket.send(JSON.stringify({ type: 'end', handoffData: '{"done":true}' }));
    await until(() => t.app.discord.relayOf(GUILD) === undefined, 5000, 'the relay to end');
    await until(() => first.closed, 5000, 'the socket to close');
    expect(t.app.discord.get(GUILD)?.status).toBe('ready');
    // Nothing of it is left on the guild's voice: a new relay can listen to the members again.
    expect(listeners()).toEqual(idle);
    // What the app said before its end is spoken to its end.
    const said = results();
    await until(() => said.length >= 1, 15_000, 'the farewell');
    expect(said[0]).toMatchObject({ status: 'played', heardText: 'Farewell, adventurers.' });

    const second = await startRelay();
    expect((await fetch(`${t.url}/discord/guilds/${GUILD}`, { method: 'DELETE' })).status).toBe(204);
    await until(() => second.closed, 5000, 'the socket to close with the channel');
    expect(t.app.discord.relayOf(GUILD)).toBeUndefined();
    expect(t.app.discord.list()).toEqual([]);
  });
});

describe('/relay', () => {
  it('/relay NAME joins the invoker and starts it for everyone to see; /relay stop ends it', async () => {
    const access = new FakeGuildAccess().addChannel({ id: VOICE, name: 'Tavern' });
    access.members.set(MEMBER, VOICE);
    access.adapter = t.app.discordBot()!.adapterCreator(GUILD);
    const ctx: CommandContext = {
      guilds: t.app.discord,
      access,
      listVoices: () => Promise.resolve([]),
      logger: pino({ level: 'silent' }),
    };
    const command = (name: string): FakeInteraction =>
      new FakeInteraction('relay', { guildId: GUILD, userId: MEMBER, strings: { name } });

    const typo = command('helpr');
    await handleCommand(typo, ctx);
    expect(typo.answers).toEqual([
      { content: 'There is no relay named helpr. Relays: helper, other, gone.', ephemeral: true },
    ]);
    const nothing = command('stop');
    await handleCommand(nothing, ctx);
    expect(nothing.last).toEqual({ content: 'No relay is running here.', ephemeral: true });

    const sessions = relayApp.sessions.length;
    const start = command('helper');
    await handleCommand(start, ctx);
    expect(start.last).toEqual({
      content: `Relaying <#${VOICE}> to helper: what you say here goes to it, and I speak its answers. \`/relay name:stop\` ends it.`,
      ephemeral: false,
    });
    expect(t.app.discord.get(GUILD)?.channelId).toBe(VOICE);
    await until(() => relayApp.sessions.length > sessions, 5000, 'the relay socket');
    const session = relayApp.latest();
    await until(() => session.received.some((m) => m.type === 'setup'), 5000, 'setup');

    const twice = command('other');
    await handleCommand(twice, ctx);
    expect(twice.last?.content).toBe('The relay helper is already running here: `/relay name:stop` first.');

    const stop = command('stop');
    await handleCommand(stop, ctx);
    expect(stop.last).toEqual({
      content: "Stopped the relay helper. I'm still in the channel.",
      ephemeral: false,
    });
    await until(() => session.closed, 5000, 'the socket to close');
    // The reply that started it now says how it ended.
    await until(() => start.answers.length >= 2, 2000, 'the reply to be updated');
    expect(start.last?.content).toBe('The relay helper was stopped.');
    expect(t.app.discord.get(GUILD)?.status).toBe('ready');
  });
});
