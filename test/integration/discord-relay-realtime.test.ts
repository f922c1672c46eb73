/**
 * A Discord member's turn through realtime speech-to-text (issue 45), end to end with no Discord
 * account: the real app (`stt.mode: realtime`), its bot on the fake Discord (REST, gateway and voice
 * server on loopback), the fake realtime transcriber on a real `ws` server, and a relay app written
 * from Twilio's message reference. The member's turn streams as 16 kHz PCM as they speak, partial
 * prompts name them, and the turn ends by its words: well before the batch mode's silence.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeDiscord } from '../../testkit/discord/gateway.js';
import { loudVoice, testTls, type FakeVoiceServer } from '../../testkit/discord/voice-server.js';
import { FakeRealtimeStt } from '../../testkit/fake-realtime-stt.js';
import { FakeStt, FAKE_STT_KEY } from '../../testkit/fake-stt.js';
import { NO_PHONE_BARGE_IN, startTestApp, type TestApp } from '../helpers/app.js';
import { RelayApp, until } from '../helpers/relay-app.js';
import { tavern } from '../helpers/discord/tavern.js';

const GUILD = '910000000000000007';
const TEXT = '920000000000000007';
const VOICE = '920000000000000008';
const MEMBER = '940000000000000007';
const TOKEN = 'fake-bot-token.realtime0123456789';
const WORDS = ['Roll', 'for', 'initiative,', 'please.'];
/** Batch mode's silence: the realtime turn must end well before it. */
const END_OF_TURN_MS = 1500;
/** The fake writes a word per this much audio (the member's turn: 1200 ms, four words). */
const MS_PER_WORD = 250;

let discord: FakeDiscord;
let voiceServer: FakeVoiceServer;
let relayApp: RelayApp;
let realtime: FakeRealtimeStt;
let batch: FakeStt;
let t: TestApp;

beforeAll(async () => {
  relayApp = await RelayApp.start();
  realtime = await FakeRealtimeStt.start({
    apiKey: FAKE_STT_KEY,
    latencyMs: 150,
    partialEveryMs: 100,
    transcribe: (s) =>
      s.final ? WORDS.join(' ') : WORDS.slice(0, Math.floor(s.audioMs / MS_PER_WORD)).join(' '),
  });
  batch = await FakeStt.start({ transcribe: () => 'From the batch transcriber.' });
  discord = await FakeDiscord.start({
    token: TOKEN,
    guilds: [tavern({ guild: GUILD, text: TEXT, voice: VOICE, member: MEMBER })],
    voice: testTls(),
  });
  voiceServer = discord.voice!;
  t = await startTestApp(
    {
      ...NO_PHONE_BARGE_IN,
      stt: {
        baseUrl: batch.url,
        endOfTurnMs: END_OF_TURN_MS,
        mode: 'realtime',
        realtime: { baseUrl: realtime.url },
      },
      relays: { helper: { url: relayApp.url, partialPrompts: true } },
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
  await realtime?.close();
  await batch?.close();
  await discord?.close();
});

async function api(method: string, path: string, body?: unknown): Promise<number> {
  const res = await fetch(`${t.url}/discord/guilds/${GUILD}${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  await res.text();
  return res.status;
}

describe("a Discord member's turn through realtime speech-to-text", () => {
  it('streams as 16 kHz PCM, sends partial prompts naming the member, and ends by its words', async () => {
    expect(await api('POST', '/join', { channel_id: VOICE })).toBe(200);
    const before = relayApp.sessions.length;
    expect(await api('POST', '/relay', { relay: 'helper' })).toBe(201);
    await until(() => relayApp.sessions.length > before, 5000, 'the relay socket');
    const session = relayApp.latest();
    await until(() => session.received.some((m) => m.type === 'setup'), 5000, 'setup');
    const sessions = realtime.sessions.length;
    const batchRequests = batch.requests.length;
    const speech = await voiceServer.injectSpeech(GUILD, MEMBER, loudVoice(1200));
    await until(
      () => session.received.some((m) => m.type === 'prompt' && m['last'] === true),
      10_000,
      'the prompt',
    );
    const promptAt = performance.now();
    const member = { member: { id: MEMBER, name: `member-${MEMBER}` } };
    const prompts = session.received.filter((m) => m.type === 'prompt');
    expect(prompts.at(-1)).toEqual({
      type: 'prompt',
      voicePrompt: WORDS.join(' '),
      lang: 'en-US',
      last: true,
      voxbridge: member,
    });
    // The words so far as they came, each naming the member, each holding the one before.
    const partial = prompts.slice(0, -1);
    expect(partial.length).toBeGreaterThanOrEqual(2);
    let so = '';
    for (const p of partial) {
      expect(p).toMatchObject({ last: false, voxbridge: member });
      expect(String(p['voicePrompt']).startsWith(so)).toBe(true);
      so = String(p['voicePrompt']);
    }
    // "…please." ends a sentence: 250 ms of silence, then the commit's 150 ms; batch would wait 1.5 s.
    expect(promptAt - speech.endedAt).toBeLessThan(END_OF_TURN_MS - 300);
    // Streamed to the realtime service as 16 kHz PCM, about as long as the member spoke; batch unasked.
    const record = realtime.sessions[sessions]!;
    expect(record.query['audio_format']).toEqual(['pcm_16000']);
    const bytes = record.chunks.reduce((n, c) => n + c.audio.length, 0);
    expect(bytes / 32).toBeGreaterThan(1200 * 0.9);
    expect(bytes / 32).toBeLessThan(1200 + 1000);
    expect(batch.requests.length).toBe(batchRequests);
    expect(await api('DELETE', '/relay')).toBe(204);
    expect(await api('DELETE', '')).toBe(204);
  });
});
