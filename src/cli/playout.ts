/**
 * The softphone's playout, as a phone gateway does it: the bot's audio plays at real time (silence
 * when there is none, so a recording keeps the call's timeline), a mark comes back once the audio
 * before it has played (at once when nothing is queued), and a clear drops what is queued and returns
 * every pending mark (Twilio's rules).
 */

export interface PlayoutOptions {
  /** Bytes per ms of the codec (mu-law 8 kHz: 8). */
  bytesPerMs: number;
  /** The byte silence is made of (mu-law: 0xff). */
  silence: number;
  /** What played in the last tick, audio and silence, in order. */
  onPlay: (bytes: Uint8Array) => void;
  /** A mark whose audio has played (or was cleared). */
  onMark: (name: string) => void;
  /** ms; performance.now() by default. */
  now?: () => number;
}

type Item = { kind: 'audio'; bytes: Uint8Array; offset: number } | { kind: 'mark'; name: string };

const TICK_MS = 20;

export class Playout {
  readonly #o: PlayoutOptions;
  readonly #now: () => number;
  #queue: Item[] = [];
  #startedAt: number | undefined;
  /** Bytes played since the start, silence included: the call's timeline. */
  #position = 0;
  #audioPlayed = 0;
  /** When the queue last ran out of audio, after some had played; undefined while audio is queued. */
  #quietSince: number | undefined;
  #timer: NodeJS.Timeout | undefined;

  constructor(options: PlayoutOptions) {
    this.#o = options;
    this.#now = options.now ?? (() => performance.now());
  }

  /** Starts the clock; with `timer`, ticks on its own every 20 ms. */
  start(timer = true): void {
    this.#startedAt = this.#now();
    if (timer) this.#timer = setInterval(() => this.tick(), TICK_MS);
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  audio(bytes: Uint8Array): void {
    if (bytes.length === 0) return;
    this.tick();
    this.#queue.push({ kind: 'audio', bytes, offset: 0 });
    this.#quietSince = undefined;
  }

  mark(name: string): void {
    this.#queue.push({ kind: 'mark', name });
    this.tick();
  }

  /** Drops the queued audio; every pending mark comes back. */
  clear(): void {
    this.tick();
    const marks = this.#queue.filter((i): i is Extract<Item, { kind: 'mark' }> => i.kind === 'mark');
    const hadAudio = this.#queue.some((i) => i.kind === 'audio');
    this.#queue = [];
    if (hadAudio && this.#audioPlayed > 0) this.#quietSince = this.#now();
    for (const m of marks) this.#o.onMark(m.name);
  }

  /** Milliseconds of the bot's audio played so far (silence not counted). */
  get audioPlayedMs(): number {
    return this.#audioPlayed / this.#o.bytesPerMs;
  }

  /** Milliseconds of the call's timeline played so far. */
  get positionMs(): number {
    return this.#position / this.#o.bytesPerMs;
  }

  /** How long the bot has been quiet after speaking (0 while it speaks, or before it ever spoke). */
  quietForMs(): number {
    return this.#quietSince === undefined ? 0 : this.#now() - this.#quietSince;
  }

  /** Plays what is due by now. */
  tick(): void {
    if (this.#startedAt === undefined) return;
    const now = this.#now();
    const due = Math.floor((now - this.#startedAt) * this.#o.bytesPerMs) - this.#position;
    let budget = Math.max(0, due);
    const out: Uint8Array[] = [];
    for (let head = this.#queue[0]; head !== undefined; head = this.#queue[0]) {
      if (head.kind === 'mark') {
        this.#queue.shift();
        this.#o.onMark(head.name);
        continue;
      }
      if (budget === 0) break;
      const take = Math.min(budget, head.bytes.length - head.offset);
      out.push(head.bytes.subarray(head.offset, head.offset + take));
      head.offset += take;
      budget -= take;
      this.#audioPlayed += take;
      if (head.offset === head.bytes.length) this.#queue.shift();
    }
    if (budget > 0) out.push(new Uint8Array(budget).fill(this.#o.silence));
    this.#position += Math.max(0, due);
    const drained = !this.#queue.some((i) => i.kind === 'audio');
    if (drained && this.#quietSince === undefined && this.#audioPlayed > 0) this.#quietSince = now;
    if (out.length === 1) this.#o.onPlay(out[0]!);
    else if (out.length > 1) this.#o.onPlay(Buffer.concat(out));
  }
}
