/** A server-sent-events reader over fetch, collecting events as they come. */
export interface SseEvent {
  event: string;
  data: unknown;
}

export class SseReader {
  readonly events: SseEvent[] = [];
  private readonly controller = new AbortController();
  readonly done: Promise<void>;

  constructor(url: string, headers: Record<string, string> = {}) {
    this.done = this.read(url, headers).catch((error: unknown) => {
      if (!this.controller.signal.aborted) throw error;
    });
  }

  private async read(url: string, headers: Record<string, string>): Promise<void> {
    const res = await fetch(url, { headers, signal: this.controller.signal });
    if (!res.ok || !res.body) throw new Error(`SSE ${url}: ${res.status}`);
    const decoder = new TextDecoder();
    let buffer = '';
    for await (const chunk of res.body) {
      buffer += decoder.decode(chunk as Uint8Array, { stream: true });
      for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let event = 'message';
        const data: string[] = [];
        for (const line of block.split('\n')) {
          if (line.startsWith('event: ')) event = line.slice(7);
          else if (line.startsWith('data: ')) data.push(line.slice(6));
        }
        if (data.length > 0) this.events.push({ event, data: JSON.parse(data.join('\n')) as unknown });
      }
    }
  }

  of(event: string): unknown[] {
    return this.events.filter((e) => e.event === event).map((e) => e.data);
  }

  async until(predicate: (events: SseEvent[]) => boolean, timeoutMs = 10_000): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    while (!predicate(this.events)) {
      if (performance.now() > deadline)
        throw new Error(`SSE: timed out; got ${this.events.map((e) => e.event).join(', ')}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  close(): void {
    this.controller.abort();
  }
}
