/**
 * What the relay-turn tests share: a Twilio caller whose every inbound byte is kept (so what a
 * realtime speech-to-text received can be found in it, byte for byte), turns of the pause corpus said
 * on it at real time, and a fake realtime transcriber that writes the words of the turn being said as
 * far as the audio it has been sent reaches (each word once its sound has been sent whole), as a
 * realtime speech-to-text would.
 */
import { encodeMulaw } from '../../src/audio/g711.js';
import type { FakeRealtimeSegment } from '../../testkit/fake-realtime-stt.js';
import type { CorpusTurn } from '../../testkit/turn-corpus.js';
import { FakeTwilio } from './gateways/twilio.js';

/** μ-law bytes of one millisecond at 8 kHz. */
export const BYTES_PER_MS = 8;

/** Where `part` (its first 64 bytes) begins in `whole`, searching from `from`; -1 when it does not. */
export function locate(whole: Uint8Array, part: Uint8Array, from = 0): number {
  const probe = part.subarray(0, Math.min(64, part.length));
  if (probe.length === 0) return -1;
  outer: for (let i = from; i + probe.length <= whole.length; i++) {
    for (let k = 0; k < probe.length; k++) if (whole[i + k] !== probe[k]) continue outer;
    return i;
  }
  return -1;
}

/** A fake Twilio caller that keeps every byte it sends, and says turns at real time between silences. */
export class RecordingLine {
  readonly g: FakeTwilio;
  private readonly chunks: Uint8Array[] = [];
  private bytes = 0;

  constructor(url: string, parameters: Record<string, string>) {
    this.g = new FakeTwilio(url, { customParameters: parameters });
    const send = this.g.sendAudio.bind(this.g);
    this.g.sendAudio = (bytes: Uint8Array): void => {
      this.chunks.push(bytes.slice());
      this.bytes += bytes.length;
      send(bytes);
    };
  }

  /** Everything sent so far, in order. */
  get sent(): Uint8Array {
    const out = new Uint8Array(this.bytes);
    let at = 0;
    for (const c of this.chunks) {
      out.set(c, at);
      at += c.length;
    }
    return out;
  }

  /** Bytes sent so far: where the next turn begins in `sent`. */
  get sentBytes(): number {
    return this.bytes;
  }

  async start(): Promise<void> {
    await this.g.start();
    this.g.startCallerAudio();
  }

  /** Says `turn` at real time (its line noise around it), then goes on with silence. Resolves when sent. */
  async say(turn: CorpusTurn): Promise<SaidTurn> {
    this.g.stopCallerAudio();
    const at = this.bytes;
    await this.g.sendLive(encodeMulaw(turn.samples));
    this.g.startCallerAudio();
    return { turn, at };
  }

  async close(): Promise<void> {
    this.g.stopCallerAudio();
    await this.g.close();
  }
}

/** A turn said on a line, and where it began in the line's bytes. */
export interface SaidTurn {
  readonly turn: CorpusTurn;
  readonly at: number;
}

/** Where `ms` of the turn's own timeline falls in the line's bytes. */
export const byteOf = (said: SaidTurn, ms: number): number => said.at + Math.round(ms * BYTES_PER_MS);

/**
 * A fake realtime transcriber's script for the turns said on `line`: a segment's text is the words of
 * the turn it was sent whose sound it holds whole (the whole turn's words at the commit), written as
 * the corpus writes them (punctuation where the writer put it).
 */
export function heardWords(
  line: RecordingLine,
  turns: () => readonly SaidTurn[],
): (s: FakeRealtimeSegment) => string {
  const starts = new Map<number, number>();
  return (segment) => {
    const sent = line.sent;
    let start = starts.get(segment.sessionIndex);
    if (start === undefined) {
      start = locate(sent, segment.audio);
      if (start < 0) return '';
      starts.set(segment.sessionIndex, start);
    }
    const reached = start + segment.audio.length;
    const words: string[] = [];
    for (const said of turns())
      for (const w of said.turn.words)
        if (byteOf(said, w.startMs) >= start && byteOf(said, w.endMs) <= reached) words.push(w.text);
    return words.join(' ');
  };
}
