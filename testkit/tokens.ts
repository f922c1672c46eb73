/** Tokens as an LLM streams them, for tests of streamed text. */
/** A token source the test feeds by hand; records whether it was closed. */
export class TokenSource implements AsyncIterable<string> {
  private readonly queue: string[] = [];
  private waiting: ((r: IteratorResult<string>) => void) | undefined;
  private ended = false;
  returned = false;

  push(token: string): void {
    if (this.waiting) {
      const wake = this.waiting;
      this.waiting = undefined;
      wake({ done: false, value: token });
    } else this.queue.push(token);
  }

  end(): void {
    this.ended = true;
    this.waiting?.({ done: true, value: undefined });
    this.waiting = undefined;
  }

  [Symbol.asyncIterator](): AsyncIterator<string> {
    return {
      next: () => {
        const token = this.queue.shift();
        if (token !== undefined) return Promise.resolve({ done: false, value: token });
        if (this.ended) return Promise.resolve({ done: true, value: undefined });
        return new Promise((resolve) => (this.waiting = resolve));
      },
      return: () => {
        this.returned = true;
        return Promise.resolve({ done: true, value: undefined });
      },
    };
  }
}
