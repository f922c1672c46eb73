/** The wide search alone: a reply's start, a lost echo, on random bit patterns. */
import { describe, expect, it } from 'vitest';
import { HISTORY, WIDE_LAGS } from '../../../../src/barge-in/echo/cells.js';
import { START_REALIGN_CELLS, WideSearch } from '../../../../src/barge-in/echo/wide-search.js';
import { FakeReference } from './fake-reference.js';

/** Up to `cells` cells of the echo `lag` cells behind (undefined: none); the cell the delay moved at. */
function run(
  search: WideSearch,
  reference: FakeReference,
  lag: number | undefined,
  delay: number,
  cells: number,
): number | undefined {
  for (let i = 0; i < cells; i++) {
    reference.next();
    const bits = lag === undefined ? reference.noise() : reference.echo(lag);
    if (search.realign(bits, reference, delay)) return i;
  }
  return undefined;
}

describe('wide search', () => {
  it('a reply starts where the bot plays at the delay after 160 ms of quiet there', () => {
    const search = new WideSearch();
    for (let i = 0; i < 19; i++) search.quiet();
    expect(search.plays()).toBe(false);
    for (let i = 0; i < 20; i++) search.quiet();
    expect(search.plays()).toBe(true);
    expect(search.plays()).toBe(false);
  });

  it('at a reply placed a few cells off, moves the delay to where the echo is', () => {
    const search = new WideSearch();
    const reference = new FakeReference(1, 100);
    search.widen(25, 35);
    expect(search.searching).toBe(true);
    expect([search.from, search.to]).toEqual([25, 35]);
    expect(run(search, reference, 33, 30, 40)).toBe(START_REALIGN_CELLS - 1);
    expect([search.movedTo, search.movedBy]).toEqual([33, 3]);
    expect(search.searching).toBe(false);
  });

  it('ends without a move where the echo is still at the delay', () => {
    const search = new WideSearch();
    const reference = new FakeReference(2, 100);
    search.widen(25, 35);
    expect(run(search, reference, 30, 30, 40)).toBeUndefined();
    expect(search.searching).toBe(false);
  });

  it('looks for an echo that left the delay round after round, until found or its cells are spent', () => {
    const search = new WideSearch();
    const reference = new FakeReference(3, 100);
    search.widen(28, 62, true);
    expect(search.searchingLost).toBe(true);
    expect(run(search, reference, undefined, 30, 50)).toBeUndefined();
    expect(search.searching).toBe(true);
    expect(run(search, reference, 55, 30, 40)).toBeDefined();
    expect(search.movedTo).toBe(55);
    let held = 0;
    search.widen(28, 62, true);
    while (search.hold()) held++;
    expect(held).toBe(60);
    expect(search.searching).toBe(false);
  });

  it('keeps its span within the history and the lags it can sum, and widens a search under way', () => {
    const search = new WideSearch();
    search.widen(-5, 5);
    expect([search.from, search.to]).toEqual([0, 5]);
    search.widen(HISTORY - 3, HISTORY + 10);
    expect([search.from, search.to]).toEqual([0, WIDE_LAGS - 1]);
    search.reset();
    search.widen(HISTORY - 3, HISTORY + 10);
    expect([search.from, search.to]).toEqual([HISTORY - 3, HISTORY - 1]);
  });
});
