import { randomBytes, createHash } from 'node:crypto';
import { mkdir, open, readdir, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { EspeakVoiceParams, VoiceParams } from '../engine/voice-params.js';
import { readStoredEngines } from './params.js';

export interface StoredSample {
  readonly sample_id: string;
  readonly file_name: string;
  readonly mime_type: string;
  readonly size_bytes: number;
  readonly hash: string;
}

export interface StoredVoice {
  readonly voice_id: string;
  readonly name: string;
  /** Id of the key that created it; null for built-in voices, which every key may use. */
  readonly owner: string | null;
  readonly category: 'premade' | 'cloned';
  readonly description: string | null;
  readonly labels: Readonly<Record<string, string>>;
  readonly created_at_unix: number;
  /** How the engine that speaks it is set (its `engine` names it). */
  readonly engine: VoiceParams;
  /** eSpeak's settings for the same voice, for the languages that engine lacks (when eSpeak is installed). */
  readonly espeak?: EspeakVoiceParams | undefined;
  readonly samples: readonly StoredSample[];
}

/** A sample already written to disk (an upload staged by the route), moved into the voice as is. */
export interface StagedSample {
  readonly fileName: string;
  readonly mimeType: string;
  readonly path: string;
  readonly sizeBytes: number;
  /** SHA-256 of the file, hex. */
  readonly sha256: string;
}

/** A sample given as bytes. */
export interface SampleBytes {
  readonly fileName: string;
  readonly mimeType: string;
  readonly data: Uint8Array;
}

export interface NewVoice {
  name: string;
  owner: string;
  description: string | null;
  labels: Record<string, string>;
  engine: VoiceParams;
  espeak?: EspeakVoiceParams | undefined;
  files: ReadonlyArray<SampleBytes | StagedSample>;
}

export interface VoiceStoreOptions {
  /** Told about directories under `voices/` that are skipped because they hold no readable voice. */
  logger?: Logger | undefined;
  /** Bytes of samples the store may hold, reservations of uploads in progress included. */
  maxBytes?: number | undefined;
}

/** The store is full: the voice (or the upload) does not fit in its `maxBytes`. */
export class VoiceStoreFullError extends Error {
  override readonly name = 'VoiceStoreFullError';
}

const RECORD = 'voice.json';
const TMP_PREFIX = '.tmp-';
const ID_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** Voice ids look like the vendor's: 20 letters and digits. */
function newVoiceId(): string {
  const bytes = randomBytes(20);
  let id = '';
  for (const b of bytes) id += ID_ALPHABET[b % ID_ALPHABET.length];
  return id;
}

/** fsync of a file written by someone else (a staged upload), before it is committed. */
async function syncFile(path: string): Promise<void> {
  const handle = await open(path, 'r+');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

async function writeFileDurably(path: string, data: Uint8Array | string): Promise<void> {
  const handle = await open(path, 'wx');
  try {
    await handle.writeFile(data);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

async function syncDir(path: string): Promise<void> {
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

function safeExtension(fileName: string): string {
  const m = /\.([A-Za-z0-9]{1,8})$/.exec(fileName);
  return m ? `.${m[1]!.toLowerCase()}` : '';
}

/**
 * The voice in a `voice.json`, if it has the parts the service relies on (its engine settings read as
 * this version reads them: `readStoredEngines`); undefined for a record that is not one.
 */
function readVoiceRecord(v: unknown, dirName: string): StoredVoice | undefined {
  if (typeof v !== 'object' || v === null) return undefined;
  const r = v as Record<string, unknown>;
  if (
    r['voice_id'] !== dirName ||
    typeof r['name'] !== 'string' ||
    typeof r['owner'] !== 'string' ||
    !Array.isArray(r['samples'])
  )
    return undefined;
  const engines = readStoredEngines(r['engine'], r['espeak']);
  return engines ? { ...(v as StoredVoice), engine: engines.engine, espeak: engines.espeak } : undefined;
}

function sampleBytes(voice: StoredVoice): number {
  let n = 0;
  for (const s of voice.samples) n += Number.isFinite(s.size_bytes) ? s.size_bytes : 0;
  return n;
}

/**
 * Voices on disk, one directory each: `<dataDir>/voices/<voice_id>/{voice.json, sample-N.ext}`. A voice is
 * written completely into a `.tmp-` directory (every file fsynced) and then renamed into place: the
 * rename is the commit point, so a crash mid-write leaves either the whole voice or nothing, and the
 * leftover temporary directory is removed at the next start. Uploads in progress are staged in `.tmp-`
 * directories too (`stagingDir`), so they are cleaned up the same way.
 *
 * The store's size is bounded by `maxBytes`: the samples of its voices plus the bytes reserved by uploads
 * still arriving (`tryReserve`), so concurrent uploads cannot overshoot it together.
 */
export class VoiceStore {
  private readonly voices = new Map<string, StoredVoice>();
  private usedBytes = 0;
  private reservedBytes = 0;

  private constructor(
    readonly dir: string,
    builtIns: readonly StoredVoice[],
    readonly maxBytes: number,
  ) {
    for (const v of builtIns) this.voices.set(v.voice_id, v);
  }

  /**
   * Loads every voice under `<dataDir>/voices`. A directory that holds no readable voice (no `voice.json`,
   * one that is not JSON or not a voice, or one naming another voice) is skipped with a warning and left
   * on disk for its owner to look at: one bad entry must not keep the service, and the others, down.
   */
  static async open(
    dataDir: string,
    builtIns: readonly StoredVoice[] = [],
    options: VoiceStoreOptions = {},
  ): Promise<VoiceStore> {
    const dir = join(dataDir, 'voices');
    await mkdir(dir, { recursive: true });
    const store = new VoiceStore(dir, builtIns, options.maxBytes ?? Number.POSITIVE_INFINITY);
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      if (!entry.isDirectory()) continue;
      const path = join(dir, entry.name);
      if (entry.name.startsWith(TMP_PREFIX)) {
        await rm(path, { recursive: true, force: true });
        continue;
      }
      let record: unknown;
      try {
        record = JSON.parse(await readFile(join(path, RECORD), 'utf8'));
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        options.logger?.warn(
          { dir: path, err: error },
          code === 'ENOENT'
            ? `voice store: skipped ${path}: it has no ${RECORD}`
            : `voice store: skipped ${path}: its ${RECORD} cannot be read`,
        );
        continue;
      }
      const voice = readVoiceRecord(record, entry.name);
      if (!voice) {
        options.logger?.warn(
          { dir: path },
          `voice store: skipped ${path}: its ${RECORD} is not a voice record for ${entry.name}`,
        );
        continue;
      }
      store.voices.set(voice.voice_id, voice);
      store.usedBytes += sampleBytes(voice);
    }
    return store;
  }

  get(voiceId: string): StoredVoice | undefined {
    return this.voices.get(voiceId);
  }

  /** Voices visible to a key: the built-in ones and its own. */
  visibleTo(owner: string): StoredVoice[] {
    return [...this.voices.values()].filter((v) => v.owner === null || v.owner === owner);
  }

  get size(): number {
    return this.voices.size;
  }

  /** Bytes of samples held, and reserved by uploads in progress. */
  get bytes(): { used: number; reserved: number } {
    return { used: this.usedBytes, reserved: this.reservedBytes };
  }

  /** Reserves room for `n` more bytes of an upload; false when the store would pass `maxBytes`. */
  tryReserve(n: number): boolean {
    if (this.usedBytes + this.reservedBytes + n > this.maxBytes) return false;
    this.reservedBytes += n;
    return true;
  }

  release(n: number): void {
    this.reservedBytes = Math.max(0, this.reservedBytes - n);
  }

  /** A new empty directory for an upload's files, removed at the next start if the process dies. */
  async stagingDir(): Promise<string> {
    const path = join(this.dir, `${TMP_PREFIX}upload-${randomBytes(8).toString('hex')}`);
    await mkdir(path);
    return path;
  }

  /**
   * Writes (or, for staged samples, moves) the voice's files and commits it. Staged samples must live
   * under this store's directory (the same file system: they are renamed, not copied). The caller keeps
   * its reservation until this returns; the voice's bytes count as used from then on.
   * @throws VoiceStoreFullError when sample bytes given as data would pass `maxBytes`.
   */
  async add(input: NewVoice): Promise<StoredVoice> {
    let voiceId = newVoiceId();
    while (this.voices.has(voiceId)) voiceId = newVoiceId();
    // Staged samples were reserved while they arrived; bytes given here are checked now.
    let unreserved = 0;
    for (const file of input.files) if ('data' in file) unreserved += file.data.byteLength;
    if (!this.tryReserve(unreserved))
      throw new VoiceStoreFullError(`the voice store is full (${this.maxBytes} bytes)`);
    const tmp = join(this.dir, `${TMP_PREFIX}${voiceId}`);
    try {
      await mkdir(tmp);
      const samples: StoredSample[] = [];
      for (const [i, file] of input.files.entries()) {
        const sampleId = `sample-${i + 1}${safeExtension(file.fileName)}`;
        const path = join(tmp, sampleId);
        if ('data' in file) {
          await writeFileDurably(path, file.data);
          samples.push({
            sample_id: sampleId,
            file_name: file.fileName,
            mime_type: file.mimeType,
            size_bytes: file.data.byteLength,
            hash: createHash('sha256').update(file.data).digest('hex'),
          });
        } else {
          await rename(file.path, path);
          await syncFile(path);
          samples.push({
            sample_id: sampleId,
            file_name: file.fileName,
            mime_type: file.mimeType,
            size_bytes: file.sizeBytes,
            hash: file.sha256,
          });
        }
      }
      const voice: StoredVoice = {
        voice_id: voiceId,
        name: input.name,
        owner: input.owner,
        category: 'cloned',
        description: input.description,
        labels: input.labels,
        created_at_unix: Math.floor(Date.now() / 1000),
        engine: input.engine,
        espeak: input.espeak,
        samples,
      };
      await writeFileDurably(join(tmp, RECORD), JSON.stringify(voice, null, 2));
      await syncDir(tmp);
      await rename(tmp, join(this.dir, voiceId));
      await syncDir(this.dir);
      this.voices.set(voiceId, voice);
      this.usedBytes += sampleBytes(voice);
      return voice;
    } catch (error) {
      await rm(tmp, { recursive: true, force: true });
      throw error;
    } finally {
      this.release(unreserved);
    }
  }
}
