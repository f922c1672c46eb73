import { randomBytes, createHash } from 'node:crypto';
import { mkdir, open, readdir, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { EngineVoiceParams } from './params.js';

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
  readonly engine: EngineVoiceParams;
  readonly samples: readonly StoredSample[];
}

export interface NewVoice {
  name: string;
  owner: string;
  description: string | null;
  labels: Record<string, string>;
  engine: EngineVoiceParams;
  files: ReadonlyArray<{ fileName: string; mimeType: string; data: Uint8Array }>;
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
 * Voices on disk, one directory each: `<dataDir>/voices/<voice_id>/{voice.json, sample-N.ext}`. A voice is
 * written completely into a `.tmp-` directory (every file fsynced) and then renamed into place: the
 * rename is the commit point, so a crash mid-write leaves either the whole voice or nothing, and the
 * leftover temporary directory is removed at the next start.
 */
export class VoiceStore {
  private readonly voices = new Map<string, StoredVoice>();

  private constructor(
    readonly dir: string,
    builtIns: readonly StoredVoice[],
  ) {
    for (const v of builtIns) this.voices.set(v.voice_id, v);
  }

  static async open(dataDir: string, builtIns: readonly StoredVoice[] = []): Promise<VoiceStore> {
    const dir = join(dataDir, 'voices');
    await mkdir(dir, { recursive: true });
    const store = new VoiceStore(dir, builtIns);
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      if (!entry.isDirectory()) continue;
      const path = join(dir, entry.name);
      if (entry.name.startsWith(TMP_PREFIX)) {
        await rm(path, { recursive: true, force: true });
        continue;
      }
      const voice = JSON.parse(await readFile(join(path, RECORD), 'utf8')) as StoredVoice;
      if (voice.voice_id !== entry.name)
        throw new Error(`voice store: ${path} holds voice ${voice.voice_id}`);
      store.voices.set(voice.voice_id, voice);
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

  async add(input: NewVoice): Promise<StoredVoice> {
    let voiceId = newVoiceId();
    while (this.voices.has(voiceId)) voiceId = newVoiceId();
    const tmp = join(this.dir, `${TMP_PREFIX}${voiceId}`);
    await mkdir(tmp);
    try {
      const samples: StoredSample[] = [];
      for (const [i, file] of input.files.entries()) {
        const sampleId = `sample-${i + 1}${safeExtension(file.fileName)}`;
        await writeFileDurably(join(tmp, sampleId), file.data);
        samples.push({
          sample_id: sampleId,
          file_name: file.fileName,
          mime_type: file.mimeType,
          size_bytes: file.data.byteLength,
          hash: createHash('sha256').update(file.data).digest('hex'),
        });
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
        samples,
      };
      await writeFileDurably(join(tmp, RECORD), JSON.stringify(voice, null, 2));
      await syncDir(tmp);
      await rename(tmp, join(this.dir, voiceId));
      await syncDir(this.dir);
      this.voices.set(voiceId, voice);
      return voice;
    } catch (error) {
      await rm(tmp, { recursive: true, force: true });
      throw error;
    }
  }
}
