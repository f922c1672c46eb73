/**
 * (Over 400 lines: one protocol peer, whose handshake checks, message checks, script, faults and
 * records share each session's state.)
 *
 * A fake ElevenLabs realtime speech-to-text service on loopback, speaking `GET
 * {prefix}/v1/speech-to-text/realtime` over a real `ws` server, written from ElevenLabs' docs and its
 * official SDK (@elevenlabs/elevenlabs-js 2.73, `wrapper/realtime`):
 *
 * - The handshake: the path; the key in `xi-api-key`, or a single-use `token` in the query (consumed);
 *   a wrong or missing one gets 401 with ElevenLabs' error body, quoting the key back as some servers
 *   do (or, with `authFailure: 'message'`, an `auth_error` message and a close).
 * - The query: `model_id` required and known, `audio_format` one of the SDK's seven (default
 *   `pcm_16000`), `commit_strategy` `manual` | `vad`, the VAD settings within the SDK's ranges, booleans
 *   as `true`/`false`, `language_code` a language tag. A bad one gets `invalid_request` and a close
 *   (the docs: "the connection parameters were rejected; the session closes").
 * - Then `session_started` {session_id, config (the settings echoed)}.
 * - Each `input_audio_chunk` is checked (JSON, `audio_base_64` valid base64, `commit` a boolean,
 *   `sample_rate` the format's when sent, `previous_text` only on the first chunk) and its audio
 *   decoded and kept as received (μ-law bytes stay μ-law). A bad one gets `input_error` (one over
 *   `maxChunkBytes`, `chunk_size_exceeded`), and the session goes on.
 * - `partial_transcript` {text} after every `partialEveryMs` of new audio, and per commit
 *   `committed_transcript` {text}, then, with `include_timestamps=true`,
 *   `committed_transcript_with_timestamps` {text, language_code, words} with the words spread over the
 *   segment's audio (times in seconds from the session's first sample). The text comes from the test's
 *   `transcribe` (the segment's audio so far → text), every answer `latencyMs` after what caused it, on
 *   the injected clock, in order.
 *
 * Left out: `commit_strategy=vad` is accepted and echoed, but the fake never commits by itself; the
 * options the SDK can send for features voxbridge does not use (keyterms, entity detection,
 * transcript edits, language detection) are accepted and ignored.
 *
 * `failNext(at, fault)` gives the next session a fault: at its start (instead of `session_started`),
 * at a commit (instead of its transcript) or once some audio has come: a close frame, a dropped
 * socket, an error message, raw bytes (malformed or oversized), or silence.
 */
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import { rawText } from '../src/http/ws-data.js';
import { systemClock, type Clock } from '../src/speaker/clock.js';
import { fakeTranscript } from './fake-stt.js';
import { fakeSecret } from './secrets.js';

export const FAKE_REALTIME_PATH = '/v1/speech-to-text/realtime';
export const FAKE_REALTIME_KEY = fakeSecret('fake-realtime-stt-key');
export const FAKE_REALTIME_MODELS: readonly string[] = ['scribe_v2_realtime'];
export const DEFAULT_FAKE_REALTIME_TEXT = 'Hello from the fake realtime transcriber.';
/** Scribe v2 Realtime's advertised latency. */
export const DEFAULT_FAKE_REALTIME_LATENCY_MS = 150;
/** The default script reveals one word a this much audio. */
const DEFAULT_MS_PER_WORD = 300;
const DEFAULT_MAX_CHUNK_BYTES = 256 * 1024;
const DEFAULT_MAX_MESSAGE_BYTES = 2 * 1024 * 1024;

/** The SDK's `AudioFormat` values: rate, and bytes of a millisecond. */
export const FAKE_REALTIME_FORMATS: Readonly<Record<string, { sampleRate: number; bytesPerMs: number }>> = {
  pcm_8000: { sampleRate: 8000, bytesPerMs: 16 },
  pcm_16000: { sampleRate: 16_000, bytesPerMs: 32 },
  pcm_22050: { sampleRate: 22_050, bytesPerMs: 44.1 },
  pcm_24000: { sampleRate: 24_000, bytesPerMs: 48 },
  pcm_44100: { sampleRate: 44_100, bytesPerMs: 88.2 },
  pcm_48000: { sampleRate: 48_000, bytesPerMs: 96 },
  ulaw_8000: { sampleRate: 8000, bytesPerMs: 8 },
};

/** The SDK's ranges for the VAD settings. */
const NUMBER_PARAMS: Readonly<Record<string, readonly [number, number]>> = {
  vad_silence_threshold_secs: [0.3, 3],
  vad_threshold: [0.1, 0.9],
  min_speech_duration_ms: [50, 2000],
  min_silence_duration_ms: [50, 2000],
};
const BOOLEAN_PARAMS = [
  'include_timestamps',
  'include_language_detection',
  'enable_logging',
  'no_verbatim',
  'filter_background_audio',
];
const LANGUAGE_TAG = /^[A-Za-z]{2,3}(?:-[A-Za-z0-9]{1,8})*$/;

/** What `transcribe` is given: one segment (the audio since the last commit) so far. */
export interface FakeRealtimeSegment {
  readonly sessionIndex: number;
  /** 0-based: the commit that ends (or will end) this segment. */
  readonly commitIndex: number;
  readonly audioFormat: string;
  readonly sampleRate: number;
  /** The segment's audio as received, decoded from base64 (μ-law bytes, or s16le). */
  readonly audio: Uint8Array;
  readonly audioMs: number;
  /** Where the segment starts in the session's audio (ms). */
  readonly startMs: number;
  /** True for the commit's transcript, false for a partial. */
  readonly final: boolean;
  readonly languageCode: string | undefined;
  readonly previousText: string | undefined;
}

export type FakeRealtimeFault =
  /** A close frame (default 1011). */
  | { readonly kind: 'close'; readonly code?: number; readonly reason?: string }
  /** The TCP socket destroyed: no close frame. */
  | { readonly kind: 'drop' }
  /** `{message_type, error}`, then (unless `close: false`) a close frame 1008. */
  | { readonly kind: 'error'; readonly messageType: string; readonly error: string; readonly close?: boolean }
  /** These bytes, as a text message (or a binary one). */
  | { readonly kind: 'raw'; readonly data: string | Buffer; readonly binary?: boolean }
  /** Nothing: no `session_started`, or no answer to the commit. */
  | { readonly kind: 'silent' };

/** When a fault strikes: instead of `session_started`, instead of a commit's answer, or after some audio. */
export type FakeRealtimeFaultAt = 'start' | 'commit' | { readonly afterAudioMs: number };

export interface FakeRealtimeChunk {
  readonly audio: Uint8Array;
  readonly commit: boolean;
  readonly sampleRate: number | undefined;
  readonly previousText: string | undefined;
}

export interface FakeRealtimeRecord {
  readonly index: number;
  readonly path: string;
  /** The query as received, without `token`. */
  readonly query: Readonly<Record<string, string[]>>;
  /** As received, without `xi-api-key`. */
  readonly headers: IncomingHttpHeaders;
  readonly authorizedBy: 'xi-api-key' | 'token' | undefined;
  readonly chunks: FakeRealtimeChunk[];
  /** Every message the fake sent, parsed back (raw faults as `{raw}`). */
  readonly sent: Array<Record<string, unknown>>;
  /** Messages of the client's that were refused, with why. */
  readonly refused: string[];
  commits: number;
  closed: { readonly by: 'client' | 'server'; readonly code: number } | undefined;
}

export interface FakeRealtimeOptions {
  /** The key accepted in `xi-api-key`. Default `FAKE_REALTIME_KEY`. */
  apiKey?: string;
  /** Single-use tokens accepted in `?token=` (each once). */
  tokens?: readonly string[];
  /** In front of `/v1/speech-to-text/realtime`. Default `''`. */
  pathPrefix?: string;
  /** `model_id`s accepted. Default `FAKE_REALTIME_MODELS`. */
  models?: readonly string[];
  /** The text of a segment so far. Default: `DEFAULT_FAKE_REALTIME_TEXT`, a word per 300 ms, whole at the commit. */
  transcribe?: (segment: FakeRealtimeSegment) => string;
  /** Between what the client sent and the answer to it. Default 150 ms. */
  latencyMs?: number;
  /** The latency's clock. Default: the system's. */
  clock?: Clock;
  /** A partial after every this much new audio (ms); 0: no partials. Default 200. */
  partialEveryMs?: number;
  /** A chunk's decoded audio over this gets `chunk_size_exceeded`. Default 256 KiB. */
  maxChunkBytes?: number;
  /** The largest message the fake reads (the socket's `maxPayload`). Default 2 MiB. */
  maxMessageBytes?: number;
  /** A wrong key: `http` 401 on the handshake (default), or `message`: `auth_error` and a close. */
  authFailure?: 'http' | 'message';
}

function defaultTranscribe(segment: FakeRealtimeSegment): string {
  const words = DEFAULT_FAKE_REALTIME_TEXT.split(' ');
  if (segment.audioMs === 0) return '';
  if (segment.final) return DEFAULT_FAKE_REALTIME_TEXT;
  return words.slice(0, Math.floor(segment.audioMs / DEFAULT_MS_PER_WORD)).join(' ');
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Base64 as the service would read it: only the alphabet, padded to whole groups. */
function decodeBase64(text: string): Buffer | undefined {
  if (text.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(text)) return undefined;
  return Buffer.from(text, 'base64');
}

function refuseHandshake(socket: Socket, status: number, code: string, message: string): void {
  const body = JSON.stringify({ detail: { status: code, message } });
  socket.end(
    `HTTP/1.1 ${status} ${status === 401 ? 'Unauthorized' : 'Not Found'}\r\n` +
      `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` +
      `connection: close\r\n\r\n${body}`,
  );
}

/** The settings of a query, checked; a string says what is wrong. */
function readQuery(url: URL, models: readonly string[]): Record<string, unknown> | string {
  const q = url.searchParams;
  const modelId = q.get('model_id');
  if (modelId === null) return 'model_id is required';
  if (!models.includes(modelId)) return `unknown model_id "${modelId}"`;
  const audioFormat = q.get('audio_format') ?? 'pcm_16000';
  const format = FAKE_REALTIME_FORMATS[audioFormat];
  if (format === undefined) return `unsupported audio_format "${audioFormat}"`;
  const commitStrategy = q.get('commit_strategy') ?? 'manual';
  if (commitStrategy !== 'manual' && commitStrategy !== 'vad')
    return `commit_strategy must be manual or vad, not "${commitStrategy}"`;
  const languageCode = q.get('language_code');
  if (languageCode !== null && !LANGUAGE_TAG.test(languageCode))
    return 'language_code is not a language code';
  const config: Record<string, unknown> = {
    sample_rate: format.sampleRate,
    audio_format: audioFormat,
    language_code: languageCode,
    model_id: modelId,
    commit_strategy: commitStrategy,
  };
  for (const [name, [min, max]] of Object.entries(NUMBER_PARAMS)) {
    const value = q.get(name);
    if (value === null) continue;
    const n = Number(value);
    if (value.trim() === '' || !Number.isFinite(n) || n < min || n > max)
      return `${name} must be between ${min} and ${max}`;
    config[name] = n;
  }
  for (const name of BOOLEAN_PARAMS) {
    const value = q.get(name);
    if (value !== null && value !== 'true' && value !== 'false') return `${name} must be true or false`;
  }
  config['enable_logging'] = q.get('enable_logging') !== 'false';
  config['include_timestamps'] = q.get('include_timestamps') === 'true';
  config['include_language_detection'] = q.get('include_language_detection') === 'true';
  return config;
}

interface Live {
  readonly ws: WebSocket;
  readonly record: FakeRealtimeRecord;
  readonly config: Record<string, unknown>;
  readonly format: { sampleRate: number; bytesPerMs: number };
  readonly faults: Array<{ at: FakeRealtimeFaultAt; fault: FakeRealtimeFault }>;
  /** The current segment's audio. */
  segment: Buffer[];
  segmentBytes: number;
  /** Audio of the session before the current segment (bytes). */
  doneBytes: number;
  sinceLastPartialBytes: number;
  lastPartial: string;
  previousText: string | undefined;
  /** The last answer queued: each answer is sent after it, so answers keep their order. */
  chain: Promise<void>;
  readonly ended: AbortController;
}

export class FakeRealtimeStt {
  readonly sessions: FakeRealtimeRecord[] = [];
  readonly apiKey: string;
  readonly #server: Server;
  readonly #wss: WebSocketServer;
  readonly #path: string;
  readonly #tokens: Set<string>;
  readonly #models: readonly string[];
  readonly #transcribe: (segment: FakeRealtimeSegment) => string;
  readonly #latencyMs: number;
  readonly #clock: Clock;
  readonly #partialEveryMs: number;
  readonly #maxChunkBytes: number;
  readonly #authFailure: 'http' | 'message';
  readonly #nextFaults: Array<{ at: FakeRealtimeFaultAt; fault: FakeRealtimeFault }> = [];
  readonly #live = new Set<Live>();

  private constructor(server: Server, options: FakeRealtimeOptions) {
    this.#server = server;
    this.apiKey = options.apiKey ?? FAKE_REALTIME_KEY;
    this.#path = (options.pathPrefix ?? '').replace(/\/+$/, '') + FAKE_REALTIME_PATH;
    this.#tokens = new Set(options.tokens ?? []);
    this.#models = options.models ?? FAKE_REALTIME_MODELS;
    this.#transcribe = options.transcribe ?? defaultTranscribe;
    this.#latencyMs = options.latencyMs ?? DEFAULT_FAKE_REALTIME_LATENCY_MS;
    this.#clock = options.clock ?? systemClock;
    this.#partialEveryMs = options.partialEveryMs ?? 200;
    this.#maxChunkBytes = options.maxChunkBytes ?? DEFAULT_MAX_CHUNK_BYTES;
    this.#authFailure = options.authFailure ?? 'http';
    this.#wss = new WebSocketServer({
      noServer: true,
      maxPayload: options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES,
    });
    server.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) =>
      this.#upgrade(req, socket, head),
    );
  }

  static async start(options: FakeRealtimeOptions = {}): Promise<FakeRealtimeStt> {
    const server = createServer((_req, res) => {
      res.writeHead(426, { 'content-type': 'text/plain' }).end('a WebSocket upgrade is expected');
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    return new FakeRealtimeStt(server, options);
  }

  /** `http://127.0.0.1:port`: a client's base URL (the SDK's `baseUrl`) when the fake has no prefix. */
  get url(): string {
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  /** Sockets open now. */
  get openSockets(): number {
    return this.#live.size;
  }

  /** The next session opened gets `fault` at `at` (several calls queue several faults for it). */
  failNext(at: FakeRealtimeFaultAt, fault: FakeRealtimeFault): void {
    this.#nextFaults.push({ at, fault });
  }

  /** Waits (on real time: it waits for sockets, not for a clock) until `predicate` holds. */
  async waitFor(predicate: () => boolean, what = 'condition', timeoutMs = 5_000): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    while (!predicate()) {
      if (performance.now() > deadline)
        throw new Error(`fake realtime STT: no ${what} within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 2));
    }
  }

  async close(): Promise<void> {
    for (const live of this.#live) live.ws.terminate();
    this.#wss.close();
    this.#server.closeAllConnections();
    await new Promise<void>((r) => this.#server.close(() => r()));
  }

  #upgrade(req: IncomingMessage, socket: Socket, head: Buffer): void {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (url.pathname !== this.#path) {
      refuseHandshake(socket, 404, 'not_found', `no ${url.pathname} here`);
      return;
    }
    const key = req.headers['xi-api-key'];
    const token = url.searchParams.get('token');
    let authorizedBy: FakeRealtimeRecord['authorizedBy'];
    if (typeof key === 'string' && key === this.apiKey) authorizedBy = 'xi-api-key';
    else if (token !== null && this.#tokens.delete(token)) authorizedBy = 'token';
    if (authorizedBy === undefined && this.#authFailure === 'http') {
      const said = typeof key === 'string' ? `Invalid API key "${key}"` : 'Missing API key or token';
      refuseHandshake(socket, 401, 'invalid_api_key', said);
      return;
    }
    this.#wss.handleUpgrade(req, socket, head, (ws) => this.#open(ws, req, url, authorizedBy));
  }

  #open(
    ws: WebSocket,
    req: IncomingMessage,
    url: URL,
    authorizedBy: FakeRealtimeRecord['authorizedBy'],
  ): void {
    const headers = { ...req.headers };
    delete headers['xi-api-key'];
    const query: Record<string, string[]> = {};
    for (const [name, value] of url.searchParams) if (name !== 'token') (query[name] ??= []).push(value);
    const record: FakeRealtimeRecord = {
      index: this.sessions.length,
      path: url.pathname,
      query,
      headers,
      authorizedBy,
      chunks: [],
      sent: [],
      refused: [],
      commits: 0,
      closed: undefined,
    };
    this.sessions.push(record);
    const settings = readQuery(url, this.#models);
    const config = typeof settings === 'string' ? {} : settings;
    const live: Live = {
      ws,
      record,
      config,
      format: FAKE_REALTIME_FORMATS[String(config['audio_format'])] ?? { sampleRate: 16_000, bytesPerMs: 32 },
      faults: this.#nextFaults.splice(0),
      segment: [],
      segmentBytes: 0,
      doneBytes: 0,
      sinceLastPartialBytes: 0,
      lastPartial: '',
      previousText: undefined,
      chain: Promise.resolve(),
      ended: new AbortController(),
    };
    this.#live.add(live);
    ws.on('close', (code) => {
      record.closed ??= { by: 'client', code };
      live.ended.abort();
      this.#live.delete(live);
    });
    ws.on('error', () => undefined);
    if (authorizedBy === undefined) {
      this.#sendNow(live, { message_type: 'auth_error', error: 'Invalid API key or token' });
      this.#closeNow(live, 1008, 'auth_error');
      return;
    }
    if (typeof settings === 'string') {
      this.#sendNow(live, { message_type: 'invalid_request', error: settings });
      this.#closeNow(live, 1008, 'invalid_request');
      return;
    }
    ws.on('message', (data, isBinary) => this.#onMessage(live, data, isBinary));
    const fault = this.#takeFault(live, 'start');
    this.#later(live, () =>
      fault
        ? this.#strike(live, fault)
        : this.#sendNow(live, {
            message_type: 'session_started',
            session_id: `fake${String(record.index).padStart(28, '0')}`,
            config,
          }),
    );
  }

  #takeFault(live: Live, at: 'start' | 'commit' | number): FakeRealtimeFault | undefined {
    const i = live.faults.findIndex((f) =>
      typeof at === 'number' ? typeof f.at === 'object' && f.at.afterAudioMs <= at : f.at === at,
    );
    return i < 0 ? undefined : live.faults.splice(i, 1)[0]!.fault;
  }

  /** Runs `send` `latencyMs` from now, after every answer queued before it. */
  #later(live: Live, send: () => void): void {
    const slept = this.#clock.sleepUntil(this.#clock.now() + this.#latencyMs, live.ended.signal);
    live.chain = Promise.all([live.chain, slept]).then(
      () => {
        if (!live.ended.signal.aborted) send();
      },
      () => undefined,
    );
  }

  #sendNow(live: Live, message: Record<string, unknown>): void {
    live.record.sent.push(message);
    live.ws.send(JSON.stringify(message));
  }

  #closeNow(live: Live, code: number, reason: string): void {
    live.record.closed ??= { by: 'server', code };
    live.ws.close(code, reason);
  }

  #strike(live: Live, fault: FakeRealtimeFault): void {
    switch (fault.kind) {
      case 'close':
        return this.#closeNow(live, fault.code ?? 1011, fault.reason ?? 'fault');
      case 'drop':
        live.record.closed ??= { by: 'server', code: 1006 };
        live.ws.terminate();
        return;
      case 'error':
        this.#sendNow(live, { message_type: fault.messageType, error: fault.error });
        if (fault.close !== false) this.#closeNow(live, 1008, fault.messageType);
        return;
      case 'raw':
        live.record.sent.push({ raw: fault.data });
        live.ws.send(fault.data, { binary: fault.binary ?? false });
        return;
      case 'silent':
        return;
    }
  }

  /** A client message refused: `input_error` (or another kind) with why, and the session goes on. */
  #refuse(live: Live, why: string, kind = 'input_error'): void {
    live.record.refused.push(why);
    this.#later(live, () => this.#sendNow(live, { message_type: kind, error: why }));
  }

  #segment(live: Live, final: boolean): FakeRealtimeSegment {
    const audio = Buffer.concat(live.segment, live.segmentBytes);
    return {
      sessionIndex: live.record.index,
      commitIndex: live.record.commits,
      audioFormat: String(live.config['audio_format']),
      sampleRate: live.format.sampleRate,
      audio,
      audioMs: audio.byteLength / live.format.bytesPerMs,
      startMs: live.doneBytes / live.format.bytesPerMs,
      final,
      languageCode:
        typeof live.config['language_code'] === 'string' ? live.config['language_code'] : undefined,
      previousText: live.previousText,
    };
  }

  #onMessage(live: Live, data: RawData, isBinary: boolean): void {
    if (isBinary) return this.#refuse(live, 'binary messages are not part of this API');
    let message: unknown;
    try {
      message = JSON.parse(rawText(data));
    } catch {
      return this.#refuse(live, 'a message is not JSON');
    }
    if (!isRecord(message) || message['message_type'] !== 'input_audio_chunk')
      return this.#refuse(live, 'message_type must be input_audio_chunk');
    const base64 = message['audio_base_64'];
    const audio = typeof base64 === 'string' ? decodeBase64(base64) : undefined;
    if (audio === undefined) return this.#refuse(live, 'audio_base_64 must be base64');
    const commit = message['commit'];
    if (typeof commit !== 'boolean') return this.#refuse(live, 'commit must be a boolean');
    const sampleRate = message['sample_rate'];
    if (sampleRate !== undefined && sampleRate !== live.format.sampleRate)
      return this.#refuse(live, `sample_rate ${JSON.stringify(sampleRate)} is not ${live.format.sampleRate}`);
    const previousText = message['previous_text'];
    if (previousText !== undefined) {
      if (typeof previousText !== 'string') return this.#refuse(live, 'previous_text must be a string');
      if (live.record.chunks.length > 0)
        return this.#refuse(live, 'previous_text can only be sent with the first audio chunk');
      live.previousText = previousText;
    }
    if (audio.byteLength > this.#maxChunkBytes)
      return this.#refuse(live, `chunk of ${audio.byteLength} bytes`, 'chunk_size_exceeded');
    live.record.chunks.push({
      audio,
      commit,
      sampleRate: typeof sampleRate === 'number' ? sampleRate : undefined,
      previousText: typeof previousText === 'string' ? previousText : undefined,
    });
    if (audio.byteLength > 0) this.#onAudio(live, audio);
    if (commit) this.#onCommit(live);
  }

  #onAudio(live: Live, audio: Buffer): void {
    live.segment.push(audio);
    live.segmentBytes += audio.byteLength;
    live.sinceLastPartialBytes += audio.byteLength;
    const totalMs = (live.doneBytes + live.segmentBytes) / live.format.bytesPerMs;
    const fault = this.#takeFault(live, totalMs);
    if (fault) {
      this.#later(live, () => this.#strike(live, fault));
      return;
    }
    const every = this.#partialEveryMs * live.format.bytesPerMs;
    if (every <= 0 || live.sinceLastPartialBytes < every) return;
    live.sinceLastPartialBytes = 0;
    const text = this.#transcribe(this.#segment(live, false));
    if (text === '' || text === live.lastPartial) return;
    live.lastPartial = text;
    this.#later(live, () => this.#sendNow(live, { message_type: 'partial_transcript', text }));
  }

  #onCommit(live: Live): void {
    const segment = this.#segment(live, true);
    live.record.commits++;
    live.doneBytes += live.segmentBytes;
    live.segment = [];
    live.segmentBytes = 0;
    live.sinceLastPartialBytes = 0;
    live.lastPartial = '';
    const fault = this.#takeFault(live, 'commit');
    if (fault) {
      this.#later(live, () => this.#strike(live, fault));
      return;
    }
    const text = this.#transcribe(segment);
    const withTimestamps = live.config['include_timestamps'] === true;
    this.#later(live, () => {
      this.#sendNow(live, { message_type: 'committed_transcript', text });
      if (!withTimestamps) return;
      const timed = fakeTranscript(text, segment.audioMs, segment.languageCode ?? 'en');
      const offset = (s: unknown): number =>
        Math.round(((s as number) + segment.startMs / 1000) * 1000) / 1000;
      const words = (timed['words'] as Array<Record<string, unknown>>).map((w) => ({
        ...w,
        start: offset(w['start']),
        end: offset(w['end']),
      }));
      this.#sendNow(live, {
        message_type: 'committed_transcript_with_timestamps',
        text,
        language_code: segment.languageCode ?? 'en',
        words,
      });
    });
  }
}
