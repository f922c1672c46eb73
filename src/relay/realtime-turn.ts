/**
 * One caller's turn streamed to realtime speech-to-text (src/speech/stt-realtime.ts): a session opened
 * when the turn opens, the line's audio sent as it comes, the partial transcripts read as they arrive
 * (the turn's words so far, which the end of the turn is decided by and partial prompts carry), and at
 * the end one commit for the turn's transcript. A session that fails (it cannot open, its socket drops
 * or stalls, the commit is not answered) says so at `finish()`, and whether the turn may still go to
 * the batch API with its recorded audio (`canFallBackToBatch`): the caller's words are not lost to a
 * socket.
 */
import type { Logger } from 'pino';
import type { WireFormat } from '../audio/framer.js';
import {
  canFallBackToBatch,
  RealtimeSttError,
  type RealtimeSttClient,
  type RealtimeSttSession,
} from '../speech/stt-realtime.js';

export interface RealtimeTurnOptions {
  client: RealtimeSttClient;
  /** The format of what `send` is given (μ-law 8 kHz goes out as `ulaw_8000`, byte for byte). */
  format: WireFormat;
  languageCode: string | undefined;
  /** Ends the session (the call or guild went away). */
  signal: AbortSignal;
  log: Logger;
  /** The turn's words so far, each time they change. */
  onPartial: (text: string) => void;
}

export type RealtimeOutcome =
  | { readonly status: 'transcribed'; readonly text: string; readonly languageCode: string | undefined }
  /**
   * The session failed in a way batch may still transcribe the turn after (its socket, a deadline,
   * an unusable answer), or could not be opened for this turn (a format or language the realtime
   * service does not take): batch then.
   */
  | { readonly status: 'fallback'; readonly error: RealtimeSttError | Error }
  | { readonly status: 'failed'; readonly error: unknown };

export class RealtimeTurn {
  private readonly session: RealtimeSttSession | undefined;
  /** Why the session could not be opened (a format or language the service does not take). */
  private readonly openError: unknown;
  private words = '';
  private finishing: Promise<RealtimeOutcome> | undefined;

  constructor(private readonly options: RealtimeTurnOptions) {
    let session: RealtimeSttSession | undefined;
    let openError: unknown;
    try {
      session = options.client.open({
        format: options.format,
        languageCode: options.languageCode,
        signal: options.signal,
      });
    } catch (error) {
      openError = error;
    }
    this.session = session;
    this.openError = openError;
    if (session) void this.read(session);
  }

  /** The turn's words so far (the latest partial transcript); '' before any. */
  get text(): string {
    return this.words;
  }

  /** Whether the session is still taking audio (it has not failed or been closed). */
  get live(): boolean {
    const status = this.session?.status;
    return status === 'connecting' || status === 'open';
  }

  /** The line's audio, in order; dropped once the session has failed (the recorder keeps it for batch). */
  send(bytes: Uint8Array): void {
    if (this.finishing || !this.live) return;
    this.session!.sendAudio(bytes);
  }

  /**
   * The turn is over: its committed transcript, or why there is none. The session is closed either
   * way. Called once; later calls answer the same.
   */
  finish(): Promise<RealtimeOutcome> {
    this.finishing ??= this.commit();
    return this.finishing;
  }

  /** Drops the turn (the relay ended): the session closes, nothing is committed. */
  close(): void {
    void this.session?.close();
  }

  private async commit(): Promise<RealtimeOutcome> {
    const session = this.session;
    if (!session) {
      const error = this.openError;
      return error instanceof Error && !(error instanceof RealtimeSttError)
        ? { status: 'fallback', error }
        : this.outcomeOf(error);
    }
    try {
      const transcript = await session.commit();
      return {
        status: 'transcribed',
        text: transcript.text,
        languageCode: transcript.languageCode ?? undefined,
      };
    } catch (error) {
      return this.outcomeOf(session.error ?? error);
    } finally {
      void session.close();
    }
  }

  private outcomeOf(error: unknown): RealtimeOutcome {
    return canFallBackToBatch(error) ? { status: 'fallback', error } : { status: 'failed', error };
  }

  private async read(session: RealtimeSttSession): Promise<void> {
    try {
      for await (const event of session.events(this.options.signal)) {
        if (event.type !== 'partial' || this.finishing) continue;
        const text = event.text.trim();
        if (text === '' || text === this.words) continue;
        this.words = text;
        this.options.onPartial(text);
      }
    } catch {
      // The session failed or was aborted: `finish()` says how.
    }
  }
}
