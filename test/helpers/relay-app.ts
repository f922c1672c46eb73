/**
 * The app side of ConversationRelay, written from Twilio's message reference (a plain `ws` server,
 * nothing of ours): it receives `setup`, `prompt`, `dtmf`, `interrupt` and `error`, and answers a
 * prompt with `text` tokens at an LLM's pace, the last with `last: true`. Key 9 ends the session with
 * handoff data. Tests may also send anything themselves.
 */
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import { rawText } from '../../src/http/ws-data.js';

export type RelayMessage = Record<string, unknown> & { type: string };

export interface RelayAppSession {
  socket: WebSocket;
  received: RelayMessage[];
  headers: Record<string, unknown>;
  /** The socket closed (by either side). */
  closed: boolean;
}

export class RelayApp {
  readonly sessions: RelayAppSession[] = [];
  tokenGapMs = 50;
  /** What to say as soon as a session is set up, if anything. */
  onSetup: ((setup: RelayMessage) => string | undefined) | undefined;

  private constructor(readonly server: WebSocketServer) {
    server.on('connection', (socket, req) => {
      const session: RelayAppSession = { socket, received: [], headers: { ...req.headers }, closed: false };
      this.sessions.push(session);
      socket.on('close', () => (session.closed = true));
      socket.on('message', (data) => {
        const message = JSON.parse(rawText(data)) as RelayMessage;
        session.received.push(message);
        const greeting = message.type === 'setup' ? this.onSetup?.(message) : undefined;
        if (greeting) void this.answer(socket, greeting);
        // A partial prompt (`last: false`) is not answered: the turn is not over.
        if (message.type === 'prompt' && message['last'] !== false)
          void this.answer(
            socket,
            `You said: ${String(message['voicePrompt'])}. What else can I do for you today?`,
          );
        if (message.type === 'dtmf' && message['digit'] === '9')
          socket.send(JSON.stringify({ type: 'end', handoffData: '{"reason":"caller pressed 9"}' }));
      });
    });
  }

  static async start(): Promise<RelayApp> {
    const server = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    await once(server, 'listening');
    return new RelayApp(server);
  }

  get url(): string {
    return `ws://127.0.0.1:${(this.server.address() as AddressInfo).port}/relay`;
  }

  /** Word by word (tokens of a few characters), `tokenGapMs` apart, the last marked. */
  async answer(socket: WebSocket, text: string, extra: Record<string, unknown> = {}): Promise<void> {
    const tokens = text.match(/\S+\s*/g) ?? [];
    for (const [i, token] of tokens.entries()) {
      if (socket.readyState !== socket.OPEN) return;
      socket.send(JSON.stringify({ type: 'text', token, last: i === tokens.length - 1, ...extra }));
      await new Promise((r) => setTimeout(r, this.tokenGapMs));
    }
  }

  latest(): RelayAppSession {
    const s = this.sessions.at(-1);
    if (!s) throw new Error('no relay session yet');
    return s;
  }

  async close(): Promise<void> {
    for (const s of this.sessions) s.socket.terminate();
    await new Promise((r) => this.server.close(r));
  }
}

/** Polls `predicate` every 10 ms; throws naming `what` after `timeoutMs`. */
export async function until(predicate: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!predicate()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
