/**
 * The speaker's sink for one phone call: 20 ms frames in, messages in the gateway's framing out, with
 * playout tracked from the gateway's marks (or a local clock where it has none).
 */
import { EventEmitter } from 'node:events';
import { Waiters } from '../../src/async/waiters.js';
import { FRAME_MS, frameBytes, silenceFrame, type WireFormat } from '../../src/audio/framer.js';
import type { Clock } from '../../src/speaker/clock.js';
import { PlayoutClock } from '../../src/speaker/playout-clock.js';
import type { AudioSink, SinkFrame } from '../../src/speaker/sink.js';
import type { GatewayProtocol, OutboundMessage, StreamInfo } from '../../src/protocols/types.js';

/** Where messages go: the call's WebSocket. `onSent` runs once the bytes left for the socket. */
export interface MediaTransport {
  send(message: OutboundMessage, onSent: (error?: Error) => void): void;
}

export interface PhoneSinkOptions {
  protocol: GatewayProtocol;
  stream: StreamInfo;
  transport: MediaTransport;
  clock: Clock;
  /** Audio kept ahead of real time at the gateway (ms). Default 200. */
  leadMs?: number;
  /** A mark every this much audio (ms), besides one at the end of each utterance. Default 200. */
  markIntervalMs?: number;
  /** Bytes handed to the socket and not yet written before `write()` waits. Default 64 KiB. */
  maxInFlightBytes?: number;
  /**
   * How long past the playout clock's estimate to wait for a mark before taking the audio as played
   * anyway (a gateway that lost the mark). Default 2000 ms.
   */
  markGraceMs?: number;
  /**
   * Frames the speaker releases at once; with more than 1, the frames written in one turn of the event
   * loop leave as one message where the gateway's framing allows it (one socket write, one JSON and
   * base64 encoding instead of several). Default 1: each frame is sent as it is written.
   */
  burstFrames?: number;
}

export type PlayoutOutcome = 'played' | 'cleared' | 'unknown';

export interface PhoneSinkEvents {
  /** One of our marks, resolved: the normalised playout event of every gateway. */
  playout: [{ name: string; positionMs: number; outcome: PlayoutOutcome }];
  /** A frame written, and the clock time it plays from (the playout clock's estimate): echo's reference. */
  frame: [{ payload: Uint8Array; playAtMs: number }];
  /** What was written and not played was dropped at this clock time. */
  cleared: [{ atMs: number }];
}

interface PendingMark {
  readonly name: string;
  readonly positionMs: number;
}

const DEFAULT_LEAD_MS = 200;
const DEFAULT_MARK_INTERVAL_MS = 200;
const DEFAULT_MAX_IN_FLIGHT_BYTES = 64 * 1024;
const DEFAULT_MARK_GRACE_MS = 2000;
/** Marks out at once at most: jambonz allows 30; a gateway that never returns them stops getting more. */
const MAX_OUTSTANDING_MARKS = 25;

export class PhoneSink extends EventEmitter<PhoneSinkEvents> implements AudioSink {
  readonly format: WireFormat;
  readonly frameMs = FRAME_MS;
  readonly leadMs: number;
  readonly selfPaced = false;
  readonly burstFrames: number;

  private readonly protocol: GatewayProtocol;
  private readonly stream: StreamInfo;
  private readonly transport: MediaTransport;
  readonly clock: Clock;
  private readonly playout: PlayoutClock;
  private readonly markIntervalMs: number;
  private readonly maxInFlightBytes: number;
  private readonly markGraceMs: number;
  private readonly frameSize: number;
  private readonly silence: number;
  /** Frames waiting to fill one message (the gateway's minimum, or a multiple of its frame size). */
  private pending: Uint8Array;
  private pendingBytes = 0;
  /** Frames of an epoch below this were cleared: dropped wherever they are found. */
  private minEpoch = 0;
  private lastEpoch = 0;
  private inFlightBytes = 0;
  private paused = false;
  private closed = false;
  /** Writers held back (paused, socket full) and `whenPlayed()` calls waiting for a mark. */
  private readonly waiters = new Waiters();
  private marks: PendingMark[] = [];
  private markSeq = 0;
  private sentMs = 0;
  private lastMarkMs = 0;
  /** The furthest position a mark confirmed as played. */
  private ackedMs = 0;
  /** A send of the frames written in this turn of the event loop is scheduled. */
  private sendScheduled = false;
  /** That send: one function for the sink's life, not a closure per burst. */
  private readonly sendBurst = (): void => {
    this.sendScheduled = false;
    if (!this.closed) this.sendComplete(false);
  };

  constructor(options: PhoneSinkOptions) {
    super();
    this.protocol = options.protocol;
    this.stream = options.stream;
    this.transport = options.transport;
    this.clock = options.clock;
    this.format = options.stream.outbound;
    this.leadMs = options.leadMs ?? DEFAULT_LEAD_MS;
    this.markIntervalMs = options.markIntervalMs ?? DEFAULT_MARK_INTERVAL_MS;
    this.maxInFlightBytes = options.maxInFlightBytes ?? DEFAULT_MAX_IN_FLIGHT_BYTES;
    this.markGraceMs = options.markGraceMs ?? DEFAULT_MARK_GRACE_MS;
    this.burstFrames = options.burstFrames ?? 1;
    if (!(Number.isInteger(this.burstFrames) && this.burstFrames >= 1))
      throw new RangeError(`burstFrames must be a whole number ≥ 1, got ${this.burstFrames}`);
    this.playout = new PlayoutClock(options.clock);
    this.frameSize = frameBytes(this.format, FRAME_MS);
    this.silence = silenceFrame(this.format, FRAME_MS)[0]!;
    const { framing } = options.stream;
    if (framing.minBytes > framing.maxBytes || framing.multipleOfBytes <= 0)
      throw new RangeError(`impossible framing ${JSON.stringify(framing)}`);
    this.pending = new Uint8Array(Math.max(framing.minBytes, this.frameSize) + framing.multipleOfBytes);
  }

  async write(frame: SinkFrame): Promise<void> {
    if (this.closed || frame.epoch < this.minEpoch) return;
    this.lastEpoch = Math.max(this.lastEpoch, frame.epoch);
    while ((this.paused || this.inFlightBytes > this.maxInFlightBytes) && !this.closed)
      await this.waiters.wait();
    if (this.closed || frame.epoch < this.minEpoch) return;
    this.append(frame.payload);
    if (this.listenerCount('frame') > 0) {
      const now = this.clock.now();
      const playAtMs = now + Math.max(0, this.playout.writtenMs() - this.playout.playedMs());
      this.emit('frame', { payload: frame.payload, playAtMs });
    }
    this.playout.onWrite(this.frameMs);
    if (this.burstFrames === 1) this.sendComplete(false);
    else if (!this.sendScheduled) {
      this.sendScheduled = true;
      setImmediate(this.sendBurst);
    }
  }

  flush(): void {
    if (this.closed) return;
    this.sendComplete(true);
    this.mark();
  }

  clear(): void {
    if (this.closed) return;
    this.minEpoch = this.lastEpoch + 1;
    this.pendingBytes = 0;
    this.send(this.protocol.encodeClear(this.stream));
    this.playout.onClear();
    this.emit('cleared', { atMs: this.clock.now() });
    this.sentMs = this.playout.writtenMs();
    this.lastMarkMs = this.sentMs;
    // Marks not yet returned will not be played: some gateways echo them on a clear (Twilio), some drop
    // them silently (Asterisk); either way they are resolved here, and late echoes are ignored.
    for (const m of this.marks) this.emit('playout', { ...m, outcome: 'cleared' });
    this.marks = [];
    this.ackedMs = Math.min(this.ackedMs, this.sentMs);
    this.waiters.wakeAll();
  }

  writtenMs(): number {
    return this.playout.writtenMs();
  }

  playedMs(): number {
    return this.playout.playedMs();
  }

  async whenPlayed(positionMs: number, signal?: AbortSignal): Promise<void> {
    await this.playout.whenPlayed(positionMs, signal);
    if (!this.protocol.playoutAcks) return;
    // The clock says so; with marks, wait for the mark too, or a grace period if the gateway lost it.
    const deadline = this.clock.now() + this.markGraceMs;
    while (!this.closed && this.ackedMs < positionMs && positionMs <= this.playout.writtenMs()) {
      if (this.clock.now() >= deadline) return;
      await this.waiters.waitOr((woken) => this.clock.sleepUntil(deadline, woken), signal);
    }
  }

  /** A mark came back from the gateway. */
  onMark(name: string, outcome: 'played' | 'cleared' | undefined): void {
    const i = this.marks.findIndex((m) => m.name === name);
    if (i < 0) return; // resolved already (cleared), or not ours
    // Marks return in order: any earlier one still pending has played too.
    const done = this.marks.splice(0, i + 1);
    for (const m of done) {
      const result: PlayoutOutcome = outcome === 'cleared' && m.name === name ? 'cleared' : 'played';
      if (result === 'played') this.ackedMs = Math.max(this.ackedMs, m.positionMs);
      this.emit('playout', { ...m, outcome: result });
    }
    if (outcome !== 'cleared') this.playout.onAck(this.ackedMs);
    this.waiters.wakeAll();
  }

  /** Asterisk's MEDIA_XOFF / MEDIA_XON. */
  setPaused(paused: boolean): void {
    this.paused = paused;
    if (!paused) this.waiters.wakeAll();
  }

  /** The call ended: marks still out are unknown, writers stop waiting. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const m of this.marks) this.emit('playout', { ...m, outcome: 'unknown' });
    this.marks = [];
    this.waiters.wakeAll();
  }

  private append(payload: Uint8Array): void {
    if (this.pendingBytes + payload.length > this.pending.length) {
      const bigger = new Uint8Array((this.pendingBytes + payload.length) * 2);
      bigger.set(this.pending.subarray(0, this.pendingBytes));
      this.pending = bigger;
    }
    this.pending.set(payload, this.pendingBytes);
    this.pendingBytes += payload.length;
  }

  /**
   * Sends the frames held back as messages the gateway accepts: whole multiples of its unit, at least
   * its minimum, at most its maximum. With `pad`, the rest is padded with silence (end of utterance),
   * and the padding counts on the timeline: the gateway plays it.
   */
  private sendComplete(pad: boolean): void {
    const { minBytes, multipleOfBytes, maxBytes, exact } = this.stream.framing;
    const largest = exact ? minBytes : maxBytes - (maxBytes % multipleOfBytes);
    let offset = 0;
    while (offset < this.pendingBytes) {
      const available = this.pendingBytes - offset;
      const size = Math.min(largest, available - (available % multipleOfBytes));
      if (size >= minBytes) {
        this.sendMedia(this.pending.slice(offset, offset + size), size);
        offset += size;
        continue;
      }
      if (pad) {
        const padded = new Uint8Array(
          Math.max(minBytes, Math.ceil(available / multipleOfBytes) * multipleOfBytes),
        );
        padded.fill(this.silence);
        padded.set(this.pending.subarray(offset, this.pendingBytes));
        this.playout.onWrite(((padded.length - available) / this.frameSize) * this.frameMs);
        this.sendMedia(padded, padded.length);
        offset = this.pendingBytes;
      }
      break;
    }
    if (offset > 0) {
      this.pending.copyWithin(0, offset, this.pendingBytes);
      this.pendingBytes -= offset;
    }
  }

  private sendMedia(payload: Uint8Array, bytes: number): void {
    this.send(this.protocol.encodeMedia(payload, this.stream));
    this.sentMs += (bytes / this.frameSize) * this.frameMs;
    if (this.sentMs - this.lastMarkMs >= this.markIntervalMs) this.mark();
  }

  private mark(): void {
    if (!this.protocol.playoutAcks || this.sentMs <= this.lastMarkMs) return;
    if (this.marks.length >= MAX_OUTSTANDING_MARKS) return;
    const name = `m${++this.markSeq}`;
    const message = this.protocol.encodeMark(name, this.stream);
    if (message === undefined) return;
    this.marks.push({ name, positionMs: this.sentMs });
    this.lastMarkMs = this.sentMs;
    this.send(message);
  }

  private send(message: OutboundMessage): void {
    const bytes = typeof message === 'string' ? message.length : message.byteLength;
    this.inFlightBytes += bytes;
    this.transport.send(message, () => {
      this.inFlightBytes -= bytes;
      if (this.inFlightBytes <= this.maxInFlightBytes) this.waiters.wakeAll();
    });
  }
}
