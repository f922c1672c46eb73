/**
 * Per lane, the largest of the last `span` values pushed (0 before any; the values must not be NaN):
 * a monotonic deque per lane, of the values that may still be the largest, oldest and largest first,
 * each with when it was pushed. Amortised a few steps a value, where a scan costs `span`.
 */
export class SlidingMax {
  /** Per lane, a ring of `span` entries from `first` on, `count` of them: the values and their times. */
  private readonly values: Float64Array;
  private readonly times: Float64Array;
  private readonly first: Int32Array;
  private readonly count: Int32Array;
  /** Values pushed per lane since the last clear. */
  private pushed = 0;

  constructor(
    private readonly lanes: number,
    private readonly span: number,
  ) {
    this.values = new Float64Array(lanes * span);
    this.times = new Float64Array(lanes * span);
    this.first = new Int32Array(lanes);
    this.count = new Int32Array(lanes);
  }

  /** The next value of each lane: `from[at + lane]`. */
  push(from: Float64Array, at: number): void {
    const { values, times, span } = this;
    const now = this.pushed++;
    for (let lane = 0; lane < this.lanes; lane++) {
      const base = lane * span;
      let first = this.first[lane]!;
      let count = this.count[lane]!;
      // The oldest leaves the window (one at most: times are consecutive).
      if (count > 0 && times[base + first]! <= now - span) {
        first = first + 1 === span ? 0 : first + 1;
        count--;
      }
      // Those no larger than the new value can no longer be the largest.
      const v = from[at + lane]!;
      while (count > 0) {
        const last = first + count - 1;
        if (values[base + (last >= span ? last - span : last)]! > v) break;
        count--;
      }
      const end = first + count;
      const slot = base + (end >= span ? end - span : end);
      values[slot] = v;
      times[slot] = now;
      this.first[lane] = first;
      this.count[lane] = count + 1;
    }
  }

  /** The largest of lane `lane`'s last `span` values. */
  max(lane: number): number {
    return this.count[lane]! > 0 ? this.values[lane * this.span + this.first[lane]!]! : 0;
  }

  clear(): void {
    this.first.fill(0);
    this.count.fill(0);
    this.pushed = 0;
  }
}
