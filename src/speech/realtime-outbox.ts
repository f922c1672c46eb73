/**
 * What a realtime session sends, as messages: the line's audio in the service's format (μ-law and PCM
 * as they are, A-law decoded; a 16-bit sample split across two chunks kept whole), held in order with
 * its commits while the session is not started yet, cut into chunks of at most `MAX_CHUNK_MS`, and
 * `previous_text` with the first audio only (the service refuses it on a later chunk).
 */
import { decodeAlaw } from '../audio/g711.js';
import { int16ToBytes, PcmAligner } from '../audio/pcm.js';
import { encodeAudioChunk, type RealtimeFormatPlan } from './realtime-protocol.js';

/**
 * Audio of one `input_audio_chunk` at most (ms): what was held while connecting goes in chunks of this
 * size, not one message of seconds (the service refuses an oversized chunk: `chunk_size_exceeded`).
 */
export const MAX_CHUNK_MS = 500;

const COMMIT = Symbol('commit');

export class AudioOutbox {
  readonly #plan: RealtimeFormatPlan;
  #previousText: string | undefined;
  readonly #aligner = new PcmAligner();
  readonly #maxChunkBytes: number;
  readonly #held: Array<Uint8Array | typeof COMMIT> = [];

  constructor(plan: RealtimeFormatPlan, previousText: string | undefined) {
    this.#plan = plan;
    this.#previousText = previousText;
    // Whole samples only: an odd byte count of 16-bit PCM would shift every later sample.
    this.#maxChunkBytes = Math.max(2, Math.floor((plan.bytesPerMs * MAX_CHUNK_MS) / 2) * 2);
  }

  /** A chunk of the line's audio in the service's format: a view onto it where nothing changes. */
  convert(chunk: Uint8Array): Uint8Array {
    if (this.#plan.transcode === 'alaw') return int16ToBytes(decodeAlaw(chunk));
    if (this.#plan.audioFormat === 'ulaw_8000') return chunk;
    return int16ToBytes(this.#aligner.push(chunk));
  }

  /** Keeps converted audio to send later (copied: the caller may reuse its buffer). */
  hold(bytes: Uint8Array): void {
    this.#held.push(bytes.slice());
  }

  /** Keeps a commit to send later, after the audio held before it (a stray byte is dropped now). */
  holdCommit(): void {
    this.#aligner.reset();
    this.#held.push(COMMIT);
  }

  /** The messages that send `bytes` (converted) now. */
  audio(bytes: Uint8Array): string[] {
    const out: string[] = [];
    for (let at = 0; at < bytes.byteLength; at += this.#maxChunkBytes) {
      const part = bytes.subarray(at, at + this.#maxChunkBytes);
      out.push(encodeAudioChunk(part, this.#plan.sampleRate, { previousText: this.#previousText }));
      this.#previousText = undefined;
    }
    return out;
  }

  /** The message that commits the audio sent so far; a stray byte of a sample is dropped (it is not audio). */
  commit(): string {
    this.#aligner.reset();
    return encodeAudioChunk(new Uint8Array(0), this.#plan.sampleRate, { commit: true });
  }

  /** Everything held, as messages in order: audio runs in whole chunks, commits where they fell. */
  drain(): string[] {
    const items = this.#held.splice(0);
    const out: string[] = [];
    let run: Uint8Array[] = [];
    const endRun = (): void => {
      if (run.length > 0) out.push(...this.audio(run.length === 1 ? run[0]! : Buffer.concat(run)));
      run = [];
    };
    for (const item of items) {
      if (item !== COMMIT) {
        run.push(item);
        continue;
      }
      endRun();
      out.push(encodeAudioChunk(new Uint8Array(0), this.#plan.sampleRate, { commit: true }));
    }
    endRun();
    return out;
  }

  /** Drops what is held. */
  clear(): void {
    this.#held.length = 0;
  }
}
