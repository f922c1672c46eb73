// Over 450 lines: one protocol peer, whose WebSocket and UDP halves share a session's keys and sequence numbers.
/**
 * (Over 400 lines on purpose: one protocol peer, whose WebSocket and UDP halves share a session's keys
 * and sequence numbers.)
 *
 * A fake Discord voice server on loopback that speaks the real voice protocol (gateway v8 over a TLS
 * WebSocket, plus UDP), so the real `@discordjs/voice` connection connects to it with no Discord
 * account: Hello, Identify → Ready (ssrc, UDP port, modes), IP discovery over UDP, Select Protocol →
 * Session Description (aead_aes256_gcm_rtpsize, a random key, DAVE protocol 1), heartbeats, Resume →
 * Resumed. Sequenced messages carry `seq`, which v8 clients acknowledge.
 *
 * DAVE (end-to-end encryption), as the real gateway requires it since March 2026: a client that does
 * not offer it is closed with 4017; each channel has its MLS delivery service (`dave/delivery.ts`,
 * binary opcodes 25–30 with their sequence numbers, JSON 21–24 and 31), and its members are real DAVE
 * participants (`dave/member.ts`). Unless `ear: false`, every channel with a bot has one listening
 * member (the "ear"), whose decryption of the bot's frames is what `received()` records: `e2ee` says
 * whether the frame was end-to-end encrypted, `opus` and `pcm` are what a member heard. With `dave:
 * false` the server negotiates protocol 0 as before March 2026 (benchmarks' baseline).
 *
 * Every RTP packet the bot sends is decrypted and (optionally) Opus-decoded and recorded with its
 * arrival time. A member talking is injected the way Discord delivers it: op 5 Speaking mapping the
 * member's ssrc to their user id, then encrypted Opus packets every 20 ms (optionally with a header
 * extension, as Discord's carry).
 *
 * For protocol checks it also records the WebSocket request URLs, heartbeats (with their `seq_ack`),
 * Resume payloads (with the last `seq` sent on the session), how each socket closed, and datagrams it
 * could not decrypt.
 *
 * The bot's main gateway that points `@discordjs/voice` here is `FakeMainGateway` (`main-gateway.ts`);
 * the RTP packets' encryption is `rtp.ts`'s.
 */
import { rawText } from '../../src/http/ws-data.js';
import { randomBytes } from 'node:crypto';
import { createSocket, type RemoteInfo, type Socket } from 'node:dgram';
import { EventEmitter, once } from 'node:events';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import OpusScript from 'opusscript';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import { DaveChannel, DAVE_OP, type DavePeer } from './dave/delivery.js';
import { DaveMember, type DaveMemberOptions } from './dave/member.js';
import { ExternalSender, isDaveFrame } from './dave/mls.js';
import { NONCE_BYTES, TAG_BYTES, open, seal } from './rtp.js';

// What moved out of this file, still importable from here (the benchmarks and tests import it so).
export { FakeMainGateway, type GatewayIds, type UpdateTiming, type VoiceEndpoint } from './main-gateway.js';
export { loudVoice } from './rtp.js';
export { testTls } from './tls.js';

/** Discord's Opus silence frame, which players send after a stop. */
const SILENCE = Buffer.from([0xf8, 0xff, 0xfe]);
const FRAME_SAMPLES = 960;

export interface ReceivedPacket {
  /** performance.now() at arrival. */
  arrivalMs: number;
  ssrc: number;
  sequence: number;
  timestamp: number;
  /** The Opus frame: as a member decrypted it (DAVE), or as sent (no DAVE, or not decryptable). */
  opus: Buffer;
  silence: boolean;
  /** Decoded 48 kHz stereo (interleaved), when the server decodes. */
  pcm: Int16Array | undefined;
  /** Whether the frame was end-to-end encrypted (a DAVE frame, or the silence frame that passes as is). */
  e2ee: boolean;
  /** With DAVE: what the ear made of it (undefined: no ear in the channel). */
  heard: 'decrypted' | 'silence' | 'clear' | 'failed' | undefined;
}

export interface IdentifyPayload {
  server_id: string;
  user_id: string;
  session_id: string;
  token: string;
  /** The highest DAVE (end-to-end encryption) version the client supports. */
  max_dave_protocol_version?: number;
}

/** A Resume (op 7) the bot sent. */
export interface ResumeRecord {
  server_id: string;
  session_id: string;
  token: string;
  /** The last `seq` the bot says it received. */
  seq_ack: number;
  /** The last `seq` this server had sent on the session when the resume came. */
  lastSeqSent: number;
}

/** A Heartbeat (op 3) the bot sent. */
export interface HeartbeatRecord {
  at: number;
  t: number;
  /** The last `seq` the bot says it received (v8). */
  seq_ack: number;
}

/** A bot's WebSocket that closed. */
export interface SocketCloseRecord {
  /** The close code as the server saw it (1005: none given, 1006: dropped). */
  code: number;
  /** Whether this server closed it (`closeSocket`) rather than the bot. */
  byServer: boolean;
}

export interface InjectOptions {
  /** The member's ssrc (default: a random one per call). */
  ssrc?: number;
  /** Give every packet a one-byte (0xBEDE) header extension, as Discord's carry (default false). */
  headerExtension?: boolean;
}

interface Session {
  readonly ws: WebSocket;
  readonly ssrc: number;
  identify: IdentifyPayload | undefined;
  key: Buffer | undefined;
  client: { address: string; port: number } | undefined;
  seq: number;
  decoder: OpusScript | undefined;
  /** The session's place in a DAVE channel (shared with the session a Resume makes of it). */
  dave:
    { channelId: string; current: Session; leaving: NodeJS.Timeout | undefined; peer: DavePeer } | undefined;
}

/** Discord's close code for a client that does not offer DAVE. */
export const DAVE_REQUIRED_CLOSE = 4017;
/** How long a dropped bot keeps its place in the group, for a Resume (then it is removed). */
const RESUME_GRACE_MS = 5000;
/** The ear's user id (a member who listens in every channel). */
export const EAR_USER_ID = '999000000000000001';

/**
 * The run of speech in `packets` (first to last non-silent packet, one guild's): the silent packets
 * inside it (holes the listener heard), and each packet's drift from a steady 20 ms cadence after the
 * first (arrival − (first arrival + k × 20 ms)). Undefined when there is no speech.
 */
export function speechRun(
  packets: readonly ReceivedPacket[],
): { packets: number; holes: number; drift: number[] } | undefined {
  const first = packets.findIndex((p) => !p.silence);
  if (first < 0) return undefined;
  let last = first;
  for (let k = first; k < packets.length; k++) if (!packets[k]!.silence) last = k;
  const run = packets.slice(first, last + 1);
  return {
    packets: run.length,
    holes: run.filter((p) => p.silence).length,
    drift: run.map((p, k) => p.arrivalMs - (run[0]!.arrivalMs + k * 20)),
  };
}

export interface FakeVoiceServerOptions {
  cert: string;
  key: string;
  /** Opus-decode every packet (default true; benchmarks turn it off). */
  decode?: boolean;
  /** What op 8 Hello announces (default 13 750 ms, as Discord). */
  heartbeatIntervalMs?: number;
  /** Require DAVE (default true, as Discord since March 2026); false negotiates protocol 0. */
  dave?: boolean;
  /** A listening member in every channel with a bot (default true with DAVE). */
  ear?: boolean;
  /** How long the gateway waits for every member's ready before executing a transition. */
  transitionTimeoutMs?: number;
}

export interface FakeVoiceServerEvents {
  packet: [ReceivedPacket];
  identify: [IdentifyPayload];
  connection: [];
}

let nextSsrc = 1000;

function parseOp(data: RawData): { op: number; d: Record<string, unknown> } {
  return JSON.parse(rawText(data)) as { op: number; d: Record<string, unknown> };
}

export class FakeVoiceServer extends EventEmitter<FakeVoiceServerEvents> {
  readonly packets: ReceivedPacket[] = [];
  readonly identifies: IdentifyPayload[] = [];
  /** Op 5 Speaking payloads from the bot. */
  readonly speakingUpdates: Array<{ speaking: number; ssrc: number }> = [];
  /** Resumes that kept their session (a reconnect). */
  resumes = 0;
  /** Every Resume payload, including refused ones. */
  readonly resumeRecords: ResumeRecord[] = [];
  readonly heartbeats: HeartbeatRecord[] = [];
  /** Request URLs of the WebSockets accepted (path and query: `/?v=8`). */
  readonly urls: string[] = [];
  readonly socketCloses: SocketCloseRecord[] = [];
  /** Datagrams from a known session that failed to decrypt (wrong key, nonce or tag). */
  decryptFailures = 0;
  private readonly sessions = new Set<Session>();
  private readonly bySsrc = new Map<number, Session>();
  /** The session each open WebSocket carries (a Resume moves one to a new socket). */
  private readonly bySocket = new Map<WebSocket, Session>();
  private readonly closedByServer = new WeakSet<WebSocket>();
  /** Each channel's DAVE delivery service, by channel id. */
  readonly daveChannels = new Map<string, DaveChannel>();
  /** Simulated members by channel id (the ear among them). */
  private readonly members = new Map<string, DaveMember[]>();
  private readonly ears = new Map<string, DaveMember>();
  /** The channel of each main-gateway session id, as `FakeMainGateway` places its bot. */
  private readonly placements = new Map<string, string>();

  private constructor(
    private readonly https: Server,
    private readonly wss: WebSocketServer,
    private readonly udp: Socket,
    private readonly decode: boolean,
    private readonly heartbeatIntervalMs: number,
    private readonly dave:
      { sender: ExternalSender; ear: boolean; transitionTimeoutMs: number | undefined } | undefined,
  ) {
    super();
    wss.on('connection', (ws, request) => this.onConnection(ws, request.url ?? ''));
    udp.on('message', (msg, rinfo) => this.onDatagram(msg, rinfo));
  }

  static async start(options: FakeVoiceServerOptions): Promise<FakeVoiceServer> {
    const https = createServer({ cert: options.cert, key: options.key });
    const wss = new WebSocketServer({ server: https });
    https.listen(0, '127.0.0.1');
    await once(https, 'listening');
    const udp = createSocket('udp4');
    udp.bind(0, '127.0.0.1');
    await once(udp, 'listening');
    const dave =
      options.dave === false
        ? undefined
        : {
            sender: await ExternalSender.create(),
            ear: options.ear ?? true,
            transitionTimeoutMs: options.transitionTimeoutMs,
          };
    return new FakeVoiceServer(
      https,
      wss,
      udp,
      options.decode ?? true,
      options.heartbeatIntervalMs ?? 13_750,
      dave,
    );
  }

  /** The gateway's MLS external sender (undefined without DAVE). */
  get externalSender(): ExternalSender | undefined {
    return this.dave?.sender;
  }

  /** Sends the bot of `guildId` a binary DAVE message as is (tests of what the bot does with bad ones). */
  sendDave(guildId: string, op: number, payload: Buffer): void {
    const session = [...this.sessions].find((s) => s.identify?.server_id === guildId && s.dave);
    if (!session) throw new Error(`no DAVE session for guild ${guildId}`);
    this.sendBinary(session, op, payload);
  }

  /** Sends the bot of `guildId` a binary WebSocket message of these bytes, header or not. */
  sendRaw(guildId: string, bytes: Buffer): void {
    const session = [...this.sessions].find((s) => s.identify?.server_id === guildId);
    if (!session) throw new Error(`no session for guild ${guildId}`);
    session.ws.send(bytes);
  }

  /** Whether this server requires DAVE. */
  get requiresDave(): boolean {
    return this.dave !== undefined;
  }

  /** The main gateway put the bot of `sessionId` in `channelId` (its DAVE group is that channel's). */
  place(sessionId: string, channelId: string): void {
    this.placements.set(sessionId, channelId);
  }

  /** The channel a bot of `guildId` is in (by its session), if connected with DAVE. */
  channelOf(guildId: string): string | undefined {
    for (const s of this.sessions) if (s.identify?.server_id === guildId && s.dave) return s.dave.channelId;
    return undefined;
  }

  /** The DAVE delivery service of the channel a bot of `guildId` is in. */
  daveOf(guildId: string): DaveChannel | undefined {
    const channelId = this.channelOf(guildId);
    return channelId === undefined ? undefined : this.daveChannels.get(channelId);
  }

  /** The members of a channel (the ear first, if any). */
  membersOf(channelId: string): readonly DaveMember[] {
    return this.members.get(channelId) ?? [];
  }

  /** The listening member of the channel a bot of `guildId` is in. */
  earOf(guildId: string): DaveMember | undefined {
    const channelId = this.channelOf(guildId);
    return channelId === undefined ? undefined : this.ears.get(channelId);
  }

  /**
   * A member joins `channelId` (a real DAVE participant): the others learn of it (op 11), it gets the
   * external sender and sends its key package, and the group takes it in.
   */
  addMember(channelId: string, userId: string, options: DaveMemberOptions = {}): DaveMember {
    if (!this.dave) throw new Error('this fake voice server runs without DAVE');
    const channel = this.daveChannel(channelId);
    const member = new DaveMember(
      userId,
      channelId,
      {
        json: (m, op, d) => setImmediate(() => channel.onJson(m.userId, op, d)),
        binary: (m, op, payload) => setImmediate(() => channel.onBinary(m.userId, op, payload)),
      },
      { ...options, decode: options.decode ?? this.decode },
    );
    const list = this.members.get(channelId) ?? [];
    list.push(member);
    this.members.set(channelId, list);
    channel.join(member);
    member.start();
    return member;
  }

  /** A member leaves (its socket closes): the group removes it. */
  removeMember(member: DaveMember): void {
    const list = this.members.get(member.channelId);
    if (!list?.includes(member)) return;
    list.splice(list.indexOf(member), 1);
    if (this.ears.get(member.channelId) === member) this.ears.delete(member.channelId);
    this.daveChannels.get(member.channelId)?.leave(member.userId);
    member.close();
  }

  /**
   * Resolves once `members` and the bot of `guildId` share one established group, with no transition
   * pending (everyone can encrypt and decrypt each other).
   */
  async waitForGroup(guildId: string, members: readonly DaveMember[], timeoutMs = 5000): Promise<void> {
    await this.waitFor(
      () => {
        const channel = this.daveOf(guildId);
        const bot = [...this.sessions].find((s) => s.identify?.server_id === guildId && s.dave);
        if (!channel || !bot?.identify || channel.transitioning) return false;
        const inGroup = new Set(channel.members);
        return (
          inGroup.has(bot.identify.user_id) &&
          members.every((m) => m.ready && inGroup.has(m.userId) && m.epoch === channel.currentEpoch)
        );
      },
      timeoutMs,
      `DAVE group of guild ${guildId} with ${members.map((m) => m.userId).join(', ')}`,
    );
  }

  /** What a VOICE_SERVER_UPDATE carries; the library connects to `wss://<endpoint>?v=8`. */
  get endpoint(): string {
    return `localhost:${(this.https.address() as AddressInfo).port}`;
  }

  /** Sessions with a live WebSocket. */
  get connections(): number {
    return this.sessions.size;
  }

  /** Packets from one bot (by its ssrc), or all. */
  received(ssrc?: number): ReceivedPacket[] {
    return ssrc === undefined ? this.packets : this.packets.filter((p) => p.ssrc === ssrc);
  }

  /** The ssrc given to the bot of a guild (by the `server_id` it identified with). */
  ssrcOf(guildId: string): number | undefined {
    for (const s of this.sessions) if (s.identify?.server_id === guildId) return s.ssrc;
    return undefined;
  }

  async waitFor(predicate: () => boolean, timeoutMs: number, what = 'condition'): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    while (!predicate()) {
      if (performance.now() > deadline)
        throw new Error(`fake voice server: no ${what} within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 5));
    }
  }

  /**
   * A member talking in the channel of `guildId`'s bot: op 5 Speaking, then one encrypted Opus packet
   * per 20 ms of `pcm` (48 kHz interleaved stereo; whole frames) at real-time pace.
   */
  async injectSpeech(
    guildId: string,
    userId: string,
    pcm: Int16Array,
    options: InjectOptions = {},
  ): Promise<{ startedAt: number; endedAt: number; frames: number }> {
    const session = [...this.sessions].find((s) => s.identify?.server_id === guildId && s.key && s.client);
    if (!session) throw new Error(`no ready session for guild ${guildId}`);
    // With DAVE the member is a participant of the group, and what it says is end-to-end encrypted.
    let member: DaveMember | undefined;
    if (this.dave) {
      const channelId = session.dave?.channelId;
      if (channelId === undefined) throw new Error(`guild ${guildId}: the bot is in no DAVE channel`);
      member =
        this.membersOf(channelId).find((m) => m.userId === userId) ?? this.addMember(channelId, userId);
      await this.waitForGroup(guildId, [member]);
    }
    const ssrc = options.ssrc ?? 90_000 + Math.floor(Math.random() * 1000);
    this.send(session, { op: 5, d: { user_id: userId, ssrc, speaking: 1 } });
    await new Promise((r) => setTimeout(r, 5)); // the mapping arrives before the audio, as on Discord
    const encoder = new OpusScript(48_000, 2, OpusScript.Application.AUDIO);
    const frames = Math.floor(pcm.length / (FRAME_SAMPLES * 2));
    let sequence = Math.floor(Math.random() * 65_536);
    let timestamp = Math.floor(Math.random() * 2 ** 31);
    let nonce = 0;
    const startedAt = performance.now();
    try {
      for (let f = 0; f < frames; f++) {
        const due = startedAt + f * 20;
        const wait = due - performance.now();
        if (wait > 1) await new Promise((r) => setTimeout(r, wait));
        const frame = pcm.subarray(f * FRAME_SAMPLES * 2, (f + 1) * FRAME_SAMPLES * 2);
        const opus = encoder.encode(
          Buffer.from(frame.buffer, frame.byteOffset, frame.byteLength),
          FRAME_SAMPLES,
        );
        nonce++;
        const rtp = { sequence, timestamp, ssrc };
        if (member?.closed) break; // it left
        // A member out of the group for a moment (a re-key) stays quiet, as a client does.
        const payload = member ? member.encrypt(opus) : opus;
        if (!payload) continue;
        const packet = seal(session.key!, nonce, rtp, payload, options.headerExtension ?? false);
        this.udp.send(packet, session.client!.port, session.client!.address);
        sequence = (sequence + 1) & 0xffff;
        timestamp = (timestamp + FRAME_SAMPLES) >>> 0;
      }
    } finally {
      encoder.delete();
    }
    return { startedAt, endedAt: performance.now(), frames };
  }

  /** Closes every bot's WebSocket with `code` (1006: dropped without a close frame). */
  closeSocket(code: number): void {
    for (const s of this.sessions) {
      this.closedByServer.add(s.ws);
      if (code === 1006) s.ws.terminate();
      else s.ws.close(code);
    }
  }

  async close(): Promise<void> {
    for (const list of this.members.values()) for (const m of list) m.close();
    this.members.clear();
    this.ears.clear();
    for (const channel of this.daveChannels.values()) channel.close();
    for (const s of this.sessions) if (s.dave?.leaving) clearTimeout(s.dave.leaving);
    for (const s of this.sessions) {
      s.ws.terminate();
      // Once only: a second delete() of an opusscript handle corrupts the shared WebAssembly heap.
      s.decoder?.delete();
      s.decoder = undefined;
    }
    this.sessions.clear();
    this.wss.close();
    this.https.closeAllConnections();
    await new Promise<void>((r) => this.https.close(() => r()));
    await new Promise<void>((r) => this.udp.close(() => r()));
  }

  private onConnection(ws: WebSocket, url: string): void {
    this.urls.push(url);
    const session: Session = {
      ws,
      ssrc: nextSsrc++,
      identify: undefined,
      key: undefined,
      client: undefined,
      seq: 0,
      decoder: undefined,
      dave: undefined,
    };
    this.sessions.add(session);
    this.bySsrc.set(session.ssrc, session);
    this.bySocket.set(ws, session);
    this.emit('connection');
    ws.on('error', () => undefined);
    ws.on('close', (code) => {
      // The session this socket carries now: its own, or the one it resumed.
      const current = this.bySocket.get(ws) ?? session;
      this.bySocket.delete(ws);
      this.sessions.delete(current);
      current.decoder?.delete();
      current.decoder = undefined;
      this.socketCloses.push({ code, byServer: this.closedByServer.has(ws) });
      // A dropped bot keeps its place in the group for a while: a Resume carries it over.
      const place = current.dave;
      if (place?.current === current && !place.leaving)
        place.leaving = setTimeout(() => {
          place.leaving = undefined;
          if (place.current === current) this.leaveDave(current);
        }, RESUME_GRACE_MS);
    });
    ws.on('message', (data, isBinary) => {
      const current = this.bySocket.get(ws);
      if (!current) return;
      if (isBinary) {
        // DAVE's binary opcodes from a client: [opcode][payload].
        const bytes = Buffer.isBuffer(data) ? data : Buffer.concat(data as Buffer[]);
        const place = current.dave;
        if (place && bytes.length > 0 && current.identify)
          this.daveChannels
            .get(place.channelId)
            ?.onBinary(current.identify.user_id, bytes[0]!, bytes.subarray(1));
        return;
      }
      const packet = parseOp(data);
      this.onOp(current, packet.op, packet.d);
    });
    this.send(session, { op: 8, d: { heartbeat_interval: this.heartbeatIntervalMs } });
  }

  private onOp(session: Session, op: number, d: Record<string, unknown>): void {
    switch (op) {
      case 0: {
        // Identify
        session.identify = d as unknown as IdentifyPayload;
        this.identifies.push(session.identify);
        this.emit('identify', session.identify);
        if (this.dave && !((session.identify.max_dave_protocol_version ?? 0) >= 1)) {
          // As Discord since March 2026: no end-to-end encryption, no voice.
          this.closedByServer.add(session.ws);
          session.ws.close(DAVE_REQUIRED_CLOSE, 'E2EE/DAVE protocol required');
          return;
        }
        const port = this.udp.address().port;
        this.send(session, {
          op: 2,
          d: {
            ssrc: session.ssrc,
            ip: '127.0.0.1',
            port,
            modes: ['aead_aes256_gcm_rtpsize', 'aead_xchacha20_poly1305_rtpsize'],
          },
        });
        return;
      }
      case 1: {
        // Select Protocol
        const data = d['data'] as { mode: string };
        if (data.mode !== 'aead_aes256_gcm_rtpsize') {
          session.ws.close(4016, 'unknown encryption mode');
          return;
        }
        session.key = randomBytes(32);
        this.send(session, {
          op: 4,
          d: { mode: data.mode, secret_key: [...session.key], dave_protocol_version: this.dave ? 1 : 0 },
        });
        if (this.dave) this.joinDave(session);
        return;
      }
      case DAVE_OP.transitionReady:
      case DAVE_OP.invalidCommitWelcome:
        if (session.dave && session.identify)
          this.daveChannels.get(session.dave.channelId)?.onJson(session.identify.user_id, op, d);
        return;
      case 3:
        // Heartbeat
        this.heartbeats.push({ at: performance.now(), t: Number(d['t']), seq_ack: Number(d['seq_ack']) });
        this.send(session, { op: 6, d: { t: d['t'] } });
        return;
      case 5:
        this.speakingUpdates.push({ speaking: Number(d['speaking']), ssrc: Number(d['ssrc']) });
        return;
      case 7: {
        // Resume: the session (key, ssrc) carries over to this socket.
        const previous = [...this.bySsrc.values()].find(
          (s) => s !== session && s.identify?.session_id === d['session_id'] && s.key,
        );
        this.resumeRecords.push({
          server_id: String(d['server_id']),
          session_id: String(d['session_id']),
          token: String(d['token']),
          seq_ack: Number(d['seq_ack']),
          lastSeqSent: previous?.seq ?? Number.NaN,
        });
        if (!previous) {
          session.ws.close(4006, 'session no longer valid');
          return;
        }
        this.resumes++;
        this.sessions.delete(session);
        this.bySsrc.delete(session.ssrc);
        const resumed: Session = { ...previous, ws: session.ws, decoder: undefined };
        if (resumed.dave) {
          // The group place carries over: messages go to the new socket, nobody is removed.
          resumed.dave.current = resumed;
          if (resumed.dave.leaving) clearTimeout(resumed.dave.leaving);
          resumed.dave.leaving = undefined;
        }
        this.sessions.add(resumed);
        this.bySsrc.set(resumed.ssrc, resumed);
        this.bySocket.set(session.ws, resumed);
        this.send(resumed, { op: 9, d: null });
        return;
      }
      default:
        return;
    }
  }

  private send(session: Session, packet: { op: number; d: unknown }): void {
    if (session.ws.readyState !== session.ws.OPEN) return;
    session.ws.send(JSON.stringify({ ...packet, seq: ++session.seq }));
  }

  /** A binary DAVE message: [seq: u16][opcode][payload], in the same sequence as the JSON ones. */
  private sendBinary(session: Session, op: number, payload: Buffer): void {
    if (session.ws.readyState !== session.ws.OPEN) return;
    const head = Buffer.alloc(3);
    head.writeUInt16BE(++session.seq & 0xffff, 0);
    head[2] = op;
    session.ws.send(Buffer.concat([head, payload]));
  }

  private daveChannel(channelId: string): DaveChannel {
    let channel = this.daveChannels.get(channelId);
    if (!channel) {
      channel = new DaveChannel(channelId, this.dave!.sender, {
        ...(this.dave!.transitionTimeoutMs === undefined
          ? {}
          : { transitionTimeoutMs: this.dave!.transitionTimeoutMs }),
      });
      this.daveChannels.set(channelId, channel);
    }
    return channel;
  }

  /** After the session description: the bot joins its channel's group (and the ear with it). */
  private joinDave(session: Session): void {
    const identify = session.identify!;
    const channelId = this.placements.get(identify.session_id) ?? identify.server_id;
    const previous = session.dave;
    if (previous?.leaving) clearTimeout(previous.leaving);
    const bot: DavePeer = {
      userId: identify.user_id,
      sendJson: (op, d) => this.send(session.dave!.current, { op, d }),
      sendBinary: (op, payload) => this.sendBinary(session.dave!.current, op, payload),
    };
    session.dave = { channelId, current: session, leaving: undefined, peer: bot };
    if (this.dave!.ear && !this.ears.has(channelId))
      this.ears.set(channelId, this.addMember(channelId, EAR_USER_ID));
    this.daveChannel(channelId).join(bot);
  }

  private leaveDave(session: Session): void {
    const place = session.dave;
    if (!place || !session.identify) return;
    this.daveChannels.get(place.channelId)?.leave(session.identify.user_id, place.peer);
  }

  private onDatagram(msg: Buffer, rinfo: RemoteInfo): void {
    if (msg.length === 74 && msg.readUInt16BE(0) === 1) {
      // IP discovery: answer with the address and port the request came from.
      const ssrc = msg.readUInt32BE(4);
      const session = this.bySsrc.get(ssrc);
      if (session) session.client = { address: rinfo.address, port: rinfo.port };
      const reply = Buffer.alloc(74);
      reply.writeUInt16BE(2, 0);
      reply.writeUInt16BE(70, 2);
      reply.writeUInt32BE(ssrc, 4);
      reply.write(rinfo.address, 8, 'utf8');
      reply.writeUInt16BE(rinfo.port, 72);
      this.udp.send(reply, rinfo.port, rinfo.address);
      return;
    }
    if (msg.length < 12 + TAG_BYTES + NONCE_BYTES) return; // keep-alive
    const ssrc = msg.readUInt32BE(8);
    const session = this.bySsrc.get(ssrc);
    if (!session?.key) return;
    const arrivalMs = performance.now();
    let payload: Buffer;
    try {
      payload = open(session.key, msg);
    } catch {
      this.decryptFailures++;
      return;
    }
    let opus = payload;
    let pcm: Int16Array | undefined;
    let heard: ReceivedPacket['heard'];
    const place = session.dave;
    if (place && session.identify) {
      // The SFU forwards the frame as it is to every member; the ear's hearing is what is recorded.
      const ear = this.ears.get(place.channelId);
      for (const member of this.membersOf(place.channelId)) {
        const frame = member.hear(session.identify.user_id, payload, arrivalMs);
        if (member === ear) {
          heard = frame.outcome;
          if (frame.opus) opus = frame.opus;
          pcm = frame.pcm;
        }
      }
    } else if (this.decode) {
      session.decoder ??= new OpusScript(48_000, 2);
      const out = session.decoder.decode(opus);
      pcm = new Int16Array(out.buffer, out.byteOffset, out.length / 2).slice();
    }
    const silence = opus.equals(SILENCE);
    const packet: ReceivedPacket = {
      arrivalMs,
      ssrc,
      sequence: msg.readUInt16BE(2),
      timestamp: msg.readUInt32BE(4),
      opus,
      silence,
      pcm,
      e2ee: isDaveFrame(payload) || payload.equals(SILENCE),
      heard,
    };
    this.packets.push(packet);
    this.emit('packet', packet);
  }
}
