/**
 * The speech-to-text client against a real HTTP peer on loopback (testkit/fake-stt.ts): what goes on
 * the wire, the transcript that comes back, retries, aborts, and every bound on what either side sends.
 */
import { ElevenLabsClient } from '@elevenlabs/elevenlabs-js';
import { afterEach, describe, expect, it } from 'vitest';
import { wavFile } from '../../src/audio/wav.js';
import { SpeechInputError, SpeechServiceError } from '../../src/speech/errors.js';
import { SttClient, type SttClientOptions } from '../../src/speech/stt.js';
import { WORD_END_SLACK_MS } from '../../src/speech/transcript.js';
import { FakeStt, fakeTranscript, type FakeSttOptions } from '../../testkit/fake-stt.js';
import { freePort } from '../../testkit/ports.js';
import { fakeSecret } from '../../testkit/secrets.js';

const RATE = 16_000;

/** A 440 Hz tone of `ms` at 16 kHz: a stand-in for a caller's turn. */
function tone(ms: number): Int16Array {
  const out = new Int16Array(Math.round((ms / 1000) * RATE));
  for (let i = 0; i < out.length; i++) out[i] = Math.round(12_000 * Math.sin((2 * Math.PI * 440 * i) / RATE));
  return out;
}

const TURN = tone(1500);
const TURN_WAV = wavFile(TURN, RATE);

let fake: FakeStt | undefined;
let client: SttClient | undefined;

afterEach(async () => {
  await client?.close();
  await fake?.close();
  client = undefined;
  fake = undefined;
});

async function setup(
  fakeOptions: FakeSttOptions = {},
  clientOptions: Partial<SttClientOptions> = {},
): Promise<{ f: FakeStt; c: SttClient }> {
  fake = await FakeStt.start(fakeOptions);
  client = new SttClient({ baseUrl: fake.url, apiKey: fake.apiKey, retryBaseDelayMs: 10, ...clientOptions });
  return { f: fake, c: client };
}

async function failure(promise: Promise<unknown>): Promise<SpeechServiceError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(SpeechServiceError);
    return error as SpeechServiceError;
  }
  throw new Error('expected the call to fail');
}

/** Everything an error would show in a log: its message, stack and causes. */
function everythingShown(error: unknown): string {
  const out: string[] = [];
  for (let e: unknown = error; e !== undefined && e !== null; e = (e as { cause?: unknown }).cause) {
    let json = '';
    try {
      json = JSON.stringify(e);
    } catch {
      // circular: its message and stack are checked anyway
    }
    const { message, stack } = e as Partial<Error>;
    out.push(message ?? '', stack ?? '', json);
    if (out.length > 30) break;
  }
  return out.join('\n');
}

describe('a turn transcribed', () => {
  it('posts the turn as the 16 kHz mono 16-bit WAV it is, and maps the answer to milliseconds', async () => {
    const { f, c } = await setup({
      transcribe: ({ wav }) =>
        `${wav.sampleRate} Hz ${wav.channels} channel ${wav.bitsPerSample} bit ${Math.round(wav.durationMs)} ms`,
    });
    const transcript = await c.transcribe(TURN_WAV);

    const expectedText = '16000 Hz 1 channel 16 bit 1500 ms';
    expect(transcript.text).toBe(expectedText);
    const request = f.requests[0]!;
    expect(request.path).toBe('/v1/speech-to-text');
    expect(request.headers['content-type']).toMatch(/^multipart\/form-data; boundary=/);
    expect(request.fields).toEqual({ model_id: 'scribe_v1' });
    const wav = request.wav!;
    expect(wav).toMatchObject({
      filename: 'turn.wav',
      contentType: 'audio/wav',
      sampleRate: 16_000,
      channels: 1,
      bitsPerSample: 16,
      frames: 24_000,
      durationMs: 1500,
      bytes: 44 + 48_000,
    });
    for (const i of [0, 1, 17, 12_345, 23_999]) expect(wav.samples[i]).toBe(TURN[i]! / 32768);

    const sent = fakeTranscript(expectedText, 1500) as {
      words: Array<{ text: string; start: number; end: number; type: string }>;
    };
    expect(transcript.words).toEqual(
      sent.words.map((w) => ({
        text: w.text,
        startMs: Math.round(w.start * 1000),
        endMs: Math.round(w.end * 1000),
        type: w.type,
      })),
    );
    expect(transcript.words.filter((w) => w.type === 'word').map((w) => w.text)).toEqual(
      expectedText.split(' '),
    );
    expect(transcript).toMatchObject({
      languageCode: 'eng',
      languageProbability: 0.98,
      droppedWords: 0,
      audioMs: 1500,
      attempts: 1,
    });
  });

  it('sends the configured model_id and the call’s language_code', async () => {
    const { f, c } = await setup({}, { modelId: 'scribe_v2' });
    const transcript = await c.transcribe(TURN_WAV, { languageCode: 'fr' });
    expect(f.requests[0]!.fields).toEqual({ model_id: 'scribe_v2', language_code: 'fr' });
    expect(transcript.languageCode).toBe('fr');
  });

  it('speaks the same protocol as the official ElevenLabs SDK (which transcribes through the fake)', async () => {
    const { f } = await setup({ transcribe: () => 'the SDK was heard' });
    const sdk = new ElevenLabsClient({ apiKey: f.apiKey, baseUrl: f.url, maxRetries: 0 });
    const answer = await sdk.speechToText.convert({
      modelId: 'scribe_v1',
      file: new Blob([TURN_WAV], { type: 'audio/wav' }),
    });
    expect(answer).toMatchObject({ text: 'the SDK was heard', languageCode: 'eng' });
    expect(f.requests[0]).toMatchObject({ keyHeader: 'xi-api-key', modelId: 'scribe_v1' });
    expect(f.requests[0]!.wav!.frames).toBe(24_000);
  });
});

describe('the key', () => {
  it('goes in xi-api-key by default and in ServicePlatform-APIKey when asked, never elsewhere', async () => {
    const { f, c } = await setup();
    await c.transcribe(TURN_WAV);
    const platform = new SttClient({
      baseUrl: f.url,
      apiKey: f.apiKey,
      authHeader: 'ServicePlatform-APIKey',
    });
    try {
      await platform.transcribe(TURN_WAV);
    } finally {
      await platform.close();
    }
    expect(f.requests.map((r) => [r.keyHeader, r.authorized])).toEqual([
      ['xi-api-key', true],
      ['ServicePlatform-APIKey', true],
    ]);
    for (const r of f.requests) {
      expect(r.headers['authorization']).toBeUndefined();
      expect(JSON.stringify(r.headers)).not.toContain(f.apiKey);
    }
  });

  it('a wrong key is a 401 invalid_api_key, not retried, and the key the server quoted is scrubbed', async () => {
    const wrongKey = fakeSecret('wrong-key');
    const { f } = await setup({}, { apiKey: wrongKey });
    const error = await failure(client!.transcribe(TURN_WAV));
    expect(error).toMatchObject({ status: 401, code: 'invalid_api_key', retryable: false });
    expect(error.message).toContain('Invalid API key "[redacted]"');
    expect(everythingShown(error)).not.toContain(wrongKey);
    expect(f.requests).toHaveLength(1);
    expect(f.requests[0]!.authorized).toBe(false);
  });
});

describe('retries', () => {
  it('waits out a 429’s Retry-After, retries a 500, then succeeds with the whole WAV each time', async () => {
    const { f, c } = await setup();
    f.failNext(1, { kind: 'status', status: 429, retryAfter: '0.3' });
    f.failNext(1, { kind: 'status', status: 500 });
    const transcript = await c.transcribe(TURN_WAV);
    expect(transcript.text).toBe('Hello from the fake transcriber.');
    expect(transcript.attempts).toBe(3);
    expect(f.requests.map((r) => r.status)).toEqual([429, 500, 200]);
    expect(f.requests[1]!.receivedAt - f.requests[0]!.receivedAt).toBeGreaterThanOrEqual(290);
    for (const r of f.requests) expect(r.wav?.frames).toBe(24_000);
  });

  it('fails at once when a Retry-After is longer than maxRetryAfterMs, saying how long was asked', async () => {
    const { f, c } = await setup({}, { maxRetryAfterMs: 5_000 });
    f.failNext(1, { kind: 'status', status: 429, retryAfter: '120' });
    const error = await failure(c.transcribe(TURN_WAV));
    expect(error).toMatchObject({ status: 429, code: 'too_many_concurrent_requests', retryAfterMs: 120_000 });
    expect(f.requests).toHaveLength(1);
  });

  it('retries a connection dropped before the answer', async () => {
    const { f, c } = await setup();
    f.failNext(1, { kind: 'drop' });
    const transcript = await c.transcribe(TURN_WAV);
    expect(transcript.attempts).toBe(2);
    expect(f.requests.map((r) => r.status)).toEqual([undefined, 200]);
  });

  it('gives up after maxRetries and surfaces the last 5xx', async () => {
    const { f, c } = await setup({}, { maxRetries: 2 });
    f.failNext(5, { kind: 'status', status: 503, message: 'overloaded' });
    const error = await failure(c.transcribe(TURN_WAV));
    expect(error).toMatchObject({ status: 503, code: 'service_unavailable', retryable: true });
    expect(error.message).toContain('overloaded');
    expect(f.requests).toHaveLength(3);
  });

  it('does not retry a 400 (an unknown model) and surfaces the service’s own message', async () => {
    const { f, c } = await setup({}, { modelId: 'scribe_v9' });
    const error = await failure(c.transcribe(TURN_WAV));
    expect(error).toMatchObject({ status: 400, code: 'model_not_found', retryable: false });
    expect(error.message).toBe('speech service answered 400 model_not_found: unknown model_id "scribe_v9"');
    expect(f.requests).toHaveLength(1);
  });

  it('times out a hung transcription per attempt, retries it, and says a transcript did not come', async () => {
    const { f, c } = await setup({}, { firstByteTimeoutMs: 300, maxRetries: 1 });
    f.failNext(2, { kind: 'hang' });
    const error = await failure(c.transcribe(TURN_WAV));
    expect(error.code).toBe('first_byte_timeout');
    expect(error.message).toBe('no transcript within 300 ms of sending the audio');
    expect(f.requests).toHaveLength(2);
    await f.waitFor(() => f.requests.every((r) => r.closedEarly), 2_000, 'closed hung requests');
  });
});

describe('abort', () => {
  it('mid-request: rejects with the signal’s reason at once, closes the connection, retries nothing', async () => {
    const { f, c } = await setup();
    f.failNext(1, { kind: 'hang' });
    const ctl = new AbortController();
    const call = c.transcribe(TURN_WAV, { signal: ctl.signal });
    const settled = call.catch((e: unknown) => e);
    await f.waitFor(() => f.requests[0]?.wav !== undefined, 5_000, 'uploaded turn');
    const reason = new DOMException('the caller barged in', 'AbortError');
    const abortedAt = performance.now();
    ctl.abort(reason);
    expect(await settled).toBe(reason);
    expect(performance.now() - abortedAt).toBeLessThan(250);
    await f.waitFor(() => f.requests[0]!.closedEarly, 2_000, 'closed connection');
    await new Promise((r) => setTimeout(r, 50));
    expect(f.requests).toHaveLength(1);
  });

  it('an already aborted signal sends nothing', async () => {
    const { f, c } = await setup();
    const reason = new Error('gone');
    await expect(c.transcribe(TURN_WAV, { signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
    expect(f.requests).toHaveLength(0);
  });
});

describe('what the service answers is bounded and checked', () => {
  it('refuses an answer over maxResponseBytes without reading it all', async () => {
    const { f, c } = await setup(
      { transcribe: () => 'word '.repeat(20_000) },
      { maxResponseBytes: 64 * 1024 },
    );
    const error = await failure(c.transcribe(TURN_WAV));
    expect(error).toMatchObject({ code: 'response_too_large', retryable: false });
    expect(error.message).toContain(String(64 * 1024));
    expect(f.requests).toHaveLength(1);
  });

  it('refuses malformed JSON (invalid_response), not retried', async () => {
    const { f, c } = await setup();
    f.failNext(1, { kind: 'invalid-json' });
    const error = await failure(c.transcribe(TURN_WAV));
    expect(error).toMatchObject({ code: 'invalid_response', status: 200, retryable: false });
    expect(error.message).toBe('the speech service answered with malformed JSON');
    expect(f.requests).toHaveLength(1);
  });

  it('refuses a 2xx that is not JSON (a proxy’s login page)', async () => {
    const { c } = await setup({
      transcribe: () => ({ body: '<html>sign in</html>', contentType: 'text/html' }),
    });
    const error = await failure(c.transcribe(TURN_WAV));
    expect(error.code).toBe('unexpected_content_type');
    expect(error.message).toContain('"text/html" instead of a JSON transcript');
  });

  it.each([
    ['a list', [], /it is not a JSON object/],
    ['no text', { words: [] }, /: text must be a string/],
    ['text of another type', { text: ['hi'] }, /: text must be a string/],
    ['words not a list', { text: 'hi', words: { 0: 'hi' } }, /: words must be an array/],
    ['a word not an object', { text: 'hi', words: ['hi'] }, /: words\[0\] must be an object/],
    [
      'a word without text',
      {
        text: 'hi you',
        words: [
          { text: 'hi', start: 0, end: 0.1 },
          { start: 0.2, end: 0.3 },
        ],
      },
      /: words\[1\]\.text must be a string/,
    ],
    [
      'a type of another type',
      { text: 'hi', words: [{ text: 'hi', start: 0, end: 0.1, type: 1 }] },
      /words\[0\]\.type/,
    ],
    ['language_code of another type', { text: 'hi', language_code: 7 }, /: language_code must be a string/],
    ['language_probability as text', { text: 'hi', language_probability: 'high' }, /language_probability/],
  ])('refuses an answer with %s, naming what is wrong', async (_what, json, message) => {
    const { f, c } = await setup({ transcribe: () => ({ json }) });
    const error = await failure(c.transcribe(TURN_WAV));
    expect(error).toMatchObject({ code: 'invalid_response', retryable: false });
    expect(error.message).toMatch(/^the speech-to-text answer is invalid: /);
    expect(error.message).toMatch(message);
    expect(f.requests).toHaveLength(1);
  });

  it('drops words whose timings are unusable, counts them, clamps a small overshoot, keeps the text', async () => {
    const over = 1.5 + WORD_END_SLACK_MS / 1000;
    // Raw, since JSON.stringify cannot write 1e400 (which parses as Infinity).
    const body = `{"language_code": "eng", "language_probability": 1.7, "text": "one two three four five six seven", "words": [
      {"text": "one", "start": 0, "end": 0.2, "type": "word"},
      {"text": "two", "start": -0.1, "end": 0.3, "type": "word"},
      {"text": "three", "start": 0.5, "end": 0.4, "type": "word"},
      {"text": "four", "start": 0.5, "end": 1e400, "type": "word"},
      {"text": "five", "end": 0.7, "type": "word"},
      {"text": "six", "start": 1.2, "end": ${over + 0.01}, "type": "word"},
      {"text": "seven", "start": 1.3, "end": 1.7}
    ]}`;
    const { c } = await setup({ transcribe: () => ({ body, contentType: 'application/json' }) });
    const transcript = await c.transcribe(TURN_WAV);
    expect(transcript.text).toBe('one two three four five six seven');
    expect(transcript.words).toEqual([
      { text: 'one', startMs: 0, endMs: 200, type: 'word' },
      { text: 'seven', startMs: 1300, endMs: 1500, type: 'word' },
    ]);
    expect(transcript.droppedWords).toBe(5);
    expect(transcript.languageProbability).toBeUndefined();
  });
});

describe('what is sent is bounded', () => {
  it('refuses audio over maxAudioMs (60 s by default), under 100 ms, or not a WAV, before sending', async () => {
    const { f, c } = await setup();
    const short = new SttClient({ baseUrl: f.url, apiKey: f.apiKey, maxAudioMs: 1_000 });
    const cases: Array<[Promise<unknown>, RegExp]> = [
      [c.transcribe(wavFile(tone(60_001), RATE)), /the audio is 60001 ms long; at most 60000 ms/],
      [short.transcribe(TURN_WAV), /the audio is 1500 ms long; at most 1000 ms \(maxAudioMs\)/],
      [c.transcribe(wavFile(tone(50), RATE)), /the audio is 50 ms long; at least 100 ms/],
      [c.transcribe(Buffer.from('ID3 not a wave file at all')), /not a WAV file this client reads/],
    ];
    try {
      for (const [call, message] of cases) {
        const error = await call.catch((e: unknown) => e);
        expect(error).toBeInstanceOf(SpeechInputError);
        expect(error).toMatchObject({ field: 'file', code: 'invalid_input', retryable: false });
        expect((error as Error).message).toMatch(message);
      }
      const language = await c
        .transcribe(TURN_WAV, { languageCode: 'english please' })
        .catch((e: unknown) => e);
      expect(language).toMatchObject({ field: 'language_code' });
    } finally {
      await short.close();
    }
    expect(f.requests).toHaveLength(0);
    await c.transcribe(wavFile(tone(60_000), RATE));
    expect(f.requests[0]!.wav!.durationMs).toBe(60_000);
  });
});

describe('the base URL', () => {
  it('with a path and credentials: posts under it, sends Basic auth, shows the URL redacted', async () => {
    const { f } = await setup({ pathPrefix: '/proxy/stt' });
    const port = new URL(f.url).port;
    const stt = new SttClient({
      baseUrl: `http://robert:pa55w0rd@127.0.0.1:${port}/proxy/`,
      pathPrefix: 'stt',
      apiKey: f.apiKey,
    });
    try {
      expect(stt.redactedBaseUrl).toBe(`http://[redacted]@127.0.0.1:${port}/proxy/`);
      expect((await stt.transcribe(TURN_WAV)).text).toBe('Hello from the fake transcriber.');
    } finally {
      await stt.close();
    }
    expect(f.requests[0]!.path).toBe('/proxy/stt/v1/speech-to-text');
    expect(f.requests[0]!.headers['authorization']).toBe(
      `Basic ${Buffer.from('robert:pa55w0rd').toString('base64')}`,
    );
    expect(f.requests[0]!.authorized).toBe(true);
  });

  it('never shows the key or the URL’s password, whatever the failure', async () => {
    const { f } = await setup();
    const port = new URL(f.url).port;
    f.failNext(1, {
      kind: 'status',
      status: 500,
      message: `upstream refused ${f.apiKey} for robert:pa55w0rd`,
    });
    const viaProxy = new SttClient({
      baseUrl: `http://robert:pa55w0rd@127.0.0.1:${port}`,
      apiKey: f.apiKey,
      maxRetries: 0,
    });
    const nowhere = new SttClient({
      baseUrl: `http://robert:pa55w0rd@127.0.0.1:${await freePort()}`,
      apiKey: f.apiKey,
      maxRetries: 0,
    });
    try {
      const quoted = await failure(viaProxy.transcribe(TURN_WAV));
      expect(quoted.status).toBe(500);
      expect(quoted.message).toContain('upstream refused [redacted] for [redacted]:[redacted]');
      const refused = await failure(nowhere.transcribe(TURN_WAV));
      expect(refused.code).toBe('connection_failed');
      for (const error of [quoted, refused]) {
        const shown = everythingShown(error);
        expect(shown).not.toContain(f.apiKey);
        expect(shown).not.toContain('pa55w0rd');
      }
    } finally {
      await viaProxy.close();
      await nowhere.close();
    }
  });
});

it('a closed client refuses with client_closed', async () => {
  const { f, c } = await setup();
  await c.close();
  const error = await failure(c.transcribe(TURN_WAV));
  expect(error).toMatchObject({ code: 'client_closed', message: 'the SttClient was closed' });
  expect(f.requests).toHaveLength(0);
});
