/**
 * Backchannels over a relay app's answer, end to end (issue 45): the real app with realtime
 * speech-to-text and a relay that lets acknowledgements pass (`backchannels: true`), a fake Twilio
 * caller talking over the answer at real time, the fake realtime transcriber on a real `ws` server
 * writing the words it was sent, and a relay app written from Twilio's message reference. An "mm-hmm"
 * stops the answer, which then goes on from the first word the caller did not hear whole, and the app
 * hears of neither; a caller who really talks still interrupts it, and the app gets `interrupt` with
 * exactly what was heard, then the caller's words.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeRealtimeStt, type FakeRealtimeSegment } from '../../testkit/fake-realtime-stt.js';
import { FakeStt, FAKE_STT_KEY } from '../../testkit/fake-stt.js';
import { SseReader } from '../../testkit/sse.js';
import { corpusTurn, espeakVoice, type CorpusTurn } from '../../testkit/turn-corpus.js';
import { VOICES } from '../../testkit/vad-audio.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { RelayApp, until, type RelayAppSession } from '../helpers/relay-app.js';
import { heardWords, RecordingLine, type SaidTurn } from '../helpers/relay-turns.js';

const ANSWER =
  'Our opening hours are from nine in the morning until six in the evening on weekdays, and from ten until four on Saturdays, and we are closed on Sundays and public holidays.';

let relayApp: RelayApp;
let realtime: FakeRealtimeStt;
let batch: FakeStt;
let t: TestApp;
let transcribe: (segment: FakeRealtimeSegment) => string = () => '';
let mmHmm: CorpusTurn;
let talkOver: CorpusTurn;

beforeAll(async () => {
  relayApp = await RelayApp.start();
  relayApp.tokenGapMs = 5;
  realtime = await FakeRealtimeStt.start({
    apiKey: FAKE_STT_KEY,
    latencyMs: 150,
    partialEveryMs: 100,
    transcribe: (s) => transcribe(s),
  });
  batch = await FakeStt.start({ transcribe: () => 'From the batch transcriber.' });
  t = await startTestApp(
    {
      // The 400 ms rule over the bot: this line carries no echo of it.
      calls: { defaultFlow: 'assistant', bargeIn: { echo: false } },
      stt: { baseUrl: batch.url, mode: 'realtime', realtime: { baseUrl: realtime.url } },
      relays: { helper: { url: relayApp.url, welcome: 'Hello.', backchannels: true } },
      flows: { assistant: { start: 'talk', nodes: { talk: { type: 'relay', relay: 'helper' } } } },
    },
    undefined,
    { STT_API_KEY: FAKE_STT_KEY },
  );
  const options = { seed: 5, snrDb: 25, leadMs: 600, tailMs: 300 };
  // "Mm-hmm." at 130 words a minute: about 600 ms of speech, past the 400 ms a barge-in needs.
  mmHmm = await corpusTurn({ kind: 'short-answer', text: 'Mm-hmm.' }, espeakVoice(VOICES[4]!), options);
  talkOver = await corpusTurn(
    { kind: 'sentence', text: 'Sorry, can I stop you there? I have a question.' },
    espeakVoice(VOICES[1]!),
    options,
  );
}, 60_000);
afterAll(async () => {
  await t?.close();
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

/** A call whose app has begun its long answer, heard for 1.5 s. */
async function answering(): Promise<Call> {
  const line = new RecordingLine(`${t.url.replace('http:', 'ws:')}/media/twilio`, {});
  const said: SaidTurn[] = [];
  transcribe = heardWords(line, () => said);
  await line.start();
  const { g } = line;
  await g.until(() => t.app.calls.get(g.callSid)?.state.status === 'active', 5000, 'the call');
  const sse = new SseReader(`${t.url}/calls/${g.callSid}/events?after=0`);
  await sse.until((e) => e.some((x) => x.event === 'utterance.finished'), 15_000); // the welcome
  const session = relayApp.sessions.find((s) => s.received.some((m) => m['callSid'] === g.callSid))!;
  const heardBefore = g.playout.playedMs;
  void relayApp.answer(session.socket, ANSWER);
  await until(() => g.playout.playedMs > heardBefore + 1500, 15_000, 'the answer to be heard a while');
  return { line, sse, session, said };
}

async function speak(c: Call, turn: CorpusTurn): Promise<void> {
  c.said.push({ turn, at: c.line.sentBytes });
  await c.line.say(turn);
}

const words = (s: string): string[] => s.split(/\s+/).filter((w) => w !== '');
const letters = (w: string): string => w.replace(/[^\p{L}\p{N}]/gu, '');

/**
 * What the caller heard (`heardText`, cut at any character) and the resumed rest give `text` word for
 * word: the rest is the text's last words, every word before them was heard, at most the first of them
 * was heard in part (and is said again whole), none is said twice whole.
 */
function expectJoined(text: string, heardText: string, rest: string): void {
  const all = words(text);
  const after = words(rest);
  const heard = words(heardText);
  expect(after.length).toBeGreaterThan(0);
  expect(after).toEqual(all.slice(all.length - after.length));
  const before = all.length - after.length;
  expect(heard.slice(0, before)).toEqual(all.slice(0, before));
  expect(heard.length - before).toBeGreaterThanOrEqual(0);
  expect(heard.length - before).toBeLessThanOrEqual(1);
  if (heard.length > before) {
    const partial = letters(heard[before]!);
    expect(letters(after[0]!).startsWith(partial)).toBe(true);
    expect(partial.length).toBeLessThan(letters(after[0]!).length);
  }
}

type Data = Record<string, unknown>;

describe('a backchannel over the app’s answer', () => {
  it('"mm-hmm" stops the answer, which resumes from the first word not heard whole; the app hears of neither', async () => {
    const c = await answering();
    const { g } = c.line;
    const before = g.received.length;
    await speak(c, mmHmm);
    await c.sse.until((e) => e.filter((x) => x.event === 'utterance.started').length >= 3, 10_000);
    const bargeIn = c.sse.of('barge-in')[0] as Data;
    const [, answer, rest] = c.sse.of('utterance.started') as Data[];
    expect(bargeIn['utterance_id']).toBe(answer!['utterance_id']);
    // The rest plays to its end.
    await c.sse.until(
      (e) =>
        e.some(
          (x) =>
            x.event === 'utterance.finished' && (x.data as Data)['utterance_id'] === rest!['utterance_id'],
        ),
      30_000,
    );
    const finished = (id: unknown): Data =>
      (c.sse.of('utterance.finished') as Data[]).find((f) => f['utterance_id'] === id)!['result'] as Data;
    expect(finished(answer!['utterance_id'])).toMatchObject({ status: 'interrupted' });
    const restResult = finished(rest!['utterance_id']);
    expect(restResult).toMatchObject({ status: 'played' });
    // No gap, no repeat: what was heard and the rest make the answer, word for word.
    expectJoined(ANSWER, bargeIn['heard_text'] as string, restResult['heard_text'] as string);
    // The gateway: a clear at the barge-in, then the rest within the turn's end and its transcript.
    const received = g.received.slice(before);
    const clear = received.findIndex((r) => r.event === 'clear');
    expect(clear).toBeGreaterThanOrEqual(0);
    const resumedAt = received.slice(clear).find((r) => r.event === 'media')!.at;
    expect(resumedAt - received[clear]!.at).toBeLessThan(2500);
    // The app: no interrupt, no prompt.
    expect(c.session.received.filter((m) => m.type === 'interrupt' || m.type === 'prompt')).toEqual([]);
    c.sse.close();
    await c.line.close();
  });

  it('a caller who really talks over the answer interrupts it: the app gets what was heard, then the words', async () => {
    const c = await answering();
    await speak(c, talkOver);
    await until(() => c.session.received.some((m) => m.type === 'prompt'), 10_000, 'the prompt');
    const bargeIn = c.sse.of('barge-in')[0] as Data;
    const interrupts = c.session.received.filter((m) => m.type === 'interrupt');
    expect(interrupts).toEqual([
      {
        type: 'interrupt',
        utteranceUntilInterrupt: bargeIn['heard_text'],
        durationUntilInterruptMs: bargeIn['played_ms'],
      },
    ]);
    expect(ANSWER.startsWith(String(bargeIn['heard_text']))).toBe(true);
    // The interrupt before the prompt, which has the caller's words.
    const order = c.session.received.filter((m) => m.type === 'interrupt' || m.type === 'prompt');
    expect(order.map((m) => m.type)).toEqual(['interrupt', 'prompt']);
    expect(order[1]).toMatchObject({ voicePrompt: talkOver.text, last: true });
    // The rest of the cut answer is not spoken: the next utterance answers the prompt.
    await c.sse.until((e) => e.filter((x) => x.event === 'utterance.started').length >= 3, 10_000);
    const started = c.sse.of('utterance.started') as Data[];
    await c.sse.until(
      (e) =>
        e.some(
          (x) =>
            x.event === 'utterance.finished' &&
            (x.data as Data)['utterance_id'] === started[2]!['utterance_id'],
        ),
      30_000,
    );
    const next = (c.sse.of('utterance.finished') as Data[]).find(
      (f) => f['utterance_id'] === started[2]!['utterance_id'],
    )!;
    expect((next['result'] as Data)['heard_text']).toMatch(/^You said: Sorry, can I stop you there\?/);
    c.sse.close();
    await c.line.close();
  });
});
