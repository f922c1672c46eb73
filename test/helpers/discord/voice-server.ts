/**
 * A fake Discord voice server on loopback that speaks the real voice protocol (gateway v8 over a TLS
 * WebSocket, plus UDP), so the real `@discordjs/voice` connection connects to it with no Discord
 * account: Hello, Identify → Ready (ssrc, UDP port, modes), IP discovery over UDP, Select Protocol →
 * Session Description (aead_aes256_gcm_rtpsize, a random key, DAVE protocol 0: no end-to-end layer),
 * heartbeats, Resume → Resumed.
 *
 * Every RTP packet the bot sends is decrypted and (optionally) Opus-decoded and recorded with its
 * arrival time. A member talking is injected the way Discord delivers it: op 5 Speaking mapping the
 * member's ssrc to their user id, then encrypted Opus packets every 20 ms.
 *
 * `FakeMainGateway` stands in for the bot's main gateway connection: it is the `adapterCreator` that
 * `joinVoiceChannel` is given, answers the voice-state payload with the voice state and voice server
 * updates, and simulates kicks, moves, region changes and a shard going away.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { createSocket, type RemoteInfo, type Socket } from 'node:dgram';
import { readFileSync } from 'node:fs';
import { EventEmitter, once } from 'node:events';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { DiscordGatewayAdapterCreator, DiscordGatewayAdapterLibraryMethods } from '@discordjs/voice';
import OpusScript from 'opusscript';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';

/** Discord's Opus silence frame, which players send after a stop. */
const SILENCE = Buffer.from([0xf8, 0xff, 0xfe]);
const OPUS_PT = 0x78;
const FRAME_SAMPLES = 960;

export interface ReceivedPacket {
  /** performance.now() at arrival. */
  arrivalMs: number;
  ssrc: number;
  sequence: number;
  timestamp: number;
  opus: Buffer;
  silence: boolean;
  /** Decoded 48 kHz stereo (interleaved), when the server decodes. */
  pcm: Int16Array | undefined;
}

export interface IdentifyPayload {
  server_id: string;
  user_id: string;
  session_id: string;
  token: string;
}

interface Session {
  readonly ws: WebSocket;
  readonly ssrc: number;
  identify: IdentifyPayload | undefined;
  key: Buffer | undefined;
  client: { address: string; port: number } | undefined;
  seq: number;
  decoder: OpusScript | undefined;
}

export interface FakeVoiceServerOptions {
  cert: string;
  key: string;
  /** Opus-decode every packet (default true; benchmarks turn it off). */
  decode?: boolean;
}

export interface FakeVoiceServerEvents {
  packet: [ReceivedPacket];
  identify: [IdentifyPayload];
  connection: [];
}

let nextSsrc = 1000;

function parseOp(data: RawData): { op: number; d: Record<string, unknown> } {
  const bytes = Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
  return JSON.parse(bytes.toString('utf8')) as { op: number; d: Record<string, unknown> };
}

export class FakeVoiceServer extends EventEmitter<FakeVoiceServerEvents> {
  readonly packets: ReceivedPacket[] = [];
  readonly identifies: IdentifyPayload[] = [];
  /** Op 5 Speaking payloads from the bot. */
  readonly speakingUpdates: Array<{ speaking: number; ssrc: number }> = [];
  /** Resume payloads (a reconnect that kept the session). */
  resumes = 0;
  private readonly sessions = new Set<Session>();
  private readonly bySsrc = new Map<number, Session>();

  private constructor(
    private readonly https: Server,
    private readonly wss: WebSocketServer,
    private readonly udp: Socket,
    private readonly decode: boolean,
  ) {
    super();
    wss.on('connection', (ws) => this.onConnection(ws));
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
    return new FakeVoiceServer(https, wss, udp, options.decode ?? true);
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
   * per 20 ms of `pcm` (48 kHz interleaved stereo) at real-time pace.
   */
  async injectSpeech(
    guildId: string,
    userId: string,
    pcm: Int16Array,
    options: { ssrc?: number } = {},
  ): Promise<{ startedAt: number; endedAt: number }> {
    const session = [...this.sessions].find((s) => s.identify?.server_id === guildId && s.key && s.client);
    if (!session) throw new Error(`no ready session for guild ${guildId}`);
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
        const header = Buffer.alloc(12);
        header[0] = 0x80;
        header[1] = OPUS_PT;
        header.writeUInt16BE(sequence, 2);
        header.writeUInt32BE(timestamp >>> 0, 4);
        header.writeUInt32BE(ssrc, 8);
        sequence = (sequence + 1) & 0xffff;
        timestamp = (timestamp + FRAME_SAMPLES) >>> 0;
        nonce++;
        const nonceBuffer = Buffer.alloc(12);
        nonceBuffer.writeUInt32BE(nonce, 0);
        const cipher = createCipheriv('aes-256-gcm', session.key!, nonceBuffer);
        cipher.setAAD(header);
        const body = Buffer.concat([cipher.update(opus), cipher.final(), cipher.getAuthTag()]);
        this.udp.send(
          Buffer.concat([header, body, nonceBuffer.subarray(0, 4)]),
          session.client!.port,
          session.client!.address,
        );
      }
    } finally {
      encoder.delete();
    }
    return { startedAt, endedAt: performance.now() };
  }

  /** Closes every bot's WebSocket with `code` (1006: dropped without a close frame). */
  closeSocket(code: number): void {
    for (const s of this.sessions) {
      if (code === 1006) s.ws.terminate();
      else s.ws.close(code);
    }
  }

  async close(): Promise<void> {
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

  private onConnection(ws: WebSocket): void {
    const session: Session = {
      ws,
      ssrc: nextSsrc++,
      identify: undefined,
      key: undefined,
      client: undefined,
      seq: 0,
      decoder: undefined,
    };
    this.sessions.add(session);
    this.bySsrc.set(session.ssrc, session);
    this.emit('connection');
    ws.on('error', () => undefined);
    ws.on('close', () => {
      this.sessions.delete(session);
      session.decoder?.delete();
      session.decoder = undefined;
    });
    ws.on('message', (data, isBinary) => {
      if (isBinary) return; // DAVE's binary opcodes: not offered here
      const text = Buffer.isBuffer(data)
        ? data.toString('utf8')
        : Buffer.concat(data as Buffer[]).toString('utf8');
      const packet = JSON.parse(text) as { op: number; d: Record<string, unknown> };
      this.onOp(session, packet.op, packet.d);
    });
    this.send(session, { op: 8, d: { heartbeat_interval: 13_750 } });
  }

  private onOp(session: Session, op: number, d: Record<string, unknown>): void {
    switch (op) {
      case 0: {
        // Identify
        session.identify = d as unknown as IdentifyPayload;
        this.identifies.push(session.identify);
        this.emit('identify', session.identify);
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
          d: { mode: data.mode, secret_key: [...session.key], dave_protocol_version: 0 },
        });
        return;
      }
      case 3:
        // Heartbeat
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
        if (!previous) {
          session.ws.close(4006, 'session no longer valid');
          return;
        }
        this.resumes++;
        this.sessions.delete(session);
        this.bySsrc.delete(session.ssrc);
        const resumed: Session = { ...previous, ws: session.ws, decoder: undefined };
        session.ws.removeAllListeners('message');
        session.ws.removeAllListeners('close');
        session.ws.on('close', () => this.sessions.delete(resumed));
        session.ws.on('message', (data) => {
          const packet = parseOp(data);
          this.onOp(resumed, packet.op, packet.d);
        });
        this.sessions.add(resumed);
        this.bySsrc.set(resumed.ssrc, resumed);
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
    if (msg.length <= 8) return; // keep-alive
    const ssrc = msg.readUInt32BE(8);
    const session = this.bySsrc.get(ssrc);
    if (!session?.key) return;
    const arrivalMs = performance.now();
    const headerSize = 12 + ((msg[0]! >> 4) & 1 ? 4 : 0);
    const nonce = Buffer.alloc(12);
    msg.copy(nonce, 0, msg.length - 4);
    const decipher = createDecipheriv('aes-256-gcm', session.key, nonce);
    decipher.setAAD(msg.subarray(0, headerSize));
    decipher.setAuthTag(msg.subarray(msg.length - 20, msg.length - 4));
    const opus = Buffer.concat([
      decipher.update(msg.subarray(headerSize, msg.length - 20)),
      decipher.final(),
    ]);
    const silence = opus.equals(SILENCE);
    let pcm: Int16Array | undefined;
    if (this.decode) {
      session.decoder ??= new OpusScript(48_000, 2);
      const out = session.decoder.decode(opus);
      pcm = new Int16Array(out.buffer, out.byteOffset, out.length / 2).slice();
    }
    const packet: ReceivedPacket = {
      arrivalMs,
      ssrc,
      sequence: msg.readUInt16BE(2),
      timestamp: msg.readUInt32BE(4),
      opus,
      silence,
      pcm,
    };
    this.packets.push(packet);
    this.emit('packet', packet);
  }
}

export interface GatewayIds {
  guildId: string;
  /** The bot's user id. */
  userId: string;
  sessionId?: string;
}

/**
 * The bot's main-gateway side of a guild's voice: `adapterCreator` for `joinVoiceChannel`. It answers
 * every voice-state payload (op 4) the library sends the way Discord does, pointing at `server`.
 */
export class FakeMainGateway {
  /** Op 4 payloads the library sent. */
  readonly sent: Array<{
    op: number;
    d: { guild_id: string; channel_id: string | null; self_deaf: boolean };
  }> = [];
  /** false: the shard is down and payloads cannot be sent. */
  available = true;
  /** Whether to answer joins (false: the voice server never comes, the join times out). */
  answer = true;
  private methods: DiscordGatewayAdapterLibraryMethods | undefined;
  private channelId: string | null = null;
  private readonly sessionId: string;

  constructor(
    private server: FakeVoiceServer,
    private readonly ids: GatewayIds,
  ) {
    this.sessionId = ids.sessionId ?? randomBytes(16).toString('hex');
  }

  readonly adapterCreator: DiscordGatewayAdapterCreator = (methods) => {
    this.methods = methods;
    return {
      sendPayload: (payload: unknown) => {
        if (!this.available) return false;
        const p = payload as FakeMainGateway['sent'][number];
        this.sent.push(p);
        if (this.answer) setTimeout(() => this.onPayload(p), 1);
        return true;
      },
      destroy: () => {
        this.methods = undefined;
      },
    };
  };

  /** The channel the bot was last put in (null: none). */
  get channel(): string | null {
    return this.channelId;
  }

  /** The bot is kicked from the channel (or the channel deleted): voice socket 4014, state with no channel. */
  kick(): void {
    this.channelId = null;
    this.stateUpdate(null);
    this.server.closeSocket(4014);
  }

  /** Someone moves the bot to another channel: 4014, then new updates, as Discord does. */
  move(channelId: string): void {
    this.server.closeSocket(4014);
    this.channelId = channelId;
    this.stateUpdate(channelId);
    this.serverUpdate(this.server.endpoint);
  }

  /** A region change: the endpoint goes away, then another voice server is given. */
  changeEndpoint(next: FakeVoiceServer): void {
    this.serverUpdate(null);
    this.server = next;
    this.serverUpdate(next.endpoint);
  }

  /** The shard went away: discord.js destroys its adapters. */
  destroyAdapter(): void {
    this.methods?.destroy();
  }

  private onPayload(p: FakeMainGateway['sent'][number]): void {
    this.channelId = p.d.channel_id;
    this.stateUpdate(p.d.channel_id);
    if (p.d.channel_id !== null) this.serverUpdate(this.server.endpoint);
  }

  private stateUpdate(channelId: string | null): void {
    this.methods?.onVoiceStateUpdate({
      guild_id: this.ids.guildId,
      channel_id: channelId,
      user_id: this.ids.userId,
      session_id: this.sessionId,
      deaf: false,
      mute: false,
      self_deaf: false,
      self_mute: false,
      self_video: false,
      suppress: false,
      request_to_speak_timestamp: null,
    });
  }

  private serverUpdate(endpoint: string | null): void {
    this.methods?.onVoiceServerUpdate({
      guild_id: this.ids.guildId,
      token: 'voice-token',
      endpoint,
    });
  }
}

/** The test certificate made by test/tls-setup.ts. */
export function testTls(): { cert: string; key: string } {
  const cert = process.env['VOXBRIDGE_TEST_TLS_CERT'];
  const key = process.env['VOXBRIDGE_TEST_TLS_KEY'];
  if (!cert || !key) throw new Error('no test certificate: run under vitest (test/tls-setup.ts)');
  return { cert: readPem(cert), key: readPem(key) };
}

function readPem(path: string): string {
  return readFileSync(path, 'utf8');
}
