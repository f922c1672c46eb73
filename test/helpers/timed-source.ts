import type { Clock } from '../../src/speaker/clock.js';
import type { SpeechAudio, SpeechSource } from '../../src/speaker/segment-audio.js';
import type { SpeechRequest } from '../../src/speech/client.js';

const BYTES_PER_MS_24K = 48;
const CHUNK_MS = 100;

/**
 * A speech source on a fake clock with exact character timings, as the local service's
 * `/with-timestamps` gives them: every character lasts `charMs`, the audio is a quiet tone as long as
 * the text, in 100 ms chunks that arrive 10 ms of clock apart (faster than real time). It records each
 * request's text.
 */
export class TimedSource implements SpeechSource {
  readonly requests: string[] = [];

  constructor(
    private readonly clock: Clock,
    private readonly charMs = 50,
  ) {}

  async stream(request: SpeechRequest, options: { signal?: AbortSignal } = {}): Promise<SpeechAudio> {
    const { clock, charMs } = this;
    const signal = options.signal;
    this.requests.push(request.text);
    await clock.sleepUntil(clock.now() + 20, signal);
    const characters = [...request.text];
    const totalBytes = Math.ceil((characters.length * charMs) / CHUNK_MS) * CHUNK_MS * BYTES_PER_MS_24K;
    async function* chunks(): AsyncGenerator<Uint8Array> {
      for (let at = 0; at < totalBytes; at += CHUNK_MS * BYTES_PER_MS_24K) {
        if (at > 0) await clock.sleepUntil(clock.now() + 10, signal);
        yield new Uint8Array(CHUNK_MS * BYTES_PER_MS_24K).fill(1);
      }
    }
    const it = chunks();
    return {
      alignment: {
        characters,
        startMs: characters.map((_, i) => i * charMs),
        endMs: characters.map((_, i) => (i + 1) * charMs),
      },
      cancel: () => void it.return(undefined),
      [Symbol.asyncIterator]: () => it,
    };
  }
}
