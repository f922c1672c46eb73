/**
 * Moves of the reference (it was placed afresh while the bot talked: `EchoReference.read`'s `moved`),
 * made when they reach the echo: the echo of what the reference held before a move still comes at the
 * old lag, that of what follows at the new one, so a move found in a window is made when that point
 * reaches the delay (the delay's length in cells from then, give or take the window).
 */
export class ReferenceMoves {
  /** Cells so far, and the moves to make when the count gets to theirs. */
  private cells = 0;
  private readonly moves: Array<{ atCell: number; samples: number }> = [];
  /** Of the moves made, what does not make a whole cell yet (samples). */
  private pending = 0;

  constructor(private readonly hopSamples: number) {}

  /** The reference moved by `samples` in the window about to be processed; the delay is `delayCells`. */
  schedule(samples: number, delayCells: number | undefined): void {
    this.moves.push({ atCell: this.cells + (delayCells ?? 0), samples });
  }

  /** The next cell. */
  nextCell(): void {
    this.cells++;
  }

  /** A move whose time came (samples), one at a time; undefined when none is due. */
  due(): number | undefined {
    const next = this.moves[0];
    if (next === undefined || this.cells < next.atCell) return undefined;
    this.moves.shift();
    return next.samples;
  }

  /** A move of `samples` made: the whole cells it and the rest of earlier ones come to (the rest is kept). */
  wholeCells(samples: number): number {
    this.pending += samples;
    const k = Math.round(this.pending / this.hopSamples);
    if (k !== 0) this.pending -= k * this.hopSamples;
    return k;
  }

  reset(): void {
    this.cells = 0;
    this.moves.length = 0;
    this.pending = 0;
  }
}
