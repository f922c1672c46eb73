import { describe, expect, it } from 'vitest';
import { PlayoutClock } from '../../../src/speaker/playout-clock.js';
import { FakeClock } from '../../helpers/fake-clock.js';

describe('PlayoutClock', () => {
  it('plays written audio at real time and restarts after running dry', async () => {
    const clock = new FakeClock();
    const playout = new PlayoutClock(clock);
    for (let i = 0; i < 10; i++) playout.onWrite(20); // 200 ms ahead
    expect(playout.playedMs()).toBe(0);
    await clock.advance(150);
    expect(playout.playedMs()).toBe(150);
    await clock.advance(500);
    expect(playout.playedMs()).toBe(200); // never past what was written
    playout.onWrite(20); // the far end ran dry: this frame starts playing now
    expect(playout.playedMs()).toBe(200);
    await clock.advance(10);
    expect(playout.playedMs()).toBe(210);
  });

  it('clear drops what has not played and wakes waiters', async () => {
    const clock = new FakeClock();
    const playout = new PlayoutClock(clock);
    for (let i = 0; i < 50; i++) playout.onWrite(20);
    await clock.advance(300);
    let woke = false;
    const waiting = playout.whenPlayed(900).then(() => (woke = true));
    await clock.advance(100);
    expect(woke).toBe(false);
    playout.onClear();
    await waiting;
    expect(woke).toBe(true);
    expect(playout.writtenMs()).toBe(400);
    expect(playout.playedMs()).toBe(400);
    expect(clock.pending).toBe(0); // no timer left behind
  });

  it('whenPlayed resolves at the position, and rejects on abort', async () => {
    const clock = new FakeClock();
    const playout = new PlayoutClock(clock);
    for (let i = 0; i < 10; i++) playout.onWrite(20);
    let at = -1;
    const done = playout.whenPlayed(120).then(() => (at = clock.now()));
    await clock.advance(200);
    await done;
    expect(at).toBe(120);
    playout.onWrite(20);
    const ac = new AbortController();
    const aborted = playout.whenPlayed(220, ac.signal);
    ac.abort(new Error('gone'));
    await expect(aborted).rejects.toThrow('gone');
  });

  it('an ack that moves the estimate wakes waiters at once and cancels their timers', async () => {
    const clock = new FakeClock();
    const playout = new PlayoutClock(clock);
    for (let i = 0; i < 10; i++) playout.onWrite(20);
    let at = -1;
    const waiting = playout.whenPlayed(200).then(() => (at = clock.now()));
    await clock.advance(50);
    expect(clock.pending).toBe(1);
    playout.onAck(200); // the far end confirms everything played
    await waiting;
    expect(at).toBe(50);
    expect(clock.pending).toBe(0);
  });

  it('a late mark does not set the playout back: the mark that came back soonest is the far end', async () => {
    const clock = new FakeClock();
    const playout = new PlayoutClock(clock);
    for (let i = 0; i < 200; i++) playout.onWrite(20); // 4 s of audio
    // The far end plays 60 ms behind our writes; marks every 200 ms, most back at once, one 150 ms late.
    await clock.advance(260);
    playout.onAck(200);
    expect(playout.playedMs()).toBe(200);
    await clock.advance(200);
    playout.onAck(400);
    expect(playout.playedMs()).toBe(400);
    await clock.advance(350);
    playout.onAck(600); // position 600 played at 660; its mark is read at 810
    expect(playout.playedMs()).toBe(750); // not 600: the earlier marks place the playout
    await clock.advance(50);
    playout.onAck(800);
    expect(playout.playedMs()).toBe(800);
    // A far end that really fell behind (a stall at the gateway) is followed within two blocks.
    await clock.advance(1000);
    playout.onAck(1700); // played at 1860, 160 ms behind our writes: one mark is not enough
    expect(playout.playedMs()).toBe(1800);
    await clock.advance(1000);
    playout.onAck(2700); // still 160 behind: taken
    expect(playout.playedMs()).toBe(2700);
  });
});
