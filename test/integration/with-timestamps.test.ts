/**
 * Character timings end to end: the local service's `/with-timestamps` and `/stream/with-timestamps`
 * (what they send, and whether the timings match the audio), the official ElevenLabs SDK reading
 * both, and our client with `timestamps: true` against the service.
 */
import { ElevenLabsClient } from '@elevenlabs/elevenlabs-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUILT_IN_VOICE_ID } from '../../src/service/voices/builtin.js';
import type { SpeechAudio } from '../../src/speaker/segment-audio.js';
import { SpeechClient } from '../../src/speech/client.js';
import { KEYS, NO_PHONE_BARGE_IN, startTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp(NO_PHONE_BARGE_IN);
});
afterAll(async () => {
  await t.close();
});

interface Alignment {
  characters: string[];
  character_start_times_seconds: number[];
  character_end_times_seconds: number[];
}

interface TimestampsObject {
  audio_base64: string;
  alignment: Alignment;
  normalized_alignment: Alignment;
}

/** A `&`, `<` and `>` that SSML escaping lengthens, an emoji (two UTF-16 units, one code point). */
const TRICKY = 'Tom & Jerry <3 cats 😀, naïve > café. Then more words follow here.';
/** "many" comes after the clause pause of "here;", in the text's second piece (the first is "Hello there."). */
const PAUSED = 'Hello there. We wait here; many more words follow.';

const PCM_BYTES_PER_MS = 48;

function post(
  path: string,
  text: string,
  format = 'pcm_24000',
  key: string | null = KEYS.main,
): Promise<Response> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (key !== null) headers['xi-api-key'] = key;
  return fetch(`${t.api}/v1/text-to-speech/${BUILT_IN_VOICE_ID}${path}?output_format=${format}`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ text }),
  });
}

async function whole(
  text: string,
  format = 'pcm_24000',
): Promise<{ audio: Buffer; alignment: Alignment; res: Response; body: TimestampsObject }> {
  const res = await post('/with-timestamps', text, format);
  expect(res.status).toBe(200);
  const body = (await res.json()) as TimestampsObject;
  return { audio: Buffer.from(body.audio_base64, 'base64'), alignment: body.alignment, res, body };
}

async function streamed(
  text: string,
  format = 'pcm_24000',
): Promise<{ raw: string; objects: TimestampsObject[]; res: Response }> {
  const res = await post('/stream/with-timestamps', text, format);
  expect(res.status).toBe(200);
  const raw = await res.text();
  const objects = raw
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as TimestampsObject);
  return { raw, objects, res };
}

/** Checks the rules of docs/speech-service.md on one alignment of `text` over `durationMs` of audio. */
function expectSane(alignment: Alignment, text: string, durationMs: number): void {
  const starts = alignment.character_start_times_seconds;
  const ends = alignment.character_end_times_seconds;
  expect(alignment.characters).toEqual(Array.from(text));
  expect(starts).toHaveLength(alignment.characters.length);
  expect(ends).toHaveLength(alignment.characters.length);
  expect(starts[0]).toBeGreaterThanOrEqual(0);
  for (let i = 0; i < starts.length; i++) {
    expect(ends[i]!).toBeGreaterThanOrEqual(starts[i]!);
    if (i > 0) expect(starts[i]!).toBeGreaterThanOrEqual(ends[i - 1]!);
  }
  expect(ends.at(-1)! * 1000).toBeLessThanOrEqual(durationMs);
  // The last character (a full stop here) runs to the end of the audio.
  expect(ends.at(-1)! * 1000).toBeGreaterThan(durationMs - 1);
}

function samplesOf(pcm: Buffer): Int16Array {
  const copy = Buffer.from(pcm);
  return new Int16Array(copy.buffer, copy.byteOffset, copy.length / 2);
}

/** The longest run of silence (every sample within ±100) in 5 ms frames: [startMs, endMs). */
function longestPause(samples: Int16Array): [number, number] {
  const frame = 120;
  let best: [number, number] = [0, 0];
  let run = 0;
  for (let f = 0; (f + 1) * frame <= samples.length; f++) {
    let peak = 0;
    for (let i = f * frame; i < (f + 1) * frame; i++) peak = Math.max(peak, Math.abs(samples[i]!));
    run = peak <= 100 ? run + 1 : 0;
    if (run * 5 > best[1] - best[0]) best = [(f + 1 - run) * 5, (f + 1) * 5];
  }
  return best;
}

describe('the local service, /with-timestamps', () => {
  it('times every code point, & < > and an emoji included: monotonic, within the audio', async () => {
    const { audio, alignment, res, body } = await whole(TRICKY);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(res.headers.get('request-id')).toMatch(/^[0-9a-f]{32}$/);
    expect(res.headers.get('character-cost')).toBe(String(Array.from(TRICKY).length));
    expect(audio.length % 2).toBe(0);
    expectSane(alignment, TRICKY, audio.length / PCM_BYTES_PER_MS);
    expect(body.normalized_alignment).toEqual(alignment);
    // The words around the escaped characters are where they belong, in order.
    const start = (i: number): number => alignment.character_start_times_seconds[i]!;
    const chars = alignment.characters;
    const jerry = chars.indexOf('J');
    const cats = chars.indexOf('c');
    const then = chars.indexOf('T', 1);
    // Flite may leave "&" unsaid between two names: then it has no time of its own, at Jerry's start.
    expect(start(jerry)).toBeGreaterThanOrEqual(start(chars.indexOf('&')));
    expect(start(jerry)).toBeGreaterThan(start(chars.indexOf('m')));
    expect(start(cats)).toBeGreaterThan(start(jerry));
    expect(start(then)).toBeGreaterThan(start(chars.indexOf('😀')));
  });

  it('starts a word after a long pause where its sound starts, and leaves the pause to the punctuation', async () => {
    const { audio, alignment } = await whole(PAUSED);
    const [pauseStart, pauseEnd] = longestPause(samplesOf(audio));
    // The pause after "here;" (the sentence break before it is shorter) is near-silence: Flite's `pau`.
    expect(pauseEnd - pauseStart).toBeGreaterThan(150);
    const ms = (s: number): number => s * 1000;
    const many = PAUSED.indexOf('many');
    const semicolon = PAUSED.indexOf(';');
    // 25 ms: 5 ms analysis frames, Flite's segment times (in 5 ms frames), the resampler's centred kernel
    // blurring an onset by a few ms; "m" is voiced from its first instant (unlike a stop's silent closure).
    expect(Math.abs(ms(alignment.character_start_times_seconds[many]!) - pauseEnd)).toBeLessThanOrEqual(25);
    expect(
      Math.abs(ms(alignment.character_end_times_seconds[semicolon - 1]!) - pauseStart),
    ).toBeLessThanOrEqual(25);
    // "; " spans the pause.
    expect(ms(alignment.character_start_times_seconds[semicolon]!)).toBeLessThanOrEqual(pauseStart + 25);
    expect(ms(alignment.character_end_times_seconds[semicolon + 1]!)).toBeGreaterThanOrEqual(pauseEnd - 25);
  });

  it('carries each format: a WAV with its real sizes, MP3 frames', async () => {
    const wav = await whole('A short one.', 'wav_24000');
    expect(wav.audio.toString('latin1', 0, 4)).toBe('RIFF');
    expect(wav.audio.readUInt32LE(40)).toBe(wav.audio.length - 44);
    expectSane(wav.alignment, 'A short one.', (wav.audio.length - 44) / PCM_BYTES_PER_MS);
    const mp3 = await whole('A short one.', 'mp3_44100_192');
    expect(mp3.audio[0]).toBe(0xff);
    expect(mp3.audio[1]! & 0xe0).toBe(0xe0);
    expect(mp3.alignment.characters.join('')).toBe('A short one.');
  });

  it('streams the JSON of an answer past the memory bound, and it is still one valid object', async () => {
    const text = Array.from(
      { length: 14 },
      (_, i) => `Sentence number ${i + 1} goes on, & it says a little more.`,
    ).join(' ');
    const res = await post('/with-timestamps', text, 'wav_24000');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-length')).toBeNull();
    const body = (await res.json()) as TimestampsObject;
    const wav = Buffer.from(body.audio_base64, 'base64');
    expect(body.audio_base64.length).toBeGreaterThan((4 / 3) * 1024 * 1024);
    expect(wav.toString('latin1', 0, 4)).toBe('RIFF');
    expect(wav.readUInt32LE(40)).toBe(0xffffffff); // streamed: sizes unknown when the header went out
    expect((wav.length - 44) % 2).toBe(0);
    expectSane(body.alignment, text, (wav.length - 44) / PCM_BYTES_PER_MS);
  });

  it('refuses as the plain endpoints do: 401, 403, 400, 404, 405', async () => {
    for (const path of ['/with-timestamps', '/stream/with-timestamps']) {
      expect((await post(path, 'x', 'pcm_24000', null)).status).toBe(401);
      expect((await post(path, 'x', 'pcm_24000', KEYS.readonly)).status).toBe(403);
      const badFormat = await post(path, 'x', 'ogg_48000');
      expect(badFormat.status).toBe(400);
      expect(((await badFormat.json()) as { detail: { param: string } }).detail.param).toBe('output_format');
      const noVoice = await fetch(`${t.api}/v1/text-to-speech/nope${path}`, {
        method: 'POST',
        headers: { 'xi-api-key': KEYS.main, 'content-type': 'application/json' },
        body: JSON.stringify({ text: 'x' }),
      });
      expect(noVoice.status).toBe(404);
      expect(((await noVoice.json()) as { detail: { code: string } }).detail.code).toBe('voice_not_found');
      const get = await fetch(`${t.api}/v1/text-to-speech/${BUILT_IN_VOICE_ID}${path}`, {
        headers: { 'xi-api-key': KEYS.main },
      });
      expect(get.status).toBe(405);
      await get.arrayBuffer();
    }
  });
});

describe('the local service, /stream/with-timestamps', () => {
  it('sends "\\n"-terminated objects, each timing only characters whose audio was already sent', async () => {
    const { raw, objects, res } = await streamed(TRICKY);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(raw.endsWith('\n')).toBe(true);
    expect(objects.length).toBeGreaterThan(5);
    let sentMs = 0;
    const all: Alignment = {
      characters: [],
      character_start_times_seconds: [],
      character_end_times_seconds: [],
    };
    for (const o of objects) {
      sentMs += Buffer.from(o.audio_base64, 'base64').length / PCM_BYTES_PER_MS;
      expect(o.normalized_alignment).toEqual(o.alignment);
      // Times are absolute (from the response's first sample), and only for audio in or before this object.
      for (const end of o.alignment.character_end_times_seconds)
        expect(end * 1000).toBeLessThanOrEqual(sentMs);
      all.characters.push(...o.alignment.characters);
      all.character_start_times_seconds.push(...o.alignment.character_start_times_seconds);
      all.character_end_times_seconds.push(...o.alignment.character_end_times_seconds);
    }
    expectSane(all, TRICKY, sentMs);
    // Characters arrive as the audio does, not all at the end: Flite times a piece (a sentence here)
    // once it has made it, so the first sentence's words come with its last audio, before the second
    // sentence's (its full stop waits for the next word: it shares the pause before it).
    const firstSentence = Array.from(TRICKY.slice(0, TRICKY.indexOf('café') + 'café'.length)).length;
    const lastOfFirst = objects.findIndex(
      (_, i) =>
        objects.slice(0, i + 1).reduce((n, o) => n + o.alignment.characters.length, 0) >= firstSentence,
    );
    expect(lastOfFirst).toBeGreaterThanOrEqual(0);
    expect(lastOfFirst).toBeLessThan(objects.length - 5);
  });

  it('streams WAV with its streaming header first, and MP3', async () => {
    const wav = await streamed('Streamed with a header.', 'wav_24000');
    const first = Buffer.from(wav.objects[0]!.audio_base64, 'base64');
    expect(first.toString('latin1', 0, 4)).toBe('RIFF');
    expect(first.readUInt32LE(40)).toBe(0xffffffff);
    const mp3 = await streamed('Streamed as MP3.', 'mp3_44100_192');
    const bytes = Buffer.concat(mp3.objects.map((o) => Buffer.from(o.audio_base64, 'base64')));
    expect(bytes[0]).toBe(0xff);
    expect(bytes.length).toBeGreaterThan(5_000);
    expect(mp3.objects.flatMap((o) => o.alignment.characters).join('')).toBe('Streamed as MP3.');
  });
});

describe('the official ElevenLabs SDK', () => {
  const sdk = (): ElevenLabsClient =>
    new ElevenLabsClient({ apiKey: KEYS.main, baseUrl: t.api, maxRetries: 0 });

  it('textToSpeech.convertWithTimestamps reads the whole answer', async () => {
    const result = await sdk().textToSpeech.convertWithTimestamps(BUILT_IN_VOICE_ID, {
      text: TRICKY,
      outputFormat: 'pcm_24000',
    });
    const audio = Buffer.from(result.audioBase64, 'base64');
    expect(audio.length / PCM_BYTES_PER_MS).toBeGreaterThan(2000);
    const alignment = result.alignment!;
    expect(alignment.characters).toEqual(Array.from(TRICKY));
    expect(alignment.characterEndTimesSeconds.at(-1)! * 1000).toBeLessThanOrEqual(
      audio.length / PCM_BYTES_PER_MS,
    );
    expect(result.normalizedAlignment?.characters).toEqual(Array.from(TRICKY));
  });

  it('textToSpeech.streamWithTimestamps reads every object of the stream', async () => {
    const stream = await sdk().textToSpeech.streamWithTimestamps(BUILT_IN_VOICE_ID, {
      text: PAUSED,
      outputFormat: 'pcm_24000',
    });
    const parts: Buffer[] = [];
    const characters: string[] = [];
    let chunks = 0;
    for await (const chunk of stream) {
      chunks++;
      parts.push(Buffer.from(chunk.audioBase64, 'base64'));
      characters.push(...(chunk.alignment?.characters ?? []));
    }
    expect(chunks).toBeGreaterThan(5);
    expect(characters.join('')).toBe(PAUSED);
    expect(Buffer.concat(parts).length / PCM_BYTES_PER_MS).toBeGreaterThan(2000);
  });
});

describe('our client with timestamps on', () => {
  it('gets the audio the plain stream gets, and an alignment that grows as it plays', async () => {
    const timed = new SpeechClient({ baseUrl: t.url, apiKey: KEYS.main, timestamps: true, maxRetries: 0 });
    const plain = new SpeechClient({ baseUrl: t.url, apiKey: KEYS.main, maxRetries: 0 });
    try {
      const request = { voiceId: BUILT_IN_VOICE_ID, text: PAUSED, outputFormat: 'pcm_24000' } as const;
      const stream = await timed.stream(request);
      // What the speaker reads: the client's stream is one.
      const audio: SpeechAudio = stream;
      const alignment = audio.alignment!;
      const seen: number[] = [];
      let timedBytes = 0;
      for await (const chunk of audio) {
        expect(chunk.byteLength % 2).toBe(0);
        timedBytes += chunk.byteLength;
        seen.push(alignment.characters.length);
      }
      expect(seen[0]).toBeLessThan(Array.from(PAUSED).length);
      for (let i = 1; i < seen.length; i++) expect(seen[i]!).toBeGreaterThanOrEqual(seen[i - 1]!);
      expect(alignment.characters.join('')).toBe(PAUSED);
      // The last character ends with the audio the client yielded: not a byte lost or added.
      expect(alignment.endMs.at(-1)).toBe(Math.floor(timedBytes / PCM_BYTES_PER_MS));
      for (let i = 1; i < alignment.startMs.length; i++)
        expect(alignment.startMs[i]!).toBeGreaterThanOrEqual(alignment.endMs[i - 1]!);

      let plainBytes = 0;
      const plainStream = await plain.stream(request);
      expect(plainStream.alignment).toBeUndefined();
      for await (const chunk of plainStream) plainBytes += chunk.byteLength;
      // The same audio with or without timings (Flite is deterministic; eSpeak varies each rendering by
      // a few ms, ±0.5 %, so a little slack).
      expect(Math.abs(timedBytes - plainBytes) / plainBytes).toBeLessThan(0.02);
    } finally {
      await Promise.all([timed.close(), plain.close()]);
    }
  });
});
