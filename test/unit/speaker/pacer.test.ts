import { describe, expect, it } from 'vitest';
import { Pacer, type PaceResult } from '../../../src/speaker/pacer.js';
import { FakeClock } from '../../helpers/fake-clock.js';
import { FRAME_MS } from '../../../src/audio/framer.js';

const LEAD_MS = 200;
const START_MS = 1000;

interface Sent extends PaceResult {
  atMs: number;
}

/**
 * A sender that paces `count` frames; `before(i)` runs before frame i is asked for (a stalled producer
 * sleeps there). Resolves with when each frame went out.
 */
async function send(
  pacer: Pacer,
  clock: FakeClock,
  count: number,
  before?: (i: number) => Promise<void> | void,
): Promise<Sent[]> {
  const sent: Sent[] = [];
  for (let i = 0; i < count; i++) {
    await before?.(i);
    const r = await pacer.next();
    sent.push({ atMs: clock.now(), ...r });
  }
  return sent;
}

/**
 * What the far end holds after each frame, if it plays continuously whenever it has audio: the pacer's
 * lead as the listener's buffer sees it.
 */
function farEndQueueMs(sent: readonly Sent[]): number[] {
  let queuedMs = 0;
  let lastMs = sent[0]?.atMs ?? 0;
  return sent.map((s) => {
    queuedMs = Math.max(0, queuedMs - (s.atMs - lastMs)) + FRAME_MS;
    lastMs = s.atMs;
    return queuedMs;
  });
}

/** The largest number of frames that went out at one instant, from frame `from` on. */
function largestBurst(sent: readonly Sent[], from = 0): number {
  const counts = new Map<number, number>();
  for (const s of sent.slice(from)) counts.set(s.atMs, (counts.get(s.atMs) ?? 0) + 1);
  return Math.max(...counts.values());
}

describe('Pacer', () => {
  it('sends the lead at once, then one frame per frameMs on exact deadlines', async () => {
    const clock = new FakeClock(START_MS);
    const pacer = new Pacer(clock, { frameMs: FRAME_MS, leadMs: LEAD_MS });
    const running = send(pacer, clock, 30);
    await clock.advance(1000);
    const sent = await running;
    const leadFrames = LEAD_MS / FRAME_MS;
    for (let k = 0; k < sent.length; k++) {
      expect(sent[k]!.atMs).toBe(START_MS + Math.max(0, k - leadFrames) * FRAME_MS);
      expect(sent[k]!.lateMs).toBe(0);
      expect(sent[k]!.reanchored).toBe(false);
    }
    expect(sent.filter((s) => s.atMs === START_MS)).toHaveLength(leadFrames + 1);
  });

  it('keeps leadMs (to one frame) of audio ahead of real time', async () => {
    const clock = new FakeClock(START_MS);
    const pacer = new Pacer(clock, { frameMs: FRAME_MS, leadMs: LEAD_MS });
    const running = send(pacer, clock, 40);
    await clock.advance(580); // frame 39 goes at 1580
    const sent = await running;
    expect(sent[39]!.atMs).toBe(1580);
    const aheads = farEndQueueMs(sent);
    expect(aheads[0]).toBe(FRAME_MS);
    for (const a of aheads.slice(10)) expect(a).toBe(LEAD_MS + FRAME_MS);
  });

  it("with burstFrames 2 releases frames in pairs at the first one's deadline, with no drift", async () => {
    const clock = new FakeClock(START_MS);
    const pacer = new Pacer(clock, { frameMs: FRAME_MS, leadMs: 0, burstFrames: 2 });
    const running = send(pacer, clock, 1001);
    await clock.advance(20_000);
    const sent = await running;
    expect(sent.slice(0, 6).map((s) => s.atMs)).toEqual([1000, 1000, 1040, 1040, 1080, 1080]);
    expect(sent[1000]!.atMs).toBe(START_MS + 1000 * FRAME_MS);
    expect(largestBurst(sent)).toBe(2);
    expect(sent.every((s) => s.lateMs === 0 && !s.reanchored)).toBe(true);
    // The far end never holds more than the lead (0) and the burst's second frame.
    expect(Math.max(...farEndQueueMs(sent))).toBe(2 * FRAME_MS);
  });

  it('refuses a burst that is not a whole number of frames', () => {
    expect(() => new Pacer(new FakeClock(), { frameMs: FRAME_MS, leadMs: 0, burstFrames: 0 })).toThrow(
      RangeError,
    );
    expect(() => new Pacer(new FakeClock(), { frameMs: FRAME_MS, leadMs: 0, burstFrames: 1.5 })).toThrow(
      RangeError,
    );
  });

  it('with leadMs 0 sends the first frame at once, then one per frameMs', async () => {
    const clock = new FakeClock(START_MS);
    const pacer = new Pacer(clock, { frameMs: FRAME_MS, leadMs: 0 });
    const running = send(pacer, clock, 5);
    await clock.advance(1000);
    expect((await running).map((s) => s.atMs)).toEqual([1000, 1020, 1040, 1060, 1080]);
  });

  it('does not drift over 10 000 frames, even when every timer fires late', async () => {
    // Each wake-up is up to 7 ms late (below maxLateMs), at a fractional start time.
    let n = 0;
    const clock = new FakeClock(START_MS + 0.3, () => (n++ * 7919) % 8);
    const pacer = new Pacer(clock, { frameMs: FRAME_MS, leadMs: LEAD_MS });
    const count = 10_000;
    const running = send(pacer, clock, count);
    await clock.advance(count * FRAME_MS + 1000);
    const sent = await running;
    const leadFrames = LEAD_MS / FRAME_MS;
    for (let k = 0; k < count; k++) {
      const deadline = START_MS + 0.3 + Math.max(0, k - leadFrames) * FRAME_MS;
      const s = sent[k]!;
      expect(s.reanchored).toBe(false);
      expect(s.atMs).toBeGreaterThanOrEqual(deadline - 1e-9);
      expect(s.atMs).toBeLessThan(deadline + 8);
      // The reported lateness is against the absolute deadline, which never moves.
      expect(s.atMs - s.lateMs).toBeCloseTo(deadline, 6);
    }
  });

  it('re-anchors after a stall instead of bursting the missed frames', async () => {
    const clock = new FakeClock(0);
    const pacer = new Pacer(clock, { frameMs: FRAME_MS, leadMs: LEAD_MS });
    const stallMs = 500;
    const running = send(pacer, clock, 100, async (i) => {
      if (i === 50) await clock.sleepUntil(clock.now() + stallMs);
    });
    await clock.advance(5000);
    const sent = await running;
    // Frame 49 went at 780; frame 50 was due at 800 but was only ready at 1280.
    expect(sent[49]!.atMs).toBe(780);
    const resumed = sent[50]!;
    expect(resumed).toEqual({ atMs: 1280, lateMs: 480, reanchored: true });
    // The far end ran dry, so the lead builds up again: at most lead/frameMs + 1 frames at once.
    expect(largestBurst(sent, 50)).toBeLessThanOrEqual(LEAD_MS / FRAME_MS + 1);
    expect(sent.filter((s) => s.atMs === 1280)).toHaveLength(LEAD_MS / FRAME_MS + 1);
    for (let i = 51; i < 100; i++) {
      expect(sent[i]!.reanchored).toBe(false);
      expect(sent[i]!.lateMs).toBe(0);
      expect(sent[i]!.atMs).toBe(1280 + Math.max(0, i - 50 - LEAD_MS / FRAME_MS) * FRAME_MS);
    }
  });

  it('after a stall shorter than the lead, refills only what was lost: never more than the lead ahead', async () => {
    const clock = new FakeClock(0);
    const pacer = new Pacer(clock, { frameMs: FRAME_MS, leadMs: LEAD_MS });
    const running = send(pacer, clock, 80, async (i) => {
      if (i === 50) await clock.sleepUntil(clock.now() + 100);
    });
    await clock.advance(5000);
    const sent = await running;
    // Frame 50 was due at 800 and went at 880: 80 ms late (> maxLateMs 40) but 120 ms was still queued.
    expect(sent[50]).toEqual({ atMs: 880, lateMs: 80, reanchored: true });
    // It and the 4 frames that were lost go at once; then the old timeline continues.
    expect(sent.filter((s) => s.atMs === 880)).toHaveLength(5);
    expect(sent[55]!.atMs).toBe(900);
    expect(sent[79]!.atMs).toBe(79 * FRAME_MS - LEAD_MS);
    expect(Math.max(...farEndQueueMs(sent))).toBeLessThanOrEqual(LEAD_MS + FRAME_MS);
  });

  it('catches up a little lateness (≤ maxLateMs) without re-anchoring', async () => {
    const clock = new FakeClock(0);
    const pacer = new Pacer(clock, { frameMs: FRAME_MS, leadMs: LEAD_MS, maxLateMs: 50 });
    const running = send(pacer, clock, 30, async (i) => {
      if (i === 20) await clock.sleepUntil(clock.now() + 65);
    });
    await clock.advance(2000);
    const sent = await running;
    // Frame 20 was due at 200, went at 245.
    expect(sent[20]).toEqual({ atMs: 245, lateMs: 45, reanchored: false });
    expect(sent[21]).toEqual({ atMs: 245, lateMs: 25, reanchored: false });
    expect(sent[22]).toEqual({ atMs: 245, lateMs: 5, reanchored: false });
    expect(sent[23]).toEqual({ atMs: 260, lateMs: 0, reanchored: false });
  });

  it('with leadMs 0, a stall re-anchors so the next frame is due now', async () => {
    const clock = new FakeClock(0);
    const pacer = new Pacer(clock, { frameMs: FRAME_MS, leadMs: 0 });
    const running = send(pacer, clock, 6, async (i) => {
      if (i === 3) await clock.sleepUntil(clock.now() + 300);
    });
    await clock.advance(2000);
    const sent = await running;
    expect(sent.map((s) => s.atMs)).toEqual([0, 20, 40, 340, 360, 380]);
    expect(sent[3]).toMatchObject({ lateMs: 280, reanchored: true });
  });

  it('rejects with the signal reason on abort, and the aborted wait is not a frame', async () => {
    const clock = new FakeClock(0);
    const pacer = new Pacer(clock, { frameMs: FRAME_MS, leadMs: 0 });
    await pacer.next();
    const ac = new AbortController();
    const waiting = pacer.next(ac.signal);
    const reason = new Error('barge-in');
    ac.abort(reason);
    await expect(waiting).rejects.toBe(reason);
    expect(clock.pending).toBe(0);
    await expect(pacer.next(AbortSignal.abort('gone'))).rejects.toBe('gone');
    // Still on the same timeline: frame 1 is due at 20.
    const next = pacer.next();
    await clock.advance(20);
    expect(await next).toEqual({ lateMs: 0, reanchored: false });
    expect(clock.now()).toBe(20);
  });

  it('reset forgets the anchor: the next frame anchors again and the lead goes at once', async () => {
    const clock = new FakeClock(0);
    const pacer = new Pacer(clock, { frameMs: FRAME_MS, leadMs: 100 });
    const first = send(pacer, clock, 20);
    await clock.advance(1000);
    await first;
    pacer.reset();
    const second = send(pacer, clock, 10);
    await clock.advance(1000);
    const sent = await second;
    expect(sent.map((s) => s.atMs)).toEqual([1000, 1000, 1000, 1000, 1000, 1000, 1020, 1040, 1060, 1080]);
    expect(sent.every((s) => s.lateMs === 0 && !s.reanchored)).toBe(true);
  });

  it('a wait that spans reset() re-anchors when it wakes', async () => {
    const clock = new FakeClock(0);
    const pacer = new Pacer(clock, { frameMs: FRAME_MS, leadMs: 0 });
    await pacer.next();
    const waiting = pacer.next(); // due at 20
    await clock.advance(5);
    pacer.reset();
    await clock.advance(15);
    expect(await waiting).toEqual({ lateMs: 0, reanchored: false });
    // Anchored afresh at 20: the next frame is due at 40.
    const next = pacer.next();
    await clock.advance(20);
    await next;
    expect(clock.now()).toBe(40);
  });

  it('rejects nonsensical options', () => {
    const clock = new FakeClock();
    expect(() => new Pacer(clock, { frameMs: 0, leadMs: 0 })).toThrow(RangeError);
    expect(() => new Pacer(clock, { frameMs: 20, leadMs: -1 })).toThrow(RangeError);
    expect(() => new Pacer(clock, { frameMs: 20, leadMs: 0, maxLateMs: Number.NaN })).toThrow(RangeError);
  });
});
