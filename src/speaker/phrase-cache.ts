/** What decides a synthesized phrase's audio: the same key, the same request body. */
export interface PhraseKey {
  voiceId: string;
  modelId: string;
  voiceSettings?: object | undefined;
  text: string;
  outputFormat: string;
}

/**
 * A second tier behind the in-memory cache, shared by several processes (Redis, in a cluster): what
 * one synthesized, the others replay. Keys are `PhraseCache.keyOf` strings; values are the phrase's
 * whole audio. Both calls must be quick and never throw: a slow or failed lookup is a miss.
 */
export interface SharedPhraseStore {
  /** Larger phrases are not offered to `put`. */
  readonly maxEntryBytes: number;
  get(key: string): Promise<Uint8Array | undefined>;
  put(key: string, audio: Uint8Array): void;
}

export interface PhraseCacheOptions {
  /** Bound on the audio held, all entries together (bytes). */
  maxBytes: number;
  /** Largest single entry stored (bytes); default maxBytes/4, so one long reply cannot flush every prompt. */
  maxEntryBytes?: number;
  shared?: SharedPhraseStore | undefined;
}

export interface PhraseCacheStats {
  hits: number;
  misses: number;
  evictions: number;
  /** Misses of the memory tier that the shared store answered, and those it did not. */
  sharedHits: number;
  sharedMisses: number;
}

/** A phrase from the shared store is replayed in chunks of this many bytes (100 ms of 24 kHz s16le). */
const SHARED_CHUNK_BYTES = 4800;

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

function concat(chunks: readonly Uint8Array[], bytes: number): Uint8Array {
  const out = new Uint8Array(bytes);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
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
  readonly stats: PhraseCacheStats = { hits: 0, misses: 0, evictions: 0, sharedHits: 0, sharedMisses: 0 };
  private readonly shared: SharedPhraseStore | undefined;
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
    this.shared = options.shared;
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
   * `get`, then the shared store on a miss (a phrase found there is kept in memory too). Without a
   * shared store it answers as `get` does, with no wait.
   */
  async lookup(key: PhraseKey): Promise<readonly Uint8Array[] | undefined> {
    const chunks = this.get(key);
    if (chunks || !this.shared) return chunks;
    const k = PhraseCache.keyOf(key);
    const audio = await this.shared.get(k);
    // Whole samples only: anything else was not written by a PhraseCache.
    if (!audio || audio.byteLength === 0 || audio.byteLength % 2 !== 0) {
      this.stats.sharedMisses++;
      return undefined;
    }
    this.stats.sharedHits++;
    const replay: Uint8Array[] = [];
    for (let at = 0; at < audio.byteLength; at += SHARED_CHUNK_BYTES)
      replay.push(audio.slice(at, Math.min(at + SHARED_CHUNK_BYTES, audio.byteLength)));
    if (audio.byteLength <= this.maxEntryBytes)
      this.store(k, { chunks: Object.freeze(replay), bytes: audio.byteLength });
    return replay;
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
        if (chunks && bytes > 0) {
          this.store(k, { chunks: Object.freeze(chunks), bytes });
          if (this.shared && bytes <= this.shared.maxEntryBytes) this.shared.put(k, concat(chunks, bytes));
        }
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
