/** The reference's moves alone: made when they reach the delay, in whole cells. */
import { describe, expect, it } from 'vitest';
import { ReferenceMoves } from '../../../../src/barge-in/echo/reference-moves.js';

describe('reference moves', () => {
  it('are due once the cells to the delay have passed, in order', () => {
    const moves = new ReferenceMoves(64);
    moves.schedule(100, 3);
    moves.schedule(-50, undefined);
    expect(moves.due()).toBeUndefined();
    moves.nextCell();
    moves.nextCell();
    expect(moves.due()).toBeUndefined();
    moves.nextCell();
    expect(moves.due()).toBe(100);
    expect(moves.due()).toBe(-50);
    expect(moves.due()).toBeUndefined();
  });

  it('come to whole cells, the rest kept for the next', () => {
    const moves = new ReferenceMoves(64);
    expect(moves.wholeCells(100)).toBe(2);
    expect(moves.wholeCells(30)).toBe(0);
    expect(moves.wholeCells(-70)).toBe(-1);
    // 100 + 30 − 70 = 60 samples: one cell, and −4 samples kept (a move of −0 cells).
    expect(Math.abs(moves.wholeCells(-4))).toBe(0);
  });

  it('are dropped on reset', () => {
    const moves = new ReferenceMoves(64);
    moves.schedule(100, 0);
    moves.reset();
    moves.nextCell();
    expect(moves.due()).toBeUndefined();
  });
});
