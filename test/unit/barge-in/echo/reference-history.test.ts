/** The reference's history alone: which cells played, their powers over lags, their bits. */
import { describe, expect, it } from 'vitest';
import { BANDS, bitDistance, UNKNOWN_LAGS } from '../../../../src/barge-in/echo/cells.js';
import { ReferenceHistory } from '../../../../src/barge-in/echo/reference-history.js';

/** A cell whose bands are all `power`, but band `loud` (if any) ten times that. */
function cell(power: number, loud?: number): Float64Array {
  const bands = new Float64Array(BANDS).fill(power);
  if (loud !== undefined) bands[loud] = power * 10;
  return bands;
}

const total = (bands: Float64Array): number => bands.reduce((a, b) => a + b, 0);

function push(history: ReferenceHistory, bands: Float64Array): boolean {
  return history.push(bands, total(bands));
}

describe('reference history', () => {
  it('tells the cells the bot played in (above about −55 dBFS) from the quiet ones, by lag', () => {
    const history = new ReferenceHistory();
    expect(push(history, cell(1e5))).toBe(true);
    expect(push(history, cell(1))).toBe(false);
    expect(history.played(0)).toBe(false);
    expect(history.played(1)).toBe(true);
    // A cell that did not play matches nothing.
    expect(history.distance(0, 0)).toBe(-1);
  });

  it('gives the loudest band over a span of lags, and a cell’s loudest band', () => {
    const history = new ReferenceHistory();
    for (const power of [1e5, 4e5, 2e5, 3e5]) push(history, cell(power, 2));
    // Lag 0 is the newest (3e5), lag 3 the oldest (1e5).
    expect(history.over(0, 0, 0)).toBe(3e5);
    expect(history.over(0, 1, 3)).toBe(4e5);
    expect(history.around(0, 2, 1)).toBe(4e5);
    expect(history.over(2, 0, 3)).toBe(4e6);
    expect(history.loudestAt(3)).toBe(1e6);
    // Lags past the history and before the newest are left out.
    expect(history.over(0, -5, 0)).toBe(3e5);
  });

  it('reads each played cell as bits: the bands above their running mean', () => {
    const history = new ReferenceHistory();
    for (let i = 0; i < 300; i++) push(history, cell(1e6));
    // Quieter than the bot has been, but for band 4.
    const quieter = cell(1e5);
    quieter[4] = 1e6;
    push(history, quieter);
    const band4 = 1 << 4;
    expect(history.distance(0, band4)).toBe(0);
    expect(history.distance(0, 0)).toBe(bitDistance(band4, 0));
  });

  it('keeps the peak of the newest cells, for an echo whose delay is not known', () => {
    const history = new ReferenceHistory();
    push(history, cell(1e6));
    for (let i = 0; i < UNKNOWN_LAGS - 1; i++) push(history, cell(1e5));
    expect(history.peakOf(0)).toBe(1e6);
    push(history, cell(1e5));
    expect(history.peakOf(0)).toBe(1e5);
  });

  it('forgets its cells on reset', () => {
    const history = new ReferenceHistory();
    push(history, cell(1e6));
    history.reset();
    expect(history.played(0)).toBe(false);
    expect(history.over(0, 0, 10)).toBe(0);
    expect(history.peakOf(0)).toBe(0);
  });
});
