/**
 * Audio cut into blocks of a fixed length, whatever lengths it arrives in: what a detector that works
 * block by block (the tone detector, answering-machine detection) is given. A whole block within what
 * is pushed is handed over as a view of it, not copied; only a block that spans two pushes is gathered
 * in the filler's own buffer, reused.
 */
export class BlockFiller {
  readonly #buffer: Int16Array;
  #filled = 0;

  constructor(readonly size: number) {
    if (!Number.isInteger(size) || size < 1) throw new RangeError(`a block of ${size} samples`);
    this.#buffer = new Int16Array(size);
  }

  /**
   * Calls `onBlock` with each block completed by `samples`, in order. The block is only valid during
   * the call (a view of `samples` or of the filler's buffer): read it, do not keep it.
   */
  push(samples: Int16Array, onBlock: (block: Int16Array) => void): void {
    let at = 0;
    while (at < samples.length) {
      if (this.#filled === 0 && samples.length - at >= this.size) {
        onBlock(samples.subarray(at, at + this.size));
        at += this.size;
        continue;
      }
      const take = Math.min(samples.length - at, this.size - this.#filled);
      this.#buffer.set(samples.subarray(at, at + take), this.#filled);
      this.#filled += take;
      at += take;
      if (this.#filled < this.size) return;
      this.#filled = 0;
      onBlock(this.#buffer);
    }
  }

  /** Drops a block partly filled. */
  reset(): void {
    this.#filled = 0;
  }
}
