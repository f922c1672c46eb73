/**
 * A relay's turns through realtime speech-to-text, end to end (issue 45): the real app (`stt.mode:
 * realtime`), a fake Twilio caller saying turns of the pause corpus at real time, the fake realtime
 * transcriber on a real `ws` server writing the words it has been sent (150 ms late, a partial every
 * 100 ms of audio), the fake batch service for fallbacks, and a relay app written from Twilio's message
 * reference. What goes to the realtime service (the line's μ-law, byte for byte, from a pre-roll
 * before the speech), when turns end (by their words and silence), partial prompts, a socket that fails
 * mid-turn, and the first turn over a welcome greeting, in realtime and in batch mode.
 */
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/app/logger.js';
import { FakeRealtimeStt, type FakeRealtimeSegment } from '../../testkit/fake-realtime-stt.js';
import { FakeStt, FAKE_STT_KEY } from '../../testkit/fake-stt.js';
import { SseReader } from '../../testkit/sse.js';
import { corpusTurn, espeakVoice, type CorpusTurn, type TurnScript } from '../../testkit/turn-corpus.js';
import { VOICES } from '../../testkit/vad-audio.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { RelayApp, until, type RelayAppSession, type RelayMessage } from '../helpers/relay-app.js';
import {
  BYTES_PER_MS,
  byteOf,
  heardWords,
  locate,
  RecordingLine,
  type SaidTurn,
} from '../helpers/relay-turns.js';

const WELCOME =
  'Hello, and thank you for calling the city library. I can tell you about our opening hours, our events and your loans.';
const BATCH_TEXT = 'From the batch transcriber.';
const PRE_ROLL_MS = 300;

let relayApp: RelayApp;
let realtime: FakeRealtimeStt;
let batch: FakeStt;
let t: TestApp;
let batchApp: TestApp;
const logLines: Array<Record<string, unknown>> = [];
/** What the realtime fake writes now: the words of the turns said on the current line. */
let transcribe: (segment: FakeRealtimeSegment) => string = () => '';

const voice = espeakVoice(VOICES[0]!);
const say = (script: TurnScript, pausesMs: number[] = []): Promise<CorpusTurn> =>
  corpusTurn(script, voice, { seed: 11, pausesMs, snrDb: 30, leadMs: 600, tailMs: 300 });

function relays(url: string): Record<string, unknown> {
  return {
    plain: { url, welcome: 'Hello.', partialPrompts: true },
    greeted: { url, welcome: WELCOME },
  };
}

const flows = {
  plain: { start: 'talk', nodes: { talk: { type: 'relay', relay: 'plain' } } },
  greeted: { start: 'talk', nodes: { talk: { type: 'relay', relay: 'greeted' } } },
};

beforeAll(async () => {
  relayApp = await RelayApp.start();
  relayApp.tokenGapMs = 5;
  realtime = await FakeRealtimeStt.start({
    apiKey: FAKE_STT_KEY,
    latencyMs: 150,
    partialEveryMs: 100,
    transcribe: (s) => transcribe(s),
  });
  batch = await FakeStt.start({ transcribe: () => BATCH_TEXT });
  const logs = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n'))
        if (line.trim() !== '') logLines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  const common = {
    // Over the bot, a rule of 600 ms of speech (this line has no echo to tell apart): a barge-in is
    // decided 600 ms of speech in, or later when the first words are short and apart.
    calls: { defaultFlow: 'plain', bargeIn: { echo: false, minSpeechWhileAudibleMs: 600 } },
    relays: relays(relayApp.url),
    flows,
  };
  [t, batchApp] = await Promise.all([
    startTestApp(
      { ...common, stt: { baseUrl: batch.url, mode: 'realtime', realtime: { baseUrl: realtime.url } } },
      undefined,
      { STT_API_KEY: FAKE_STT_KEY },
      { logger: createLogger('info', logs) },
    ),
    startTestApp({ ...common, stt: { baseUrl: batch.url, mode: 'batch' } }, undefined, {
      STT_API_KEY: FAKE_STT_KEY,
    }),
  ]);
  // A first call on each app, the caller saying something: the VAD's first inferences (a cold model,
  // a worker starting) are slow enough to place a first call's speech late.
  const warm = await say({ kind: 'short-answer', text: 'Yes.' });
  await Promise.all(
    [t, batchApp].map(async (app) => {
      const c = await call(app, 'plain');
      await speak(c, warm);
      await hangUp(c);
    }),
  );
}, 60_000);
afterAll(async () => {
  await Promise.all([t?.close(), batchApp?.close()]);
  await relayApp?.close();
  await realtime?.close();
  await batch?.close();
});

interface Call {
  line: RecordingLine;
  sse: SseReader;
  session: RelayAppSession;
  said: SaidTurn[];
}

async function call(app: TestApp, flow: 'plain' | 'greeted', waitForWelcome = true): Promise<Call> {
  const line = new RecordingLine(`${app.url.replace('http:', 'ws:')}/media/twilio`, { flow });
  const said: SaidTurn[] = [];
  transcribe = heardWords(line, () => said);
  await line.start();
  const { g } = line;
  await g.until(() => app.app.calls.get(g.callSid)?.state.status === 'active', 5000, 'the call');
  const sse = new SseReader(`${app.url}/calls/${g.callSid}/events?after=0`);
  await until(
    () => relayApp.sessions.some((s) => s.received.some((m) => m['callSid'] === g.callSid)),
    5000,
    'setup',
  );
  const session = relayApp.sessions.find((s) => s.received.some((m) => m['callSid'] === g.callSid))!;
  if (waitForWelcome) await sse.until((e) => e.some((x) => x.event === 'utterance.finished'), 15_000);
  return { line, sse, session, said };
}

async function speak(c: Call, turn: CorpusTurn): Promise<SaidTurn> {
  const at = c.line.sentBytes;
  const said = { turn, at };
  c.said.push(said);
  await c.line.say(turn);
  return said;
}

const prompts = (s: RelayAppSession, last?: boolean): RelayMessage[] =>
  s.received.filter((m) => m.type === 'prompt' && (last === undefined || m['last'] === last));

async function hangUp(c: Call): Promise<void> {
  c.sse.close();
  await c.line.close();
}

describe('a relay turn through realtime speech-to-text', () => {
  it("streams the caller's turn as μ-law, byte for byte from a pre-roll before the speech, and prompts its transcript", async () => {
    const c = await call(t, 'plain');
    const sessionsBefore = realtime.sessions.length;
    const batchBefore = batch.requests.length;
    const said = await speak(c, await say({ kind: 'sentence', text: 'What time do you close today?' }));
    await until(() => prompts(c.session, true).length > 0, 10_000, 'the prompt');
    expect(prompts(c.session, true)).toEqual([
      expect.objectContaining({ voicePrompt: 'What time do you close today?', last: true }),
    ]);
    const record = realtime.sessions[sessionsBefore]!;
    expect(record.query['audio_format']).toEqual(['ulaw_8000']);
    expect(record.query['model_id']).toEqual(['scribe_v2_realtime']);
    expect(record.commits).toBe(1);
    // What the service received is what the caller sent, unchanged, from before the first word.
    const received = Buffer.concat(record.chunks.map((k) => k.audio));
    const sent = c.line.sent;
    const from = locate(sent, received);
    expect(from).toBeGreaterThanOrEqual(0);
    expect(Buffer.from(sent.subarray(from, from + received.length)).equals(received)).toBe(true);
    const speechAt = byteOf(said, said.turn.startMs);
    expect(from).toBeLessThanOrEqual(speechAt - 150 * BYTES_PER_MS);
    expect(from).toBeGreaterThanOrEqual(speechAt - (PRE_ROLL_MS + 250) * BYTES_PER_MS);
    expect(from + received.length).toBeGreaterThanOrEqual(byteOf(said, said.turn.endMs));
    // Batch was not asked.
    expect(batch.requests.length).toBe(batchBefore);
    // The turn's gap, with its parts, once the answer was heard: in the events and in /metrics.
    await c.sse.until((e) => e.some((x) => x.event === 'relay.turn'), 15_000);
    const gap = c.sse.of('relay.turn')[0] as Record<string, number | string>;
    expect(gap['stt']).toBe('realtime');
    const parts = ['endpointing_ms', 'stt_ms', 'app_ms', 'first_frame_ms'].map((k) => gap[k] as number);
    expect(Math.abs((gap['gap_ms'] as number) - parts.reduce((a, b) => a + b, 0))).toBeLessThanOrEqual(2);
    expect(gap['first_byte_ms']).toBeLessThanOrEqual(gap['first_frame_ms'] as number);
    const metrics = await (await fetch(`${t.url}/metrics`)).text();
    expect(metrics).toMatch(/voxbridge_turn_gap_seconds_count\{adapter="phone",part="total"\} [1-9]/);
    expect(metrics).toMatch(/voxbridge_relay_turns_total\{adapter="phone",stt="realtime"\} [1-9]/);
    // The end of the turn is logged with its reason.
    expect(logLines).toContainEqual(
      expect.objectContaining({
        msg: 'end of turn',
        callId: c.line.g.callSid,
        cue: 'sentence-end',
        reason: expect.stringMatching(/^end: a complete sentence/) as unknown,
      }),
    );
    await hangUp(c);
  });

  it('sends partial prompts as the words arrive, each the words so far, then the turn with last: true', async () => {
    const c = await call(t, 'plain');
    const turn = await say({
      kind: 'clause',
      text: "I'd like to book a table for four people on Friday evening.",
    });
    await speak(c, turn);
    await until(() => prompts(c.session, true).length > 0, 10_000, 'the last prompt');
    const all = prompts(c.session);
    const last = all.at(-1)!;
    expect(last).toMatchObject({ voicePrompt: turn.text, last: true });
    const partial = all.slice(0, -1);
    expect(partial.length).toBeGreaterThanOrEqual(3);
    let before = '';
    for (const p of partial) {
      expect(p['last']).toBe(false);
      const text = String(p['voicePrompt']);
      // Cumulative: each holds the one before it, and the turn's words so far.
      expect(text.startsWith(before)).toBe(true);
      expect(text.length).toBeGreaterThan(before.length);
      expect(turn.text.startsWith(text)).toBe(true);
      before = text;
    }
    await hangUp(c);
  });

  it.each([
    {
      what: 'mid-number',
      script: { kind: 'number', text: 'My number is four one five | two three nine | one two three four.' },
      pausesMs: [900, 900],
    },
    {
      what: 'mid-clause',
      script: { kind: 'clause', text: 'I wanted to ask about my bill | and also my address.' },
      pausesMs: [900],
    },
  ] as const)('waits out a $what pause of 900 ms: one turn, whole', async ({ script, pausesMs }) => {
    const c = await call(t, 'plain');
    const turn = await say(script, [...pausesMs]);
    await speak(c, turn);
    await until(() => prompts(c.session, true).length > 0, 10_000, 'the prompt');
    // Time for a second prompt, had the turn been cut at a pause.
    await new Promise((r) => setTimeout(r, 1000));
    expect(prompts(c.session, true).map((p) => p['voicePrompt'])).toEqual([turn.text]);
    await hangUp(c);
  });

  it('ends a complete short answer fast, not after the 700 ms a fixed silence waits', async () => {
    const c = await call(t, 'plain');
    await speak(c, await say({ kind: 'short-answer', text: "That's right." }));
    await until(() => prompts(c.session, true).length > 0, 10_000, 'the prompt');
    await c.sse.until((e) => e.some((x) => x.event === 'relay.turn'), 15_000);
    const gap = c.sse.of('relay.turn')[0] as Record<string, number>;
    // The words come 150 ms after they are spoken, then 250 ms of silence ends it.
    expect(gap['endpointing_ms']).toBeGreaterThanOrEqual(250);
    expect(gap['endpointing_ms']).toBeLessThan(500);
    await hangUp(c);
  });

  it('sends a turn whose realtime socket drops mid-way to batch, and says so in the log', async () => {
    const c = await call(t, 'plain');
    const batchBefore = batch.requests.length;
    realtime.failNext({ afterAudioMs: 900 }, { kind: 'drop' });
    const turn = await say({ kind: 'sentence', text: 'I want to cancel my order.' });
    await speak(c, turn);
    await until(() => prompts(c.session, true).length > 0, 15_000, 'the prompt');
    expect(prompts(c.session, true).map((p) => p['voicePrompt'])).toEqual([BATCH_TEXT]);
    // Batch heard the whole turn: recorded from before its first word to after its last.
    const wav = batch.requests[batchBefore]!.wav!;
    expect(wav.durationMs).toBeGreaterThan(turn.endMs - turn.startMs + 200);
    expect(logLines).toContainEqual(
      expect.objectContaining({
        msg: 'realtime speech-to-text failed during a turn: this turn goes to batch',
        callId: c.line.g.callSid,
        code: 'socket_closed',
      }),
    );
    await c.sse.until((e) => e.some((x) => x.event === 'relay.turn'), 15_000);
    expect(c.sse.of('relay.turn')[0]).toMatchObject({ stt: 'fallback' });
    await hangUp(c);
  });
});

describe('the first turn over a welcome greeting', () => {
  /** Said at once: the barge-in is decided 600 ms in. */
  const early: TurnScript = { kind: 'sentence', text: 'I would like to book a table for two people.' };
  /** Two short words apart first: none is long enough to barge in, the sentence after is. */
  const late: TurnScript = {
    kind: 'clause',
    text: 'Hi, | yes, | I would like to book a table for two people.',
  };

  async function firstTurn(
    app: TestApp,
    script: TurnScript,
  ): Promise<{ c: Call; said: SaidTurn; detectedMs: number }> {
    const c = await call(app, 'greeted', false);
    await c.line.g.until(() => c.line.g.playout.playedMs > 800, 10_000, 'the welcome to be heard');
    const said = await speak(c, await say(script, [450, 450]));
    await c.sse.until((e) => e.some((x) => x.event === 'barge-in'), 10_000);
    const bargeIn = c.sse.of('barge-in')[0] as { onset_ms: number; detected_ms: number };
    // Where the speech began on the call's inbound timeline (ms): the line's bytes are its clock.
    const speechMs = byteOf(said, said.turn.startMs) / BYTES_PER_MS;
    return { c, said, detectedMs: bargeIn.detected_ms - speechMs };
  }

  it.each([
    ['early', early],
    ['late', late],
  ] as const)(
    'reaches realtime speech-to-text from its first syllable, the pre-roll before it (barge-in decided %s)',
    async (when, script) => {
      const sessionsBefore = realtime.sessions.length;
      const { c, said, detectedMs } = await firstTurn(t, script);
      if (when === 'early') expect(detectedMs).toBeLessThan(1000);
      else expect(detectedMs).toBeGreaterThan(1400);
      await until(() => prompts(c.session, true).length > 0, 10_000, 'the prompt');
      expect(prompts(c.session, true)[0]).toMatchObject({ voicePrompt: said.turn.text });
      const received = Buffer.concat(realtime.sessions[sessionsBefore]!.chunks.map((k) => k.audio));
      const from = locate(c.line.sent, received);
      const speechAt = byteOf(said, said.turn.startMs);
      expect(from).toBeGreaterThanOrEqual(0);
      expect(from).toBeLessThanOrEqual(speechAt - 150 * BYTES_PER_MS);
      expect(from).toBeGreaterThanOrEqual(speechAt - (PRE_ROLL_MS + 250) * BYTES_PER_MS);
      await hangUp(c);
    },
  );

  it.each([
    ['early', early],
    ['late', late],
  ] as const)(
    'reaches batch speech-to-text whole, the pre-roll before it (barge-in decided %s)',
    async (when, script) => {
      const batchBefore = batch.requests.length;
      const { c, said, detectedMs } = await firstTurn(batchApp, script);
      if (when === 'early') expect(detectedMs).toBeLessThan(1000);
      else expect(detectedMs).toBeGreaterThan(1400);
      // The first request with audio after this call began (a request the fake could not read has none).
      await until(() => batch.requests.slice(batchBefore).some((r) => r.wav), 10_000, 'the batch request');
      const wav = batch.requests.slice(batchBefore).find((r) => r.wav)!.wav!;
      const speechMs = said.turn.endMs - said.turn.startMs;
      // From the pre-roll (300 ms) before the first syllable to the tail (150 ms) after the last.
      expect(wav.durationMs).toBeGreaterThan(speechMs + PRE_ROLL_MS - 100);
      expect(wav.durationMs).toBeLessThan(speechMs + PRE_ROLL_MS + 400);
      await hangUp(c);
    },
  );
});
