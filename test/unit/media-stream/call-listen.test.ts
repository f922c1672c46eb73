/**
 * A call's listening for a gather's spoken answer, fed as the barge-in chain feeds it (the caller's
 * audio with its inbound time, the VAD's onset and turn end) and recognised by the real recogniser:
 * the turn heard from before its onset, its words on the inbound timeline, the latency counting how
 * late the VAD's answer came, a turn begun before the listening not taken, and closing.
 */
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CallListener } from '../../../adapters/media-stream/call-listen.js';
import { decodeMulaw, encodeMulaw } from '../../../src/audio/g711.js';
import { menuGrammar } from '../../../src/recognition/grammar.js';
import { Recognizer } from '../../../src/recognition/recognizer.js';
import { noisyUtterance, VOICES, type TestUtterance } from '../../../testkit/vad-audio.js';

const RATE = 8000;
const CHUNK = 160; // 20 ms, as Twilio sends it
const grammar = menuGrammar([
  { key: '1', phrases: ['billing', 'my bill'] },
  { key: '2', phrases: ['support', 'help'] },
]);

let recognizer: Recognizer;
let support: TestUtterance;
beforeAll(async () => {
  [recognizer, support] = await Promise.all([
    Recognizer.start({ workers: 1, minConfidence: 0 }),
    noisyUtterance('Support, please.', VOICES[0]!, RATE, 20, 1).then((u) => ({
      ...u,
      samples: decodeMulaw(encodeMulaw(u.samples)),
    })),
  ]);
}, 30_000);
afterAll(async () => {
  await recognizer?.close();
});

/** Feeds `samples` from inbound time `atMs` in 20 ms chunks, as a gateway's media arrives. */
function feed(listener: CallListener, samples: Int16Array, atMs: number): void {
  for (let i = 0; i < samples.length; i += CHUNK)
    listener.audio(samples.subarray(i, i + CHUNK), atMs + (i / RATE) * 1000);
}

/** How long after the speech began the VAD confirms it (its onset comes then, placed where it began). */
const CONFIRM_MS = 200;

/**
 * The caller says `u` from inbound time `atMs`, as the chain reports it: the audio as it comes, the
 * onset once confirmed, the turn's end once all the audio (1 s of line noise after the words) is in.
 */
function speak(listener: CallListener, u: TestUtterance, atMs: number): ReturnType<typeof turnOf> {
  const turn = turnOf(u, atMs);
  const split = Math.round(((u.onsetMs + CONFIRM_MS) / 1000) * RATE);
  feed(listener, u.samples.subarray(0, split), atMs);
  listener.onset(turn.startMs);
  feed(listener, u.samples.subarray(split), atMs + (split / RATE) * 1000);
  listener.turnEnd(turn);
  return turn;
}

/** The thresholds the listener asked the recogniser to decide at, in order. */
const thresholds: Array<number | undefined> = [];

function listener(now?: () => number): CallListener {
  return new CallListener({
    recognizer: {
      recognize: (samples, sampleRate, g, options) => {
        thresholds.push(options?.threshold);
        return recognizer.recognize(samples, sampleRate, g, options);
      },
    },
    inboundRate: RATE,
    log: pino({ level: 'silent' }),
    now,
  });
}

/** The turn the VAD would report for the utterance placed at `atMs`: its speech, then 700 ms of quiet. */
function turnOf(u: TestUtterance, atMs: number): { startMs: number; endMs: number; decidedMs: number } {
  const startMs = atMs + u.onsetMs;
  const endMs = startMs + u.speechMs;
  return { startMs, endMs, decidedMs: endMs + 700 };
}

describe('CallListener', () => {
  it('recognises the turn begun after it was armed, from before its onset, with words on the inbound timeline', async () => {
    const clock = { ms: 0 };
    const l = listener(() => clock.ms);
    thresholds.length = 0;
    // At the gather's minConfidence, as a flow listens.
    const listening = l.listen(grammar, new AbortController().signal, 0.5);
    expect(l.listening).toBe(true);
    const at = 5000;
    const turn = turnOf(support, at);
    const split = Math.round(((support.onsetMs + CONFIRM_MS) / 1000) * RATE);
    feed(l, support.samples.subarray(0, split), at);
    expect(listening.busy).toBe(false);
    // The VAD confirms the speech 200 ms in, and ends the turn once its quiet is long enough.
    l.onset(turn.startMs);
    expect(listening.busy).toBe(true);
    feed(l, support.samples.subarray(split), at + (split / RATE) * 1000);
    l.turnEnd(turn);
    expect(listening.busy).toBe(true);
    const heard = await listening.heard;
    expect(heard).toMatchObject({ key: '2', text: 'support please' });
    expect(heard.confidence).toBeGreaterThan(0.5);
    // The recogniser was told what the answer is held to (its second pass is taken only if that decides).
    expect(thresholds).toEqual([0.5]);
    expect(listening.busy).toBe(false);
    expect(l.listening).toBe(false);
    // The first word starts within the speech, not in the pre-roll; on the call's inbound timeline.
    const first = heard.words[0]!;
    expect(first.word).toBe('support');
    expect(first.startMs).toBeGreaterThanOrEqual(turn.startMs - 300);
    expect(first.startMs).toBeLessThan(turn.startMs + 300);
    expect(heard.words.at(-1)!.endMs).toBeLessThanOrEqual(turn.endMs + 300);
    // All the audio arrived (1 s of line noise after the speech) before the VAD said the turn was
    // over, 700 ms after its speech: the 300 ms it was late count toward the latency.
    expect(heard.latencyMs).toBe(Math.round(at + (support.samples.length / RATE) * 1000 - turn.decidedMs));
  });

  it('does not take a turn that began before it was armed, and hears the next one', async () => {
    const l = listener();
    const early = turnOf(support, 0);
    feed(l, support.samples.subarray(0, Math.round((early.startMs / 1000 + 0.3) * RATE)), 0);
    // The caller's turn began (its onset reported) before the gather listened.
    l.onset(early.startMs);
    const listening = l.listen(grammar, new AbortController().signal);
    const restAt = early.startMs + 300;
    feed(l, support.samples.subarray(Math.round((restAt / 1000) * RATE)), restAt);
    l.turnEnd(early);
    expect(listening.busy).toBe(false);
    speak(l, support, 10_000);
    expect((await listening.heard).key).toBe('2');
  });

  it('closed, or its signal aborted, it rejects and drops a recognition under way', async () => {
    const l = listener();
    const listening = l.listen(grammar, new AbortController().signal);
    speak(l, support, 0);
    listening.close();
    await expect(listening.heard).rejects.toThrow(/closed/);
    expect(l.listening).toBe(false);

    const controller = new AbortController();
    const aborted = l.listen(grammar, controller.signal);
    controller.abort();
    await expect(aborted.heard).rejects.toThrow();
    // A turn after that goes nowhere.
    speak(l, support, 20_000);
    expect(l.listening).toBe(false);
  });

  it('a new listening replaces the one before it', async () => {
    const l = listener();
    const first = l.listen(grammar, new AbortController().signal);
    const second = l.listen(grammar, new AbortController().signal);
    await expect(first.heard).rejects.toThrow(/closed/);
    speak(l, support, 0);
    expect((await second.heard).key).toBe('2');
  });
});
