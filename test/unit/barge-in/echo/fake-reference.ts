/**
 * A reference for the delay searches' tests: random bit patterns, one a cell, all played; `echo(d)` is
 * the caller's bits of an echo `d` cells behind it. Stands in for `ReferenceHistory.distance`.
 */
import { BANDS, bitDistance } from '../../../../src/barge-in/echo/cells.js';
import { seeded } from '../../../../testkit/random.js';

export class FakeReference {
  private readonly patterns: number[] = [];
  private readonly random: () => number;

  /** `cells` of the reference played already. */
  constructor(seed: number, cells = 0) {
    this.random = seeded(seed);
    for (let i = 0; i < cells; i++) this.next();
  }

  /** The next cell of the reference. */
  next(): void {
    this.patterns.push(Math.floor(this.random() * (1 << BANDS)));
  }

  /** The caller's bits of an echo `lag` cells behind the newest reference cell. */
  echo(lag: number): number {
    return this.patterns[this.patterns.length - 1 - lag] ?? 0;
  }

  /** Random bits: no echo at any lag. */
  noise(): number {
    return Math.floor(this.random() * (1 << BANDS));
  }

  distance(lag: number, bits: number): number {
    const at = this.patterns.length - 1 - lag;
    return at < 0 ? -1 : bitDistance(bits, this.patterns[at]!);
  }
}
