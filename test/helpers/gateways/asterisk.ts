/**
 * A fake Asterisk `chan_websocket` channel, written from Asterisk's WebSocket channel-driver docs and
 * channels/chan_websocket.c: binary messages are media in the channel's codec, both ways, with no
 * header; text messages are control, plain text (`MEDIA_START connection_id:… format:ulaw
 * optimal_frame_size:160`, the default) or JSON (`f(json)`, with `channel_variables`), and commands
 * must come in the same format. The caller's audio comes as one `optimal_frame_size` frame every 20 ms
 * (ptime); keys as `DTMF_END`. Media sent to it is cut into `optimal_frame_size` frames (leftovers are
 * dropped: a violation here) and must be at most 65 500 bytes a message (more hangs up the call); its
 * queue holds about 1000 frames. Commands: `FLUSH_MEDIA` drops the queue, queued marks with it and
 * without a word; `MARK_MEDIA <id>` comes back as `MEDIA_MARK_PROCESSED <id>` when the frames before it
 * have played (20.18/22.8/23.2 and later; older versions ignore it, `marks: false`); `HANGUP` hangs up
 * and closes the socket. Text commands are at most 128 bytes (longer ones are ignored). There is no
 * stop message: the socket closes.
 */
import { randomUUID } from 'node:crypto';
import { FakeGateway, asString, type FakeGatewayOptions } from './fake-gateway.js';

export type AsteriskFormat = 'ulaw' | 'alaw' | 'slin' | 'slin16' | 'slin24';

export interface AsteriskOptions extends FakeGatewayOptions {
  format?: AsteriskFormat;
  /** Control messages: plain text (default) or JSON (`f(json)`). */
  control?: 'text' | 'json';
  /**
   * The plain-text MEDIA_START of 20.16 (`connection_id channel format optimal_frame_size`), without
   * `channel_id` and `ptime`.
   */
  legacyStart?: boolean;
  /** Whether this version answers MARK_MEDIA (20.18/22.8/23.2 and later). Default true. */
  marks?: boolean;
  /** Channel variables, sent in the JSON MEDIA_START only. */
  channelVariables?: Record<string, string>;
}

/** optimal_frame_size = ptime × minimum_bytes / minimum_ms of the codec: 20 ms. */
const FRAME_BYTES: Readonly<Record<AsteriskFormat, number>> = {
  ulaw: 160,
  alaw: 160,
  slin: 320,
  slin16: 640,
  slin24: 960,
};
const PTIME_MS = 20;
const MAX_MESSAGE_BYTES = 65_500;
const MAX_QUEUE_FRAMES = 1000;
const MAX_TEXT_BYTES = 128;
const COMMANDS = new Set([
  'ANSWER',
  'HANGUP',
  'START_MEDIA_BUFFERING',
  'STOP_MEDIA_BUFFERING',
  'MARK_MEDIA',
  'FLUSH_MEDIA',
  'GET_STATUS',
  'REPORT_QUEUE_DRAINED',
  'PAUSE_MEDIA',
  'CONTINUE_MEDIA',
]);

export class FakeAsterisk extends FakeGateway {
  readonly callId: string;
  readonly streamId: string;
  /** The channel's uniqueid (`channel_id`); not sent in 20.16's plain-text MEDIA_START. */
  readonly channelId: string;
  readonly optimalFrameSize: number;
  private readonly options: AsteriskOptions;
  private readonly format: AsteriskFormat;

  constructor(url: string, options: AsteriskOptions = {}) {
    const format = options.format ?? 'ulaw';
    const frame = FRAME_BYTES[format];
    const bytesPerMs = frame / PTIME_MS;
    const silence = format === 'ulaw' ? 0xff : format === 'alaw' ? 0xd5 : 0;
    const codec = { inboundBytesPerMs: bytesPerMs, inboundChunkBytes: frame, inboundSilence: silence };
    super(url, { ...codec, outboundBytesPerMs: bytesPerMs }, options);
    this.options = options;
    this.format = format;
    this.optimalFrameSize = frame;
    this.streamId = randomUUID();
    this.channelId = `pbx1-${Date.now()}.${Math.floor(Math.random() * 1e6)}`;
    this.callId = options.legacyStart ? this.streamId : this.channelId;
  }

  dtmf(digit: string): void {
    this.control(
      { event: 'DTMF_END', channel_id: this.channelId, digit },
      `DTMF_END digit:${digit} channel_id:${this.channelId}`,
    );
  }

  protected sendStart(): void {
    const { streamId, channelId, format, optimalFrameSize } = this;
    const channel = `WebSocket/INCOMING-${channelId}`;
    if (this.options.control === 'json') {
      const variables = this.options.channelVariables ?? {};
      this.send({
        event: 'MEDIA_START',
        connection_id: streamId,
        channel,
        channel_id: channelId,
        format,
        optimal_frame_size: optimalFrameSize,
        ptime: PTIME_MS,
        channel_variables: variables,
      });
      return;
    }
    const legacy = this.options.legacyStart;
    this.sendRaw(
      legacy
        ? `MEDIA_START connection_id:${streamId} channel:${channel} format:${format} optimal_frame_size:${optimalFrameSize}`
        : `MEDIA_START connection_id:${streamId} channel:${channel} channel_id:${channelId} format:${format} optimal_frame_size:${optimalFrameSize} ptime:${PTIME_MS}`,
    );
  }

  protected sendMedia(payload: Uint8Array): void {
    this.sendRaw(payload);
  }

  protected returnMark(name: string, cleared: boolean): boolean {
    if (cleared) return false; // FLUSH_MEDIA drops queued marks silently
    this.control(
      { event: 'MEDIA_MARK_PROCESSED', channel_id: this.channelId, correlation_id: name },
      `MEDIA_MARK_PROCESSED ${name}`,
    );
    return true;
  }

  protected override onBinary(data: Uint8Array, at: number): void {
    const frame = this.optimalFrameSize;
    if (data.length === 0 || data.length % frame !== 0)
      this.violation(`binary of ${data.length} bytes (not a multiple of optimal_frame_size ${frame})`);
    if (data.length > MAX_MESSAGE_BYTES) {
      this.violation(`binary of ${data.length} bytes (over 65 500: Asterisk hangs up)`);
      this.ws.close();
      return;
    }
    if (this.playout.bufferedMs / PTIME_MS + data.length / frame > MAX_QUEUE_FRAMES)
      this.violation('more than 1000 frames queued');
    this.gotMedia(data, at);
  }

  protected onText(text: string, at: number): void {
    if (Buffer.byteLength(text) > MAX_TEXT_BYTES) {
      this.violation(`command of ${Buffer.byteLength(text)} bytes (Asterisk ignores over 128)`);
      return;
    }
    const parsed = this.command(text.trim());
    if (!parsed) return;
    const { command, id } = parsed;
    if (!COMMANDS.has(command)) {
      this.violation(`unknown command ${command}`);
      return;
    }
    if (command === 'FLUSH_MEDIA') this.gotClear(at);
    else if (command === 'MARK_MEDIA' && this.options.marks !== false) {
      if (!id) this.violation('MARK_MEDIA without an id');
      this.gotMark(id ?? '', at);
    } else if (command === 'HANGUP') {
      this.received.push({ at, event: 'hangup' });
      this.ws.close();
    } else this.received.push({ at, event: 'control', name: command });
  }

  /** A command in the call's control format; the other format is a violation (Asterisk answers ERROR). */
  private command(text: string): { command: string; id: string | undefined } | undefined {
    if (this.options.control === 'json') {
      const msg = this.json(text);
      const command = asString(msg?.['command']);
      if (msg && command === undefined) this.violation(`JSON command without a command: ${text}`);
      return command === undefined ? undefined : { command, id: asString(msg?.['correlation_id']) };
    }
    if (text.startsWith('{')) {
      this.violation(`JSON command to a plain-text channel: ${text}`);
      return undefined;
    }
    const [command = '', ...rest] = text.split(' ');
    return { command, id: rest.length > 0 ? rest.join(' ') : undefined };
  }

  /** An event in the call's control format. */
  private control(json: Record<string, string>, plain: string): void {
    if (this.options.control === 'json') this.send(json);
    else this.sendRaw(plain);
  }
}
