/**
 * Discord: what one speaking guild costs per 20 ms frame (resample + Opus), against what Discord TTS
 * bots run instead (an ffmpeg process per utterance); and, through the real `@discordjs/voice`
 * connection to a fake voice server on loopback, the time from `say()` to the first packet, barge-in
 * from a member's speech to the last packet, and how many guilds can speak at once.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { PassThrough } from 'node:stream';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { createAudioResource, DAVESession, Networking, StreamType, VoiceReceiver } from '@discordjs/voice';
import { startApp, type App } from '../src/app/app.js';
import { loadConfig } from '../src/app/config.js';
import { createLogger } from '../src/app/logger.js';
import { FramePipeline } from '../src/speaker/frame-pipeline.js';
import { BUILT_IN_VOICE_ID } from '../src/service/voices/builtin.js';
import { makeTestCertificate } from '../testkit/discord/tls.js';
import { FFMPEG_PCM24K_INPUT, measureRuns } from './baselines.js';
import {
  createOpusDecoder,
  createOpusEncoder,
  opusImplementation,
  type OpusEncoder,
} from '../adapters/discord/opus.js';
import { levelDbfs } from '../src/audio/level.js';
import { daveGroupOfTwo } from '../testkit/discord/dave/group.js';
import { cpuUs, fmt, median, printTable } from './stats.js';

const KEY = 'bench-key-0123456789abcdef';
const STEREO_48K = { encoding: 's16le', sampleRate: 48_000, channels: 2 } as const;
const CHUNK_BYTES = 4800; // 100 ms of 24 kHz, as the local service streams

function frames48k(pcm24k: Uint8Array): Uint8Array[] {
  const p = new FramePipeline(24_000, STEREO_48K, 20);
  const out: Uint8Array[] = [];
  for (let o = 0; o < pcm24k.length; o += CHUNK_BYTES)
    out.push(...p.push(pcm24k.subarray(o, o + CHUNK_BYTES)));
  out.push(...p.finish());
  return out;
}

/** Frames through a Raw audio resource (prism's encoder: opusscript here), packets taken as the player takes them. */
async function encodeWithPrism(frames: readonly Uint8Array[]): Promise<number> {
  const stream = new PassThrough({ highWaterMark: 64 * 3840 });
  const resource = createAudioResource(stream, { inputType: StreamType.Raw });
  let packets = 0;
  let i = 0;
  while (packets < frames.length) {
    while (i < frames.length && stream.writableLength < 32 * 3840) stream.write(frames[i++]);
    if (i === frames.length) stream.end();
    await new Promise((r) => setImmediate(r));
    while (resource.read()) packets++;
  }
  resource.playStream.destroy();
  return packets;
}

/** Frames through the guild's own encoder, as the sink does. */
function encodeOurs(frames: readonly Uint8Array[], encoder: OpusEncoder): number {
  let bytes = 0;
  for (const f of frames) bytes += encoder.encode(f).byteLength;
  return bytes;
}

async function speechPcm(app: App, seconds: number): Promise<Uint8Array> {
  const sentence =
    'The goblin raises its spear and the torchlight flickers across the damp stones of the corridor. ';
  const text = sentence.repeat(Math.ceil(seconds / 5));
  return (await app.client.synthesize({ voiceId: BUILT_IN_VOICE_ID, text, outputFormat: 'pcm_24000' })).audio;
}

async function benchFrameCost(app: App): Promise<void> {
  const pcm = await speechPcm(app, 60);
  const seconds = pcm.length / 48_000;
  const encoder = createOpusEncoder();
  // Warm: encoders loaded, code optimised.
  await encodeWithPrism(frames48k(pcm.subarray(0, 48_000)));
  encodeOurs(frames48k(pcm.subarray(0, 48_000)), encoder);
  const resample: number[] = [];
  const total: number[] = [];
  const prism: number[] = [];
  let frameCount = 0;
  for (let run = 0; run < 5; run++) {
    let t = cpuUs();
    const frames = frames48k(pcm);
    resample.push((cpuUs() - t) / frames.length);
    t = cpuUs();
    encodeOurs(frames, encoder);
    total.push((cpuUs() - t) / frames.length + resample.at(-1)!);
    t = cpuUs();
    const packets = await encodeWithPrism(frames);
    prism.push((cpuUs() - t) / packets + resample.at(-1)!);
    frameCount = frames.length;
  }
  const rawArgs = [...FFMPEG_PCM24K_INPUT, '-f', 's16le', '-ar', '48000', '-ac', '2', 'pipe:1'];
  const opusArgs = [
    ...FFMPEG_PCM24K_INPUT,
    '-ar',
    '48000',
    '-ac',
    '2',
    '-c:a',
    'libopus',
    '-b:a',
    '96k',
    '-f',
    'ogg',
    'pipe:1',
  ];
  // A long narration, and a typical bot line of 3 s (where the process start-up dominates).
  const short = pcm.subarray(0, 3 * 48_000);
  const ffmpeg = {
    rawLong: await measureRuns('ffmpeg', rawArgs, pcm, 5),
    opusLong: await measureRuns('ffmpeg', opusArgs, pcm, 5),
    rawShort: await measureRuns('ffmpeg', rawArgs, short, 20),
    opusShort: await measureRuns('ffmpeg', opusArgs, short, 20),
  };
  const opusUs = median(total) - median(resample);
  const ours = median(total);
  const perFrame = (ms: number, frames: number): number => (ms * 1000) / frames;
  const row = (name: string, long: number, short3: number): string[] => [
    name,
    fmt(long, 1),
    fmt(short3, 1),
    fmt(long / 200, 2),
    `${fmt(long / ours, 2)}× / ${fmt(short3 / ours, 2)}×`,
  ];
  printTable(
    `Discord: CPU per 20 ms frame of one speaking guild (median of 5; a ${fmt(seconds, 0)} s narration and a 3 s line)`,
    ['path', 'µs/frame (long)', 'µs/frame (3 s line)', '% of a core (long)', 'vs voxbridge (long / 3 s)'],
    [
      row('voxbridge: resample 24k → 48k stereo', median(resample), median(resample)),
      row(`voxbridge: resample + Opus (${opusImplementation()}, one encoder per guild)`, ours, ours),
      row('resample + prism-media encoder per resource (opusscript)', median(prism), median(prism)),
      row(
        'ffmpeg per utterance → s16le 48k (prism FFmpeg) + our Opus',
        perFrame(ffmpeg.rawLong.cpuMs, frameCount) + opusUs,
        perFrame(ffmpeg.rawShort.cpuMs, 150) + opusUs,
      ),
      row(
        'ffmpeg per utterance → Ogg Opus (native libopus)',
        perFrame(ffmpeg.opusLong.cpuMs, frameCount),
        perFrame(ffmpeg.opusShort.cpuMs, 150),
      ),
    ],
  );
  console.log(
    `ffmpeg peak RSS per process: ${fmt(ffmpeg.rawShort.maxRssMb, 0)} MB (raw), ${fmt(ffmpeg.opusShort.maxRssMb, 0)} MB (Opus)`,
  );
  await benchDaveFrameCost(pcm, median(resample), ours);
}

/** What @discordjs/voice's send and receive paths use of a connection's state (rtpsize AES-256-GCM). */
interface TransportState {
  ssrc: number;
  sequence: number;
  timestamp: number;
  encryptionMode: 'aead_aes256_gcm_rtpsize';
  secretKey: Uint8Array;
  nonce: number;
  nonceBuffer: Buffer;
}

/**
 * End-to-end encryption's cost (DAVE), through the library's own code: `Networking#createAudioPacket`
 * (its DAVE session's encrypt, then the transport's AES-256-GCM) for a frame sent, and
 * `VoiceReceiver#parsePacket` (transport, then DAVE decrypt) plus voxbridge's Opus decode and level for
 * a member's packet heard. The DAVE sessions are the library's wrappers on two @snazzah/davey sessions
 * in a real MLS group.
 */
async function benchDaveFrameCost(
  pcm: Uint8Array,
  resampleUs: number,
  resampleOpusUs: number,
): Promise<void> {
  const CHANNEL = '200000000000000001';
  const BOT = '100000000000000001';
  const MEMBER = '100000000000000002';
  const group = await daveGroupOfTwo(CHANNEL, BOT, MEMBER);
  const wrap = (userId: string, session: unknown): DAVESession => {
    const dave = new DAVESession(1, userId, CHANNEL, {});
    Object.assign(dave, { session });
    return dave;
  };
  const botDave = wrap(BOT, group.first);
  const memberDave = wrap(MEMBER, group.second);
  const transport = (): TransportState => ({
    ssrc: 4242,
    sequence: 0,
    timestamp: 0,
    encryptionMode: 'aead_aes256_gcm_rtpsize',
    secretKey: randomBytes(32),
    nonce: 0,
    nonceBuffer: Buffer.alloc(12),
  });
  const send = transport();
  const createAudioPacket = (opus: Buffer, dave: DAVESession | undefined): Buffer =>
    (
      Networking.prototype as unknown as {
        createAudioPacket(o: Buffer, c: TransportState, d: DAVESession | undefined): Buffer;
      }
    ).createAudioPacket.call(Networking.prototype, opus, send, dave);
  const receiver = (dave: DAVESession | undefined): { parse(packet: Buffer): Buffer | null } => {
    const self = {
      decrypt: (VoiceReceiver.prototype as unknown as { decrypt: unknown }).decrypt,
      voiceConnection: { state: { status: 'ready', networking: { state: { code: 4, dave } } } },
    };
    const parsePacket = (
      VoiceReceiver.prototype as unknown as {
        parsePacket: (
          this: unknown,
          b: Buffer,
          m: string,
          n: Buffer,
          k: Uint8Array,
          u: string,
        ) => Buffer | null;
      }
    ).parsePacket;
    const nonce = Buffer.alloc(12);
    return {
      parse: (packet) => parsePacket.call(self, packet, send.encryptionMode, nonce, send.secretKey, MEMBER),
    };
  };

  const frames = frames48k(pcm);
  const encoder = createOpusEncoder();
  const opus = frames.map((f) => encoder.encode(f));
  // The member's packets as they reach the bot: end-to-end encrypted by the member, then the transport.
  // (Anew for every run: a receiver refuses a DAVE frame it has decrypted before, a replay.)
  const fromMember = (): { plain: Buffer[]; dave: Buffer[] } => ({
    plain: opus.map((o) => createAudioPacket(o, undefined)),
    dave: opus.map((o) => createAudioPacket(memberDave.encrypt(o), undefined)),
  });

  const sendUs = { transport: [] as number[], dave: [] as number[] };
  const recvUs = { plain: [] as number[], dave: [] as number[] };
  for (let run = 0; run < 5; run++) {
    for (const mode of ['transport', 'dave'] as const) {
      const t = cpuUs();
      for (const o of opus) createAudioPacket(o, mode === 'dave' ? botDave : undefined);
      sendUs[mode].push((cpuUs() - t) / opus.length);
    }
    const packets = fromMember();
    for (const mode of ['plain', 'dave'] as const) {
      const parse = receiver(mode === 'dave' ? botDave : undefined);
      const decoder = createOpusDecoder();
      let failed = 0;
      const t = cpuUs();
      for (const packet of packets[mode]) {
        const opusPacket = parse.parse(packet);
        if (!opusPacket) {
          failed++;
          continue;
        }
        const bytes = decoder.decode(opusPacket);
        levelDbfs(new Int16Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 2));
      }
      recvUs[mode].push((cpuUs() - t) / packets[mode].length);
      if (failed > 0) throw new Error(`${failed} of the member's ${mode} packets did not decrypt`);
    }
  }
  const opusUs = resampleOpusUs - resampleUs;
  const row = (name: string, us: number, base: number): string[] => [
    name,
    fmt(us, 1),
    fmt((us * 50) / 10_000, 2),
    `${fmt(us - base, 1)} µs`,
  ];
  printTable(
    `Discord with end-to-end encryption (DAVE v1, a real MLS group; the library's own send and receive code; median of 5, ${opus.length} frames)`,
    ['per 20 ms frame', 'µs', '% of a core', 'vs the row it builds on'],
    [
      row('sent: resample + Opus (as above)', resampleOpusUs, resampleOpusUs),
      row('sent: + transport (RTP, AES-256-GCM)', resampleOpusUs + median(sendUs.transport), resampleOpusUs),
      row(
        'sent: + DAVE (AES-128-GCM per frame) + transport',
        resampleOpusUs + median(sendUs.dave),
        resampleOpusUs + median(sendUs.transport),
      ),
      row(
        'heard, per speaking member: transport + Opus decode + level',
        median(recvUs.plain),
        median(recvUs.plain),
      ),
      row('heard, per speaking member: + DAVE decrypt', median(recvUs.dave), median(recvUs.plain)),
    ],
  );
  console.log(`(Opus encode alone: ${fmt(opusUs, 1)} µs a frame)`);
  group.first.reset();
  group.second.reset();
}

/** The connection half, in a child that trusts the fake voice server's certificate from its start. */
async function benchVoiceConnections(dir: string): Promise<void> {
  const { cert, key, bundle } = makeTestCertificate(dir);
  const child = spawn(
    process.execPath,
    ['--expose-gc', fileURLToPath(new URL('./discord-voice.js', import.meta.url))],
    {
      stdio: 'inherit',
      env: {
        ...process.env,
        NODE_EXTRA_CA_CERTS: bundle,
        VOXBRIDGE_TEST_TLS_CERT: cert,
        VOXBRIDGE_TEST_TLS_KEY: key,
      },
    },
  );
  const [code] = (await once(child, 'exit')) as [number | null];
  if (code !== 0) throw new Error(`the Discord connection benchmark exited ${code}`);
}

export async function benchDiscord(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'voxbridge-bench-discord-'));
  const app = await startApp(
    loadConfig({ PORT: '0', DATA_DIR: dir, LOG_LEVEL: 'silent', SPEECH_API_KEY: KEY }),
    {
      logger: createLogger('silent'),
    },
  );
  try {
    await benchFrameCost(app);
  } finally {
    await app.close();
  }
  try {
    await benchVoiceConnections(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
