/**
 * The media-stream server: one WebSocket endpoint per gateway (`/media/<gateway>`) on the app's HTTP
 * server. Each connection is a call. Authentication happens on the upgrade; limits (calls, message
 * size, message rate) close only the offending connection, with a close code that says why.
 */
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import type { Clock } from '../../src/speaker/clock.js';
import type { PhraseCache } from '../../src/speaker/phrase-cache.js';
import type { SpeechSource } from '../../src/speaker/segment-audio.js';
import type { WireFormat } from '../../src/speaker/sink.js';
import { authorizeUpgrade, type MediaAuthSecrets } from './auth.js';
import { Call, type CallSettings } from './call.js';
import type { OnsetDetector } from './caller-audio.js';
import type { GatewayName, GatewayProtocol } from './protocols/types.js';

export interface MediaStreamLimits {
  maxCalls: number;
  maxPayloadBytes: number;
  maxMessagesPerSecond: number;
}

export interface MediaStreamServerOptions {
  server: Server;
  protocols: Readonly<Partial<Record<GatewayName, GatewayProtocol>>>;
  settings: CallSettings;
  limits: MediaStreamLimits;
  secrets: MediaAuthSecrets;
  source: SpeechSource;
  cache?: PhraseCache;
  clock: Clock;
  logger: Logger;
  detector?: (inbound: WireFormat) => OnsetDetector;
  post?: (url: string, body: unknown, signal: AbortSignal) => Promise<number>;
}

/** RFC 6455 close codes used here. */
export const CLOSE = {
  normal: 1000,
  goingAway: 1001,
  policy: 1008,
  tooBig: 1009,
  tryAgainLater: 1013,
} as const;

const PATH = /^\/media\/([a-z]+)(?:\/([^/]+))?\/?$/;
/** The message-rate budget is checked over this window, so short bursts (a reconnect's backlog) pass. */
const RATE_WINDOW_MS = 2000;

function reject(socket: Duplex, status: number, reason: string): void {
  const text = JSON.stringify({ error: reason });
  socket.end(
    `HTTP/1.1 ${status} ${status === 401 ? 'Unauthorized' : status === 403 ? 'Forbidden' : 'Not Found'}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`,
  );
}

export class MediaStreamServer {
  private readonly calls = new Set<Call>();
  private readonly wss: WebSocketServer;
  private readonly options: MediaStreamServerOptions;
  private readonly onUpgrade: (req: IncomingMessage, socket: Duplex, head: Buffer) => void;
  private readonly callStarted = new Set<(call: Call) => void>();

  constructor(options: MediaStreamServerOptions) {
    this.options = options;
    this.wss = new WebSocketServer({
      noServer: true,
      maxPayload: options.limits.maxPayloadBytes,
      perMessageDeflate: false,
      // jambonz asks for its subprotocol; everyone else for none.
      handleProtocols: (offered) => {
        for (const p of Object.values(options.protocols))
          if (p?.subprotocol && offered.has(p.subprotocol)) return p.subprotocol;
        return false;
      },
    });
    this.onUpgrade = (req, socket, head) => this.upgrade(req, socket, head);
    options.server.on('upgrade', this.onUpgrade);
  }

  /** Calls connected now, in the order they came. */
  list(): Call[] {
    return [...this.calls];
  }

  get(id: string): Call | undefined {
    for (const c of this.calls) if (c.id === id) return c;
    return undefined;
  }

  /** Runs `listener` for every new call (the control API subscribes to events through it). */
  onCall(listener: (call: Call) => void): () => void {
    this.callStarted.add(listener);
    return () => this.callStarted.delete(listener);
  }

  private upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on('error', () => undefined);
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'http://localhost');
    } catch {
      reject(socket, 404, 'bad request target');
      return;
    }
    const match = PATH.exec(url.pathname);
    const protocol = match ? this.options.protocols[match[1] as GatewayName] : undefined;
    if (!match || !protocol) {
      reject(socket, 404, `no media endpoint at ${url.pathname}`);
      return;
    }
    const verdict = authorizeUpgrade(protocol.name, req, url, match[2], this.options.secrets);
    if (!verdict.ok) {
      this.options.logger.warn({ gateway: protocol.name, reason: verdict.reason }, 'media stream refused');
      reject(socket, verdict.status, verdict.reason);
      return;
    }
    const urlParameters: Record<string, string> = {};
    for (const [k, v] of url.searchParams) if (k !== 'token') urlParameters[k] = v;
    this.wss.handleUpgrade(req, socket, head, (ws) => this.connect(ws, protocol, urlParameters));
  }

  private connect(ws: WebSocket, protocol: GatewayProtocol, urlParameters: Record<string, string>): void {
    const { limits, logger } = this.options;
    if (this.calls.size >= limits.maxCalls) {
      logger.warn({ gateway: protocol.name, calls: this.calls.size }, 'call refused: at maxCalls');
      ws.close(CLOSE.tryAgainLater, 'too many calls');
      return;
    }
    const call: Call = new Call({
      gateway: protocol,
      transport: {
        send: (message, onSent) => {
          if (ws.readyState !== ws.OPEN) {
            onSent();
            return;
          }
          ws.send(message, { binary: typeof message !== 'string' }, onSent);
        },
      },
      close: (code, reason) => ws.close(code, reason),
      source: this.options.source,
      ...(this.options.cache ? { cache: this.options.cache } : {}),
      clock: this.options.clock,
      logger: logger.child({ gateway: protocol.name }),
      settings: this.options.settings,
      ...(this.options.detector ? { detector: this.options.detector } : {}),
      ...(this.options.post ? { post: this.options.post } : {}),
      urlParameters,
    });
    this.calls.add(call);
    for (const listener of this.callStarted) listener(call);

    let windowStart = performance.now();
    let messages = 0;
    const budget = (limits.maxMessagesPerSecond * RATE_WINDOW_MS) / 1000;
    ws.on('message', (data: RawData, isBinary: boolean) => {
      const now = performance.now();
      if (now - windowStart > RATE_WINDOW_MS) {
        windowStart = now;
        messages = 0;
      }
      if (++messages > budget) {
        logger.warn({ callId: call.id, gateway: protocol.name }, 'connection closed: message flood');
        ws.close(CLOSE.policy, 'message rate too high');
        call.end('message flood');
        return;
      }
      call.onMessage(toBytes(data), isBinary);
    });
    ws.on('error', (error) => {
      logger.warn({ callId: call.id, gateway: protocol.name, err: error.message }, 'media connection error');
    });
    ws.on('close', (code) => {
      call.end(`connection closed (${code})`);
      this.calls.delete(call);
    });
    call.once('ended', () => {
      if (ws.readyState === ws.OPEN) ws.close(CLOSE.normal, 'call ended');
    });
  }

  /** Ends every call (the process is stopping) and stops accepting new ones. */
  /** Refuses new connections (shutting down); calls already connected go on. */
  stopAccepting(): void {
    this.options.server.off('upgrade', this.onUpgrade);
  }

  /** Whether any call is speaking or has speech queued. */
  get speaking(): boolean {
    for (const call of this.calls) if (call.speaker?.audible || (call.speaker?.queued ?? 0) > 0) return true;
    return false;
  }

  /** Hangs up every call the gateway's way (its hang-up message where it has one), then closes. */
  async close(): Promise<void> {
    this.stopAccepting();
    await Promise.all(
      [...this.calls].map((call) => call.hangup().catch(() => call.end('server shutting down'))),
    );
    for (const ws of this.wss.clients) ws.close(CLOSE.goingAway, 'server shutting down');
    await new Promise<void>((resolve) => this.wss.close(() => resolve()));
    for (const ws of this.wss.clients) ws.terminate();
  }
}

function toBytes(data: RawData): Uint8Array {
  if (Array.isArray(data)) return Buffer.concat(data);
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  return data;
}
