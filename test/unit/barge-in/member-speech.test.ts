import { describe, expect, it } from 'vitest';
import { SpeakingDetector } from '../../../src/barge-in/member-speech.js';

/** Feeds 20 ms frames of `levelDbfs` for `ms` from `startMs`; the times at which it said "barge in". */
function feed(d: SpeakingDetector, user: string, startMs: number, ms: number, levelDbfs: number): number[] {
  const fired: number[] = [];
  for (let t = startMs; t < startMs + ms; t += 20) if (d.frame(user, levelDbfs, t)) fired.push(t);
  return fired;
}

describe('SpeakingDetector', () => {
  it('fires once a member has talked for 200 ms, once per run of speech', () => {
    const d = new SpeakingDetector();
    expect(feed(d, 'ann', 0, 1000, -20)).toEqual([200]);
    d.end('ann');
    expect(feed(d, 'ann', 2000, 300, -20)).toEqual([2200]);
  });

  it('ignores a cough, a click or quiet noise', () => {
    const d = new SpeakingDetector();
    expect(feed(d, 'bob', 0, 120, -15)).toEqual([]); // a 120 ms cough
    expect(feed(d, 'bob', 500, 2000, -60)).toEqual([]); // a fan
    expect(d.talking).toBe(0);
  });

  it('bridges the short gaps between words, but not a pause', () => {
    const d = new SpeakingDetector();
    // 100 ms of speech, 80 ms gap, 120 ms more: one run of 300 ms, fires at its 200 ms mark.
    expect(feed(d, 'cy', 0, 100, -25)).toEqual([]);
    expect(feed(d, 'cy', 100, 80, -70)).toEqual([]);
    expect(feed(d, 'cy', 180, 120, -25)).toEqual([200]);
    const e = new SpeakingDetector();
    // 100 ms, a 300 ms pause, 100 ms: two short runs, no barge-in.
    expect(feed(e, 'cy', 0, 100, -25)).toEqual([]);
    expect(feed(e, 'cy', 100, 300, -70)).toEqual([]);
    expect(feed(e, 'cy', 400, 100, -25)).toEqual([]);
  });

  it('tracks members separately', () => {
    const d = new SpeakingDetector({ minSpeechMs: 100 });
    const fired: string[] = [];
    for (let t = 0; t < 300; t += 20) {
      if (d.frame('ann', -20, t)) fired.push(`ann@${t}`);
      if (t >= 100 && d.frame('bob', -20, t)) fired.push(`bob@${t}`);
    }
    expect(fired).toEqual(['ann@100', 'bob@200']);
  });
});
