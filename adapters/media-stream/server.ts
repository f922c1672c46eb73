/**
 * The media-stream server: one WebSocket endpoint per gateway (`/media/<gateway>`) on the app's HTTP
 * server. Each connection is a call. Authentication happens on the upgrade; limits (calls, connections
 * still waiting for their start message, message size, message rate) close only the offending
 * connection, with a close code and a reason that say why.
 */
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import { RateLimit } from '../../src/async/rate-limit.js';
import { rawBytes } from '../../src/http/ws-data.js';
import type { Clock } from '../../src/speaker/clock.js';
import type { PhraseCache } from '../../src/speaker/phrase-cache.js';
import type { SpeechSource } from '../../src/speaker/segment-audio.js';
import type { WireFormat } from '../../src/audio/framer.js';
import { authorizeUpgrade, type MediaAuthSecrets } from './auth.js';
import type { CallEvent } from './call-events.js';
import { Call, type CallAdmission, type CallSettings } from './call.js';
import type { CallControls } from './call-control-link.js';
import type { OutboundCalls } from './outbound-calls.js';
import type { Aligner } from '../../src/speaker/word-alignment.js';
import type { TurnRecognizer } from './call-listen.js';
import { CLOSE, closeReason } from '../../src/http/ws-close.js';
import type { DetectorHooks, OnsetDetector } from './caller-audio.js';
import type { CallRelays } from './call-relay.js';
import type { GatewayName, GatewayProtocol, StreamInfo } from '../../src/protocols/types.js';

export { CLOSE } from '../../src/http/ws-close.js';

export interface MediaStreamLimits {
  /** Calls that have started (sent their start message) at once; more are refused with 1013. */
  maxCalls: number;
  /**
   * Connections without a start message yet, at once; more are refused with 1013. Counted apart from
   * `maxCalls`, so sockets that never start cannot keep a real call out.
   */
  maxPendingSockets: number;
  /** A connection without a start message this long after it opened is closed (1008). */
  startTimeoutMs: number;
  maxPayloadBytes: number;
  maxMessagesPerSecond: number;
}

/** The app's check of Host and Origin (src/http/web-guard.ts), run on every upgrade after authentication. */
export interface UpgradeGuard {
  checkUpgrade(req: IncomingMessage, authenticated: boolean): { ok: true } | { ok: false; reason: string };
}

export interface MediaStreamServerOptions {
  server: Server;
  /** None: any Host and Origin (tests of the protocol alone). */
  guard?: UpgradeGuard;
  protocols: Readonly<Partial<Record<GatewayName, GatewayProtocol>>>;
  settings: CallSettings;
  limits: MediaStreamLimits;
  secrets: MediaAuthSecrets;
  source: SpeechSource;
  cache?: PhraseCache | undefined;
  clock: Clock;
  logger: Logger;
  detector?: ((inbound: WireFormat, hooks: DetectorHooks) => OnsetDetector) | undefined;
  relays?: CallRelays | undefined;
  /** The process's recogniser, for flows' gathers that listen for speech; none: they take keys only. */
  recognizer?: TurnRecognizer | undefined;
  /** Times the words of speech that came without character timings (every call's speaker). */
  aligner?: Aligner | undefined;
  post?: ((url: string, body: unknown, signal: AbortSignal) => Promise<number>) | undefined;
  /** The gateways' call control, for every call (hang-ups at the gateway, transfers). */
  controls?: CallControls | undefined;
  /** Outbound calls (`POST /calls`) whose streams come back here. */
  outbound?: OutboundCalls | undefined;
}

const PATH = /^\/media\/([a-z]+)(?:\/([^/]+))?\/?$/;
/**
 * A connection may send this much of its message rate at once (ms of it), so a burst (a reconnect's
 * backlog, or a busy event loop reading what queued up meanwhile) passes, and a flood does not.
 */
const RATE_BURST_MS = 2000;
/** On shutdown, a call's REST hang-up may take this long before its stream is closed all the same. */
const SHUTDOWN_HANG_UP_MS = 5000;

const STATUS_TEXT: Readonly<Record<number, string>> = {
  401: 'Unauthorized',
  403: 'Forbidden',
  503: 'Service Unavailable',
};

function reject(socket: Duplex, status: number, reason: string): void {
  const text = JSON.stringify({ error: reason });
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_TEXT[status] ?? 'Not Found'}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`,
  );
}

export class MediaStreamServer {
  /** Every connection's call, started or not, until it ends. */
  private readonly calls = new Set<Call>();
  /** Those of `calls` still waiting for their start message. */
  private readonly pending = new Set<Call>();
  private readonly wss: WebSocketServer;
  private readonly options: MediaStreamServerOptions;
  private readonly onUpgrade: (req: IncomingMessage, socket: Duplex, head: Buffer) => void;
  private readonly callStarted = new Set<(call: Call) => void>();
  private accepting = true;

  /** Outbound calls being placed, whose streams this server takes (`POST /calls`); none without call control. */
  readonly outbound: OutboundCalls | undefined;

  constructor(options: MediaStreamServerOptions) {
    this.options = options;
    this.outbound = options.outbound;
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

  /** Calls that have started: what `maxCalls` counts. */
  private get startedCalls(): number {
    return this.calls.size - this.pending.size;
  }

  /**
   * Whether a call may start: room under `maxCalls` (pending connections race for it), and no other
   * connection already carrying its id. Two connections under one id would both be listed while the
   * control API reaches only the first, so the second is refused and the first keeps the call. A call
   * voxbridge placed is matched to its placement, whose id it takes.
   */
  private admit(stream: StreamInfo, call: Call): CallAdmission {
    if (this.startedCalls >= this.options.limits.maxCalls) {
      this.outbound?.refused(stream, 'too many calls');
      return { refused: { code: CLOSE.tryAgainLater, reason: 'too many calls' } };
    }
    const placed = this.outbound?.adopt(stream, call);
    if (placed) return placed;
    if (this.get(stream.callId)) {
      // The whole reason must fit in a close frame (123 bytes): a long id is cut, not the sentence.
      const id = stream.callId.length > 64 ? `${stream.callId.slice(0, 64)}…` : stream.callId;
      return { refused: { code: CLOSE.policy, reason: `call id ${id} is already connected` } };
    }
    return {};
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
    const guarded = this.options.guard?.checkUpgrade(req, verdict.authenticated) ?? { ok: true };
    if (!guarded.ok) {
      this.options.logger.warn(
        { gateway: protocol.name, host: req.headers.host, origin: req.headers.origin },
        guarded.reason,
      );
      reject(socket, 403, guarded.reason);
      return;
    }
    const urlParameters: Record<string, string> = {};
    for (const [k, v] of url.searchParams) if (k !== 'token') urlParameters[k] = v;
    this.wss.handleUpgrade(req, socket, head, (ws) => this.connect(ws, protocol, urlParameters));
  }

  private connect(ws: WebSocket, protocol: GatewayProtocol, urlParameters: Record<string, string>): void {
    const { limits, logger, clock } = this.options;
    if (this.startedCalls >= limits.maxCalls) {
      logger.warn({ gateway: protocol.name, calls: this.startedCalls }, 'call refused: at maxCalls');
      ws.close(CLOSE.tryAgainLater, 'too many calls');
      return;
    }
    if (this.pending.size >= limits.maxPendingSockets) {
      logger.warn(
        { gateway: protocol.name, pending: this.pending.size },
        'connection refused: at maxPendingSockets',
      );
      ws.close(CLOSE.tryAgainLater, 'too many connections waiting for a start message');
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
      close: (code, reason) => ws.close(code, closeReason(reason)),
      source: this.options.source,
      cache: this.options.cache,
      clock: this.options.clock,
      logger: logger.child({ gateway: protocol.name }),
      settings: this.options.settings,
      detector: this.options.detector,
      relays: this.options.relays,
      recognizer: this.options.recognizer,
      aligner: this.options.aligner,
      post: this.options.post,
      urlParameters,
      admit: (stream) => this.admit(stream, call),
      controls: this.options.controls,
    });
    this.calls.add(call);
    this.pending.add(call);
    // Until the start message comes: a socket that never sends one is closed, not kept forever.
    const waiting = new AbortController();
    clock.sleepUntil(clock.now() + limits.startTimeoutMs, waiting.signal).then(
      () => {
        if (call.state.status !== 'connecting') return;
        const reason = `no start message within ${limits.startTimeoutMs} ms`;
        logger.warn({ gateway: protocol.name, reason }, 'connection closed: no start message');
        ws.close(CLOSE.policy, reason);
        call.end(reason);
      },
      () => undefined,
    );
    const onStarted = (event: CallEvent): void => {
      if (event.type !== 'call.started') return;
      call.off('event', onStarted);
      this.pending.delete(call);
      waiting.abort();
    };
    call.on('event', onStarted);
    // An ended call leaves the registry at once, not when its socket has finished closing.
    call.once('ended', () => {
      waiting.abort();
      this.pending.delete(call);
      this.calls.delete(call);
    });
    for (const listener of this.callStarted) listener(call);

    const rate = new RateLimit(
      limits.maxMessagesPerSecond,
      (limits.maxMessagesPerSecond * RATE_BURST_MS) / 1000,
    );
    ws.on('message', (data: RawData, isBinary: boolean) => {
      if (!rate.take(performance.now())) {
        logger.warn({ callId: call.id, gateway: protocol.name }, 'connection closed: message flood');
        ws.close(CLOSE.policy, 'message rate too high');
        call.end('message flood');
        return;
      }
      call.onMessage(rawBytes(data), isBinary);
    });
    ws.on('error', (error) => {
      logger.warn({ callId: call.id, gateway: protocol.name, err: error.message }, 'media connection error');
    });
    ws.on('close', (code) => {
      call.end(`connection closed (${code})`);
    });
    call.once('ended', () => {
      if (ws.readyState === ws.OPEN) ws.close(CLOSE.normal, 'call ended');
    });
  }

  /**
   * Refuses new connections (shutting down) with 503; calls already connected go on. Answered, not just
   * left to other 'upgrade' listeners (the connection limit counts upgrades): none of them would.
   */
  stopAccepting(): void {
    if (!this.accepting) return;
    this.accepting = false;
    this.outbound?.close();
    this.options.server.off('upgrade', this.onUpgrade);
    this.options.server.on('upgrade', (_req: IncomingMessage, socket: Duplex) => {
      socket.on('error', () => undefined);
      reject(socket, 503, 'shutting down');
    });
  }

  /** Whether any call is speaking or has speech queued. */
  get speaking(): boolean {
    for (const call of this.calls) if (call.speaker?.audible || (call.speaker?.queued ?? 0) > 0) return true;
    return false;
  }

  /**
   * Hangs up every call the gateway's way (its REST API where call control can, its hang-up message
   * where it has one, the stream), each at most `SHUTDOWN_HANG_UP_MS` at the gateway, then closes.
   */
  async close(): Promise<void> {
    this.stopAccepting();
    const signal = AbortSignal.timeout(SHUTDOWN_HANG_UP_MS);
    await Promise.all(
      [...this.calls].map((call) =>
        call.hangup(undefined, { signal }).catch(() => call.end('server shutting down')),
      ),
    );
    for (const ws of this.wss.clients) ws.close(CLOSE.goingAway, 'server shutting down');
    await new Promise<void>((resolve) => this.wss.close(() => resolve()));
    for (const ws of this.wss.clients) ws.terminate();
  }
}
