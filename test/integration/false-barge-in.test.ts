/**
 * A false barge-in taken back, end to end: the real app (local speech service, Silero barge-in) and a
 * fake Twilio caller that talks over the bot at real time. A short "mm-hmm" cuts the bot, then the bot
 * goes on from the first word the caller did not hear whole; a caller who really talks is not resumed;
 * with `calls.bargeIn.resume.enabled: false` nothing is.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeMulaw } from '../../src/audio/g711.js';
import { SseReader } from '../../testkit/sse.js';
import { noisyUtterance, VOICES } from '../../testkit/vad-audio.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { FakeTwilio } from '../helpers/gateways/twilio.js';

const PROMPT = 'Thank you for calling the city library. Our opening hours are nine to five on weekdays.';
const FLOW_PROMPT =
  'Welcome to the support line. Please listen closely, as our menu options have changed today.';
const AFTER_FLOW_PROMPT = 'Goodbye from the support line.';

const words = (s: string): string[] => s.split(/\s+/).filter((w) => w !== '');
const letters = (w: string): string => w.replace(/[^\p{L}\p{N}]/gu, '');

/**
 * What the caller heard (`heardText`, cut at any character) and the resumed rest (`fromText`) give
 * `text` word for word: the rest is the text's last words, every word before them was heard, at most
 * the first of them was heard in part (and is said again whole), none is said twice whole.
 */
function expectJoined(text: string, heardText: string, fromText: string): void {
  const all = words(text);
  const rest = words(fromText);
  const heard = words(heardText);
  expect(rest.length).toBeGreaterThan(0);
  expect(rest).toEqual(all.slice(all.length - rest.length));
  const before = all.length - rest.length;
  expect(heard.slice(0, before)).toEqual(all.slice(0, before));
  expect(heard.length - before).toBeGreaterThanOrEqual(0);
  expect(heard.length - before).toBeLessThanOrEqual(1);
  if (heard.length > before) {
    // The word cut inside: some of its letters were heard, not all of them.
    const partial = letters(heard[before]!);
    expect(letters(rest[0]!).startsWith(partial)).toBe(true);
    expect(partial.length).toBeLessThan(letters(rest[0]!).length);
  }
}

/** Milliseconds on `performance.now()`'s scale of an event's `at` (the app runs in this process). */
const perfAt = (event: unknown): number => Date.parse((event as { at: string }).at) - performance.timeOrigin;

/**
 * Both apps judge barge-in by the 400 ms rule over a talking bot (`echo: false`): what is under test
 * is the taking back, on a line that carries no echo of the bot at all.
 */
const RESUME = { enabled: true, windowMs: 3000, maxSpeechMs: 1200 };
let resumeApp: TestApp;
let plainApp: TestApp;
/**
 * "Mm-hmm." in line noise: about 740 ms of speech, past the 400 ms a barge-in needs over a talking bot
 * with room to spare on a busy machine, and under the `maxSpeechMs` set here; the talk-over holds well
 * over 2 s.
 */
let mmHmm: Uint8Array;
let talkOver: Uint8Array;
beforeAll(async () => {
  const flows = {
    support: {
      start: 'welcome',
      nodes: {
        welcome: { type: 'say', text: FLOW_PROMPT, next: 'bye' },
        bye: { type: 'hangup', text: AFTER_FLOW_PROMPT },
      },
    },
  };
  [resumeApp, plainApp] = await Promise.all([
    startTestApp({ calls: { defaultFlow: null, bargeIn: { resume: RESUME, echo: false } }, flows }),
    startTestApp({
      calls: {
        defaultFlow: null,
        bargeIn: { resume: { ...RESUME, enabled: false }, echo: false },
      },
    }),
  ]);
  mmHmm = encodeMulaw((await noisyUtterance('Mm-hmm.', VOICES[4]!, 8000, 20, 11)).samples);
  talkOver = encodeMulaw(
    (await noisyUtterance('Sorry, can I stop you there? I have a question.', VOICES[1]!, 8000, 20, 11))
      .samples,
  );
  // A first call on each app, the caller talking to a silent bot: the VAD's first inferences (a cold
  // model, a worker starting) are slow enough that a short sound on the very first call goes unjudged.
  await Promise.all([resumeApp, plainApp].map(warmUp));
}, 60_000);
afterAll(async () => {
  await Promise.all([resumeApp?.close(), plainApp?.close()]);
});

async function connect(
  t: TestApp,
  parameters: Record<string, string> = {},
): Promise<{ g: FakeTwilio; sse: SseReader }> {
  const g = new FakeTwilio(`${t.url.replace('http:', 'ws:')}/media/twilio`, { customParameters: parameters });
  await g.start();
  await g.until(() => t.app.calls.get(g.callSid)?.state.status === 'active', 5000, 'the call');
  return { g, sse: new SseReader(`${t.url}/calls/${g.callSid}/events?after=0`) };
}

async function warmUp(t: TestApp): Promise<void> {
  const { g, sse } = await connect(t);
  await g.sendLive(mmHmm);
  sse.close();
  await g.close();
}

async function say(t: TestApp, g: FakeTwilio, text: string): Promise<string> {
  const res = await fetch(`${t.url}/calls/${g.callSid}/say`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ text, wait: false }),
  });
  expect(res.status).toBe(202);
  return ((await res.json()) as { id: string }).id;
}

type Data = Record<string, unknown>;
/** Asymmetric matchers, typed `unknown` so they sit in expected objects without an unsafe any. */
const objectContaining = (fields: Data): unknown => expect.objectContaining(fields);
const withStatus = (status: string): unknown => objectContaining({ status });
const finished = (sse: SseReader, id: string): Data | undefined =>
  sse.of('utterance.finished').find((e) => (e as Data)['utterance_id'] === id) as Data | undefined;

describe('a false barge-in is taken back (Twilio)', () => {
  it('a short "mm-hmm" cuts the bot, which then goes on from the first word not heard whole', async () => {
    const { g, sse } = await connect(resumeApp);
    const prompt = await say(resumeApp, g, PROMPT);
    const next = await say(resumeApp, g, 'That was all.');
    await g.until(() => g.playout.playedMs > 1500, 10_000, 'the prompt to be heard');
    const sent = g.sendLive(mmHmm);
    await sse.until((e) => e.some((x) => x.event === 'barge-in.resumed'), 6000);
    const bargeIn = sse.of('barge-in')[0] as Data;
    const resumed = sse.of('barge-in.resumed')[0] as Data;
    expect(bargeIn['utterance_id']).toBe(prompt);
    expect(resumed).toMatchObject({ call_id: g.callSid, utterance_id: prompt });
    expect(finished(sse, prompt)).toMatchObject({
      result: withStatus('interrupted'),
    });
    expectJoined(PROMPT, bargeIn['heard_text'] as string, resumed['from_text'] as string);
    const rest = resumed['resumed_utterance_id'] as string;
    expect(sse.of('utterance.started')).toContainEqual(
      objectContaining({ utterance_id: rest, text: resumed['from_text'] }),
    );
    // The gateway: a clear, nothing while the barge-in was judged, then the rest, promptly.
    const clearIndex = g.received.findIndex((r) => r.event === 'clear');
    expect(clearIndex).toBeGreaterThan(0);
    await g.until(() => g.media(clearIndex).length > 0, 3000, 'the resumed speech');
    const firstResumed = g.media(clearIndex)[0]!.at;
    expect(firstResumed).toBeGreaterThanOrEqual(perfAt(resumed) - 5);
    expect(firstResumed - perfAt(resumed)).toBeLessThan(800);
    // Then it plays on, and the queue after it.
    await sse.until(() => finished(sse, next) !== undefined, 20_000);
    expect(finished(sse, rest)).toMatchObject({ result: withStatus('played') });
    expect(finished(sse, next)).toMatchObject({ result: withStatus('played') });
    expect(g.violations).toEqual([]);
    await sent;
    sse.close();
    await g.close();
  }, 30_000);

  it('a caller who really talks over the bot is not resumed: the held queue is dropped', async () => {
    const { g, sse } = await connect(resumeApp);
    const prompt = await say(resumeApp, g, PROMPT);
    const next = await say(resumeApp, g, 'That was all.');
    await g.until(() => g.playout.playedMs > 1500, 10_000, 'the prompt to be heard');
    const sent = g.sendLive(talkOver);
    await sse.until((e) => e.some((x) => x.event === 'barge-in'), 6000);
    const clearIndex = g.received.findIndex((r) => r.event === 'clear');
    // The queued prompt goes once the barge-in is decided real (a turn too long, or the window ran out).
    await sse.until(() => finished(sse, next) !== undefined, 5000);
    expect(finished(sse, next)).toMatchObject({ result: withStatus('interrupted') });
    expect(finished(sse, prompt)).toMatchObject({
      result: withStatus('interrupted'),
    });
    await sent;
    await new Promise((r) => setTimeout(r, 300));
    expect(sse.of('barge-in.resumed')).toEqual([]);
    expect(g.media(clearIndex)).toEqual([]);
    sse.close();
    await g.close();
  }, 30_000);

  it('an IVR prompt resumed after a false barge-in counts as played: the flow goes on at once', async () => {
    const { g, sse } = await connect(resumeApp, { flow: 'support' });
    await g.until(() => g.playout.playedMs > 1500, 10_000, 'the prompt to be heard');
    const sent = g.sendLive(mmHmm);
    await sse.until((e) => e.some((x) => x.event === 'barge-in.resumed'), 6000);
    const resumed = sse.of('barge-in.resumed')[0] as Data;
    expectJoined(
      FLOW_PROMPT,
      (sse.of('barge-in')[0] as Data)['heard_text'] as string,
      resumed['from_text'] as string,
    );
    // No wait for a key after the barge-in (bargeInWaitMs, 5 s): the next node speaks once the rest played.
    await sse.until(
      (e) => e.some((x) => x.event === 'utterance.started' && (x.data as Data)['text'] === AFTER_FLOW_PROMPT),
      10_000,
    );
    const rest = finished(sse, resumed['resumed_utterance_id'] as string)!;
    expect(rest).toMatchObject({ result: withStatus('played') });
    const byeAt = perfAt(sse.of('utterance.started').find((e) => (e as Data)['text'] === AFTER_FLOW_PROMPT));
    expect(byeAt - perfAt(rest)).toBeLessThan(1000);
    await sent;
    sse.close();
    await g.close();
  }, 30_000);

  it('with resume off, the same "mm-hmm" cuts the bot for good', async () => {
    const { g, sse } = await connect(plainApp);
    await say(plainApp, g, PROMPT);
    const next = await say(plainApp, g, 'That was all.');
    await g.until(() => g.playout.playedMs > 1500, 10_000, 'the prompt to be heard');
    await g.sendLive(mmHmm);
    expect(sse.of('barge-in')).toHaveLength(1);
    expect(finished(sse, next)).toMatchObject({ result: withStatus('interrupted') });
    // The whole sound and a second of line noise after it were sent: a resume would have come by now.
    await new Promise((r) => setTimeout(r, 500));
    expect(sse.of('barge-in.resumed')).toEqual([]);
    const clearIndex = g.received.findIndex((r) => r.event === 'clear');
    expect(g.media(clearIndex)).toEqual([]);
    sse.close();
    await g.close();
  }, 30_000);
});
