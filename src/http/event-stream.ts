/**
 * A server-sent event stream to one subscriber, with a bound on what may wait for it.
 *
 * `res.write` queues whatever the client does not read, without limit: 50 subscribers that never read,
 * 300 long utterances, and the process grows by gigabytes. Here a subscriber whose unsent bytes pass
 * `maxBufferedBytes` is dropped: it gets one last `stream.overflow` event (the reconnect point is in
 * `Last-Event-ID`/`?after=` of the stream that replays), its connection ends, and if it does not read even
 * that within `drainTimeoutMs` the socket is destroyed. A keep-alive comment keeps proxies from closing a
 * quiet stream.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

export interface EventStreamOptions {
  /** Bytes that may wait for a slow subscriber before it is dropped. */
  readonly maxBufferedBytes: number;
  readonly keepaliveMs: number;
  /** How long a dropped or finished subscriber may take to read its last bytes. */
  readonly drainTimeoutMs?: number;
}

export const DEFAULT_EVENT_STREAM: EventStreamOptions = {
  maxBufferedBytes: 1024 * 1024,
  keepaliveMs: 15_000,
  drainTimeoutMs: 5000,
};

export class EventStream {
  private closed = false;
  private readonly keepalive: NodeJS.Timeout;
  private readonly onClose = new Set<() => void>();

  constructor(
    req: IncomingMessage,
    private readonly res: ServerResponse,
    private readonly options: EventStreamOptions = DEFAULT_EVENT_STREAM,
  ) {
    res.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      'x-content-type-options': 'nosniff',
    });
    this.keepalive = setInterval(() => this.write(': keepalive\n\n'), options.keepaliveMs);
    this.keepalive.unref();
    req.once('close', () => this.close());
    res.once('close', () => this.close());
  }

  /** Whether the stream still delivers (not ended, not dropped). */
  get open(): boolean {
    return !this.closed;
  }

  /** Runs `listener` once when the stream ends, whoever ends it. */
  whenClosed(listener: () => void): void {
    if (this.closed) listener();
    else this.onClose.add(listener);
  }

  /** One event; `id` becomes the client's `Last-Event-ID`. False once the stream is closed. */
  send(event: string, data: unknown, id?: number): boolean {
    const head = id === undefined ? '' : `id: ${id}\n`;
    return this.write(`${head}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  }

  /** Ends the stream after what is queued. */
  close(): void {
    this.finish(undefined);
  }

  private write(text: string): boolean {
    if (this.closed) return false;
    if (this.res.writableLength + Buffer.byteLength(text) > this.options.maxBufferedBytes) {
      this.finish(
        `event: stream.overflow\ndata: ${JSON.stringify({
          reason: 'the subscriber fell behind',
          max_buffered_bytes: this.options.maxBufferedBytes,
        })}\n\n`,
      );
      return false;
    }
    this.res.write(text);
    return true;
  }

  private finish(last: string | undefined): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.keepalive);
    for (const listener of this.onClose) listener();
    this.onClose.clear();
    if (this.res.destroyed) return;
    this.res.end(last);
    // A subscriber that reads nothing never takes even the last bytes: free its buffer anyway.
    const drain = setTimeout(() => this.res.destroy(), this.options.drainTimeoutMs ?? 5000);
    drain.unref();
    this.res.once('close', () => clearTimeout(drain));
  }
}
