/**
 * The echo reference keeps the bot's audio whole, sample after sample, while its clocks jitter by
 * fractions of a millisecond: the echo canceller needs the path to hold still to the sample. When the
 * playout clock places the bot's audio afresh while it talks, the read that passes that point says by
 * how much the echo moved against the reference.
 */
import { describe, expect, it } from 'vitest';
import { seeded } from '../../../testkit/random.js';
import { EchoReference } from '../../../adapters/media-stream/echo-reference.js';
import { REFERENCE_ADVANCE_MS } from '../../../src/barge-in/index.js';
import type { Clock } from '../../../src/speaker/clock.js';

const RATE = 8000;
const FRAME = 160;

function fakeClock(): Clock & { ms: number } {
  return {
    ms: 0,
    now() {
      return this.ms;
    },
    async sleepUntil() {},
  };
}

/** A 20 ms frame of s16le whose samples count up from `first` (a ramp, so any skip or repeat shows). */
function rampFrame(first: number): Uint8Array {
  const samples = Int16Array.from({ length: FRAME }, (_, i) => (first + i) % 30_000);
  return new Uint8Array(samples.buffer);
}

describe('echo reference', () => {
  it('reads the bot’s audio whole while the playout estimate and the caller’s arrival jitter by under 2 ms', () => {
    const clock = fakeClock();
    const reference = new EchoReference({ encoding: 's16le', sampleRate: RATE, channels: 1 }, RATE, clock);
    const random = seeded(3);
    const jitter = (): number => (random() * 2 - 1) * 0.9;
    // Three seconds of the bot, each frame's playout estimated ±0.9 ms off its true place.
    for (let f = 0; f < 150; f++) reference.onFrame(rampFrame(f * FRAME), 1000 + f * 20 + jitter());
    // The caller's chunks arrive 40 ms after their inbound time, ±0.9 ms.
    const read: number[] = [];
    for (let c = 0; c < 100; c++) {
      const endMs = (c + 1) * 20;
      clock.ms = 1000 + endMs + 40 + jitter();
      const from = reference.arrived(endMs, 20);
      read.push(...reference.read(from, FRAME).samples);
    }
    // Once the bot plays, every sample follows the one before: none skipped, none repeated.
    const start = read.findIndex((v) => v !== 0);
    expect(start).toBeGreaterThanOrEqual(0);
    let steps = 0;
    for (let i = start + 1; i < read.length; i++) if (read[i] !== read[i - 1]! + 1) steps++;
    expect(steps).toBe(0);
    // And where it is read from is where it played: the first chunk stands for 1040 ms on the wall
    // clock (its arrival less its inbound time), read 20 ms ahead, 60 ms into the bot's audio (sample
    // 480), within the jitter.
    expect(start).toBe(0);
    expect(Math.abs(read[0]! - 480)).toBeLessThanOrEqual(16);
  });

  it('follows a playout clock that moves by more than a step (drift, a stall) within that step', () => {
    const clock = fakeClock();
    const reference = new EchoReference({ encoding: 's16le', sampleRate: RATE, channels: 1 }, RATE, clock);
    // From frame 50 on, the bot plays 10 ms later than it would follow on: the smoothed playout clock
    // moves there over a second or two, and the audio written steps after it.
    for (let f = 0; f < 250; f++) reference.onFrame(rampFrame(f * FRAME), 1000 + f * 20 + (f >= 50 ? 10 : 0));
    // Read where frame 240 plays.
    const at = 1000 + 240 * 20 + 10;
    clock.ms = at - REFERENCE_ADVANCE_MS + 20;
    const from = reference.arrived(at - 1000 - REFERENCE_ADVANCE_MS + 20, 20);
    const read = reference.read(from, FRAME).samples;
    expect(Math.abs(read[0]! - ((240 * FRAME) % 30_000))).toBeLessThanOrEqual(16);
  });

  it('says by how much the echo moved when a frame is placed afresh while the bot talks, and not at a new reply', () => {
    const clock = fakeClock();
    const reference = new EchoReference({ encoding: 's16le', sampleRate: RATE, channels: 1 }, RATE, clock);
    const reads: Array<{ from: number; moved: number; first: number }> = [];
    let chunk = 0;
    const readUntil = (wallMs: number): void => {
      for (; 1000 + (chunk + 1) * 20 + 40 <= wallMs; chunk++) {
        const endMs = (chunk + 1) * 20;
        clock.ms = 1000 + endMs + 40;
        const from = reference.arrived(endMs, 20);
        const { samples, moved } = reference.read(from, FRAME);
        reads.push({ from, moved, first: samples[0]! });
      }
    };
    // The bot talks; 200 ms ahead of the caller's audio, as the phone sink writes. From frame 100 on, the
    // playout clock says it plays 100 ms later (a returned mark showed the far end's buffer ran dry).
    for (let f = 0; f < 200; f++) {
      readUntil(1000 + f * 20 - 200);
      reference.onFrame(rampFrame(f * FRAME), 1000 + f * 20 + (f >= 100 ? 100 : 0));
    }
    readUntil(5000);
    // Then a stall: no frames (the sink runs dry: the far end hears that gap too) and no caller's audio
    // read for a while. The bot goes on from where it plays now, written before the caller's audio held
    // up meanwhile is read, which is no move of the echo either.
    clock.ms = 5400;
    for (let f = 0; f < 10; f++) reference.onFrame(rampFrame(f * FRAME), 5400 + f * 20);
    for (let f = 10; f < 50; f++) {
      readUntil(5400 + f * 20 - 200);
      reference.onFrame(rampFrame(f * FRAME), 5400 + f * 20);
    }
    readUntil(6400);
    const moves = reads.filter((r) => r.moved !== 0);
    // One move, where frame 100 is read: the echo of what follows comes 100 ms sooner against it.
    expect(moves.map((r) => r.moved)).toEqual([-800]);
    const at = moves[0]!.from + REFERENCE_ADVANCE_MS;
    expect(at).toBeGreaterThan(1000 + 100 * 20 - 20);
    expect(at).toBeLessThanOrEqual(1000 + 100 * 20);
    // A new reply after the bot was quiet is placed where it plays, which is no move of the echo.
    for (let f = 0; f < 50; f++) {
      readUntil(7000 + f * 20 - 200);
      reference.onFrame(rampFrame(f * FRAME), 7000 + f * 20);
    }
    readUntil(8000);
    expect(reads.filter((r) => r.moved !== 0).map((r) => r.moved)).toEqual([-800]);
    // And it was read: the new reply's audio is there.
    expect(reads.some((r) => r.from > 7000 && r.first !== 0)).toBe(true);
  });
});
