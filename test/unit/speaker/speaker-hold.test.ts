/**
 * The speaker's hold: while a call judges a barge-in, nothing queued starts; `release()` lets the
 * queue go on, `release({ drop: true })` drops what was queued when the hold began and keeps the rest.
 */
import { describe, expect, it } from 'vitest';
import { Speaker } from '../../../src/speaker/speaker.js';
import { FakeClock } from '../../helpers/fake-clock.js';
import { RecordingSink } from '../../helpers/recording-sink.js';
import { TimedSource } from '../../helpers/timed-source.js';

const MULAW_8K = { encoding: 'mulaw', sampleRate: 8000, channels: 1 } as const;

function setup(): { clock: FakeClock; source: TimedSource; sink: RecordingSink; speaker: Speaker } {
  const clock = new FakeClock(1000);
  const source = new TimedSource(clock);
  const sink = new RecordingSink(MULAW_8K, clock);
  const speaker = new Speaker({ source, sink, voiceId: 'v', clock });
  return { clock, source, sink, speaker };
}

describe('Speaker hold and release', () => {
  it('after a barge-in that keeps the queue, nothing starts while held; release() plays the queue', async () => {
    const { clock, source, sink, speaker } = setup();
    const first = speaker.say('The first utterance is cut short by the caller.');
    const second = speaker.say('The second one waits.');
    await clock.advance(600);
    speaker.hold();
    expect(speaker.interrupt({ keepQueue: true }).interrupted).toBe(true);
    expect((await first.result).status).toBe('interrupted');
    const framesAtCut = sink.frames.length;
    await clock.advance(5000);
    expect(speaker.holding).toBe(true);
    expect(sink.frames).toHaveLength(framesAtCut);
    expect(source.requests).not.toContain('The second one waits.');
    expect(speaker.queued).toBe(1);
    speaker.release();
    expect(speaker.holding).toBe(false);
    await clock.advance(5000);
    expect((await second.result).status).toBe('played');
    expect(sink.framesOf(second.id).length).toBeGreaterThan(0);
  });

  it("an utterance said with priority 'now' while held waits for the release, then plays first", async () => {
    const { clock, sink, speaker } = setup();
    const cut = speaker.say('Cut by a cough.');
    const queued = speaker.say('Queued before the cough.');
    await clock.advance(300);
    speaker.hold();
    speaker.interrupt({ keepQueue: true });
    await clock.advance(1000);
    const resumed = speaker.say('by a cough.', { priority: 'now' });
    await clock.advance(1000);
    expect(sink.framesOf(resumed.id)).toHaveLength(0);
    speaker.release();
    await clock.advance(10_000);
    expect((await cut.result).status).toBe('interrupted');
    expect((await resumed.result).status).toBe('played');
    expect((await queued.result).status).toBe('played');
    const order = [...new Set(sink.frames.map((f) => f.utteranceId))];
    expect(order).toEqual([cut.id, resumed.id, queued.id]);
  });

  it('release({ drop: true }) drops what was queued when the hold began, and keeps what came after', async () => {
    const { clock, sink, speaker } = setup();
    const cut = speaker.say('Cut by the caller, who really talks.');
    const before = speaker.say('Queued before the barge-in.');
    const mustHear = speaker.say('Not interruptible.', { interruptible: false });
    await clock.advance(300);
    speaker.hold();
    speaker.interrupt({ keepQueue: true });
    const after = speaker.say('The answer to the caller, said after the barge-in.');
    await clock.advance(1000);
    speaker.release({ drop: true });
    await clock.advance(10_000);
    expect((await cut.result).status).toBe('interrupted');
    expect((await before.result).status).toBe('interrupted');
    expect(sink.framesOf(before.id)).toHaveLength(0);
    expect((await mustHear.result).status).toBe('played');
    expect((await after.result).status).toBe('played');
  });

  it('a hold while speaking lets the current utterance finish and stops before the next', async () => {
    const { clock, sink, speaker } = setup();
    const current = speaker.say('This one plays to its end.');
    const next = speaker.say('This one waits for the release.');
    await clock.advance(200);
    speaker.hold();
    await clock.advance(5000);
    expect((await current.result).status).toBe('played');
    expect(sink.framesOf(next.id)).toHaveLength(0);
    speaker.release();
    await clock.advance(5000);
    expect((await next.result).status).toBe('played');
  });

  it('close() while held ends the held queue as interrupted', async () => {
    const { clock, speaker } = setup();
    const cut = speaker.say('Cut.');
    const held = speaker.say('Held.');
    await clock.advance(100);
    speaker.hold();
    speaker.interrupt({ keepQueue: true });
    await speaker.close();
    expect((await cut.result).status).toBe('interrupted');
    expect((await held.result).status).toBe('interrupted');
    expect(speaker.holding).toBe(false);
  });
});
