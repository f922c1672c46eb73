import type { CharacterAlignment } from '../speech/alignment.js';
import type { SpeechRequest } from '../speech/client.js';
import type { CachedPhrase, PhraseCache, PhraseKey } from './phrase-cache.js';
import type { Segment } from './segmenter.js';

/**
 * One response's audio as the speaker reads it: s16le mono 24 kHz chunks, each of whole samples (an
 * even byte count; the speech client aligns `pcm_24000` bodies), pulled as they are needed.
 */
export interface SpeechAudio extends AsyncIterable<Uint8Array> {
  /** Stops the response and closes its connection at once (barge-in, a failure further down). */
  cancel(reason?: unknown): void;
  /**
   * The response's character timings, when the service sent them (a `/with-timestamps` request):
   * growing as the audio arrives, each entry final once present. Absent: the speaker estimates.
   */
  readonly alignment?: CharacterAlignment | undefined;
}

/** What the speaker needs of a speech client: `SpeechClient` is one. */
export interface SpeechSource {
  /** Resolves once the first audio byte is in; rejects with the request's error, or when `signal` aborts. */
  stream(request: SpeechRequest, options?: { signal?: AbortSignal }): Promise<SpeechAudio>;
}

export const SPEAKER_FORMAT = 'pcm_24000';
export const SPEAKER_SAMPLE_RATE = 24_000;

/** One segment's audio, already flowing (its first byte has arrived, or it came from the cache). */
export interface SegmentAudio {
  readonly segment: Segment;
  /** s16le mono 24 kHz chunks of whole samples: the source's, or the cache's copy of them. */
  readonly chunks: AsyncIterable<Uint8Array>;
  readonly fromCache: boolean;
  /** The segment's character timings: the response's (growing as it arrives) or the cache's. */
  readonly alignment: CharacterAlignment | undefined;
  /**
   * The phrase as the cache holds it: the one replayed, or the one this response was recorded into
   * once it has been read to the end (undefined without a cache, or when it was not kept).
   */
  phrase(): CachedPhrase | undefined;
}

async function* replay(chunks: readonly Uint8Array[]): AsyncGenerator<Uint8Array> {
  for (const c of chunks) yield c;
}

/** Records a response into the cache as it is read; only a complete response is kept. */
async function* recording(
  audio: SpeechAudio,
  record: ReturnType<PhraseCache['record']>,
): AsyncGenerator<Uint8Array> {
  let complete = false;
  try {
    for await (const chunk of audio) {
      record.add(chunk);
      yield chunk;
    }
    complete = true;
  } finally {
    if (complete) record.commit(audio.alignment);
    else {
      record.abandon();
      // Stopped early (barge-in, failure): the connection must not linger.
      audio.cancel();
    }
  }
}

/**
 * Opens one segment: from the phrase cache when it holds the same request, else a `/stream` request,
 * resolved once the first audio byte is in. The cache keeps the source's chunks as they came, so a
 * replay is aligned exactly as the response was.
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
  const cached = await cache?.lookup(key);
  if (cached)
    return {
      segment,
      chunks: replay(cached.chunks),
      fromCache: true,
      alignment: cached.alignment,
      phrase: () => cached,
    };
  const audio = await source.stream(
    { ...request, text: segment.text, outputFormat: SPEAKER_FORMAT },
    { signal },
  );
  const record = cache?.record(key);
  return {
    segment,
    chunks: record ? recording(audio, record) : audio,
    fromCache: false,
    alignment: audio.alignment,
    phrase: () => record?.committed,
  };
}
