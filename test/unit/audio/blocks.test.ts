import { describe, expect, it } from 'vitest';
import { BlockFiller } from '../../../src/audio/blocks.js';

/** The blocks `filler` hands out for `pushes`, each copied as it is handed out. */
function blocksOf(filler: BlockFiller, pushes: Int16Array[]): number[][] {
  const out: number[][] = [];
  for (const p of pushes) filler.push(p, (block) => out.push([...block]));
  return out;
}

describe('BlockFiller', () => {
  it('hands out the same blocks however the audio is cut, and keeps the rest for the next push', () => {
    const audio = Int16Array.from({ length: 103 }, (_, i) => i);
    const whole = blocksOf(new BlockFiller(10), [audio]);
    expect(whole).toHaveLength(10);
    expect(whole[3]).toEqual([30, 31, 32, 33, 34, 35, 36, 37, 38, 39]);
    for (const sizes of [[1], [3, 7], [10], [13, 2, 29], [64, 39]]) {
      const pushes: Int16Array[] = [];
      for (let at = 0, k = 0; at < audio.length; k++) {
        const n = sizes[k % sizes.length]!;
        pushes.push(audio.subarray(at, at + n));
        at += n;
      }
      expect(blocksOf(new BlockFiller(10), pushes)).toEqual(whole);
    }
  });

  it('drops a part-filled block on reset, and refuses a block of no samples', () => {
    const filler = new BlockFiller(4);
    expect(blocksOf(filler, [Int16Array.of(1, 2, 3)])).toEqual([]);
    filler.reset();
    expect(blocksOf(filler, [Int16Array.of(5, 6, 7, 8)])).toEqual([[5, 6, 7, 8]]);
    expect(() => new BlockFiller(0)).toThrow(RangeError);
  });
});
