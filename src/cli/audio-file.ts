/**
 * Audio written to a file as it arrives. A WAV whose header went out before its length was known
 * (the service's streamed header, a call recording) gets its sizes filled in when the file is closed,
 * so every reader sees its real length.
 */
import { open, rm, type FileHandle } from 'node:fs/promises';
import { WAV_HEADER_BYTES, WAV_UNKNOWN_SIZE, wavHeader } from '../audio/wav.js';

/**
 * Writes the RIFF and data sizes of a canonical 44-byte-header WAV of `totalBytes`; leaves any other
 * layout alone. Returns whether it patched.
 */
export async function patchWavSizes(file: FileHandle, totalBytes: number): Promise<boolean> {
  if (totalBytes < WAV_HEADER_BYTES || totalBytes - 8 > WAV_UNKNOWN_SIZE) return false;
  const header = Buffer.alloc(WAV_HEADER_BYTES);
  const { bytesRead } = await file.read(header, 0, WAV_HEADER_BYTES, 0);
  if (bytesRead < WAV_HEADER_BYTES) return false;
  const tag = (at: number): string => header.toString('latin1', at, at + 4);
  if (tag(0) !== 'RIFF' || tag(8) !== 'WAVE' || tag(12) !== 'fmt ' || tag(36) !== 'data') return false;
  if (header.readUInt32LE(16) !== 16) return false;
  const sizes = Buffer.alloc(4);
  sizes.writeUInt32LE(totalBytes - 8);
  await file.write(sizes, 0, 4, 4);
  sizes.writeUInt32LE(totalBytes - WAV_HEADER_BYTES);
  await file.write(sizes, 0, 4, 40);
  return true;
}

/** A file written chunk by chunk, each write finished before the next (the caller's backpressure). */
export class AudioFile {
  readonly path: string;
  #bytes = 0;
  readonly #file: FileHandle;

  private constructor(path: string, file: FileHandle) {
    this.path = path;
    this.#file = file;
  }

  static async create(path: string): Promise<AudioFile> {
    return new AudioFile(path, await open(path, 'w+'));
  }

  get bytes(): number {
    return this.#bytes;
  }

  async write(bytes: Uint8Array): Promise<void> {
    let offset = 0;
    while (offset < bytes.length) {
      const { bytesWritten } = await this.#file.write(bytes, offset, bytes.length - offset);
      offset += bytesWritten;
    }
    this.#bytes += bytes.length;
  }

  /** Closes the file; `wav`: fills in the sizes of a header written before the length was known. */
  async close(options: { wav: boolean }): Promise<void> {
    try {
      if (options.wav) await patchWavSizes(this.#file, this.#bytes);
    } finally {
      await this.#file.close();
    }
  }

  /** Closes and deletes the file (what was asked failed half way). */
  async discard(): Promise<void> {
    await this.#file.close().catch(() => undefined);
    await rm(this.path, { force: true });
  }
}

function asError(e: unknown): Error {
  return e instanceof Error ? e : new Error(String(e));
}

/**
 * A 16-bit mono WAV recording, appended to in real time without waiting: writes are queued in order,
 * the first failure is kept and thrown by `close`.
 */
export class WavRecorder {
  readonly #file: AudioFile;
  #queue: Promise<void>;
  #error: Error | undefined;

  private constructor(file: AudioFile, sampleRate: number) {
    this.#file = file;
    this.#queue = file
      .write(wavHeader({ sampleRate, channels: 1, bitsPerSample: 16 }))
      .catch((e: unknown) => {
        this.#error ??= asError(e);
      });
  }

  static async create(path: string, sampleRate: number): Promise<WavRecorder> {
    return new WavRecorder(await AudioFile.create(path), sampleRate);
  }

  get path(): string {
    return this.#file.path;
  }

  /** Bytes of audio in the file so far (queued writes count once they land). */
  get dataBytes(): number {
    return Math.max(0, this.#file.bytes - WAV_HEADER_BYTES);
  }

  write(pcm: Uint8Array): void {
    if (this.#error !== undefined) return;
    const copy = pcm.slice();
    this.#queue = this.#queue
      .then(() => this.#file.write(copy))
      .catch((e: unknown) => {
        this.#error ??= asError(e);
      });
  }

  async close(): Promise<void> {
    await this.#queue;
    await this.#file.close({ wav: true });
    if (this.#error !== undefined) throw this.#error;
  }
}
