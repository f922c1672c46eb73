/**
 * The realtime speech-to-text client against a real WebSocket peer on loopback
 * (testkit/fake-realtime-stt.ts): what goes on the wire (the line's own audio, byte for byte), the
 * partial and committed transcripts in order, word timings, the service's errors as coded errors,
 * deadlines on an injected clock, every bound on what a server sends, a mid-turn failure the relay
 * can fall back from, the key kept out of errors and logs, and a clean close. The last block drives
 * the same fake with the official SDK's realtime client, to show the fake speaks the real protocol.
 */
import { AudioFormat, CommitStrategy, ElevenLabsClient, RealtimeEvents } from '@elevenlabs/elevenlabs-js';
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/app/logger.js';
import { MULAW_8K, type WireFormat } from '../../src/audio/framer.js';
import { decodeAlaw, encodeAlaw, encodeMulaw } from '../../src/audio/g711.js';
import { SpeechInputError } from '../../src/speech/errors.js';
import { maxTextChars } from '../../src/speech/transcript.js';
import {
  canFallBackToBatch,
  RealtimeSttClient,
  RealtimeSttError,
  type RealtimeSttOptions,
  type RealtimeSttSession,
  type RealtimeTranscriptEvent,
} from '../../src/speech/stt-realtime.js';
import {
  FakeRealtimeStt,
  type FakeRealtimeOptions,
  type FakeRealtimeSegment,
} from '../../testkit/fake-realtime-stt.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { fakeSecret } from '../../testkit/secrets.js';

const PCM_16K: WireFormat = { encoding: 's16le', sampleRate: 16_000, channels: 1 };
const ALAW_8K: WireFormat = { encoding: 'alaw', sampleRate: 8000, channels: 1 };

/** A 440 Hz tone of `ms` at `rate`: a stand-in for a caller's speech. */
function tone(ms: number, rate: number): Int16Array {
  const out = new Int16Array(Math.round((ms / 1000) * rate));
  for (let i = 0; i < out.length; i++) out[i] = Math.round(9000 * Math.sin((2 * Math.PI * 440 * i) / rate));
  return out;
}

/** `bytes` cut into 20 ms frames of `frameBytes`, as a gateway delivers them. */
function frames(bytes: Uint8Array, frameBytes: number): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let at = 0; at < bytes.length; at += frameBytes) out.push(bytes.subarray(at, at + frameBytes));
  return out;
}

const MULAW_SECOND = encodeMulaw(tone(1000, 8000));

/** Tells what the fake heard: the segment's bytes and format, so a test sees its audio arrived whole. */
function heard(segment: FakeRealtimeSegment): string {
  return segment.final
    ? `heard ${segment.audio.byteLength} bytes of ${segment.audioFormat}`
    : `partial ${Math.round(segment.audioMs)}`;
}

let fake: FakeRealtimeStt | undefined;
let client: RealtimeSttClient | undefined;

afterEach(async () => {
  await client?.close();
  await fake?.close();
  client = undefined;
  fake = undefined;
});

async function setup(
  fakeOptions: FakeRealtimeOptions = {},
  clientOptions: Partial<RealtimeSttOptions> = {},
): Promise<{ f: FakeRealtimeStt; c: RealtimeSttClient }> {
  fake = await FakeRealtimeStt.start({ latencyMs: 0, transcribe: heard, ...fakeOptions });
  client = new RealtimeSttClient({ baseUrl: fake.url, apiKey: fake.apiKey, ...clientOptions });
  return { f: fake, c: client };
}

async function failure(promise: Promise<unknown>): Promise<RealtimeSttError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(RealtimeSttError);
    return error as RealtimeSttError;
  }
  throw new Error('expected the call to fail');
}

/** Every event of a session, read as they come (so none is coalesced for a slow reader). */
function collect(session: RealtimeSttSession): { events: RealtimeTranscriptEvent[]; done: Promise<unknown> } {
  const events: RealtimeTranscriptEvent[] = [];
  const done = (async () => {
    for await (const event of session.events()) events.push(event);
  })().then(
    () => undefined,
    (error: unknown) => error,
  );
  return { events, done };
}

function sendAll(session: RealtimeSttSession, chunks: readonly Uint8Array[]): void {
  for (const chunk of chunks) expect(session.sendAudio(chunk)).toBe(true);
}

/** Everything an error would show in a log: its message, stack and causes. */
function everythingShown(error: unknown): string {
  const out: string[] = [];
  for (let e: unknown = error; e !== undefined && e !== null; e = (e as { cause?: unknown }).cause) {
    const { message, stack } = e as Partial<Error>;
    out.push(message ?? '', stack ?? '', JSON.stringify(e));
  }
  return out.join('\n');
}

describe('a turn streamed', () => {
  it('sends μ-law 8 kHz as ulaw_8000 byte for byte, and hears partials, then the committed transcript', async () => {
    const { f, c } = await setup({ partialEveryMs: 200 });
    const session = c.open({ format: MULAW_8K });
    const { events, done } = collect(session);
    await session.ready();
    // 200 ms at a time, each step's partial awaited: every partial is seen (none superseded unread).
    const steps = frames(MULAW_SECOND, 1600);
    for (const [i, step] of steps.entries()) {
      sendAll(session, frames(step, 160));
      await f.waitFor(() => events.length === i + 1, `partial ${i + 1}`);
    }
    const transcript = await session.commit();
    await session.close();
    expect(await done).toBeUndefined();

    const record = f.sessions[0]!;
    expect(record.path).toBe('/v1/speech-to-text/realtime');
    expect(record.query).toEqual({
      model_id: ['scribe_v2_realtime'],
      commit_strategy: ['manual'],
      audio_format: ['ulaw_8000'],
      include_timestamps: ['false'],
    });
    expect(record.authorizedBy).toBe('xi-api-key');
    expect(Buffer.concat(record.chunks.map((chunk) => chunk.audio)).equals(MULAW_SECOND)).toBe(true);
    expect(record.chunks.every((chunk) => chunk.sampleRate === 8000)).toBe(true);
    expect(record.chunks.at(-1)?.commit).toBe(true);
    expect(record.chunks.at(-1)?.audio.byteLength).toBe(0);

    expect(transcript.text).toBe('heard 8000 bytes of ulaw_8000');
    expect(transcript.audioMs).toBe(1000);
    expect(transcript.sessionId).toBe(session.sessionId);
    expect(transcript.commitLatencyMs).toBeGreaterThanOrEqual(0);
    expect(events.map((e) => (e.type === 'partial' ? e.text : e.type))).toEqual([
      'partial 200',
      'partial 400',
      'partial 600',
      'partial 800',
      'partial 1000',
      'committed',
    ]);
    expect(events.at(-1)).toEqual({ type: 'committed', transcript, requested: true });
    expect(record.closed).toEqual({ by: 'client', code: 1000 });
    expect(session.status).toBe('closed');
    expect(c.openSessions).toBe(0);
  });

  it('holds audio given while connecting and sends it in chunks of at most 500 ms, previous_text with the first', async () => {
    const { f, c } = await setup();
    const session = c.open({ format: MULAW_8K, previousText: 'Which department?' });
    const turn = Buffer.concat([MULAW_SECOND, MULAW_SECOND, MULAW_SECOND]);
    sendAll(session, frames(turn, 160));
    expect(session.status).toBe('connecting');
    expect(session.audioMs).toBe(3000);
    await session.commit();

    const { chunks } = f.sessions[0]!;
    const audio = chunks.filter((chunk) => chunk.audio.byteLength > 0);
    expect(audio.length).toBe(6);
    expect(audio.every((chunk) => chunk.audio.byteLength <= 4000)).toBe(true);
    expect(Buffer.concat(audio.map((chunk) => chunk.audio)).equals(turn)).toBe(true);
    expect(chunks.map((chunk) => chunk.previousText)).toEqual([
      'Which department?',
      ...Array<undefined>(chunks.length - 1).fill(undefined),
    ]);
    expect(f.sessions[0]!.refused).toEqual([]);
  });

  it('sends 16 kHz PCM as pcm_16000 unchanged, a sample split across two chunks kept whole', async () => {
    const { f, c } = await setup();
    const pcm = Buffer.from(tone(500, 16_000).buffer);
    const session = c.open({ format: PCM_16K });
    // 641 bytes, then the rest: the odd byte is carried to the next chunk, not dropped or doubled.
    sendAll(session, [pcm.subarray(0, 641), pcm.subarray(641)]);
    const transcript = await session.commit();
    expect(f.sessions[0]!.query['audio_format']).toEqual(['pcm_16000']);
    expect(Buffer.concat(f.sessions[0]!.chunks.map((chunk) => chunk.audio)).equals(pcm)).toBe(true);
    expect(transcript.text).toBe(`heard ${pcm.byteLength} bytes of pcm_16000`);
  });

  it('decodes A-law to pcm_8000 without resampling; refuses a format the service cannot take as it is', async () => {
    const { f, c } = await setup();
    const alaw = encodeAlaw(tone(300, 8000));
    const session = c.open({ format: ALAW_8K });
    sendAll(session, [alaw]);
    await session.commit();
    expect(f.sessions[0]!.query['audio_format']).toEqual(['pcm_8000']);
    const received = Buffer.concat(f.sessions[0]!.chunks.map((chunk) => chunk.audio));
    expect(received.equals(Buffer.from(decodeAlaw(alaw).buffer))).toBe(true);

    for (const format of [
      { encoding: 's16le', sampleRate: 32_000, channels: 1 },
      { encoding: 's16le', sampleRate: 48_000, channels: 2 },
      { encoding: 'mulaw', sampleRate: 16_000, channels: 1 },
    ] as const) {
      let thrown: unknown;
      try {
        c.open({ format });
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(SpeechInputError);
      expect(thrown).toMatchObject({ field: 'audio_format' });
    }
    expect(f.sessions.length).toBe(1);
  });

  it('gives word timings from committed_transcript_with_timestamps when asked, one committed event per commit', async () => {
    const { f, c } = await setup({ transcribe: (s) => (s.final ? 'four one five' : '') });
    const session = c.open({ format: MULAW_8K, includeTimestamps: true, languageCode: 'en' });
    const { events, done } = collect(session);
    sendAll(session, frames(Buffer.concat([MULAW_SECOND, MULAW_SECOND]), 160));
    const transcript = await session.commit();
    await session.close();
    await done;

    expect(f.sessions[0]!.query).toMatchObject({ include_timestamps: ['true'], language_code: ['en'] });
    expect(f.sessions[0]!.sent.map((m) => m['message_type'])).toEqual([
      'session_started',
      'committed_transcript',
      'committed_transcript_with_timestamps',
    ]);
    expect(transcript.text).toBe('four one five');
    expect(transcript.languageCode).toBe('en');
    expect(transcript.words.filter((w) => w.type === 'word').map((w) => w.text)).toEqual([
      'four',
      'one',
      'five',
    ]);
    expect(transcript.words[0]!.startMs).toBe(0);
    expect(transcript.words.at(-1)!.endMs).toBeLessThanOrEqual(2000);
    expect(transcript.words.every((w) => w.endMs >= w.startMs)).toBe(true);
    expect(events.filter((e) => e.type === 'committed')).toHaveLength(1);
  });

  it('answers on the fake service’s clock: nothing until its latency has passed, then in order', async () => {
    const serverClock = new FakeClock();
    const { f, c } = await setup({ latencyMs: 150, clock: serverClock, partialEveryMs: 1000 });
    const session = c.open({ format: MULAW_8K });
    const { events } = collect(session);
    await f.waitFor(() => serverClock.pending === 1, 'session_started scheduled');
    await serverClock.advance(149);
    expect(session.status).toBe('connecting');
    await serverClock.advance(1);
    await session.ready();
    sendAll(session, frames(MULAW_SECOND, 160));
    await f.waitFor(() => serverClock.pending === 1, 'the partial scheduled');
    await serverClock.advance(149);
    expect(events).toEqual([]);
    await serverClock.advance(1);
    await f.waitFor(() => events.length === 1, 'the partial');
    expect(events[0]).toMatchObject({ type: 'partial', text: 'partial 1000', audioMs: 1000 });
    const committed = session.commit();
    await f.waitFor(() => serverClock.pending === 1, 'the commit scheduled');
    await serverClock.advance(150);
    expect((await committed).text).toBe('heard 8000 bytes of ulaw_8000');
    expect(events.map((e) => e.type)).toEqual(['partial', 'committed']);
  });
});

describe('deadlines, on the client’s clock', () => {
  it('fails connect_timeout when the service never starts the session', async () => {
    const clock = new FakeClock();
    const { f, c } = await setup({}, { clock, connectTimeoutMs: 2000 });
    f.failNext('start', { kind: 'silent' });
    const session = c.open({ format: MULAW_8K });
    sendAll(session, [MULAW_SECOND]);
    const committed = failure(session.commit());
    await f.waitFor(() => f.openSockets === 1, 'the socket');
    await clock.advance(1999);
    expect(session.status).toBe('connecting');
    await clock.advance(1);
    const error = await committed;
    expect(error).toMatchObject({
      code: 'connect_timeout',
      phase: 'connect',
      fallback: true,
      retryable: true,
    });
    expect(canFallBackToBatch(error)).toBe(true);
    await f.waitFor(() => f.openSockets === 0, 'the socket closed');
  });

  it('fails commit_timeout when the committed transcript does not come', async () => {
    const clock = new FakeClock();
    const { f, c } = await setup({}, { clock, commitTimeoutMs: 800 });
    f.failNext('commit', { kind: 'silent' });
    const session = c.open({ format: MULAW_8K });
    sendAll(session, [MULAW_SECOND]);
    await session.ready();
    const committed = failure(session.commit());
    await f.waitFor(() => f.sessions[0]!.commits === 1, 'the commit');
    await clock.advance(799);
    expect(session.status).toBe('open');
    await clock.advance(1);
    const error = await committed;
    expect(error).toMatchObject({ code: 'commit_timeout', phase: 'commit', fallback: true });
    expect(session.sendAudio(MULAW_SECOND)).toBe(false);
  });
});

describe('the service’s errors, coded', () => {
  it.each([
    ['transcriber_error', true, true],
    ['rate_limited', true, true],
    ['quota_exceeded', false, false],
    ['insufficient_audio_activity', false, false],
  ])('%s mid-turn fails the session (fallback %s)', async (kind, fallback, retryable) => {
    const { f, c } = await setup();
    f.failNext({ afterAudioMs: 500 }, { kind: 'error', messageType: kind, error: 'it went wrong' });
    const session = c.open({ format: MULAW_8K });
    sendAll(session, frames(MULAW_SECOND, 160));
    const end = await session.done;
    expect(end.status).toBe('failed');
    const error = await failure(session.commit());
    expect(error).toBe(session.error);
    expect(error).toMatchObject({ code: kind, phase: 'stream', fallback, retryable });
    expect(error.message).toContain(`${kind}: it went wrong`);
  });

  it('a refused handshake (401) is auth, not fallback; invalid_request closes the session', async () => {
    const { f, c } = await setup({}, { apiKey: fakeSecret('wrong-key') });
    const session = c.open({ format: MULAW_8K });
    const error = await failure(session.ready());
    expect(error).toMatchObject({ code: 'invalid_api_key', status: 401, phase: 'connect', fallback: false });
    expect(f.sessions.length).toBe(0);

    const other = new RealtimeSttClient({ baseUrl: f.url, apiKey: f.apiKey, modelId: 'scribe_v9' });
    const refused = await failure(other.open({ format: MULAW_8K }).ready());
    expect(refused).toMatchObject({ code: 'invalid_request', phase: 'connect', fallback: true });
    expect(refused.message).toContain('unknown model_id');
    await other.close();
  });

  it('an auth_error message (the other way a service refuses a key) is not fallback', async () => {
    const { c } = await setup({ authFailure: 'message' }, { apiKey: fakeSecret('wrong-key') });
    const error = await failure(c.open({ format: MULAW_8K }).ready());
    expect(error).toMatchObject({ code: 'auth_error', fallback: false });
    expect(canFallBackToBatch(error)).toBe(false);
  });
});

describe('what a server sends, bounded', () => {
  it.each([
    ['not JSON', '{"message_type": "partial_transcript", "text": "cut'],
    ['nested too deep', `{"message_type":"partial_transcript","x":${'['.repeat(20)}${']'.repeat(20)}}`],
    ['a text that is not a string', '{"message_type":"partial_transcript","text":5}'],
    ['no message_type', '{"text":"hello"}'],
    [
      'timed words that are not a list',
      '{"message_type":"committed_transcript_with_timestamps","text":"a","words":"a"}',
    ],
  ])('a message that is %s fails that session only, with invalid_response', async (_what, raw) => {
    const { f, c } = await setup();
    f.failNext({ afterAudioMs: 100 }, { kind: 'raw', data: raw });
    const broken = c.open({ format: MULAW_8K });
    await f.waitFor(() => f.sessions.length === 1, 'the first session');
    const healthy = c.open({ format: MULAW_8K });
    sendAll(broken, [MULAW_SECOND]);
    sendAll(healthy, [MULAW_SECOND]);
    const error = await failure(broken.commit());
    expect(error).toMatchObject({ code: 'invalid_response', fallback: true });
    expect((await healthy.commit()).text).toBe('heard 8000 bytes of ulaw_8000');
  });

  it('a binary message is not this protocol', async () => {
    const { f, c } = await setup();
    f.failNext({ afterAudioMs: 100 }, { kind: 'raw', data: Buffer.from([1, 2, 3]), binary: true });
    const session = c.open({ format: MULAW_8K });
    sendAll(session, [MULAW_SECOND]);
    expect(await failure(session.commit())).toMatchObject({ code: 'invalid_response' });
  });

  it('a message over maxMessageBytes fails its session with response_too_large, not the other', async () => {
    const { f, c } = await setup({}, { maxMessageBytes: 4096 });
    const huge = JSON.stringify({ message_type: 'partial_transcript', text: 'x'.repeat(8000) });
    f.failNext({ afterAudioMs: 100 }, { kind: 'raw', data: huge });
    const broken = c.open({ format: MULAW_8K });
    await f.waitFor(() => f.sessions.length === 1, 'the first session');
    const healthy = c.open({ format: MULAW_8K });
    sendAll(broken, [MULAW_SECOND]);
    sendAll(healthy, [MULAW_SECOND]);
    expect(await failure(broken.commit())).toMatchObject({ code: 'response_too_large', fallback: true });
    expect((await healthy.commit()).text).toBe('heard 8000 bytes of ulaw_8000');
    expect(c.openSessions).toBe(1);
  });

  it('more messages than the audio sent can explain fail the session with too_many_messages', async () => {
    const { f, c } = await setup();
    // 100 ms of audio allows 64 + 5 messages; 70 partials and session_started are more.
    for (let i = 0; i < 70; i++)
      f.failNext(
        { afterAudioMs: 0 },
        { kind: 'raw', data: JSON.stringify({ message_type: 'partial_transcript', text: `p${i}` }) },
      );
    const session = c.open({ format: MULAW_8K });
    await session.ready();
    sendAll(session, frames(MULAW_SECOND.subarray(0, 800), 8));
    const end = await session.done;
    expect(end.error).toMatchObject({ code: 'too_many_messages', fallback: true });
    expect(f.sessions[0]!.sent.length).toBe(71);
  });

  it('a turn longer than maxAudioMs fails with audio_too_long once it passes the bound', async () => {
    const { c } = await setup({}, { maxAudioMs: 500 });
    const session = c.open({ format: MULAW_8K });
    const accepted = frames(MULAW_SECOND, 160).map((frame) => session.sendAudio(frame));
    expect(accepted.filter(Boolean)).toHaveLength(25);
    expect(accepted[25]).toBe(false);
    expect(session.error).toMatchObject({ code: 'audio_too_long', phase: 'connect', fallback: true });
  });

  it('cuts a transcript longer than its audio can hold, and says so', async () => {
    const { c } = await setup({ transcribe: (s) => (s.final ? 'word '.repeat(2000) : '') });
    const session = c.open({ format: MULAW_8K });
    sendAll(session, [MULAW_SECOND]);
    const transcript = await session.commit();
    expect(transcript.text.length).toBe(maxTextChars(1000));
    expect(transcript.warnings[0]).toMatch(/^text cut from 10000 to 400 characters/);
  });

  it('refuses a session_started for another audio format than the one asked', async () => {
    const { f, c } = await setup();
    f.failNext('start', {
      kind: 'raw',
      data: JSON.stringify({
        message_type: 'session_started',
        session_id: 'abc',
        config: { audio_format: 'pcm_16000', sample_rate: 16000 },
      }),
    });
    const error = await failure(c.open({ format: MULAW_8K }).ready());
    expect(error).toMatchObject({ code: 'invalid_response', phase: 'connect' });
    expect(error.message).toContain('pcm_16000 session, not ulaw_8000');
  });
});

describe('a socket failing mid-turn', () => {
  it.each([
    ['dropped', { kind: 'drop' } as const],
    ['closed with 1011', { kind: 'close', code: 1011, reason: 'internal' } as const],
  ])('%s: the turn fails with an error the relay falls back to batch on', async (_what, fault) => {
    const { f, c } = await setup();
    f.failNext({ afterAudioMs: 300 }, fault);
    const session = c.open({ format: MULAW_8K });
    const { done } = collect(session);
    await session.ready();
    sendAll(session, frames(MULAW_SECOND, 160).slice(0, 20));
    const end = await session.done;
    expect(end).toMatchObject({ status: 'failed', audioMs: 400 });
    const error = session.error!;
    expect(error).toMatchObject({ code: 'socket_closed', phase: 'stream', fallback: true });
    expect(canFallBackToBatch(error)).toBe(true);
    expect(session.sendAudio(MULAW_SECOND)).toBe(false);
    expect(await failure(session.commit())).toBe(error);
    expect(await done).toBe(error);
  });

  it('no service at all: connection_failed, fallback', async () => {
    const probe = await FakeRealtimeStt.start();
    const url = probe.url;
    await probe.close();
    client = new RealtimeSttClient({ baseUrl: url, apiKey: fakeSecret('any-key') });
    const error = await failure(client.open({ format: MULAW_8K }).ready());
    expect(error).toMatchObject({
      code: 'connection_failed',
      phase: 'connect',
      fallback: true,
      retryable: true,
    });
  });
});

describe('the key', () => {
  it('never shows in an error or a log line, even when the service quotes it back', async () => {
    let log = '';
    const out = new PassThrough();
    out.on('data', (d: Buffer) => (log += d.toString()));
    const logger = createLogger('trace', out);
    const wrongKey = fakeSecret('wrong-key');
    const { f, c } = await setup({}, { apiKey: wrongKey, log: logger });
    const refused = await failure(c.open({ format: MULAW_8K }).ready());
    expect(refused.cause).toBeDefined();
    expect(everythingShown(refused)).not.toContain(wrongKey);
    expect(everythingShown(refused)).toContain('[redacted]');

    const right = new RealtimeSttClient({
      baseUrl: f.url.replace('http://', 'http://bob:hunter2hunter2@'),
      apiKey: f.apiKey,
      log: logger,
    });
    f.failNext({ afterAudioMs: 100 }, { kind: 'error', messageType: 'error', error: `bad key ${f.apiKey}` });
    const session = right.open({ format: MULAW_8K });
    sendAll(session, [MULAW_SECOND]);
    const said = await failure(session.commit());
    expect(f.sessions[0]!.headers['authorization']).toBe(
      `Basic ${Buffer.from('bob:hunter2hunter2').toString('base64')}`,
    );
    expect(f.sessions[0]!.headers['user-agent']).toBe('voxbridge-stt-realtime-client');
    expect(everythingShown(said)).not.toContain(f.apiKey);
    expect(everythingShown(said)).not.toContain('hunter2hunter2');
    await right.close();

    expect(log).toContain('realtime stt session failed');
    expect(log).toContain('realtime stt opening');
    for (const secret of [wrongKey, f.apiKey, 'hunter2hunter2']) expect(log).not.toContain(secret);
  });
});

describe('closing', () => {
  it('close() while a commit is pending rejects it with session_closed; the client closes what is open', async () => {
    const { f, c } = await setup();
    f.failNext('commit', { kind: 'silent' });
    const session = c.open({ format: MULAW_8K });
    const other = c.open({ format: MULAW_8K });
    sendAll(session, [MULAW_SECOND]);
    await session.ready();
    await other.ready();
    const committed = failure(session.commit());
    await session.close();
    expect(await committed).toMatchObject({ code: 'session_closed', fallback: false });
    expect(c.openSessions).toBe(1);
    await c.close();
    expect(other.status).toBe('closed');
    expect(f.sessions.map((s) => s.closed)).toEqual([
      { by: 'client', code: 1000 },
      { by: 'client', code: 1000 },
    ]);
    expect(() => c.open({ format: MULAW_8K })).toThrow(expect.objectContaining({ code: 'client_closed' }));
  });

  it('an abort closes the session; a pending commit rejects with the abort’s reason, not a fallback', async () => {
    const { f, c } = await setup();
    f.failNext('commit', { kind: 'silent' });
    const controller = new AbortController();
    const session = c.open({ format: MULAW_8K, signal: controller.signal });
    sendAll(session, [MULAW_SECOND]);
    const committed = session.commit().then(
      () => 'resolved',
      (error: unknown) => error,
    );
    await session.ready();
    const reason = new Error('the call hung up');
    controller.abort(reason);
    expect(await committed).toBe(reason);
    expect(canFallBackToBatch(reason)).toBe(false);
    expect(await session.done).toMatchObject({ status: 'closed', error: undefined });
    await f.waitFor(() => f.openSockets === 0, 'the socket closed');
  });
});

describe('the fake speaks the real protocol: the official SDK’s realtime client against it', () => {
  it('connects with xi-api-key, streams μ-law, and gets partials and committed transcripts with timestamps', async () => {
    const { f } = await setup({
      partialEveryMs: 250,
      transcribe: (s) => (s.final ? 'one two three' : 'one'),
    });
    const sdk = new ElevenLabsClient({ apiKey: f.apiKey, baseUrl: f.url, maxRetries: 0 });
    const connection = await sdk.speechToText.realtime.connect({
      modelId: 'scribe_v2_realtime',
      audioFormat: AudioFormat.ULAW_8000,
      sampleRate: 8000,
      commitStrategy: CommitStrategy.MANUAL,
      includeTimestamps: true,
      languageCode: 'en',
    });
    const seen: string[] = [];
    const errors: unknown[] = [];
    const started = new Promise<Record<string, unknown>>((resolve) =>
      connection.on(RealtimeEvents.SESSION_STARTED, (m) => resolve(m as unknown as Record<string, unknown>)),
    );
    connection.on(RealtimeEvents.PARTIAL_TRANSCRIPT, (m) => seen.push(`partial:${m.text}`));
    connection.on(RealtimeEvents.COMMITTED_TRANSCRIPT, (m) => seen.push(`committed:${m.text}`));
    connection.on(RealtimeEvents.ERROR, (e) => errors.push(e));
    const timed = new Promise<{ text: string; words?: Array<{ text?: string; start?: number }> | null }>(
      (resolve) => connection.on(RealtimeEvents.COMMITTED_TRANSCRIPT_WITH_TIMESTAMPS, resolve),
    );
    const session = await started;
    expect(session['config']).toMatchObject({
      audio_format: 'ulaw_8000',
      sample_rate: 8000,
      model_id: 'scribe_v2_realtime',
      include_timestamps: true,
    });
    for (const frame of frames(MULAW_SECOND, 800))
      connection.send({ audioBase64: Buffer.from(frame).toString('base64') });
    connection.commit();
    const withTimestamps = await timed;
    const closed = new Promise<void>((resolve) => connection.on(RealtimeEvents.CLOSE, () => resolve()));
    connection.close();
    await closed;

    expect(errors).toEqual([]);
    expect(seen).toEqual(['partial:one', 'committed:one two three']);
    expect(withTimestamps.text).toBe('one two three');
    expect(withTimestamps.words?.filter((w) => w.text !== ' ').map((w) => w.text)).toEqual([
      'one',
      'two',
      'three',
    ]);
    const record = f.sessions[0]!;
    expect(record.authorizedBy).toBe('xi-api-key');
    expect(record.query).toMatchObject({ model_id: ['scribe_v2_realtime'], audio_format: ['ulaw_8000'] });
    expect(Buffer.concat(record.chunks.map((chunk) => chunk.audio)).equals(MULAW_SECOND)).toBe(true);
    expect(record.refused).toEqual([]);
    await f.waitFor(() => record.closed !== undefined, 'the close');
    expect(record.closed).toEqual({ by: 'client', code: 1005 });
  });

  it('connects with a single-use token instead of a key, and the fake refuses previous_text after the first chunk', async () => {
    const { f } = await setup({ tokens: ['tok_single_use_1'] });
    const sdk = new ElevenLabsClient({ apiKey: 'unused', baseUrl: f.url, maxRetries: 0 });
    const connection = await sdk.speechToText.realtime.connect({
      modelId: 'scribe_v2_realtime',
      audioFormat: AudioFormat.PCM_16000,
      sampleRate: 16000,
      commitStrategy: CommitStrategy.VAD,
      vadSilenceThresholdSecs: 0.5,
      token: 'tok_single_use_1',
    });
    const inputError = new Promise<{ error: string }>((resolve) =>
      connection.on(RealtimeEvents.INPUT_ERROR, resolve),
    );
    const errors: unknown[] = [];
    connection.on(RealtimeEvents.ERROR, (e) => errors.push(e)); // the SDK emits each error kind as ERROR too
    const started = new Promise<Record<string, unknown>>((resolve) =>
      connection.on(RealtimeEvents.SESSION_STARTED, (m) => resolve(m as unknown as Record<string, unknown>)),
    );
    expect((await started)['config']).toMatchObject({
      commit_strategy: 'vad',
      vad_silence_threshold_secs: 0.5,
    });
    const pcm = Buffer.from(tone(100, 16_000).buffer).toString('base64');
    connection.send({ audioBase64: pcm, previousText: 'first' });
    connection.send({ audioBase64: pcm, previousText: 'second' });
    expect((await inputError).error).toBe('previous_text can only be sent with the first audio chunk');
    expect(errors).toEqual([
      { message_type: 'input_error', error: 'previous_text can only be sent with the first audio chunk' },
    ]);
    connection.close();
    const record = f.sessions[0]!;
    expect(record.authorizedBy).toBe('token');
    expect(record.headers['xi-api-key']).toBeUndefined();
    expect(record.query['token']).toBeUndefined();
    expect(record.chunks.map((chunk) => chunk.previousText)).toEqual(['first']);
  });

  it('a wrong key: the SDK sees the handshake refused', async () => {
    const { f } = await setup();
    const sdk = new ElevenLabsClient({ apiKey: fakeSecret('not-the-key'), baseUrl: f.url, maxRetries: 0 });
    const connection = await sdk.speechToText.realtime.connect({
      modelId: 'scribe_v2_realtime',
      audioFormat: AudioFormat.PCM_16000,
      sampleRate: 16000,
    });
    const error = await new Promise<unknown>((resolve) => connection.on(RealtimeEvents.ERROR, resolve));
    expect(String((error as Error).message)).toContain('401');
    expect(f.sessions.length).toBe(0);
  });
});
