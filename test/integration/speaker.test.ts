/**
 * The speaker against the real local speech service on loopback, with a recording sink on the real
 * clock: gapless joins, barge-in, long text, the phrase cache, and failures.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/speaker/clock.js';
import { PhraseCache } from '../../src/speaker/phrase-cache.js';
import { Speaker } from '../../src/speaker/speaker.js';
import { BUILT_IN_VOICE_ID } from '../../src/service/voices/builtin.js';
import { SpeechClient } from '../../src/speech/client.js';
import { SpeechServiceError } from '../../src/speech/errors.js';
import { KEYS, NO_PHONE_BARGE_IN, startTestApp, type TestApp } from '../helpers/app.js';
import { RecordingSink } from '../helpers/recording-sink.js';

const MULAW_8K = { encoding: 'mulaw', sampleRate: 8000, channels: 1 } as const;
const PCM_48K_STEREO = { encoding: 's16le', sampleRate: 48_000, channels: 2 } as const;

let t: TestApp;
let client: SpeechClient;
beforeAll(async () => {
  t = await startTestApp(NO_PHONE_BARGE_IN);
  client = new SpeechClient({ baseUrl: t.url, apiKey: KEYS.main });
});
afterAll(async () => {
  await client.close();
  await t.close();
});

function speakerFor(sink: RecordingSink, cache?: PhraseCache): Speaker {
  return new Speaker({
    source: client,
    sink,
    voiceId: BUILT_IN_VOICE_ID,
    clock: systemClock,
    ...(cache ? { cache } : {}),
  });
}

describe('speaker', () => {
  it('plays several sentences with no gap at the joins', async () => {
    const sink = new RecordingSink(MULAW_8K, systemClock, 200);
    const speaker = speakerFor(sink);
    const text = 'First sentence here. Then a second one follows. And a third closes it.';
    const started = performance.now();
    const result = await speaker.say(text).result;
    const wallMs = performance.now() - started;
    expect(result.status).toBe('played');
    expect(result.metrics.requestedSegments).toBe(3);
    expect(result.metrics.underruns).toBe(0);
    expect(result.heardText).toBe(text);
    const frames = sink.frames;
    expect(result.playedMs).toBe(frames.length * 20);
    // Paced at real time after the lead. A gap in the audio itself is an underrun (0 above); between
    // arrivals only a sanity bound, since a loaded CI machine fires a 20 ms timer up to ~100 ms late.
    const gaps = frames.slice(12).map((f, i) => f.at - frames[11 + i]!.at);
    expect(Math.max(...gaps)).toBeLessThan(250);
    expect(wallMs).toBeGreaterThan(frames.length * 20 - 300);
    await speaker.close();
  });

  it('barge-in mid-sentence: the request closes, the sink clears, no frame after the clear', async () => {
    const sink = new RecordingSink(PCM_48K_STEREO, systemClock, 200);
    const speaker = speakerFor(sink);
    const closes: number[] = [];
    const onConnection = (s: Socket): void => void s.once('close', () => closes.push(performance.now()));
    t.app.server.on('connection', onConnection);
    const fresh = new SpeechClient({ baseUrl: t.url, apiKey: KEYS.main });
    const own = new Speaker({ source: fresh, sink, voiceId: BUILT_IN_VOICE_ID });
    try {
      const text =
        'This is a long story that the listener will not wait for, because they have something to say. '.repeat(
          20,
        );
      const handle = own.say(text);
      await new Promise((r) => setTimeout(r, 1200));
      const t0 = performance.now();
      const cut = own.interrupt();
      // The clear is issued inside interrupt() itself, before it returns.
      expect(sink.clears.length).toBe(1);
      const clearMs = sink.clears[0]!.at - t0;
      expect(cut.interrupted).toBe(true);
      const result = await handle.result;
      expect(result.status).toBe('interrupted');
      expect(result.playedMs).toBeGreaterThan(700);
      expect(result.playedMs).toBeLessThan(1500);
      expect(text.startsWith(result.heardText)).toBe(true);
      expect(result.heardText.length).toBeGreaterThan(5);
      expect(text[result.heardText.length]).toBe(' ');
      expect(clearMs).toBeLessThan(100); // sanity bound only: CI machines stall
      await new Promise((r) => setTimeout(r, 300));
      expect(sink.frames.length).toBe(sink.clears[0]!.framesBefore);
      expect(closes.length).toBeGreaterThanOrEqual(1);
      expect(closes[0]! - t0).toBeLessThan(250); // sanity bound only
    } finally {
      t.app.server.off('connection', onConnection);
      await own.close();
      await speaker.close();
      await fresh.close();
    }
  });

  it('speaks a text over 5000 characters in several requests, nothing lost', async () => {
    const sink = new RecordingSink(MULAW_8K, systemClock, 0, true);
    sink.instant = true;
    const speaker = speakerFor(sink);
    const sentence = 'Here is one more sentence of a very long reading, spoken without a pause. ';
    const text = sentence.repeat(Math.ceil(6200 / sentence.length));
    expect(text.length).toBeGreaterThan(5000);
    const result = await speaker.say(text).result;
    expect(result.status).toBe('played');
    expect(result.heardText).toBe(text.trim());
    expect(result.metrics.requestedSegments).toBeGreaterThan(2);
    // The same text straight from the service: the frames hold exactly as much audio (last frame padded).
    const direct = await client.synthesize({
      voiceId: BUILT_IN_VOICE_ID,
      text: sentence.trim(),
      outputFormat: 'pcm_24000',
    });
    const perSentenceMs = direct.audio.length / 48;
    const totalMs = sink.frames.length * 20;
    const sentences = result.metrics.requestedSegments;
    expect(Math.abs(totalMs - perSentenceMs * sentences)).toBeLessThan(20 * sentences);
    await speaker.close();
  });

  it('serves a repeated prompt from the phrase cache: no request, the same audio', async () => {
    const sink = new RecordingSink(MULAW_8K, systemClock, 0, true);
    sink.instant = true;
    const cache = new PhraseCache({ maxBytes: 8 * 1024 * 1024 });
    const speaker = speakerFor(sink, cache);
    const prompt = 'Press one for sales. Press two for support.';
    const firstHandle = speaker.say(prompt);
    const first = await firstHandle.result;
    expect(first.metrics.requestedSegments).toBe(2);
    let requests = 0;
    const count = (): void => void requests++;
    t.app.server.on('request', count);
    const secondHandle = speaker.say(prompt);
    const second = await secondHandle.result;
    t.app.server.off('request', count);
    expect(requests).toBe(0);
    expect(second.metrics).toMatchObject({ cachedSegments: 2, requestedSegments: 0 });
    expect(second.playedMs).toBe(first.playedMs);
    // Its first frame is not compared with the first play's: the local service answered that in 3.7 ms
    // once, and the cached play took 5.8 on a busy CI machine. A sanity bound only.
    expect(second.metrics.firstFrameMs!).toBeLessThan(1000);
    // Both segments replayed from the 8 kHz audio the first play made (no resampling), to the byte.
    expect(cache.stats.rendered).toBe(2);
    const payloads = (id: string): Buffer => Buffer.concat(sink.framesOf(id).map((f) => f.payload));
    expect(payloads(secondHandle.id)).toEqual(payloads(firstHandle.id));
    await speaker.close();
  });

  it('a service error fails that utterance and the queue goes on', async () => {
    const sink = new RecordingSink(MULAW_8K, systemClock, 0, true);
    sink.instant = true;
    const speaker = speakerFor(sink);
    const bad = speaker.say('Nobody owns this voice.', { voiceId: 'no-such-voice' });
    const good = speaker.say('But this one plays.');
    const badResult = await bad.result;
    expect(badResult.status).toBe('failed');
    expect(badResult.error).toBeInstanceOf(SpeechServiceError);
    expect((badResult.error as SpeechServiceError).status).toBe(404);
    expect(badResult.playedMs).toBe(0);
    expect((await good.result).status).toBe('played');
    await speaker.close();
  });

  it('a stream cut mid-body fails the utterance with what played so far', async () => {
    // A service that sends half a second of audio, then drops the connection.
    const server: Server = createServer((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'audio/L16;rate=24000;channels=1' });
      res.write(Buffer.alloc(24_000, 1));
      setTimeout(() => res.socket?.destroy(), 50);
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const cutClient = new SpeechClient({
      baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      apiKey: 'k',
      maxRetries: 0,
    });
    const sink = new RecordingSink(MULAW_8K, systemClock, 0, true);
    sink.instant = true;
    const speaker = new Speaker({ source: cutClient, sink, voiceId: 'v' });
    try {
      const result = await speaker.say('Cut short.').result;
      expect(result.status).toBe('failed');
      expect((result.error as SpeechServiceError).code).toBe('stream_interrupted');
      expect(result.playedMs).toBeGreaterThanOrEqual(480);
      expect(result.playedMs).toBeLessThanOrEqual(520);
    } finally {
      await speaker.close();
      await cutClient.close();
      server.close();
    }
  });

  it('speaks a streaming text input sentence by sentence', async () => {
    const sink = new RecordingSink(MULAW_8K, systemClock, 0, true);
    sink.instant = true;
    const speaker = speakerFor(sink);
    async function* tokens(): AsyncGenerator<string> {
      for (const tok of ['Hel', 'lo the', 're. ', 'How are', ' you to', 'day? I am', ' fine.']) {
        await new Promise((r) => setTimeout(r, 10));
        yield tok;
      }
    }
    const result = await speaker.say(tokens()).result;
    expect(result.status).toBe('played');
    expect(result.metrics.requestedSegments).toBe(3);
    expect(result.heardText).toBe('Hello there. How are you today? I am fine.');
    await speaker.close();
  });

  it('non-interruptible utterances resist barge-in; force and priority now work', async () => {
    const sink = new RecordingSink(MULAW_8K, systemClock, 200);
    const speaker = speakerFor(sink);
    const firm = speaker.say('This announcement cannot be interrupted by the caller.', {
      interruptible: false,
    });
    await new Promise((r) => setTimeout(r, 400));
    expect(speaker.interrupt().interrupted).toBe(false);
    const urgent = speaker.say('Urgent.', { priority: 'now' });
    expect(speaker.interrupt({ force: true, keepQueue: true }).interrupted).toBe(true);
    expect((await firm.result).status).toBe('interrupted');
    expect((await urgent.result).status).toBe('played');
    const aborted = new AbortController();
    const handle = speaker.say('Cancelled by its own signal before long.', { signal: aborted.signal });
    await new Promise((r) => setTimeout(r, 300));
    aborted.abort();
    expect((await handle.result).status).toBe('interrupted');
    await speaker.close();
  });
});
