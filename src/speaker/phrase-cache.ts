/** What decides a synthesized phrase's audio: the same key, the same request body. */
export interface PhraseKey {
  voiceId: string;
  modelId: string;
  voiceSettings?: object | undefined;
  text: string;
  outputFormat: string;
}

export interface PhraseCacheOptions {
  /** Bound on the audio held, all entries together (bytes). */
  maxBytes: number;
  /** Largest single entry stored (bytes); default maxBytes/4, so one long reply cannot flush every prompt. */
  maxEntryBytes?: number;
}

export interface PhraseCacheStats {
  hits: number;
  misses: number;
  evictions: number;
}

/** Recording of one response, see `PhraseCache.record`. */
export interface PhraseRecording {
  add(chunk: Uint8Array): void;
  commit(): void;
  abandon(): void;
}

interface Entry {
  readonly chunks: readonly Uint8Array[];
  readonly bytes: number;
}

/** JSON with object keys sorted at every level, so `{a, b}` and `{b, a}` serialize alike. */
function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}

/**
 * A bounded in-memory LRU cache of synthesized audio, so that repeated prompts ("Please hold", the
 * greeting) cost no request and start at once. Only complete responses are kept: a response cut by
 * barge-in or a failure would replay as truncated speech forever.
 *
 * The bound is on audio bytes; the keys (which hold the text) are not counted.
 */
export class PhraseCache {
  readonly stats: PhraseCacheStats = { hits: 0, misses: 0, evictions: 0 };
  private readonly maxBytes: number;
  private readonly maxEntryBytes: number;
  /** In use order, least recently used first (a Map iterates in insertion order). */
  private readonly map = new Map<string, Entry>();
  private bytes = 0;

  constructor(options: PhraseCacheOptions) {
    const { maxBytes } = options;
    if (!(Number.isFinite(maxBytes) && maxBytes >= 0))
      throw new RangeError(`maxBytes must be ≥ 0, got ${maxBytes}`);
    const maxEntryBytes = options.maxEntryBytes ?? Math.floor(maxBytes / 4);
    if (!(Number.isFinite(maxEntryBytes) && maxEntryBytes >= 0))
      throw new RangeError(`maxEntryBytes must be ≥ 0, got ${maxEntryBytes}`);
    this.maxBytes = maxBytes;
    this.maxEntryBytes = Math.min(maxEntryBytes, maxBytes);
  }

  /**
   * Stable key: the voice settings serialized with sorted keys (and, as on the wire, properties set to
   * undefined left out); absent and null settings are the same request.
   */
  static keyOf(key: PhraseKey): string {
    return canonicalJson([key.voiceId, key.modelId, key.outputFormat, key.voiceSettings ?? null, key.text]);
  }

  /** The phrase's audio chunks (not to be modified), and marks it most recently used. */
  get(key: PhraseKey): readonly Uint8Array[] | undefined {
    const k = PhraseCache.keyOf(key);
    const entry = this.map.get(k);
    if (!entry) {
      this.stats.misses++;
      return undefined;
    }
    this.map.delete(k);
    this.map.set(k, entry);
    this.stats.hits++;
    return entry.chunks;
  }

  /**
   * Starts recording a response; commit() stores it only if it completed and fits; abandon() drops it
   * (interrupted or failed responses are never cached). Chunks are copied on add, so the caller may
   * reuse its buffers. A response that outgrows maxEntryBytes stops being copied at once, and an empty
   * one is not stored. Calls after commit() or abandon() do nothing.
   */
  record(key: PhraseKey): PhraseRecording {
    const k = PhraseCache.keyOf(key);
    let chunks: Uint8Array[] | undefined = [];
    let bytes = 0;
    return {
      add: (chunk) => {
        if (!chunks || chunk.byteLength === 0) return;
        bytes += chunk.byteLength;
        if (bytes > this.maxEntryBytes)
          chunks = undefined; // never stored: keep no copy
        else chunks.push(new Uint8Array(chunk));
      },
      commit: () => {
        if (chunks && bytes > 0) this.store(k, { chunks: Object.freeze(chunks), bytes });
        chunks = undefined;
      },
      abandon: () => {
        chunks = undefined;
      },
    };
  }

  /** Audio bytes held. */
  get sizeBytes(): number {
    return this.bytes;
  }

  get entries(): number {
    return this.map.size;
  }

  private store(k: string, entry: Entry): void {
    const old = this.map.get(k);
    if (old) {
      this.map.delete(k);
      this.bytes -= old.bytes;
    }
    for (const [lruKey, lru] of this.map) {
      if (this.bytes + entry.bytes <= this.maxBytes) break;
      this.map.delete(lruKey);
      this.bytes -= lru.bytes;
      this.stats.evictions++;
    }
    this.map.set(k, entry);
    this.bytes += entry.bytes;
  }
}
