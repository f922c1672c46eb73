import { describe, expect, it } from 'vitest';
import {
  decodeShared,
  encodeShared,
  PhraseCache,
  type PhraseKey,
} from '../../../src/speaker/phrase-cache.js';

/** Where a shared value's timings JSON begins (after the 8-byte header). */
const SHARED_JSON_AT = 8;

const key = (text: string, extra: Partial<PhraseKey> = {}): PhraseKey => ({
  voiceId: 'v1',
  modelId: 'm1',
  text,
  outputFormat: 'pcm_24000',
  ...extra,
});

/** Records a complete response of `sizes` bytes (each chunk filled with its index). */
function store(cache: PhraseCache, k: PhraseKey, ...sizes: number[]): void {
  const rec = cache.record(k);
  sizes.forEach((n, i) => rec.add(new Uint8Array(n).fill(i + 1)));
  rec.commit();
}

describe('PhraseCache', () => {
  it('counts hits and misses, and returns what was recorded', () => {
    const cache = new PhraseCache({ maxBytes: 1000 });
    expect(cache.get(key('hello'))).toBeUndefined();
    store(cache, key('hello'), 10, 20);
    const chunks = cache.get(key('hello'))?.chunks;
    expect(chunks?.map((c) => [c.byteLength, c[0]])).toEqual([
      [10, 1],
      [20, 2],
    ]);
    expect(cache.get(key('hello', { voiceId: 'v2' }))).toBeUndefined();
    expect(cache.get(key('hello', { outputFormat: 'wav_24000' }))).toBeUndefined();
    expect(cache.stats).toEqual({
      hits: 1,
      misses: 3,
      evictions: 0,
      sharedHits: 0,
      sharedMisses: 0,
      rendered: 0,
    });
    expect(cache.sizeBytes).toBe(30);
    expect(cache.entries).toBe(1);
  });

  it('evicts the least recently used entries first, until the new one fits', () => {
    const cache = new PhraseCache({ maxBytes: 300, maxEntryBytes: 300 });
    store(cache, key('a'), 100);
    store(cache, key('b'), 100);
    store(cache, key('c'), 100);
    cache.get(key('a')); // now b is the least recently used
    store(cache, key('d'), 100);
    expect(cache.get(key('b'))).toBeUndefined();
    expect(cache.get(key('a'))).toBeDefined();
    expect(cache.stats.evictions).toBe(1);
    // Needs two slots: c and d (least recently used now) go.
    store(cache, key('e'), 200);
    expect(['a', 'c', 'd', 'e'].map((t) => cache.get(key(t)) !== undefined)).toEqual([
      true,
      false,
      false,
      true,
    ]);
    expect(cache.stats.evictions).toBe(3);
    expect(cache.sizeBytes).toBe(300);
  });

  it('never holds more than maxBytes', () => {
    const cache = new PhraseCache({ maxBytes: 1000, maxEntryBytes: 400 });
    let seed = 1;
    for (let i = 0; i < 500; i++) {
      seed = (seed * 16807) % 2147483647;
      const text = `phrase ${seed % 40}`;
      if (seed % 3 === 0) cache.get(key(text));
      else store(cache, key(text), 1 + (seed % 150), 1 + ((seed >> 8) % 300));
      expect(cache.sizeBytes).toBeLessThanOrEqual(1000);
    }
    expect(cache.stats.evictions).toBeGreaterThan(0);
  });

  it('replacing an entry frees its old size', () => {
    const cache = new PhraseCache({ maxBytes: 1000 });
    store(cache, key('a'), 200);
    store(cache, key('a'), 50);
    expect(cache.sizeBytes).toBe(50);
    expect(cache.entries).toBe(1);
    expect(cache.stats.evictions).toBe(0);
  });

  it('never stores an entry over maxEntryBytes, and evicts nothing for it', () => {
    const cache = new PhraseCache({ maxBytes: 1000 });
    store(cache, key('a'), 200);
    store(cache, key('b'), 200);
    store(cache, key('long'), 200, 51); // 251 > 1000 / 4
    expect(cache.get(key('long'))).toBeUndefined();
    expect(cache.entries).toBe(2);
    expect(cache.sizeBytes).toBe(400);
    expect(cache.stats.evictions).toBe(0);
    store(cache, key('edge'), 250);
    expect(cache.get(key('edge'))).toBeDefined();
    // An entry limit above maxBytes is capped by it.
    const small = new PhraseCache({ maxBytes: 100, maxEntryBytes: 500 });
    store(small, key('x'), 101);
    expect(small.entries).toBe(0);
  });

  it('keeps nothing of an abandoned, uncommitted or empty recording', () => {
    const cache = new PhraseCache({ maxBytes: 1000 });
    const rec = cache.record(key('cut'));
    rec.add(new Uint8Array(10));
    rec.abandon();
    rec.commit();
    expect(cache.get(key('cut'))).toBeUndefined();
    cache.record(key('pending')).add(new Uint8Array(10));
    expect(cache.get(key('pending'))).toBeUndefined();
    store(cache, key('empty'));
    expect(cache.get(key('empty'))).toBeUndefined();
    expect(cache.entries).toBe(0);
    // Calls after commit do nothing.
    const done = cache.record(key('done'));
    done.add(new Uint8Array(4));
    done.commit();
    done.add(new Uint8Array(4));
    done.abandon();
    expect(cache.get(key('done'))?.chunks.length).toBe(1);
  });

  it('keeps a rendition beside the phrase it came from, counted against the bounds and evicted with it', () => {
    const cache = new PhraseCache({ maxBytes: 1000, maxEntryBytes: 400 });
    store(cache, key('prompt'), 200);
    const phrase = cache.get(key('prompt'))!;
    expect(phrase.audioBytes).toBe(200);
    expect(cache.rendition(phrase, '8000/1')).toBeUndefined();
    const at8k = new Int16Array(34).fill(3);
    cache.keepRendition(phrase, '8000/1', at8k);
    expect(cache.rendition(phrase, '8000/1')).toBe(at8k);
    expect(cache.rendition(phrase, '48000/2')).toBeUndefined();
    expect(cache.stats.rendered).toBe(1);
    expect(cache.sizeBytes).toBe(268);
    // The first one kept stays; one that would take the phrase over maxEntryBytes is not kept.
    cache.keepRendition(phrase, '8000/1', new Int16Array(10));
    cache.keepRendition(phrase, '48000/2', new Int16Array(67));
    expect(cache.rendition(phrase, '8000/1')).toBe(at8k);
    expect(cache.rendition(phrase, '48000/2')).toBeUndefined();
    cache.keepRendition(phrase, '48000/2', new Int16Array(66));
    expect(cache.sizeBytes).toBe(400);
    // Room is made for it as for a phrase: the least recently used others go.
    store(cache, key('other'), 300);
    store(cache, key('third'), 301);
    expect(cache.get(key('prompt'))).toBeUndefined();
    expect(cache.sizeBytes).toBe(601);
    // Evicted, the phrase takes no rendition any more.
    cache.keepRendition(phrase, '16000/1', new Int16Array(2));
    expect(cache.sizeBytes).toBe(601);
  });

  it('keeps no rendition for a phrase recorded again since (its audio may differ)', () => {
    const cache = new PhraseCache({ maxBytes: 1000 });
    const first = cache.record(key('prompt'));
    first.add(new Uint8Array(100).fill(1));
    first.commit();
    const old = first.committed!;
    expect(old.chunks[0]![0]).toBe(1);
    store(cache, key('prompt'), 120);
    cache.keepRendition(old, '8000/1', new Int16Array(17));
    const now = cache.get(key('prompt'))!;
    expect(now).not.toBe(old);
    expect(cache.rendition(now, '8000/1')).toBeUndefined();
    expect(cache.sizeBytes).toBe(120);
    // A recording not kept (over the bound) commits to nothing.
    const long = cache.record(key('long'));
    long.add(new Uint8Array(300));
    long.commit();
    expect(long.committed).toBeUndefined();
  });

  it('copies chunks on add, so the caller may reuse its buffer', () => {
    const cache = new PhraseCache({ maxBytes: 1000 });
    const pool = Buffer.alloc(64);
    const rec = cache.record(key('reuse'));
    pool.fill(7);
    rec.add(pool.subarray(8, 24));
    pool.fill(9);
    rec.add(pool.subarray(0, 8));
    pool.fill(0);
    rec.commit();
    const { chunks } = cache.get(key('reuse'))!;
    expect(chunks.map((c) => [c.byteLength, c[0]])).toEqual([
      [16, 7],
      [8, 9],
    ]);
    expect(chunks[0]!.buffer.byteLength).toBe(16); // its own memory, not a view of the pool
    expect(Object.isFrozen(chunks)).toBe(true);
  });

  it('makes stable keys: settings in any key order, null and undefined alike', () => {
    const a = PhraseCache.keyOf(
      key('hi', { voiceSettings: { stability: 0.5, similarity_boost: 0.75, speed: 1 } }),
    );
    const b = PhraseCache.keyOf(
      key('hi', { voiceSettings: { speed: 1, similarity_boost: 0.75, stability: 0.5 } }),
    );
    expect(a).toBe(b);
    const none = PhraseCache.keyOf(key('hi'));
    expect(PhraseCache.keyOf(key('hi', { voiceSettings: undefined }))).toBe(none);
    expect(PhraseCache.keyOf({ ...key('hi'), voiceSettings: null as unknown as object })).toBe(none);
    // Not sent on the wire, so not part of the key.
    expect(PhraseCache.keyOf(key('hi', { voiceSettings: { speed: 1, style: undefined } }))).toBe(
      PhraseCache.keyOf(key('hi', { voiceSettings: { speed: 1 } })),
    );
    // Different requests differ, without ambiguity between fields.
    expect(PhraseCache.keyOf(key('hi', { voiceSettings: { speed: 1.1 } }))).not.toBe(
      PhraseCache.keyOf(key('hi', { voiceSettings: { speed: 1 } })),
    );
    expect(PhraseCache.keyOf(key('hi', { voiceSettings: {} }))).not.toBe(none);
    expect(PhraseCache.keyOf({ ...key('b'), voiceId: 'a|' })).not.toBe(
      PhraseCache.keyOf({ ...key('|b'), voiceId: 'a' }),
    );
    expect(PhraseCache.keyOf(key('hi', { modelId: 'm2' }))).not.toBe(none);
    // A cached entry is found whatever order the caller built the settings in.
    const cache = new PhraseCache({ maxBytes: 1000 });
    store(cache, key('hi', { voiceSettings: { stability: 0.5, speed: 1 } }), 10);
    expect(cache.get(key('hi', { voiceSettings: { speed: 1, stability: 0.5 } }))).toBeDefined();
  });

  it('rejects nonsensical bounds', () => {
    expect(() => new PhraseCache({ maxBytes: -1 })).toThrow(RangeError);
    expect(() => new PhraseCache({ maxBytes: 10, maxEntryBytes: Number.NaN })).toThrow(RangeError);
  });
});

describe('the shared store format', () => {
  const audio = Uint8Array.from({ length: 100 }, (_, i) => i);
  const alignment = { characters: ['a', 'b'], startMs: [0, 10.5], endMs: [10.5, 20] };

  it('round-trips audio with and without timings', () => {
    expect(decodeShared(encodeShared(audio, alignment))).toEqual({ audio, alignment });
    expect(decodeShared(encodeShared(audio, undefined))).toEqual({ audio, alignment: undefined });
  });

  it('refuses what it did not write: raw audio, odd audio, broken or mismatched timings', () => {
    expect(decodeShared(audio)).toBeUndefined();
    expect(decodeShared(encodeShared(audio.subarray(0, 99), undefined))).toBeUndefined();
    const broken = encodeShared(audio, alignment);
    broken[SHARED_JSON_AT] = 0x7b + 1; // the timings' JSON no longer parses
    expect(decodeShared(broken)).toBeUndefined();
    const mismatched = encodeShared(audio, { ...alignment, endMs: [1] });
    expect(decodeShared(mismatched)).toBeUndefined();
    expect(decodeShared(new Uint8Array(3))).toBeUndefined();
  });

  it('gives a phrase recorded with timings back with them, from memory and from the shared tier', async () => {
    const values = new Map<string, Uint8Array>();
    const shared = {
      maxEntryBytes: 1 << 20,
      get: (k: string) => Promise.resolve(values.get(k)),
      put: (k: string, v: Uint8Array) => void values.set(k, v),
    };
    const a = new PhraseCache({ maxBytes: 10_000, shared });
    const rec = a.record(key('timed'));
    rec.add(audio);
    rec.commit(alignment);
    expect(a.get(key('timed'))?.alignment).toEqual(alignment);
    const b = new PhraseCache({ maxBytes: 10_000, shared });
    const found = await b.lookup(key('timed'));
    expect(found?.alignment).toEqual(alignment);
    expect(Buffer.concat(found!.chunks.map((c) => Buffer.from(c)))).toEqual(Buffer.from(audio));
  });
});
