/** A caller's turn as speech-to-text gets it: from a little before its onset to just after its end, at 16 kHz. */
import { describe, expect, it } from 'vitest';
import { TurnRecorder } from '../../../src/relay/turn-recorder.js';

/** 20 ms chunks at `rate`, each sample holding its chunk's index (so the slice taken can be read back). */
function feed(recorder: TurnRecorder, rate: number, fromMs: number, toMs: number): void {
  for (let at = fromMs; at < toMs; at += 20)
    recorder.push(new Int16Array((rate / 1000) * 20).fill(at / 20), at);
}

describe('TurnRecorder', () => {
  it('keeps the turn from its onset less the pre-roll to its end plus the tail', () => {
    const r = new TurnRecorder({ sampleRate: 16_000, preRollMs: 300, tailMs: 100 });
    // The onset is reported a little after it began (the VAD waits for enough speech).
    feed(r, 16_000, 0, 2500);
    r.onset(2000);
    feed(r, 16_000, 2500, 6000);
    const audio = r.turnEnd({ startMs: 2000, endMs: 5000 });
    expect(audio.length).toBe(((5100 - 1700) * 16_000) / 1000);
    expect(audio[0]).toBe(1700 / 20);
    expect(audio.at(-1)).toBe(5080 / 20);
  });

  it('resamples other rates to 16 kHz', () => {
    const r = new TurnRecorder({ sampleRate: 8000, preRollMs: 0, tailMs: 0 });
    feed(r, 8000, 0, 3000);
    r.onset(1000);
    const audio = r.turnEnd({ startMs: 1000, endMs: 2000 });
    expect(Math.abs(audio.length - 16_000)).toBeLessThan(40);
  });

  it('forgets what is older than its look-back while no turn is open, and bounds a long turn', () => {
    const r = new TurnRecorder({
      sampleRate: 16_000,
      preRollMs: 0,
      tailMs: 0,
      lookBackMs: 1000,
      maxTurnMs: 2000,
    });
    feed(r, 16_000, 0, 10_000);
    // An onset older than the look-back: only what was kept comes back.
    r.onset(2000);
    const late = r.turnEnd({ startMs: 2000, endMs: 10_000 });
    expect(late.length).toBeLessThanOrEqual((2000 * 16_000) / 1000);
    r.onset(10_000);
    feed(r, 16_000, 10_000, 20_000);
    const long = r.turnEnd({ startMs: 10_000, endMs: 20_000 });
    expect(long.length).toBe((2000 * 16_000) / 1000);
    expect(long.at(-1)).toBe(19_980 / 20);
  });

  it('bounds what it holds by samples when the timestamps go backwards or stand still', () => {
    const r = new TurnRecorder({
      sampleRate: 8000,
      lookBackMs: 1000,
      maxTurnMs: 2000,
      preRollMs: 0,
      tailMs: 0,
    });
    const chunk = new Int16Array(160).fill(7);
    // 20,000 chunks (400 s of audio) that all claim the same moment, then ones that go back in time.
    for (let i = 0; i < 20_000; i++) r.push(chunk, 1000);
    for (let i = 0; i < 20_000; i++) r.push(chunk, 1000 - i);
    const held = (r as unknown as { held: number }).held;
    expect(held).toBeLessThanOrEqual(8000 + 160);
    // A turn opened on top of it is bounded by its longest turn, and its audio is the caller's.
    r.onset(1000);
    for (let i = 0; i < 20_000; i++) r.push(chunk, 0);
    expect((r as unknown as { held: number }).held).toBeLessThanOrEqual(16_000 + 160);
    // Each chunk was placed after the one before it: the timeline is 60,000 chunks long.
    const endMs = (r as unknown as { endMs: number }).endMs;
    expect(endMs).toBe(1000 + 60_000 * 20);
    const audio = r.turnEnd({ startMs: 1000, endMs });
    expect(audio.length).toBeGreaterThan(0);
    expect(audio.length).toBeLessThanOrEqual(2 * 16_000 + 320);
  });

  it('drops a chunk whose time is not a number', () => {
    const r = new TurnRecorder({ sampleRate: 8000 });
    r.push(new Int16Array(160), Number.NaN);
    expect((r as unknown as { held: number }).held).toBe(0);
  });
});
