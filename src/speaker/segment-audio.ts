import type { SpeechRequest, SpeechStream } from '../speech/client.js';
import type { PhraseCache, PhraseKey } from './phrase-cache.js';
import type { Segment } from './segmenter.js';

/** What the speaker needs of a speech client: `SpeechClient` is one. */
export interface SpeechSource {
  stream(request: SpeechRequest, options?: { signal?: AbortSignal }): Promise<SpeechStream>;
}

export const SPEAKER_FORMAT = 'pcm_24000';
export const SPEAKER_SAMPLE_RATE = 24_000;

/** One segment's audio, already flowing (its first byte has arrived, or it came from the cache). */
export interface SegmentAudio {
  readonly segment: Segment;
  /** s16le mono 24 kHz chunks. */
  readonly chunks: AsyncIterable<Uint8Array>;
  readonly firstByteMs: number;
  readonly fromCache: boolean;
}

async function* replay(chunks: readonly Uint8Array[]): AsyncGenerator<Uint8Array> {
  for (const c of chunks) yield c;
}

/** Records a response into the cache as it is read; only a complete response is kept. */
async function* recording(
  stream: SpeechStream,
  record: ReturnType<PhraseCache['record']>,
): AsyncGenerator<Uint8Array> {
  let complete = false;
  try {
    for await (const chunk of stream) {
      record.add(chunk);
      yield chunk;
    }
    complete = true;
  } finally {
    if (complete) record.commit();
    else {
      record.abandon();
      // Stopped early (barge-in, failure): the connection must not linger.
      stream.cancel();
    }
  }
}

/**
 * Opens one segment: from the phrase cache when it holds the same request, else a `/stream` request,
 * resolved once the first audio byte is in.
 */
export async function openSegment(
  source: SpeechSource,
  cache: PhraseCache | undefined,
  request: Omit<SpeechRequest, 'text' | 'outputFormat'>,
  segment: Segment,
  signal: AbortSignal,
): Promise<SegmentAudio> {
  const key: PhraseKey = {
    voiceId: request.voiceId,
    modelId: request.modelId ?? '',
    voiceSettings: request.voiceSettings,
    text: segment.text,
    outputFormat: SPEAKER_FORMAT,
  };
  const started = performance.now();
  const cached = cache?.get(key);
  if (cached)
    return { segment, chunks: replay(cached), firstByteMs: performance.now() - started, fromCache: true };
  const stream = await source.stream(
    { ...request, text: segment.text, outputFormat: SPEAKER_FORMAT },
    { signal },
  );
  return {
    segment,
    chunks: cache ? recording(stream, cache.record(key)) : stream,
    firstByteMs: stream.firstByteMs,
    fromCache: false,
  };
}
