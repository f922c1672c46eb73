/**
 * The speech and speech-to-text clients against hostile peers on loopback (the hardening issue, items
 * 2, 9 and 10): timings out of proportion to the text, answers that never end or drip a byte now and
 * then under the idle timeout, and transcripts out of proportion to the audio. Each costs the one
 * request, with a coded error, and the next request works.
 */
import type { ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { wavFile } from '../../../src/audio/wav.js';
import { systemClock } from '../../../src/speaker/clock.js';
import { Speaker } from '../../../src/speaker/speaker.js';
import { maxAudioBytes } from '../../../src/speech/budget.js';
import { SpeechServiceError } from '../../../src/speech/errors.js';
import { SttClient, type SttClientOptions } from '../../../src/speech/stt.js';
import { RecordingSink } from '../../helpers/recording-sink.js';
import { delay, failureOf, KEY, loopbackClients, patternBytes, type Handler } from './loopback.js';

const JSON_HEADERS = { 'content-type': 'application/json', 'request-id': 'req-hostile' };
const PCM_HEADERS = { 'content-type': 'audio/L16;rate=24000;channels=1', 'request-id': 'req-hostile' };
const MB = 1024 * 1024;

const loopback = loopbackClients({ maxRetries: 0 });

function sttClient(handler: Handler, options: Partial<SttClientOptions> = {}): Promise<SttClient> {
  return loopback.open(
    handler,
    (s) => new SttClient({ baseUrl: s.url, apiKey: KEY, maxRetries: 0, ...options }),
  );
}

async function drain(stream: AsyncIterable<Uint8Array>): Promise<number> {
  let bytes = 0;
  for await (const chunk of stream) bytes += chunk.byteLength;
  return bytes;
}

/** Resolves when `res` drains or closes, leaving no listener behind (a long write loop adds many). */
function writable(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      res.off('drain', done).off('close', done);
      resolve();
    };
    res.on('drain', done).on('close', done);
  });
}

/** Writes `make()` until the client goes away (or `maxBytes`), honouring backpressure; returns the bytes written. */
async function writeUntilClosed(
  res: ServerResponse,
  make: () => Buffer | string,
  maxBytes: number,
): Promise<number> {
  let written = 0;
  while (!res.destroyed && written < maxBytes) {
    const part = make();
    written += Buffer.byteLength(part);
    if (!res.write(part)) await writable(res);
  }
  return written;
}

/** Writes one byte every `everyMs` until the client goes away: under any idle timeout, never done. */
async function drip(res: ServerResponse, byte: string, everyMs: number): Promise<void> {
  while (!res.destroyed) {
    res.write(byte);
    await delay(everyMs);
  }
}

function timingsLine(audio: Uint8Array, characters: readonly string[], timeS = 0): string {
  const times = characters.map(() => timeS);
  const alignment = {
    characters,
    character_start_times_seconds: times,
    character_end_times_seconds: times,
  };
  return `${JSON.stringify({ audio_base64: Buffer.from(audio).toString('base64'), alignment })}\n`;
}

const pcm = { voiceId: 'v1', text: 'Hi there', outputFormat: 'pcm_24000' } as const;

describe('with-timestamps: timings bounded by the text they time (item 2)', () => {
  /** The incident: objects with no audio and 40,000-character timing lists, as fast as the socket takes. */
  const HUGE = timingsLine(
    new Uint8Array(0),
    Array.from({ length: 40_000 }, () => 'a'),
  );

  it.each([
    ['from the first object (stream() rejects)', false],
    ['after audio started (the iteration rejects)', true],
  ])(
    'empty audio with 40,000-character timings, %s: invalid_response at once, connection closed, no memory growth',
    async (_what, audioFirst) => {
      let written = 0;
      const c = await loopback.setup(
        async (_req, res) => {
          res.writeHead(200, JSON_HEADERS);
          if (audioFirst) res.write(timingsLine(patternBytes(480), ['H']));
          written = await writeUntilClosed(res, () => HUGE, 400 * MB);
        },
        { timestamps: true },
      );
      const rssBefore = process.memoryUsage().rss;
      const started = performance.now();
      const closed = loopback.server.connectionClosed(1);
      const error = await failureOf(
        (async () => {
          const stream = await c.stream(pcm);
          await drain(stream);
        })(),
      );
      const ms = performance.now() - started;
      expect(error).toMatchObject({ code: 'invalid_response', retryable: false, requestId: 'req-hostile' });
      expect(error.message).toMatch(/more than the text has/);
      await closed;
      expect(ms).toBeLessThan(2_000);
      expect(written).toBeLessThan(64 * MB);
      expect(process.memoryUsage().rss - rssBefore).toBeLessThan(100 * MB);
    },
  );

  it('small timing lists that add up past the text (and its slack): invalid_response', async () => {
    let written = 0;
    const c = await loopback.setup(
      async (_req, res) => {
        res.writeHead(200, JSON_HEADERS);
        res.write(timingsLine(patternBytes(480), ['H', 'i']));
        written = await writeUntilClosed(res, () => timingsLine(new Uint8Array(0), ['x', 'y', 'z']), 64 * MB);
      },
      { timestamps: true },
    );
    // The first read may hold the audio and many of the small objects: stream() itself may reject.
    let characters = 0;
    const error = await failureOf(
      (async () => {
        const stream = await c.stream(pcm);
        try {
          await drain(stream);
        } finally {
          characters = stream.alignment!.characters.length;
        }
      })(),
    );
    expect(error.code).toBe('invalid_response');
    expect(characters).toBeLessThanOrEqual(8 + 32);
    expect(written).toBeLessThan(4 * MB);
  });

  it('one "character" of 100,000 code units is refused, not kept', async () => {
    const c = await loopback.setup(
      (_req, res) => {
        res.writeHead(200, JSON_HEADERS);
        res.write(timingsLine(patternBytes(480), ['H']));
        res.end(timingsLine(patternBytes(480), ['x'.repeat(100_000)]));
      },
      { timestamps: true },
    );
    const stream = await c.stream(pcm);
    expect((await failureOf(drain(stream))).code).toBe('invalid_response');
    expect(stream.alignment!.characters).toEqual(['H']);
  });

  it('a timing past the most audio the text can make is refused', async () => {
    const c = await loopback.setup(
      (_req, res) => {
        res.writeHead(200, JSON_HEADERS);
        res.end(timingsLine(patternBytes(480), ['H'], 1e9));
      },
      { timestamps: true },
    );
    const error = await failureOf(c.stream(pcm));
    expect(error.code).toBe('invalid_response');
    expect(error.message).toMatch(/a timing is past/);
  });

  it('objects with no audio and no timings, forever: response_too_large within the body bound', async () => {
    const block = '{"audio_base64":""}\n'.repeat(3000);
    let written = 0;
    const c = await loopback.setup(
      async (_req, res) => {
        res.writeHead(200, JSON_HEADERS);
        res.write(timingsLine(patternBytes(480), ['H']));
        written = await writeUntilClosed(res, () => block, 400 * MB);
      },
      { timestamps: true },
    );
    const stream = await c.stream(pcm);
    const error = await failureOf(drain(stream));
    expect(error.code).toBe('response_too_large');
    expect(written).toBeLessThan(16 * MB);
  });
});

describe('every speech request has a deadline (item 9)', () => {
  /** 300 ms for any text: `deadlineRealtimeMultiple: 0` leaves the floor alone. */
  const FAST_DEADLINE = { deadlineFloorMs: 300, deadlineRealtimeMultiple: 0 } as const;

  it('a stream dripping a byte every 50 ms (under the idle timeout) fails with deadline_exceeded', async () => {
    const c = await loopback.setup(async (_req, res) => {
      res.writeHead(200, PCM_HEADERS);
      res.write(patternBytes(480));
      await drip(res, 'ab', 50);
    }, FAST_DEADLINE);
    const started = performance.now();
    const stream = await c.stream(pcm);
    const closed = loopback.server.connectionClosed(1);
    const error = await failureOf(drain(stream));
    const ms = performance.now() - started;
    expect(error).toMatchObject({ code: 'deadline_exceeded', retryable: false, requestId: 'req-hostile' });
    expect(error.message).toMatch(/300 ms/);
    expect(ms).toBeGreaterThanOrEqual(250);
    expect(ms).toBeLessThan(1_500);
    await closed;
  });

  it('a with-timestamps stream dripping its JSON fails the same way', async () => {
    const c = await loopback.setup(
      async (_req, res) => {
        res.writeHead(200, JSON_HEADERS);
        res.write(timingsLine(patternBytes(480), ['H']));
        res.write('{"audio_base64":"');
        await drip(res, 'A', 50);
      },
      { timestamps: true, ...FAST_DEADLINE },
    );
    const stream = await c.stream(pcm);
    expect((await failureOf(drain(stream))).code).toBe('deadline_exceeded');
  });

  it('synthesize() of a dripping answer fails the same way', async () => {
    const c = await loopback.setup(async (_req, res) => {
      res.writeHead(200, PCM_HEADERS);
      res.write(patternBytes(480));
      await drip(res, 'ab', 50);
    }, FAST_DEADLINE);
    expect((await failureOf(c.synthesize(pcm))).code).toBe('deadline_exceeded');
  });

  it('only the time spent waiting for the service counts, not the time the caller holds the stream', async () => {
    const c = await loopback.setup(async (_req, res) => {
      res.writeHead(200, PCM_HEADERS);
      for (let i = 0; i < 4; i++) {
        res.write(patternBytes(480, i * 480));
        await delay(40);
      }
      res.end();
    }, FAST_DEADLINE);
    const stream = await c.stream(pcm);
    // A prefetched sentence waits for the one before it to play: longer than the whole deadline.
    await delay(500);
    expect(await drain(stream)).toBe(4 * 480);
  });

  it('the deadline grows with the text: its slow-rate length × the multiple, past the floor', async () => {
    const c = await loopback.setup(
      async (_req, res) => {
        res.writeHead(200, PCM_HEADERS);
        res.write(patternBytes(480));
        await drip(res, 'ab', 20);
      },
      { deadlineFloorMs: 100, deadlineRealtimeMultiple: 0.1 },
    );
    // 40 characters at 4 a second, × 0.1: 1 s, past the 100 ms floor.
    const stream = await c.stream({ ...pcm, text: 'x'.repeat(40) });
    const error = await failureOf(drain(stream));
    expect(error.code).toBe('deadline_exceeded');
    expect(error.message).toMatch(/1000 ms/);
  });

  it('audio that never ends, as fast as it goes: response_too_large at the text’s audio budget', async () => {
    let written = 0;
    const c = await loopback.setup(async (_req, res) => {
      res.writeHead(200, PCM_HEADERS);
      const block = patternBytes(64 * 1024);
      written = await writeUntilClosed(res, () => block, 400 * MB);
    });
    const budget = maxAudioBytes('pcm_24000', pcm.text.length);
    const stream = await c.stream(pcm);
    const error = await failureOf(drain(stream));
    expect(error.code).toBe('response_too_large');
    expect(written).toBeLessThan(budget + 16 * MB);
    const rssBefore = process.memoryUsage().rss;
    expect((await failureOf(c.synthesize(pcm))).code).toBe('response_too_large');
    expect(process.memoryUsage().rss - rssBefore).toBeLessThan(100 * MB);
  });

  it('a dripping utterance ends failed and the speaker’s queue goes on', async () => {
    const c = await loopback.setup(async (_req, res, { index }) => {
      res.writeHead(200, PCM_HEADERS);
      res.write(patternBytes(4800));
      if (index === 0) await drip(res, 'ab', 50);
      else res.end(patternBytes(24_000));
    }, FAST_DEADLINE);
    const sink = new RecordingSink(
      { encoding: 'mulaw', sampleRate: 8000, channels: 1 },
      systemClock,
      0,
      true,
    );
    sink.instant = true;
    const speaker = new Speaker({ source: c, sink, voiceId: 'v1', clock: systemClock });
    try {
      const stuck = speaker.say('This one drips.');
      const next = speaker.say('This one plays.');
      const stuckResult = await stuck.result;
      expect(stuckResult.status).toBe('failed');
      expect((stuckResult.error as SpeechServiceError).code).toBe('deadline_exceeded');
      const nextResult = await next.result;
      expect(nextResult.status).toBe('played');
      expect(nextResult.playedMs).toBeGreaterThanOrEqual(500);
    } finally {
      await speaker.close();
    }
  });
});

describe('speech-to-text: a deadline and answers bounded by the audio (items 9, 10)', () => {
  const RATE = 16_000;
  const wav = (ms: number): Buffer => wavFile(new Int16Array((ms / 1000) * RATE).fill(1000), RATE);
  const TURN = wav(1500);

  function answer(res: ServerResponse, json: unknown): void {
    const body = JSON.stringify(json);
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  }

  it('an answer dripping under the idle timeout fails that turn with deadline_exceeded; the next turn is transcribed', async () => {
    const c = await sttClient(
      async (_req, res, { index }) => {
        if (index > 0) return answer(res, { text: 'the next turn', language_code: 'eng' });
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"text": "');
        await drip(res, 'a', 50);
      },
      // 200 ms + 1.5 s × 0.2: 500 ms.
      { deadlineFloorMs: 200, deadlineRealtimeMultiple: 0.2 },
    );
    // Transcriptions chained as a call's relay chains them: one at a time, in order.
    const first = c.transcribe(TURN);
    const second = first.then(
      () => c.transcribe(TURN),
      () => c.transcribe(TURN),
    );
    const started = performance.now();
    const error = await failureOf(first);
    expect(error).toMatchObject({ code: 'deadline_exceeded', retryable: false });
    expect(error.message).toMatch(/within 500 ms/);
    expect(performance.now() - started).toBeLessThan(2_000);
    await loopback.server.connectionClosed(1);
    expect(await second).toMatchObject({ text: 'the next turn', languageCode: 'eng', warnings: [] });
  });

  it('a hung first attempt and its retry count against the same deadline', async () => {
    const c = await sttClient(
      () => {
        /* never answers */
      },
      {
        deadlineFloorMs: 300,
        deadlineRealtimeMultiple: 0,
        firstByteTimeoutMs: 200,
        maxRetries: 5,
        retryBaseDelayMs: 1,
      },
    );
    const started = performance.now();
    expect((await failureOf(c.transcribe(TURN))).code).toBe('deadline_exceeded');
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(loopback.server.requests.length).toBeLessThanOrEqual(2);
  });

  it('a 20 KB language_code is dropped with a warning; a real tag is kept', async () => {
    const codes = ['x'.repeat(20_000), 'not a tag', 'pt-BR'];
    const c = await sttClient((_req, res, { index }) =>
      answer(res, { text: 'hello', language_code: codes[index] }),
    );
    const huge = await c.transcribe(TURN);
    expect(huge.languageCode).toBeUndefined();
    expect(huge.text).toBe('hello');
    expect(huge.warnings).toEqual([expect.stringMatching(/^language_code dropped: 20000 characters/)]);
    expect((await c.transcribe(TURN)).languageCode).toBeUndefined();
    const ok = await c.transcribe(TURN);
    expect(ok.languageCode).toBe('pt-BR');
    expect(ok.warnings).toEqual([]);
  });

  it('a 1 MB text for a 1.5 s turn is refused before parsing (response_too_large)', async () => {
    const c = await sttClient((_req, res) => answer(res, { text: 'a'.repeat(1_000_000) }));
    const error = await failureOf(c.transcribe(TURN));
    expect(error).toMatchObject({ code: 'response_too_large', retryable: false });
  });

  it('a 1 MB text for a 60 s turn fits the byte bound and is cut to 40 characters a second', async () => {
    const c = await sttClient((_req, res) =>
      answer(res, { text: 'a'.repeat(2399) + '😀'.repeat(10) + 'a'.repeat(1_000_000 - 2419) }),
    );
    const t = await c.transcribe(wav(60_000));
    // 60 s × 40 a second is 2400, but the 2400th unit is the first half of an emoji: never split.
    expect(t.text).toBe('a'.repeat(2399));
    expect(t.warnings).toEqual([expect.stringMatching(/^text cut from 1000000 to 2399 characters/)]);
  });

  it('a text past 400 characters for a short turn is cut; words past the cap are left out and counted', async () => {
    const words = Array.from({ length: 1000 }, (_, i) => ({
      text: 'w',
      start: (i % 10) / 10,
      end: (i % 10) / 10,
      type: 'word',
    }));
    const c = await sttClient((_req, res) =>
      answer(res, { text: 'b'.repeat(5000), language_code: 'en', words }),
    );
    const t = await c.transcribe(TURN);
    expect(t.text).toBe('b'.repeat(400));
    expect(t.languageCode).toBe('en');
    expect(t.words).toHaveLength(100);
    expect(t.droppedWords).toBe(900);
    expect(t.warnings).toHaveLength(2);
  });
});
