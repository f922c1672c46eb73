/** How much audio has arrived, in a line rewritten in place on a terminal's stderr. */
import type { OutputFormat } from '../speech/formats.js';
import { WAV_HEADER_BYTES } from '../audio/wav.js';

/** Bytes per second of each output format's audio (mp3: its constant bit rate). */
const BYTES_PER_SECOND: Readonly<Record<OutputFormat, number>> = {
  pcm_24000: 48_000,
  wav_24000: 48_000,
  mp3_44100_192: 192_000 / 8,
};

/** Seconds of audio in the first `bytes` bytes of a response in `format`. */
export function audioSeconds(format: OutputFormat, bytes: number): number {
  const audioBytes = format === 'wav_24000' ? Math.max(0, bytes - WAV_HEADER_BYTES) : bytes;
  return audioBytes / BYTES_PER_SECOND[format];
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

export function progressLine(format: OutputFormat, bytes: number, elapsedMs: number): string {
  return `received ${formatBytes(bytes)}, ${audioSeconds(format, bytes).toFixed(1)} s of audio in ${(elapsedMs / 1000).toFixed(1)} s`;
}

const REDRAW_MS = 100;

/** Redraws at most every 100 ms; silent unless `out` is a terminal. */
export class Progress {
  #bytes = 0;
  #drawnAt = 0;
  #drawn = false;
  readonly #startedAt = performance.now();

  constructor(
    private readonly format: OutputFormat,
    private readonly out: NodeJS.WriteStream,
  ) {}

  add(bytes: number): void {
    this.#bytes += bytes;
    if (!this.out.isTTY) return;
    const now = performance.now();
    if (now - this.#drawnAt < REDRAW_MS) return;
    this.#drawnAt = now;
    this.#draw(now);
  }

  /** The final figures on their own line (on a terminal). */
  done(what: string): void {
    if (!this.out.isTTY) return;
    this.#draw(performance.now(), what);
    this.out.write('\n');
  }

  /** Leaves the line, so an error message starts on its own. */
  abandon(): void {
    if (this.#drawn && this.out.isTTY) this.out.write('\n');
  }

  #draw(now: number, suffix = ''): void {
    this.#drawn = true;
    const line = progressLine(this.format, this.#bytes, now - this.#startedAt);
    this.out.write(`\r\x1b[2K${line}${suffix ? `: ${suffix}` : ''}`);
  }
}
