/**
 * The far end of a phone gateway as the tests need it: audio received is buffered and played at real
 * time, marks are returned when the audio before them has played (at once when nothing is buffered), a
 * clear drops the buffer and returns every pending mark. Records what played and when.
 */

export interface PlayedFrame {
  /** performance.now() when it played. */
  at: number;
  bytes: Uint8Array;
}

type Item = { kind: 'audio'; bytes: Uint8Array; ms: number } | { kind: 'mark'; name: string };

const TICK_MS = 5;

export class GatewayPlayout {
  readonly played: PlayedFrame[] = [];
  /** Times the buffer ran dry between two pieces of audio, and for how long (ms). */
  readonly gaps: number[] = [];
  private queue: Item[] = [];
  private budgetMs = 0;
  private last = performance.now();
  private dryAt: number | undefined;
  private readonly timer: NodeJS.Timeout;

  /**
   * @param bytesPerMs bytes of the outbound codec per ms of audio.
   * @param onMark returns a mark to the server; `cleared` when a clear dropped it.
   */
  constructor(
    private readonly bytesPerMs: number,
    private readonly onMark: (name: string, cleared: boolean) => void,
  ) {
    this.timer = setInterval(() => this.tick(), TICK_MS);
  }

  audio(bytes: Uint8Array): void {
    this.queue.push({ kind: 'audio', bytes, ms: bytes.length / this.bytesPerMs });
    this.tick();
  }

  mark(name: string): void {
    this.queue.push({ kind: 'mark', name });
    this.tick();
  }

  clear(): void {
    const pending = this.queue.filter((i): i is Extract<Item, { kind: 'mark' }> => i.kind === 'mark');
    this.queue = [];
    this.budgetMs = 0;
    this.dryAt = undefined;
    for (const m of pending) this.onMark(m.name, true);
  }

  /** Milliseconds of audio buffered, not yet played. */
  get bufferedMs(): number {
    return this.queue.reduce((n, i) => n + (i.kind === 'audio' ? i.ms : 0), 0);
  }

  get playedMs(): number {
    return this.played.reduce((n, f) => n + f.bytes.length / this.bytesPerMs, 0);
  }

  /**
   * Where playout is at this instant (ms): `playedMs` plus the part of the message now playing. A
   * message counts in `played` only once all of it has played, which for big messages (Exotel: at
   * least 200 ms) lags the listener by up to a message.
   */
  get positionMs(): number {
    this.tick();
    const head = this.queue[0];
    return this.playedMs + (head?.kind === 'audio' ? Math.min(this.budgetMs, head.ms) : 0);
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private tick(): void {
    const now = performance.now();
    this.budgetMs += now - this.last;
    this.last = now;
    for (;;) {
      const head = this.queue[0];
      if (!head) {
        // Dry: playout restarts from the next audio, with no credit for the idle time.
        this.budgetMs = 0;
        this.dryAt ??= now;
        return;
      }
      if (head.kind === 'mark') {
        this.queue.shift();
        this.onMark(head.name, false);
        continue;
      }
      if (this.dryAt !== undefined) {
        if (this.played.length > 0) this.gaps.push(now - this.dryAt);
        this.dryAt = undefined;
      }
      if (this.budgetMs < head.ms) return;
      this.budgetMs -= head.ms;
      this.queue.shift();
      this.played.push({ at: now, bytes: head.bytes });
    }
  }
}
