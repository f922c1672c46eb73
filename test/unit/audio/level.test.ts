import { describe, expect, it } from 'vitest';
import { isClick, levelDbfs, SILENT_DBFS } from '../../../src/audio/level.js';

describe('levelDbfs', () => {
  it('is the RMS relative to full scale (32768): a square wave at full scale is 0 dBFS, a sine −3 dBFS', () => {
    const square = Int16Array.from({ length: 160 }, (_, i) => (i % 2 === 0 ? -32768 : 32767));
    expect(levelDbfs(square)).toBeCloseTo(0, 3);
    const sine = Int16Array.from({ length: 8000 }, (_, i) =>
      Math.round(32767 * Math.sin((2 * Math.PI * i) / 80)),
    );
    expect(levelDbfs(sine)).toBeCloseTo(-3.01, 2);
    expect(levelDbfs(new Int16Array(160).fill(328))).toBeCloseTo(-40, 1);
  });

  it('floors digital silence and an empty stretch at SILENT_DBFS, never -Infinity', () => {
    expect(levelDbfs(new Int16Array(160))).toBe(SILENT_DBFS);
    expect(levelDbfs(new Int16Array(0))).toBe(SILENT_DBFS);
  });
});

describe('isClick', () => {
  const window = (fill: (i: number) => number): Int16Array =>
    Int16Array.from({ length: 256 }, (_, i) => fill(i));
  const noise = (i: number): number => Math.round(1600 * Math.sin(i * 12.9898) * Math.cos(i * 4.1414));

  it('a few samples of full-scale crackle over the echo is a click; the echo alone, a burst of speech, silence are not', () => {
    expect(
      isClick(
        window((i) => (i >= 100 && i < 106 ? (i % 2 ? 30_000 : -30_000) : noise(i))),
        8,
      ),
    ).toBe(true);
    expect(isClick(window(noise), 8)).toBe(false);
    // A plosive's burst: 20 ms of a loud 1 kHz tone.
    expect(
      isClick(
        window((i) => (i < 160 ? Math.round(20_000 * Math.sin((2 * Math.PI * 1000 * i) / 8000)) : 0)),
        8,
      ),
    ).toBe(false);
    expect(isClick(new Int16Array(256), 8)).toBe(false);
  });
});
