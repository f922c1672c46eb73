import type { CharacterAlignment } from '../speech/alignment.js';

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
 * whole audio with its character timings (`encodeShared`). Both calls must be quick and never throw: a
 * slow or failed lookup is a miss.
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
  /** Segments played from a rendition at the sink's rate, with no resampling. */
  rendered: number;
}

/** A phrase from the shared store is replayed in chunks of this many bytes (100 ms of 24 kHz s16le). */
const SHARED_CHUNK_BYTES = 4800;

/** Recording of one response, see `PhraseCache.record`. */
export interface PhraseRecording {
  add(chunk: Uint8Array): void;
  /** The response is complete: keep it, with its character timings when it had them. */
  commit(alignment?: CharacterAlignment): void;
  abandon(): void;
  /** After `commit`, the phrase as the cache holds it (undefined when it was not kept). */
  readonly committed: CachedPhrase | undefined;
}

/** A phrase as the cache gives it back: its chunks (not to be modified) and timings, if any. */
export interface CachedPhrase {
  /** `PhraseCache.keyOf` its request. */
  readonly key: string;
  readonly chunks: readonly Uint8Array[];
  /** The chunks' bytes, all together. */
  readonly audioBytes: number;
  readonly alignment?: CharacterAlignment | undefined;
}

interface Entry extends CachedPhrase {
  /** The audio and its renditions, as counted against the bound. */
  bytes: number;
  /** The audio resampled for a sink, by rate and channels ("8000/1"): see `keepRendition`. */
  renditions?: Map<string, Int16Array>;
}

/** Marks a value of the shared store: the format below, version 1. */
const SHARED_MAGIC = 0x31_41_58_56; // "VXA1" read little-endian
/** Bytes before a shared value's timings: magic, then the timings' JSON length (u32 LE). */
const SHARED_HEADER = 8;

/** A phrase as the shared store keeps it: header, timings as JSON (may be empty), then the audio. */
export function encodeShared(audio: Uint8Array, alignment: CharacterAlignment | undefined): Uint8Array {
  const json = alignment
    ? new TextEncoder().encode(
        JSON.stringify({ c: alignment.characters, s: alignment.startMs, e: alignment.endMs }),
      )
    : new Uint8Array(0);
  const out = new Uint8Array(SHARED_HEADER + json.byteLength + audio.byteLength);
  const view = new DataView(out.buffer);
  view.setUint32(0, SHARED_MAGIC, true);
  view.setUint32(4, json.byteLength, true);
  out.set(json, SHARED_HEADER);
  out.set(audio, SHARED_HEADER + json.byteLength);
  return out;
}

/** The reverse of `encodeShared`; undefined for anything it did not write (or audio of odd length). */
export function decodeShared(
  value: Uint8Array,
): { audio: Uint8Array; alignment: CharacterAlignment | undefined } | undefined {
  if (value.byteLength < SHARED_HEADER) return undefined;
  const view = new DataView(value.buffer, value.byteOffset, value.byteLength);
  if (view.getUint32(0, true) !== SHARED_MAGIC) return undefined;
  const jsonLength = view.getUint32(4, true);
  const audioAt = SHARED_HEADER + jsonLength;
  const audio = value.subarray(audioAt);
  if (audioAt > value.byteLength || audio.byteLength === 0 || audio.byteLength % 2 !== 0) return undefined;
  if (jsonLength === 0) return { audio, alignment: undefined };
  try {
    const parsed = JSON.parse(new TextDecoder().decode(value.subarray(SHARED_HEADER, audioAt))) as {
      c?: unknown;
      s?: unknown;
      e?: unknown;
    };
    const strings = (x: unknown): x is string[] => Array.isArray(x) && x.every((v) => typeof v === 'string');
    const numbers = (x: unknown): x is number[] => Array.isArray(x) && x.every((v) => Number.isFinite(v));
    const { c, s, e } = parsed;
    if (!strings(c) || !numbers(s) || !numbers(e) || s.length !== c.length || e.length !== c.length)
      return undefined;
    return { audio, alignment: { characters: c, startMs: s, endMs: e } };
  } catch {
    return undefined;
  }
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
  readonly stats: PhraseCacheStats = {
    hits: 0,
    misses: 0,
    evictions: 0,
    sharedHits: 0,
    sharedMisses: 0,
    rendered: 0,
  };
  private readonly shared: SharedPhraseStore | undefined;
  private readonly maxBytes: number;
  /** Largest single entry stored, renditions included (bytes). */
  readonly maxEntryBytes: number;
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

  /** The phrase (its chunks not to be modified), and marks it most recently used. */
  get(key: PhraseKey): CachedPhrase | undefined {
    const k = PhraseCache.keyOf(key);
    const entry = this.map.get(k);
    if (!entry) {
      this.stats.misses++;
      return undefined;
    }
    this.map.delete(k);
    this.map.set(k, entry);
    this.stats.hits++;
    return entry;
  }

  /**
   * `get`, then the shared store on a miss (a phrase found there is kept in memory too). Without a
   * shared store it answers as `get` does, with no wait.
   */
  async lookup(key: PhraseKey): Promise<CachedPhrase | undefined> {
    const found = this.get(key);
    if (found || !this.shared) return found;
    const k = PhraseCache.keyOf(key);
    const value = await this.shared.get(k);
    // Only what a PhraseCache wrote: whole samples, timings that parse.
    const decoded = value && decodeShared(value);
    if (!decoded) {
      this.stats.sharedMisses++;
      return undefined;
    }
    this.stats.sharedHits++;
    const { audio, alignment } = decoded;
    const replay: Uint8Array[] = [];
    for (let at = 0; at < audio.byteLength; at += SHARED_CHUNK_BYTES)
      replay.push(audio.slice(at, Math.min(at + SHARED_CHUNK_BYTES, audio.byteLength)));
    const entry: Entry = {
      key: k,
      chunks: Object.freeze(replay),
      audioBytes: audio.byteLength,
      bytes: audio.byteLength,
      alignment,
    };
    if (audio.byteLength <= this.maxEntryBytes) this.store(k, entry);
    return entry;
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
    let committed: Entry | undefined;
    return {
      get committed() {
        return committed;
      },
      add: (chunk) => {
        if (!chunks || chunk.byteLength === 0) return;
        bytes += chunk.byteLength;
        if (bytes > this.maxEntryBytes)
          chunks = undefined; // never stored: keep no copy
        else chunks.push(new Uint8Array(chunk));
      },
      commit: (alignment) => {
        if (chunks && bytes > 0) {
          committed = { key: k, chunks: Object.freeze(chunks), audioBytes: bytes, bytes, alignment };
          this.store(k, committed);
          if (this.shared) {
            const value = encodeShared(Buffer.concat(chunks, bytes), alignment);
            if (value.byteLength <= this.shared.maxEntryBytes) this.shared.put(k, value);
          }
        }
        chunks = undefined;
      },
      abandon: () => {
        chunks = undefined;
      },
    };
  }

  /**
   * The phrase's audio as a sink of `format` ("rate/channels") takes it, resampled once
   * (`keepRendition`): a prompt played on many calls is resampled once, not on each.
   */
  rendition(phrase: CachedPhrase, format: string): Int16Array | undefined {
    const samples = (phrase as Entry).renditions?.get(format);
    if (samples) this.stats.rendered++;
    return samples;
  }

  /**
   * Keeps `samples`, the phrase's audio resampled on its own for a sink of `format`, beside it: only
   * while the cache holds that same phrase (not a later recording of the same request, whose audio may
   * differ), and only if the phrase with its renditions stays within `maxEntryBytes`. Counted against
   * the bound, and evicted with the phrase.
   */
  keepRendition(phrase: CachedPhrase, format: string, samples: Int16Array): void {
    const entry = this.map.get(phrase.key);
    if (entry !== phrase || entry.renditions?.has(format)) return;
    if (entry.bytes + samples.byteLength > this.maxEntryBytes) return;
    // Out and back in as the most recent, with its new size: the least used others make room.
    this.map.delete(entry.key);
    this.bytes -= entry.bytes;
    entry.bytes += samples.byteLength;
    (entry.renditions ??= new Map()).set(format, samples);
    this.store(entry.key, entry);
  }

  /** Audio bytes held, renditions included. */
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
