/**
 * Discord's end-to-end encrypted voice (DAVE) with voxbridge's own guild voice (`GuildVoice`: the real
 * @discordjs/voice connection, player and receiver, the real speaker and local speech service), against
 * a fake voice server that requires DAVE v1 as Discord does: real MLS (the server's external proposals
 * by ts-mls, the members' and the bot's groups by @snazzah/davey), real per-frame encryption; only the
 * wire is on loopback.
 *
 * Members are real DAVE participants (`testkit/discord/dave/member.ts`): they join and leave, say
 * eSpeak speech end-to-end encrypted, and decrypt what the bot says.
 */
import { joinVoiceChannel, VoiceConnectionStatus } from '@discordjs/voice';
import davey from '@snazzah/davey';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { GuildVoice } from '../../adapters/discord/guild-voice.js';
import { bytesToInt16 } from '../../src/audio/pcm.js';
import { FramePipeline } from '../../src/speaker/frame-pipeline.js';
import { analyzeSpeech } from '../../src/service/voices/analyze.js';
import { NO_PHONE_BARGE_IN, startTestApp, type TestApp } from '../helpers/app.js';
import type { HeardFrame } from '../../testkit/discord/dave/member.js';
import { isDaveFrame, mlsVector } from '../../testkit/discord/dave/mls.js';
import {
  DAVE_REQUIRED_CLOSE,
  FakeMainGateway,
  FakeVoiceServer,
  testTls,
  type FakeVoiceServerOptions,
} from '../../testkit/discord/voice-server.js';

const GUILD = '610000000000000001';
const CHANNEL = '620000000000000001';
const OTHER_CHANNEL = '620000000000000099';
const BOT = '630000000000000001';
const M1 = '640000000000000001';
const M2 = '640000000000000002';
const M3 = '640000000000000003';
const VOICE = 'voxbridge-default';
const STEREO_48K = { encoding: 's16le', sampleRate: 48_000, channels: 2 } as const;

interface Rig {
  server: FakeVoiceServer;
  guild: GuildVoice;
  logs: Array<{ level: number; msg: string }>;
}

let t: TestApp;
/** A sentence of eSpeak speech, 48 kHz stereo, as a member says it. */
let speech48k: Int16Array;
const rigs: Rig[] = [];

beforeAll(async () => {
  t = await startTestApp(NO_PHONE_BARGE_IN);
  const { audio } = await t.app.client.synthesize({
    voiceId: VOICE,
    text: 'I am here, and I would like to ask the innkeeper about the bridge.',
    outputFormat: 'pcm_24000',
  });
  const pipeline = new FramePipeline(24_000, STEREO_48K, 20);
  const frames = [...pipeline.push(audio), ...pipeline.finish()];
  speech48k = bytesToInt16(Buffer.concat(frames));
});
afterAll(async () => {
  await t.close();
});
afterEach(async () => {
  for (const rig of rigs.splice(0)) {
    await rig.guild.leave();
    await rig.server.close();
  }
});

async function rig(options: Omit<FakeVoiceServerOptions, 'cert' | 'key'> = {}, join = true): Promise<Rig> {
  const server = await FakeVoiceServer.start({ ...testTls(), ...options });
  server.place('bot-session', CHANNEL);
  const gateway = new FakeMainGateway(server, { guildId: GUILD, userId: BOT, sessionId: 'bot-session' });
  const logs: Rig['logs'] = [];
  const logger = pino(
    { level: 'debug' },
    { write: (line: string) => void logs.push(JSON.parse(line) as Rig['logs'][number]) },
  );
  const r: Rig = { server, logs, guild: undefined as unknown as GuildVoice };
  if (join) r.guild = joinGuild(gateway, logger);
  rigs.push(r);
  if (join) await r.guild.ready(5000);
  return r;
}

function joinGuild(gateway: FakeMainGateway, logger: pino.Logger): GuildVoice {
  return new GuildVoice({
    guildId: GUILD,
    channelId: CHANNEL,
    adapterCreator: gateway.adapterCreator,
    source: t.app.client,
    voiceId: VOICE,
    bargeIn: { enabled: true, minSpeechMs: 200, maxGapMs: 120, minLevelDbfs: -45 },
    reconnect: { maxAttempts: 2, baseDelayMs: 100, maxDelayMs: 500, settleMs: 200, readyTimeoutMs: 5000 },
    logger,
  });
}

/** Waits until the guild's DAVE session reports an established group. */
async function e2ee(r: Rig, timeoutMs = 5000): Promise<void> {
  await r.server.waitFor(() => r.guild.e2ee.voicePrivacyCode !== null, timeoutMs, 'voice privacy code');
}

/** Speaks `text` and resolves with what it played. */
async function say(r: Rig, text: string): Promise<{ playedMs: number; status: string }> {
  const result = await r.guild.say(text).result;
  return { playedMs: result.playedMs, status: result.status };
}

/** The run of `member`'s frames of the bot's from `from` on, by outcome. */
function outcomes(frames: readonly HeardFrame[]): Record<HeardFrame['outcome'], number> {
  const count = { decrypted: 0, silence: 0, clear: 0, failed: 0 };
  for (const f of frames) count[f.outcome]++;
  return count;
}

/** 48 kHz stereo of the frames a member decrypted. */
function pcmOf(frames: readonly HeardFrame[]): Float32Array {
  const parts = frames.filter((f) => f.outcome === 'decrypted' && f.pcm).map((f) => f.pcm!);
  const n = parts.reduce((s, p) => s + p.length / 2, 0);
  const out = new Float32Array(n);
  let k = 0;
  for (const p of parts) for (let i = 0; i < p.length; i += 2) out[k++] = p[i]! / 32768;
  return out;
}

describe('DAVE: end-to-end encrypted voice against a voice server that requires it', () => {
  it('refuses a client that does not offer DAVE (4017), as Discord does; voxbridge offers version 1', async () => {
    const r = await rig({}, false);
    const gateway = new FakeMainGateway(r.server, { guildId: GUILD, userId: BOT, sessionId: 'bot-session' });
    const plain = joinVoiceChannel({
      guildId: GUILD,
      channelId: CHANNEL,
      adapterCreator: gateway.adapterCreator,
      daveEncryption: false,
    });
    plain.on('error', () => undefined);
    try {
      await r.server.waitFor(() => r.server.socketCloses.length > 0, 5000, 'a close');
      expect(r.server.identifies[0]?.max_dave_protocol_version).toBe(0);
      expect(r.server.socketCloses[0]).toEqual({ code: DAVE_REQUIRED_CLOSE, byServer: true });
      expect(plain.state.status).not.toBe(VoiceConnectionStatus.Ready);
    } finally {
      plain.destroy();
    }
    // voxbridge's own join offers DAVE and is taken.
    const logger = pino({ level: 'silent' });
    r.guild = joinGuild(
      new FakeMainGateway(r.server, { guildId: GUILD, userId: BOT, sessionId: 'bot-session' }),
      logger,
    );
    await r.guild.ready(5000);
    expect(r.server.identifies.at(-1)?.max_dave_protocol_version).toBe(1);
    expect(r.guild.e2ee.protocolVersion).toBe(1);
  });

  it('alone in the channel, the bot creates the group when a member comes; the member hears it, end to end', async () => {
    const r = await rig({ ear: false });
    expect(r.guild.e2ee).toEqual({ protocolVersion: 1, voicePrivacyCode: null });
    // A member farther away than the bot: the bot's commit of the member's add comes first.
    const member = r.server.addMember(CHANNEL, M1, { latencyMs: 50 });
    await r.server.waitForGroup(GUILD, [member]);
    await e2ee(r);
    const commit = r.server.daveChannels.get(CHANNEL)!.events.find((e) => e.kind === 'commit');
    expect(commit).toMatchObject({ committer: BOT, transitionId: 0, epoch: 1n });
    // The code the operator reads is the one every member's client shows.
    expect(r.guild.e2ee.voicePrivacyCode).toBe(member.voicePrivacyCode);
    expect(r.guild.e2ee.voicePrivacyCode).toMatch(/^\d{30}$/);

    const text = 'The bridge falls at dawn, so we leave before first light.';
    const played = await say(r, text);
    expect(played.status).toBe('played');
    await r.server.waitFor(() => outcomes(member.heard).silence > 0, 2000, 'the closing silence');
    const heard = outcomes(member.heard);
    expect(heard.clear).toBe(0);
    expect(heard.failed).toBe(0);
    expect(heard.decrypted).toBe(played.playedMs / 20);
    // Every speech frame went over the wire end-to-end encrypted.
    expect(
      r.server
        .received()
        .filter((p) => !p.silence)
        .every((p) => p.e2ee),
    ).toBe(true);
    // What the member decrypted is the speech: as long as the service's reading, at its pitch.
    const { audio } = await t.app.client.synthesize({ voiceId: VOICE, text, outputFormat: 'pcm_24000' });
    const reference = analyzeSpeech(
      Float32Array.from(bytesToInt16(audio), (v) => v / 32768),
      24_000,
    );
    const got = analyzeSpeech(pcmOf(member.heard), 48_000);
    expect(Math.abs(got.durationSeconds - reference.durationSeconds)).toBeLessThan(0.1);
    expect(Math.abs(Math.log(got.f0Hz / reference.f0Hz))).toBeLessThan(0.05);
  });

  it('joins members already in an established group through a welcome, and both decrypt the bot', async () => {
    const r = await rig({ ear: false }, false);
    const m1 = r.server.addMember(CHANNEL, M1);
    const m2 = r.server.addMember(CHANNEL, M2);
    const channel = r.server.daveChannels.get(CHANNEL)!;
    await r.server.waitFor(() => channel.established && m1.ready && m2.ready, 5000, 'the members group');
    const before = channel.currentEpoch;
    r.guild = joinGuild(
      new FakeMainGateway(r.server, { guildId: GUILD, userId: BOT, sessionId: 'bot-session' }),
      pino({ level: 'silent' }),
    );
    await r.guild.ready(5000);
    await r.server.waitForGroup(GUILD, [m1, m2]);
    await e2ee(r);
    const added = channel.events.filter((e) => e.kind === 'commit').at(-1)!;
    expect(added).toMatchObject({ epoch: before + 1n });
    expect(added.kind === 'commit' && [M1, M2].includes(added.committer)).toBe(true);
    expect(added.kind === 'commit' && added.transitionId).toBeGreaterThan(0);
    expect(channel.events.some((e) => e.kind === 'execute')).toBe(true);
    expect(r.guild.e2ee.voicePrivacyCode).toBe(m1.voicePrivacyCode);

    const played = await say(r, 'Welcome, travellers.');
    await r.server.waitFor(() => outcomes(m2.heard).silence > 0, 2000, 'the closing silence');
    for (const m of [m1, m2]) {
      expect(outcomes(m.heard)).toMatchObject({ clear: 0, failed: 0, decrypted: played.playedMs / 20 });
    }
  });

  it('members joining and leaving during an utterance (new epochs) cost at most a frame, and nothing is in the clear', async () => {
    const r = await rig({ ear: false }, false);
    const stays = r.server.addMember(CHANNEL, M1);
    const leaves = r.server.addMember(CHANNEL, M2);
    r.guild = joinGuild(
      new FakeMainGateway(r.server, { guildId: GUILD, userId: BOT, sessionId: 'bot-session' }),
      pino({ level: 'silent' }),
    );
    await r.guild.ready(5000);
    await r.server.waitForGroup(GUILD, [stays, leaves]);
    const channel = r.server.daveChannels.get(CHANNEL)!;
    const commitsBefore = channel.events.filter((e) => e.kind === 'commit').length;

    const utterance = r.guild.say(
      'Rain hammers the shutters as the tavern door bangs open, and the whole room turns to look at the stranger in the doorway.',
    );
    await r.server.waitFor(() => outcomes(stays.heard).decrypted > 40, 5000, 'speech');
    const joins = r.server.addMember(CHANNEL, M3); // a new epoch mid-utterance
    await r.server.waitFor(() => joins.ready && !channel.transitioning, 5000, 'the join transition');
    await r.server.waitFor(() => outcomes(joins.heard).decrypted > 10, 3000, 'the newcomer hearing');
    r.server.removeMember(leaves); // and another
    await r.server.waitFor(
      () =>
        channel.events.filter((e) => e.kind === 'commit').length === commitsBefore + 2 &&
        !channel.transitioning,
      5000,
      'the leave transition',
    );
    const result = await utterance.result;
    expect(result.status).toBe('played');
    await r.server.waitFor(() => outcomes(stays.heard).silence > 0, 2000, 'the closing silence');

    // The member there throughout heard every frame; the newcomer heard everything after its
    // transition; nobody got a frame in the clear.
    const throughout = outcomes(stays.heard);
    expect(throughout.clear).toBe(0);
    expect(throughout.failed).toBeLessThanOrEqual(1);
    expect(throughout.decrypted).toBeGreaterThanOrEqual(result.playedMs / 20 - 1);
    const newcomer = outcomes(joins.heard);
    expect(newcomer.clear).toBe(0);
    const firstHeard = joins.heard.findIndex((f) => f.outcome === 'decrypted');
    expect(joins.heard.slice(firstHeard).filter((f) => f.outcome === 'failed').length).toBeLessThanOrEqual(1);
    expect(channel.members.sort()).toEqual([BOT, M1, M3].sort());
  });

  it("a member's end-to-end encrypted speech over the bot barges in", async () => {
    const r = await rig();
    await e2ee(r);
    const member = r.server.addMember(CHANNEL, M1);
    await r.server.waitForGroup(GUILD, [member]);
    const barged = new Promise<{ userId: string; interrupted: boolean }>((resolve) =>
      r.guild.once('bargeIn', resolve),
    );
    const utterance = r.guild.say(
      'This is a long answer about the history of the tavern, which the member will not wait to hear the end of.',
    );
    await r.server.waitFor(() => r.server.received().filter((p) => !p.silence).length > 25, 5000, 'speech');
    const sent: Buffer[] = [];
    const encrypt = member.encrypt.bind(member);
    member.encrypt = (opus) => {
      const frame = encrypt(opus);
      if (frame) sent.push(frame);
      return frame;
    };
    void r.server.injectSpeech(GUILD, M1, speech48k.subarray(0, 48_000 * 2));
    const event = await barged;
    expect(event).toMatchObject({ userId: M1, interrupted: true });
    expect((await utterance.result).status).toBe('interrupted');
    expect(sent.length).toBeGreaterThan(5);
    expect(sent.every(isDaveFrame)).toBe(true);
  });

  it('a transition-0 group the bot falls out of (a withheld commit) costs a re-key, not the bot: it hears the member again', async () => {
    const r = await rig({ ear: false, transitionTimeoutMs: 300 });
    const m1 = r.server.addMember(CHANNEL, M1);
    await r.server.waitForGroup(GUILD, [m1]);
    const channel = r.server.daveChannels.get(CHANNEL)!;
    // The bot's group is the first epoch of a new group: its last transition is 0.
    expect(channel.events.filter((e) => e.kind === 'commit')).toEqual([
      expect.objectContaining({ transitionId: 0 }),
    ]);
    const heard: Array<{ at: number; userId: string }> = [];
    r.guild.listen({
      packet: (userId, pcm) => {
        if (pcm) heard.push({ at: performance.now(), userId });
      },
      runEnd: () => undefined,
    });
    // The next commit reaches everyone but the bot, which stays in epoch 1 while the others go on.
    channel.faults.withholdNextCommitFrom = BOT;
    const m2 = r.server.addMember(CHANNEL, M2);
    await r.server.waitFor(() => m2.ready && m1.epoch === 2n && !channel.transitioning, 5000, 'epoch 2');

    const started = performance.now();
    const speaking = r.server.injectSpeech(GUILD, M1, speech48k);
    await r.server.waitFor(
      () => channel.events.some((e) => e.kind === 'invalid' && e.userId === BOT),
      5000,
      "the bot's op 31",
    );
    await r.server.waitFor(
      () => heard.some((h) => h.userId === M1 && h.at > started),
      5000,
      'M1 heard again',
    );
    const recoveredMs = heard.find((h) => h.userId === M1 && h.at > started)!.at - started;
    await speaking;
    // 36 undecryptable frames (the library's tolerance, 720 ms) then one re-key round trip.
    expect(recoveredMs).toBeLessThan(3000);
    expect(channel.events.find((e) => e.kind === 'invalid')).toMatchObject({ transitionId: 0 });
    expect(r.guild.status).toBe(VoiceConnectionStatus.Ready);
    expect(r.logs.some((l) => l.level === 40 && /re-key/i.test(l.msg))).toBe(true);
    console.info(
      `DAVE transition-0 recovery: the member heard again ${recoveredMs.toFixed(0)} ms after it began`,
    );
  });

  it('a client without DAVE joining mid-call is refused; the call stays end-to-end encrypted', async () => {
    const r = await rig();
    await e2ee(r);
    const utterance = r.guild.say('We stay encrypted whoever knocks at the door of this channel.');
    await r.server.waitFor(() => r.server.received().filter((p) => !p.silence).length > 10, 5000, 'speech');
    const closes = r.server.socketCloses.length;
    const intruder = joinVoiceChannel({
      guildId: '610000000000000009',
      channelId: CHANNEL,
      adapterCreator: new FakeMainGateway(r.server, {
        guildId: '610000000000000009',
        userId: '650000000000000001',
        sessionId: 'bot-session',
      }).adapterCreator,
      daveEncryption: false,
    });
    intruder.on('error', () => undefined);
    await r.server.waitFor(() => r.server.socketCloses.length > closes, 5000, "the intruder's close");
    intruder.destroy();
    expect(r.server.socketCloses.at(-1)).toEqual({ code: DAVE_REQUIRED_CLOSE, byServer: true });
    expect((await utterance.result).status).toBe('played');
    const ssrc = r.server.ssrcOf(GUILD)!;
    await r.server.waitFor(() => r.server.received(ssrc).some((p) => p.silence), 2000, 'the closing silence');
    const speech = r.server.received(ssrc).filter((p) => !p.silence);
    expect(speech.every((p) => p.e2ee && p.heard === 'decrypted')).toBe(true);
    expect(r.guild.e2ee.protocolVersion).toBe(1);
  });

  it('DAVE messages the MLS layer rejects cost nothing: the bot neither throws nor stops playing', async () => {
    const r = await rig();
    await e2ee(r);
    const sender = r.server.externalSender!;
    // Proposals built for another channel's group (davey: WrongGroupId), a garbage external sender
    // package, a garbage commit and a garbage welcome.
    const stranger = new davey.DAVESession(1, M3, OTHER_CHANNEL);
    const key = await sender.checkKeyPackage(stranger.getSerializedKeyPackage(), M3);
    const proposal = await sender.add(OTHER_CHANNEL, 1n, key.keyPackage);
    r.server.sendDave(GUILD, 27, Buffer.concat([Buffer.from([0]), mlsVector([proposal.message], false)]));
    r.server.sendDave(GUILD, 25, Buffer.from('not an external sender'));
    r.server.sendDave(GUILD, 29, Buffer.from([0, 7, 1, 2, 3]));
    r.server.sendDave(GUILD, 30, Buffer.from([0, 8, 1, 2, 3]));
    r.server.sendDave(GUILD, 29, Buffer.from([1]));
    r.server.sendDave(GUILD, 27, Buffer.alloc(0));
    r.server.sendRaw(GUILD, Buffer.from([7]));
    stranger.reset();
    const played = await say(r, 'Still here, and still speaking.');
    expect(played.status).toBe('played');
    expect(r.guild.status).toBe(VoiceConnectionStatus.Ready);
  });
});
