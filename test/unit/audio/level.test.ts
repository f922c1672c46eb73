import { describe, expect, it } from 'vitest';
import { levelDbfs, SILENT_DBFS } from '../../../src/audio/level.js';

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
