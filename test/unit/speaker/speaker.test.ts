/**
 * The speaker on a fake clock, fed by an in-memory speech source whose chunks arrive at chosen clock
 * times: pacing, gapless joins, underruns, barge-in and what was heard, priorities, failures, close.
 * (The same behaviour against the real local service is in test/integration/speaker.test.ts.)
 */
import { describe, expect, it } from 'vitest';
import type { Clock } from '../../../src/speaker/clock.js';
import type { SpeechAudio, SpeechSource } from '../../../src/speaker/segment-audio.js';
import { Speaker, type UtteranceState } from '../../../src/speaker/speaker.js';
import type { SpeechRequest } from '../../../src/speech/client.js';
import { SpeechServiceError } from '../../../src/speech/errors.js';
import type { Aligner } from '../../../src/speaker/word-alignment.js';
import { FakeClock } from '../../helpers/fake-clock.js';
import { RecordingSink } from '../../helpers/recording-sink.js';

const MULAW_8K = { encoding: 'mulaw', sampleRate: 8000, channels: 1 } as const;
const BYTES_PER_MS_24K = 48;
const CHUNK_MS = 100;

interface SourceOptions {
  /** Audio per request, from its text (default: 60 ms per character). */
  durationMs?: (text: string) => number;
  /** Clock time between two chunks of one response (default 10 ms: 10× faster than real time). */
  chunkIntervalMs?: number;
  /** Clock time before the first byte (default 30 ms). */
  firstByteMs?: number;
  /** Makes request n (0-based) fail before any audio, or stall for a while after some chunks. */
  failRequest?: (n: number) => Error | undefined;
  stall?: { request: number; afterChunk: number; forMs: number };
  /** Character timings with each response, as `/with-timestamps` gives them (ms per character). */
  charMs?: (index: number) => number;
}

/**
 * A speech source on the fake clock: each response is a 440 Hz tone as long as its text asks, in
 * 100 ms chunks arriving at fixed clock intervals. It records the requests and whether each was cut.
 */
class ToneSource implements SpeechSource {
  readonly requests: Array<{ text: string; cancelled: boolean; aborted: boolean; finished: boolean }> = [];

  constructor(
    private readonly clock: Clock,
    private readonly options: SourceOptions = {},
  ) {}

  async stream(request: SpeechRequest, options: { signal?: AbortSignal } = {}): Promise<SpeechAudio> {
    const n = this.requests.length;
    const record = { text: request.text, cancelled: false, aborted: false, finished: false };
    this.requests.push(record);
    const signal = options.signal;
    signal?.addEventListener('abort', () => (record.aborted = true), { once: true });
    const {
      durationMs = (t: string) => t.length * 60,
      chunkIntervalMs = 10,
      firstByteMs = 30,
    } = this.options;
    await this.clock.sleepUntil(this.clock.now() + firstByteMs, signal);
    const failure = this.options.failRequest?.(n);
    if (failure) throw failure;
    const totalBytes = Math.round(durationMs(request.text) / CHUNK_MS) * CHUNK_MS * BYTES_PER_MS_24K;
    const clock = this.clock;
    const stall = this.options.stall?.request === n ? this.options.stall : undefined;
    async function* chunks(): AsyncGenerator<Uint8Array> {
      let chunk = 0;
      for (let at = 0; at < totalBytes; at += CHUNK_MS * BYTES_PER_MS_24K, chunk++) {
        if (chunk > 0) await clock.sleepUntil(clock.now() + chunkIntervalMs, signal);
        if (stall && chunk === stall.afterChunk) await clock.sleepUntil(clock.now() + stall.forMs, signal);
        yield tone(at / 2, CHUNK_MS * BYTES_PER_MS_24K);
      }
      record.finished = true;
    }
    const it = chunks();
    const { charMs } = this.options;
    const alignment = charMs && {
      characters: [...request.text],
      startMs: [...request.text].map((_, i) =>
        [...request.text].slice(0, i).reduce((t, _c, j) => t + charMs(j), 0),
      ),
      endMs: [...request.text].map((_, i) =>
        [...request.text].slice(0, i + 1).reduce((t, _c, j) => t + charMs(j), 0),
      ),
    };
    return {
      ...(alignment ? { alignment } : {}),
      cancel: () => {
        record.cancelled = true;
        void it.return(undefined);
      },
      [Symbol.asyncIterator]: () => it,
    };
  }
}

function tone(firstSample: number, bytes: number): Uint8Array {
  const out = new Uint8Array(bytes);
  const view = new DataView(out.buffer);
  for (let i = 0; i < bytes / 2; i++)
    view.setInt16(i * 2, Math.round(8000 * Math.sin((2 * Math.PI * 440 * (firstSample + i)) / 24_000)), true);
  return out;
}

function setup(
  options: SourceOptions = {},
  sinkLeadMs = 200,
): { clock: FakeClock; source: ToneSource; sink: RecordingSink; speaker: Speaker } {
  const clock = new FakeClock(1000);
  const source = new ToneSource(clock, options);
  const sink = new RecordingSink(MULAW_8K, clock, sinkLeadMs);
  const speaker = new Speaker({ source, sink, voiceId: 'v', clock });
  return { clock, source, sink, speaker };
}

describe('Speaker on a fake clock', () => {
  it('paces frames at real time, never more than the lead ahead of playout', async () => {
    const { clock, sink, speaker } = setup({ durationMs: () => 1200 });
    const handle = speaker.say('One short sentence.');
    await clock.advance(3000);
    const result = await handle.result;
    expect(result.status).toBe('played');
    expect(sink.frames).toHaveLength(60);
    expect(result.playedMs).toBe(1200);
    const first = sink.frames[0]!.at;
    for (const [k, f] of sink.frames.entries()) {
      // Frame k plays at first + 20k: it may arrive up to the 200 ms lead early, and it is never late here.
      expect(f.at).toBeGreaterThanOrEqual(first + 20 * k - 200);
      expect(f.at).toBeLessThanOrEqual(first + 20 * k);
    }
    expect(result.metrics.underruns).toBe(0);
    expect(result.heardText).toBe('One short sentence.');
  });

  it('plays audio still on its way in its place in the queue; audio that fails fails its utterance only', async () => {
    const { clock, sink, speaker } = setup({ durationMs: () => 400 });
    let arrive!: (audio: Uint8Array) => void;
    const pending = new Promise<Uint8Array>((resolve) => (arrive = resolve));
    const failing = Promise.reject(new Error('play: media.example answered 404'));
    const played = speaker.say({ audio: pending, text: '' });
    const failed = speaker.say({ audio: failing, text: '' });
    const after = speaker.say('After them.');
    await clock.advance(500);
    expect(sink.frames).toHaveLength(0); // the first is not there yet, and nothing jumps ahead of it
    arrive(tone(0, 24_000)); // 0.5 s
    await clock.advance(3000);
    expect((await played.result).status).toBe('played');
    expect((await played.result).playedMs).toBe(500);
    expect(await failed.result).toMatchObject({
      status: 'failed',
      error: new Error('play: media.example answered 404'),
    });
    expect((await after.result).status).toBe('played');
    expect(sink.frames).toHaveLength(25 + 20);
  });

  it('plays audio repeat times over', async () => {
    const { clock, sink, speaker } = setup();
    const handle = speaker.say({ audio: tone(0, 24_000), text: '', repeat: 3 }); // 0.5 s, three times
    await clock.advance(3000);
    expect((await handle.result).playedMs).toBe(1500);
    expect(sink.frames).toHaveLength(75);
  });

  it('an utterance whose audio is still on its way is interrupted at once', async () => {
    const { clock, speaker } = setup();
    const never = new Promise<Uint8Array>(() => undefined);
    const handle = speaker.say({ audio: never, text: '' });
    await clock.advance(100);
    speaker.interrupt({ force: true });
    await clock.advance(100);
    expect((await handle.result).status).toBe('interrupted');
  });

  it('joins the sentences of one text with no gap: each next one is requested while the previous plays', async () => {
    const { clock, source, sink, speaker } = setup();
    const text = 'The first sentence is here. A second one comes next. And then the third.';
    const handle = speaker.say(text);
    await clock.advance(10_000);
    const result = await handle.result;
    expect(result.status).toBe('played');
    expect(source.requests.map((r) => r.text)).toEqual([
      'The first sentence is here.',
      'A second one comes next.',
      'And then the third.',
    ]);
    expect(result.metrics.requestedSegments).toBe(3);
    expect(result.metrics.underruns).toBe(0);
    // Played out back to back: the timeline advanced 20 ms per frame, with no hole between arrivals
    // larger than the pace itself once the lead is built.
    const times = sink.frames.map((f) => f.at);
    const gaps = times.slice(11).map((t, i) => t - times[10 + i]!);
    expect(Math.max(...gaps)).toBeLessThanOrEqual(20);
    expect(result.playedMs).toBe(sink.frames.length * 20);
  });

  it('counts underruns when the service stalls mid-sentence, and re-anchors instead of bursting', async () => {
    const { clock, sink, speaker } = setup({ stall: { request: 0, afterChunk: 5, forMs: 1500 } });
    const handle = speaker.say('A sentence that will stall in the middle of it.');
    await clock.advance(8000);
    const result = await handle.result;
    expect(result.status).toBe('played');
    expect(result.metrics.underruns).toBeGreaterThan(0);
    // After the stall the audio resumes at real time: the frames that follow never run more than the
    // lead ahead of the re-anchored timeline.
    const times = sink.frames.map((f) => f.at);
    const resume = times.findIndex((t, i) => i > 0 && t - times[i - 1]! > 500);
    expect(resume).toBeGreaterThan(0);
    for (let k = resume; k < times.length; k++)
      expect(times[k]! - times[resume]!).toBeGreaterThanOrEqual(20 * (k - resume) - 200 - 20);
  });

  it("with the service's character timings, reports exactly the characters heard, in any segment", async () => {
    // Uneven characters (30 and 90 ms), so an estimate spread evenly would be wrong.
    const charMs = (i: number): number => (i % 2 === 0 ? 30 : 90);
    const sum = (text: string): number => [...text].reduce((t, _c, i) => t + charMs(i), 0);
    const first = 'Hello there caller.';
    const second = 'This reply goes on for quite a while.';
    const text = `${first} ${second}`;
    /** What was heard `playedMs` into the utterance: every character whose audio had ended. */
    const expected = (playedMs: number): string => {
      // The first segment's audio is its timings' length rounded to whole 100 ms chunks (the source's).
      const firstMs = Math.round(sum(first) / 100) * 100;
      const [segment, offset, into] =
        playedMs < firstMs ? [first, 0, playedMs] : [second, first.length + 1, playedMs - firstMs];
      let ended = 0;
      while (ended < segment.length && sum(segment.slice(0, ended + 1)) <= into) ended++;
      return text.slice(0, offset + ended).trimEnd();
    };
    for (const cutAt of [400, 700, 1500, 2100]) {
      const { clock, speaker } = setup({ charMs, durationMs: sum });
      const handle = speaker.say(text);
      await clock.advance(cutAt);
      const r = speaker.interrupt();
      expect(r.interrupted).toBe(true);
      expect(r.heardText).toBe(expected(r.playedMs));
      expect((await handle.result).heardText).toBe(r.heardText);
    }
  });

  it('without timings from the service, an aligner times the words of each segment from its audio, and the heard text is cut at a whole word', async () => {
    // Uneven characters again: the even estimate is wrong, the alignment (the same timings, as words) right.
    const charMs = (i: number): number => (i % 2 === 0 ? 30 : 90);
    const sum = (text: string): number => [...text].reduce((t, _c, i) => t + charMs(i), 0);
    const first = 'Hello there caller.';
    const second = 'This reply goes on for quite a while.';
    const text = `${first} ${second}`;
    const asked: Array<{ text: string; samples: number; rate: number }> = [];
    const aligner: Aligner = (segment, samples, rate) => {
      asked.push({ text: segment, samples: samples.length, rate });
      return Promise.resolve(
        [...segment.matchAll(/\S+/g)].map((m) => ({
          charStart: m.index,
          charEnd: m.index + m[0].length,
          startMs: sum(segment.slice(0, m.index)),
          endMs: sum(segment.slice(0, m.index + m[0].length)),
        })),
      );
    };
    /** Every word whose audio had ended `playedMs` into the utterance. */
    const expected = (playedMs: number): string => {
      const firstMs = Math.round(sum(first) / 100) * 100;
      const [segment, offset, into] =
        playedMs < firstMs ? [first, 0, playedMs] : [second, first.length + 1, playedMs - firstMs];
      let heard = 0;
      for (const m of segment.matchAll(/\S+/g))
        if (sum(segment.slice(0, m.index + m[0].length)) <= into) heard = m.index + m[0].length;
      return text.slice(0, offset + heard).trimEnd();
    };
    for (const cutAt of [400, 700, 1500, 2100]) {
      asked.length = 0;
      const clock = new FakeClock(1000);
      const sink = new RecordingSink(MULAW_8K, clock, 200);
      const source = new ToneSource(clock, { durationMs: sum });
      const speaker = new Speaker({ source, sink, voiceId: 'v', clock, aligner });
      const handle = speaker.say(text);
      await clock.advance(cutAt);
      const r = speaker.interrupt();
      expect(r.heardText).toBe(expected(r.playedMs));
      expect((await handle.result).heardText).toBe(r.heardText);
      // The aligner had each segment read whole: its text, and its 24 kHz audio.
      expect(asked[0]).toEqual({
        text: first,
        samples: (Math.round(sum(first) / 100) * 100 * 24_000) / 1000,
        rate: 24_000,
      });
    }
  });

  it('a segment the aligner fails on, or has not timed yet, is estimated as before', async () => {
    const clock = new FakeClock(1000);
    const sink = new RecordingSink(MULAW_8K, clock, 200);
    const source = new ToneSource(clock);
    const never: Aligner = () => new Promise(() => undefined);
    const failing: Aligner = () => Promise.reject(new Error('no'));
    for (const aligner of [never, failing]) {
      const speaker = new Speaker({ source, sink, voiceId: 'v', clock, aligner });
      const plain = new Speaker({
        source,
        sink: new RecordingSink(MULAW_8K, clock, 200),
        voiceId: 'v',
        clock,
      });
      const text = 'Hello there caller. This reply goes on for quite a while and will be cut short.';
      const a = speaker.say(text);
      const b = plain.say(text);
      await clock.advance(700);
      const ra = speaker.interrupt();
      const rb = plain.interrupt();
      expect(ra.heardText).toBe(rb.heardText);
      await Promise.all([a.result, b.result]);
    }
  });

  it('interrupt() aborts the request, clears the sink, and reports what was heard', async () => {
    const { clock, source, sink, speaker } = setup();
    const text = 'Hello there caller. This reply goes on for quite a while and will be cut short.';
    const handle = speaker.say(text);
    await clock.advance(700);
    const before = sink.frames.length;
    const r = speaker.interrupt();
    expect(r.interrupted).toBe(true);
    // 700 ms of clock less the 30 ms first byte: about 670 ms heard, not the ~870 ms sent.
    expect(r.playedMs).toBeGreaterThanOrEqual(640);
    expect(r.playedMs).toBeLessThanOrEqual(700);
    expect(before * 20).toBeGreaterThan(r.playedMs);
    expect(text.startsWith(r.heardText)).toBe(true);
    expect(r.heardText.length).toBeLessThan(text.length);
    expect(sink.clears).toEqual([{ at: clock.now(), framesBefore: before }]);
    const result = await handle.result;
    expect(result).toMatchObject({ status: 'interrupted', playedMs: r.playedMs, heardText: r.heardText });
    await clock.advance(3000);
    // Not one frame after the clear, and the upstream request was aborted.
    expect(sink.frames).toHaveLength(before);
    expect(source.requests.every((q) => q.aborted || q.finished)).toBe(true);
    expect(source.requests[0]!.aborted || source.requests[0]!.cancelled).toBe(true);
    expect(clock.pending).toBe(0);
  });

  it('the per-utterance signal interrupts that utterance only; the queue goes on', async () => {
    const { clock, sink, speaker } = setup();
    const controller = new AbortController();
    const first = speaker.say('The first one will be aborted by its signal.', { signal: controller.signal });
    const second = speaker.say('The second one plays.');
    await clock.advance(500);
    controller.abort();
    await clock.advance(5000);
    expect((await first.result).status).toBe('interrupted');
    const r2 = await second.result;
    expect(r2.status).toBe('played');
    expect(sink.framesOf(second.id)).toHaveLength(r2.playedMs / 20);
    // The second starts after the clear: none of the first's frames follow it.
    const clearAt = sink.clears[0]!.framesBefore;
    expect(sink.frames.slice(clearAt).every((f) => f.utteranceId === second.id)).toBe(true);
  });

  it('barge-in leaves a non-interruptible utterance alone, unless forced', async () => {
    const { clock, sink, speaker } = setup();
    const handle = speaker.say('This announcement must be heard in full.', { interruptible: false });
    await clock.advance(500);
    expect(speaker.interrupt().interrupted).toBe(false);
    expect(sink.clears).toHaveLength(0);
    await clock.advance(500);
    expect(speaker.interrupt({ force: true }).interrupted).toBe(true);
    expect((await handle.result).status).toBe('interrupted');
  });

  it("priority 'now' cuts the current utterance and speaks before the queue", async () => {
    const { clock, sink, speaker } = setup();
    const long = speaker.say('A long answer that the caller does not want to hear to the end.');
    const queued = speaker.say('Queued afterwards.');
    await clock.advance(400);
    const urgent = speaker.say('Urgent!', { priority: 'now' });
    await clock.advance(10_000);
    expect((await long.result).status).toBe('interrupted');
    expect((await urgent.result).status).toBe('played');
    expect((await queued.result).status).toBe('played');
    const order = [...new Set(sink.frames.map((f) => f.utteranceId))];
    expect(order).toEqual([long.id, urgent.id, queued.id]);
  });

  it('a service error before any audio fails that utterance with the coded error; the next one plays', async () => {
    const error = new SpeechServiceError({
      status: 404,
      code: 'voice_not_found',
      message: 'no such voice',
      retryable: false,
    });
    const { clock, speaker } = setup({ failRequest: (n) => (n === 0 ? error : undefined) });
    const failed = speaker.say('This one fails.');
    const next = speaker.say('This one plays.');
    await clock.advance(5000);
    const r = await failed.result;
    expect(r.status).toBe('failed');
    expect(r.error).toBe(error);
    expect(r.playedMs).toBe(0);
    expect((await next.result).status).toBe('played');
  });

  it('close() ends everything, refuses new text, and leaves no timer behind', async () => {
    const { clock, source, speaker } = setup();
    const a = speaker.say('Something is being said right now, at length.');
    const b = speaker.say('And something else waits in the queue.');
    await clock.advance(300);
    await speaker.close();
    expect((await a.result).status).toBe('interrupted');
    expect((await b.result).status).toBe('interrupted');
    const late = await speaker.say('Too late.').result;
    expect(late.status).toBe('failed');
    expect(source.requests.map((r) => r.text)).not.toContain('Too late.');
    await clock.advance(100);
    expect(clock.pending).toBe(0);
  });

  it('says when each utterance begins to be heard (`audible`): one after another, the end of one before the start of the next', async () => {
    const { clock, sink, speaker } = setup({ durationMs: () => 400 });
    const log: string[] = [];
    const follow = (name: string, h: ReturnType<Speaker['say']>): void => {
      void h.audible.then((heard) => log.push(`${name} ${heard ? 'heard' : 'unheard'} at ${clock.now()}`));
      void h.result.then((r) => log.push(`${name} ${r.status} at ${clock.now()}`));
    };
    const a = speaker.say('First.');
    const b = speaker.say('Second.');
    follow('a', a);
    follow('b', b);
    await clock.advance(3000);
    // a's first frame went out at 1030 (the first byte) to a far end with nothing to play: heard then.
    // b was queued behind a's audio: heard once a had played out, not when its first frame went out.
    const aEnd = 1030 + 400;
    expect(log).toEqual([
      `a heard at 1030`,
      `a played at ${aEnd}`,
      `b heard at ${aEnd}`,
      `b played at ${aEnd + 400}`,
    ]);
    expect(sink.framesOf(b.id)[0]!.at).toBeLessThan(aEnd);
    expect(clock.pending).toBe(0);
  });

  it('`audible` is false for an utterance cut before a frame of it was heard', async () => {
    const { clock, speaker } = setup({ durationMs: () => 400 });
    const a = speaker.say('First.');
    const b = speaker.say('Second.');
    await clock.advance(200);
    speaker.interrupt();
    expect(await a.audible).toBe(true);
    expect(await b.audible).toBe(false);
    expect((await b.result).status).toBe('interrupted');
    await clock.advance(1000);
    expect(clock.pending).toBe(0);
  });

  describe('utteranceStateChange', () => {
    type Change = {
      id: string;
      from: string;
      to: string;
      oldState: UtteranceState;
      newState: UtteranceState;
    };
    function record(speaker: Speaker): Change[] {
      const changes: Change[] = [];
      speaker.on('utteranceStateChange', (id, oldState, newState) =>
        changes.push({ id, from: oldState.status, to: newState.status, oldState, newState }),
      );
      return changes;
    }

    it('reports every change with the old and the new state: queued → speaking → draining → done (played)', async () => {
      const { clock, speaker } = setup({ durationMs: () => 400 });
      const changes = record(speaker);
      const handle = speaker.say('Short.');
      await clock.advance(3000);
      const result = await handle.result;
      expect(changes.map((c) => [c.id, c.from, c.to])).toEqual([
        [handle.id, 'queued', 'speaking'],
        [handle.id, 'speaking', 'draining'],
        [handle.id, 'draining', 'done'],
      ]);
      const [speaking, draining, done] = changes;
      // Each change hands on the exact state objects: the one left is the one entered before it.
      expect(draining!.oldState).toBe(speaking!.newState);
      expect(done!.oldState).toBe(draining!.newState);
      expect(done!.newState).toEqual({ status: 'done', result });
    });

    it('leaving speaking or draining aborts that phase, before the change is reported', async () => {
      const { clock, speaker } = setup();
      const changes = record(speaker);
      const aborted: boolean[] = [];
      speaker.on('utteranceStateChange', (_id, oldState) => {
        if (oldState.status === 'speaking' || oldState.status === 'draining')
          aborted.push(oldState.controller.signal.aborted);
      });
      const handle = speaker.say('This reply goes on for quite a while and is cut short.');
      await clock.advance(500);
      speaker.interrupt();
      expect((await handle.result).status).toBe('interrupted');
      expect(changes.map((c) => c.to)).toEqual(['speaking', 'done']);
      expect(aborted).toEqual([true]);
    });

    it('a queued utterance that is cancelled goes straight to done, once', async () => {
      const { clock, speaker } = setup();
      const changes = record(speaker);
      const first = speaker.say('The first one speaks for a while.');
      const second = speaker.say('The second one never starts.');
      await clock.advance(300);
      await speaker.close();
      await clock.advance(100);
      expect(changes.filter((c) => c.id === second.id).map((c) => [c.from, c.to])).toEqual([
        ['queued', 'done'],
      ]);
      expect(changes.filter((c) => c.id === first.id).map((c) => c.to)).toEqual(['speaking', 'done']);
    });
  });
});
