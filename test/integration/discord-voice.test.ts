// Over 450 lines: one fake voice server and its members set up once for every scenario.
/**
 * Discord voice end to end with no Discord account: the real `@discordjs/voice` connection
 * (`joinVoiceChannel`, `AudioPlayer`, `VoiceReceiver`) against a fake voice server on loopback that
 * speaks the real protocol (TLS WebSocket v8 + encrypted RTP over UDP), with the real `DiscordSink` fed
 * by the real `Speaker` from the real local speech service.
 *
 * It checks what only the wire shows: every frame the speaker wrote arrives, decrypts, decodes and is
 * the service's speech (nothing dropped at the end), at a 20 ms pace; a member's injected speech raises
 * the receiver's speaking events and reaches `subscribe()`; the library resumes after the voice server
 * drops the socket (4015, 1006) and re-identifies after 4006, and the audio goes on.
 */
import { once } from 'node:events';
import {
  AudioPlayerStatus,
  createAudioPlayer,
  EndBehaviorType,
  entersState,
  joinVoiceChannel,
  NoSubscriberBehavior,
  VoiceConnectionDisconnectReason,
  VoiceConnectionStatus,
  type AudioPlayer,
  type VoiceConnection,
} from '@discordjs/voice';
import OpusScript from 'opusscript';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DiscordSink } from '../../adapters/discord/discord-sink.js';
import { concatInt16 as concat } from '../../src/audio/pcm.js';
import { FramePipeline } from '../../src/speaker/frame-pipeline.js';
import type { SpeechSource } from '../../src/speaker/segment-audio.js';
import { Speaker } from '../../src/speaker/speaker.js';
import { NO_PHONE_BARGE_IN, startTestApp, type TestApp } from '../helpers/app.js';
import {
  FakeMainGateway,
  FakeVoiceServer,
  testTls,
  type FakeVoiceServerOptions,
  type ReceivedPacket,
} from '../../testkit/discord/voice-server.js';

const GUILD = '710000000000000001';
const CHANNEL = '720000000000000001';
const OTHER_CHANNEL = '720000000000000002';
const BOT = '730000000000000001';
const MEMBER = '740000000000000001';
const VOICE = 'voxbridge-default';
const FORMAT_48K_STEREO = { encoding: 's16le', sampleRate: 48_000, channels: 2 } as const;

interface Rig {
  server: FakeVoiceServer;
  gateway: FakeMainGateway;
  connection: VoiceConnection;
  player: AudioPlayer;
  sink: DiscordSink;
  speaker: Speaker;
  /** The PCM 24 kHz bytes the speaker got from the speech service, in order. */
  received: Uint8Array[];
  /** Every status the connection went through, in order (repeats of one status once). */
  statuses: VoiceConnectionStatus[];
  errors: Error[];
}

let t: TestApp;
const rigs: Rig[] = [];
const extraServers: FakeVoiceServer[] = [];

beforeAll(async () => {
  t = await startTestApp(NO_PHONE_BARGE_IN);
});
afterAll(async () => {
  await t.close();
});
afterEach(async () => {
  for (const rig of rigs.splice(0)) {
    await rig.speaker.close();
    rig.sink.close();
    rig.player.stop(true);
    if (rig.connection.state.status !== VoiceConnectionStatus.Destroyed) rig.connection.destroy();
    await rig.server.close();
  }
  for (const server of extraServers.splice(0)) await server.close();
});

/** The bot joins a voice channel on a fresh fake server, with a player and the speaker on top. */
async function connect(options: Omit<FakeVoiceServerOptions, 'cert' | 'key'> = {}): Promise<Rig> {
  const server = await FakeVoiceServer.start({ ...testTls(), ...options });
  const gateway = new FakeMainGateway(server, { guildId: GUILD, userId: BOT });
  const connection = joinVoiceChannel({
    guildId: GUILD,
    channelId: CHANNEL,
    selfDeaf: false,
    adapterCreator: gateway.adapterCreator,
  });
  const statuses: VoiceConnectionStatus[] = [connection.state.status];
  const errors: Error[] = [];
  connection.on('stateChange', (_old, next) => {
    if (next.status !== statuses.at(-1)) statuses.push(next.status);
  });
  connection.on('error', (e) => errors.push(e));
  const player = createAudioPlayer({ behaviors: { noSubscriber: NoSubscriberBehavior.Play } });
  player.on('error', (e) => errors.push(e));
  const sink = new DiscordSink(player);
  const received: Uint8Array[] = [];
  const speaker = new Speaker({ source: recordingSource(received), sink, voiceId: VOICE });
  const rig = { server, gateway, connection, player, sink, speaker, received, statuses, errors };
  rigs.push(rig);
  await entersState(connection, VoiceConnectionStatus.Ready, 5000);
  connection.subscribe(player);
  return rig;
}

/** The app's speech client, keeping a copy of every audio chunk it hands the speaker. */
function recordingSource(received: Uint8Array[]): SpeechSource {
  return {
    async stream(request, options) {
      const inner = await t.app.client.stream(request, options);
      return {
        cancel: (reason?: unknown) => inner.cancel(reason),
        async *[Symbol.asyncIterator]() {
          for await (const chunk of inner) {
            received.push(chunk.slice());
            yield chunk;
          }
        },
      };
    },
  };
}

/** The ssrc the fake server gave the bot's current session. */
function botSsrc(server: FakeVoiceServer): number {
  const ssrc = server.ssrcOf(GUILD);
  if (ssrc === undefined) throw new Error('no voice session for the guild');
  return ssrc;
}

/** Decoded 48 kHz stereo of the bot's packets (the fake server decodes by default). */
function pcmOf(packets: ReceivedPacket[]): Int16Array[] {
  return packets.map((p) => {
    if (!p.pcm) throw new Error('packet not decoded');
    return p.pcm;
  });
}

/** Resolves once the player has gone idle and the silence frames after it have arrived. */
async function playedOut(rig: Rig): Promise<void> {
  await entersState(rig.player, AudioPlayerStatus.Idle, 3000);
  await new Promise((r) => setTimeout(r, 120));
}

function left(stereo: Int16Array): Int16Array {
  const out = new Int16Array(stereo.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = stereo[2 * i]!;
  return out;
}

function rms(samples: Int16Array): number {
  let sum = 0;
  for (const s of samples) sum += s * s;
  return Math.sqrt(sum / Math.max(1, samples.length));
}

/**
 * The best normalised cross-correlation of `signal` against `reference` for `signal` lagging by 0 to
 * `maxLag` samples (Opus delays what it decodes by its look-ahead).
 */
function bestCorrelation(
  reference: Int16Array,
  signal: Int16Array,
  maxLag: number,
): { lag: number; r: number } {
  let best = { lag: 0, r: -1 };
  const n = Math.min(reference.length, signal.length) - maxLag;
  let refEnergy = 0;
  for (let i = 0; i < n; i++) refEnergy += reference[i]! * reference[i]!;
  for (let lag = 0; lag <= maxLag; lag++) {
    let dot = 0;
    let sigEnergy = 0;
    for (let i = 0; i < n; i++) {
      const x = signal[i + lag]!;
      dot += reference[i]! * x;
      sigEnergy += x * x;
    }
    const r = dot / Math.sqrt(refEnergy * sigEnergy || 1);
    if (r > best.r) best = { lag, r };
  }
  return best;
}

/** The level of every 20 ms (960 samples at 48 kHz) in dB full scale, floored at -60 (codec noise). */
function levels(samples: Int16Array): number[] {
  const out: number[] = [];
  for (let i = 0; i + 960 <= samples.length; i += 960) {
    out.push(Math.max(-60, 20 * Math.log10(Math.max(rms(samples.subarray(i, i + 960)), 1) / 32_768)));
  }
  return out;
}

/** Pearson correlation of two level contours, the best over shifts of up to `maxShift` frames. */
function contourCorrelation(a: number[], b: number[], maxShift: number): number {
  let best = -1;
  for (let shift = -maxShift; shift <= maxShift; shift++) {
    const pairs = a.flatMap((x, i) => (i + shift >= 0 && i + shift < b.length ? [[x, b[i + shift]!]] : []));
    const mean = (k: 0 | 1): number => pairs.reduce((n, p) => n + p[k]!, 0) / pairs.length;
    const [ma, mb] = [mean(0), mean(1)];
    let ab = 0;
    let aa = 0;
    let bb = 0;
    for (const [x, y] of pairs) {
      ab += (x! - ma) * (y! - mb);
      aa += (x! - ma) ** 2;
      bb += (y! - mb) ** 2;
    }
    best = Math.max(best, ab / Math.sqrt(aa * bb || 1));
  }
  return best;
}

/** Index of the last frame louder than `db`. */
function lastAbove(contour: number[], db: number): number {
  return contour.findLastIndex((level) => level > db);
}

/** `ms` of a 48 kHz stereo sine, the same on both channels. */
function tone48k(frequencyHz: number, amplitude: number, ms: number): Int16Array {
  const frames = (48_000 * ms) / 1000;
  const out = new Int16Array(frames * 2);
  for (let i = 0; i < frames; i++) {
    const v = Math.round(amplitude * Math.sin((2 * Math.PI * frequencyHz * i) / 48_000));
    out[2 * i] = v;
    out[2 * i + 1] = v;
  }
  return out;
}

/** PCM 24 kHz through the speaker's own pipeline: the 48 kHz stereo frames it writes for it. */
function framesOf(pcm24k: Uint8Array[]): Int16Array[] {
  const pipeline = new FramePipeline(24_000, FORMAT_48K_STEREO, 20);
  const frames = [...pcm24k.flatMap((chunk) => pipeline.push(chunk)), ...pipeline.finish()];
  return frames.map((f) => new Int16Array(f.buffer.slice(f.byteOffset, f.byteOffset + f.byteLength)));
}

/** The speech service's audio for `text`, fetched on its own, as the speaker's frames. */
async function synthesizedFrames(text: string): Promise<Int16Array[]> {
  const { audio } = await t.app.client.synthesize({ voiceId: VOICE, text, outputFormat: 'pcm_24000' });
  return framesOf([new Uint8Array(audio)]);
}

/** Sequence numbers go up by one per packet (mod 2^16), timestamps by 960. */
function expectContiguous(packets: ReceivedPacket[]): void {
  for (let i = 1; i < packets.length; i++) {
    expect((packets[i]!.sequence - packets[i - 1]!.sequence) & 0xffff).toBe(1);
    expect((packets[i]!.timestamp - packets[i - 1]!.timestamp) >>> 0).toBe(960);
  }
}

/** A reconnection's wait for Ready, at most (a sanity bound: a new session is a DAVE handshake). */
const READY_MS = 10_000;

describe('Discord voice against a fake voice server', () => {
  it('connects with v8 and plays an utterance: every frame arrives, decrypted, and it is the speech', async () => {
    const rig = await connect();
    const { server, gateway, sink, speaker } = rig;
    expect(server.urls).toEqual(['/?v=8']);
    expect(server.identifies).toHaveLength(1);
    const identify = server.identifies[0];
    expect(identify).toMatchObject({
      server_id: GUILD,
      user_id: BOT,
      session_id: gateway.sessionId,
      token: gateway.token,
    });
    // The library offers DAVE (end-to-end encryption); the fake server answers protocol 0, none.
    expect(identify?.max_dave_protocol_version).toBeGreaterThan(0);
    expect(gateway.sent[0]).toEqual({
      op: 4,
      d: { guild_id: GUILD, channel_id: CHANNEL, self_deaf: false, self_mute: false },
    });

    const text = 'The quick brown fox jumps over the lazy dog beside the quiet river bank.';
    const independent = await synthesizedFrames(text);
    const result = await speaker.say(text).result;
    expect(result.status).toBe('played');
    await playedOut(rig);

    const ssrc = botSsrc(server);
    const packets = server.received(ssrc);
    const audio = packets.filter((p) => !p.silence);
    const frames = sink.writtenMs() / 20;
    expect(frames).toBeGreaterThan(100); // a sentence: a few seconds
    expect(audio).toHaveLength(frames);
    expect(server.decryptFailures).toBe(0);
    expectContiguous(packets);
    // Speech first, then Discord's silence frames after the stream ends (at least 5), nothing else.
    const lastAudio = packets.lastIndexOf(audio.at(-1)!);
    const trailing = packets.slice(lastAudio + 1);
    expect(trailing.every((p) => p.silence)).toBe(true);
    expect(trailing.length).toBeGreaterThanOrEqual(5);
    // The bot says it speaks with its ssrc, and stops once idle.
    expect(server.speakingUpdates.map((u) => [u.speaking, u.ssrc])).toEqual([
      [1, ssrc],
      [0, ssrc],
    ]);

    // What arrived is, frame for frame, what the speaker got from the service, through Opus: whole, in
    // order, nothing garbled (decoded vs original waveform correlate at ~0.998, Opus's 312-sample delay).
    const sent = framesOf(rig.received);
    expect(sent).toHaveLength(frames);
    const heard = left(concat(pcmOf(audio)));
    const original = left(concat(sent));
    expect(rms(heard)).toBeGreaterThan(1000);
    expect(rms(heard) / rms(original)).toBeGreaterThan(0.8);
    expect(rms(heard) / rms(original)).toBeLessThan(1.25);
    const { lag, r } = bestCorrelation(original, heard, 960);
    expect(r).toBeGreaterThan(0.95);
    expect(lag).toBeLessThan(960);
    // The last 200 ms too (a cut or garbled ending would correlate poorly here).
    const tail = 11 * 960;
    expect(bestCorrelation(original.subarray(-tail), heard.subarray(-tail), 960).r).toBeGreaterThan(0.9);

    // And it is the service's speech for this text, fetched on its own. The service does not return the
    // same samples twice (lengths vary by ~10 ms, waveforms correlate at only ~0.5), so this compares 20 ms
    // level contours: ~0.91 here, ~0 for another text, ~0.1 for this one reversed.
    expect(Math.abs(independent.length - frames)).toBeLessThanOrEqual(3);
    const [heardLevels, wantedLevels] = [levels(heard), levels(left(concat(independent)))];
    expect(contourCorrelation(wantedLevels, heardLevels, 3)).toBeGreaterThan(0.75);
    expect(contourCorrelation(wantedLevels, [...heardLevels].reverse(), 3)).toBeLessThan(0.5);
    expect(Math.abs(lastAbove(heardLevels, -50) - lastAbove(wantedLevels, -50))).toBeLessThanOrEqual(3);

    // Paced at 20 ms, a loose sanity bound on loopback. The first packets can come late and in a burst
    // (the process's first Opus encoder loads then), so the mean is taken from the 10th packet on.
    const gaps = audio.slice(1).map((p, i) => p.arrivalMs - audio[i]!.arrivalMs);
    const mean = (audio.at(-1)!.arrivalMs - audio[10]!.arrivalMs) / (audio.length - 11);
    expect(mean).toBeGreaterThan(18);
    expect(mean).toBeLessThan(22);
    expect(Math.max(...gaps)).toBeLessThan(250);
    expect(rig.errors).toEqual([]);
  });

  it('a member talking raises speaking start/end for their id, and subscribe() yields their audio', async () => {
    const rig = await connect();
    const { connection, server } = rig;
    const events: Array<[string, string]> = [];
    connection.receiver.speaking.on('start', (id) => events.push(['start', id]));
    connection.receiver.speaking.on('end', (id) => events.push(['end', id]));
    const stream = connection.receiver.subscribe(MEMBER, {
      end: { behavior: EndBehaviorType.AfterSilence, duration: 300 },
    });
    const received: Buffer[] = [];
    stream.on('data', (packet: Buffer) => received.push(packet));
    const ended = once(stream, 'end');

    const amplitude = 12_000;
    // With a 0xBEDE header extension, as Discord's packets carry: the receiver must skip it.
    const sent = await server.injectSpeech(GUILD, MEMBER, tone48k(440, amplitude, 400), {
      headerExtension: true,
    });
    expect(sent.frames).toBe(20);
    expect(events).toEqual([['start', MEMBER]]);
    await ended;
    expect(events).toEqual([
      ['start', MEMBER],
      ['end', MEMBER],
    ]);
    expect(received).toHaveLength(20);

    const decoder = new OpusScript(48_000, 2);
    const pcm = left(
      concat(
        received.map((packet) => {
          const out = decoder.decode(packet);
          const samples = new Int16Array(out.length / 2);
          Buffer.from(samples.buffer).set(out);
          return samples;
        }),
      ),
    );
    decoder.delete();
    expect(pcm).toHaveLength(20 * 960);
    // Past the codec's start-up, the level is the tone's (amplitude / √2) and so is the pitch.
    const steady = pcm.subarray(2 * 960);
    expect(rms(steady)).toBeGreaterThan(0.85 * (amplitude / Math.SQRT2));
    expect(rms(steady)).toBeLessThan(1.15 * (amplitude / Math.SQRT2));
    let crossings = 0;
    for (let i = 1; i < steady.length; i++) if (steady[i - 1]! < 0 !== steady[i]! < 0) crossings++;
    expect(crossings / 2 / (steady.length / 48_000)).toBeGreaterThan(430);
    expect(crossings / 2 / (steady.length / 48_000)).toBeLessThan(450);
    expect(rig.errors).toEqual([]);
  });

  it('resumes after the voice server drops the socket (4015, then 1006) and the audio goes on', async () => {
    const rig = await connect({ heartbeatIntervalMs: 200 });
    const { connection, server, sink, speaker } = rig;
    const ssrc = botSsrc(server);
    const text =
      'We keep talking while the voice server goes away and comes back. ' +
      'The connection resumes on its own, and the listener hears the rest.';
    const handle = speaker.say(text);
    const resumedAt: number[] = [];
    for (const code of [4015, 1006]) {
      const wanted = resumedAt.length * 50 + 40;
      await server.waitFor(
        () => server.received().filter((p) => !p.silence).length >= wanted,
        10_000,
        `${wanted} speech packets`,
      );
      const resumes = server.resumes;
      server.closeSocket(code);
      await server.waitFor(() => server.resumes > resumes, 5000, `a resume after ${code}`);
      await entersState(connection, VoiceConnectionStatus.Ready, 3000);
      resumedAt.push(performance.now());
    }
    const result = await handle.result;
    expect(result.status).toBe('played');
    await playedOut(rig);

    // One session: identified once, resumed twice with the last seq the server sent, same ssrc.
    expect(server.identifies).toHaveLength(1);
    expect(server.resumes).toBe(2);
    const sessionId = server.identifies[0]!.session_id;
    expect(server.resumeRecords.map((r) => [r.session_id, r.server_id, r.seq_ack === r.lastSeqSent])).toEqual(
      [
        [sessionId, GUILD, true],
        [sessionId, GUILD, true],
      ],
    );
    expect(server.resumeRecords.every((r) => r.lastSeqSent > 0)).toBe(true);
    expect(server.urls).toEqual(['/?v=8', '/?v=8', '/?v=8']);
    expect(server.socketCloses.filter((c) => c.byServer).map((c) => c.code)).toEqual([4015, 1006]);
    expect(rig.statuses).toEqual([
      VoiceConnectionStatus.Signalling,
      VoiceConnectionStatus.Connecting,
      VoiceConnectionStatus.Ready,
      VoiceConnectionStatus.Connecting,
      VoiceConnectionStatus.Ready,
      VoiceConnectionStatus.Connecting,
      VoiceConnectionStatus.Ready,
    ]);
    // v8 heartbeats acknowledge the server's sequence numbers.
    expect(server.heartbeats.length).toBeGreaterThan(5);
    expect(server.heartbeats.at(-1)!.seq_ack).toBeGreaterThan(0);

    // The audio went on after each resume, on the same ssrc, decodable speech.
    const packets = server.received(ssrc);
    expect(server.packets.every((p) => p.ssrc === ssrc)).toBe(true);
    const audio = packets.filter((p) => !p.silence);
    for (const at of resumedAt) {
      const after = audio.filter((p) => p.arrivalMs > at);
      expect(after.length).toBeGreaterThan(25);
    }
    const afterLast = audio.filter((p) => p.arrivalMs > resumedAt.at(-1)!);
    expect(rms(left(concat(pcmOf(afterLast))))).toBeGreaterThan(1000);
    // Only what the player took while the socket was down is missing: a few frames per drop.
    const frames = sink.writtenMs() / 20;
    expect(audio.length).toBeLessThanOrEqual(frames);
    expect(frames - audio.length).toBeLessThan(20);
    expect(server.decryptFailures).toBe(0);
    expect(rig.errors).toEqual([]);
  });

  it('re-identifies through the main gateway after 4006 (session no longer valid) and plays on a new session', async () => {
    const rig = await connect();
    const { connection, server, gateway, speaker } = rig;
    const firstSsrc = botSsrc(server);
    server.closeSocket(4006);
    // A new session: identified, and the only one left for the guild once the old socket is gone.
    await server.waitFor(
      () => server.identifies.length === 2 && server.ssrcOf(GUILD) !== firstSsrc,
      3000,
      'a new session',
    );
    await entersState(connection, VoiceConnectionStatus.Ready, 3000);
    expect(rig.statuses).toContain(VoiceConnectionStatus.Signalling);
    expect(server.identifies).toHaveLength(2);
    expect(server.resumes).toBe(0);
    expect(server.resumeRecords).toHaveLength(0);
    // The library rejoined with a fresh voice-state payload, answered by the gateway.
    expect(gateway.sent.map((p) => p.d.channel_id)).toEqual([CHANNEL, CHANNEL]);
    const ssrc = botSsrc(server);
    expect(ssrc).not.toBe(firstSsrc);

    const result = await speaker.say('Still here after a new session.').result;
    expect(result.status).toBe('played');
    await playedOut(rig);
    const audio = server.received(ssrc).filter((p) => !p.silence);
    expect(audio).toHaveLength(rig.sink.writtenMs() / 20);
    expect(server.received(firstSsrc)).toHaveLength(0);
    expect(rig.errors).toEqual([]);
  });

  it('follows the main gateway: a move reconnects, a region change goes to the new server, a kick disconnects', async () => {
    const rig = await connect();
    const { connection, server, gateway } = rig;

    // Sanity bounds only: each new session is a DAVE handshake (MLS, on this process's loaded CPU in CI).
    // The voice socket closes with 4014 first, the new channel's updates 50 ms later.
    gateway.move(OTHER_CHANNEL, { afterMs: 50 });
    await entersState(connection, VoiceConnectionStatus.Disconnected, 5000);
    await entersState(connection, VoiceConnectionStatus.Ready, READY_MS);
    expect(gateway.channel).toBe(OTHER_CHANNEL);
    expect(server.identifies).toHaveLength(2);

    const next = await FakeVoiceServer.start(testTls());
    extraServers.push(next);
    gateway.changeEndpoint(next, { afterMs: 1 });
    await entersState(connection, VoiceConnectionStatus.Disconnected, 5000);
    expect(connection.state).toMatchObject({ reason: VoiceConnectionDisconnectReason.EndpointRemoved });
    await entersState(connection, VoiceConnectionStatus.Ready, READY_MS);
    expect(next.identifies).toHaveLength(1);
    expect(next.identifies[0]).toMatchObject({
      server_id: GUILD,
      user_id: BOT,
      session_id: gateway.sessionId,
    });
    await new Promise((r) => setTimeout(r, 50));
    expect(server.connections).toBe(0); // the old voice server's socket was closed by the library

    gateway.kick();
    await entersState(connection, VoiceConnectionStatus.Disconnected, 5000);
    expect(connection.state).toMatchObject({
      reason: VoiceConnectionDisconnectReason.WebSocketClose,
      closeCode: 4014,
    });

    // The shard goes away: the connection is destroyed without a leave payload (it could not be sent).
    gateway.destroyAdapter();
    expect(connection.state.status).toBe(VoiceConnectionStatus.Destroyed);
    expect(gateway.adapterDestroyed).toBe(true);
    // Moves, region changes and kicks came from the gateway: the library itself sent only its join.
    expect(gateway.sent).toHaveLength(1);
    expect(rig.errors).toEqual([]);
  });
});
