/**
 * The caller's audio as it arrived, chunk by chunk with the inbound time of each chunk's first unit
 * (a sample, or a byte of the line), kept a bounded while back: the turn recorder's decoded samples
 * and the line's own bytes for realtime speech-to-text.
 *
 * Bounded by units held as well as by time: a gateway's timestamps are the peer's to send, and audio
 * whose times go backwards (or stand still) must not be kept for ever. A chunk that claims a time
 * before the end of the last one is placed right after it.
 */
export interface TimedChunk<T> {
  readonly atMs: number;
  readonly data: T;
}

export class TimedChunks<T extends { readonly length: number }> {
  readonly #chunks: TimedChunk<T>[] = [];
  /** Units in the chunks. */
  #held = 0;
  /** Where the audio pushed so far ends (ms), once some was. */
  #endMs: number | undefined;

  /** `unitsPerMs`: samples (or bytes) of one millisecond. */
  constructor(private readonly unitsPerMs: number) {}

  /** Units held. */
  get held(): number {
    return this.#held;
  }

  /** Where the audio pushed so far ends (ms), once some was. */
  get endMs(): number | undefined {
    return this.#endMs;
  }

  /** The chunks kept, oldest first. */
  get chunks(): readonly TimedChunk<T>[] {
    return this.#chunks;
  }

  /** The next chunk (kept as given, not copied); what lies more than `keepMs` back is dropped. */
  push(data: T, atMs: number, keepMs: number): void {
    const at = this.#endMs === undefined || !(atMs < this.#endMs) ? atMs : this.#endMs;
    if (!Number.isFinite(at)) return;
    const chunks = this.#chunks;
    chunks.push({ atMs: at, data });
    this.#held += data.length;
    const end = at + data.length / this.unitsPerMs;
    this.#endMs = end;
    const keepUnits = keepMs * this.unitsPerMs;
    while (
      chunks.length > 1 &&
      (chunks[1]!.atMs <= end - keepMs || this.#held - chunks[0]!.data.length >= keepUnits)
    )
      this.#held -= chunks.shift()!.data.length;
  }
}
