/**
 * Which text each stretch of an utterance's audio carries, so an interruption can say exactly what
 * the listener heard. A segment whose response carried character timings (`/with-timestamps`) is cut
 * at the last character whose audio had ended when playout stopped; one without them is estimated:
 * its text spread over its audio in proportion, cut back to the last whole word.
 *
 * Positions are milliseconds of the utterance's 24 kHz audio, the timeline of the playout clock.
 */
import type { CharacterAlignment } from '../speech/alignment.js';

interface SegmentSpan {
  /** Offsets of the segment in the utterance's text. */
  readonly start: number;
  readonly end: number;
  readonly text: string;
  /** Where the segment's audio begins on the utterance's audio timeline (ms). */
  readonly startMs: number;
  /** Its audio so far; final once the next segment begins. */
  ms: number;
  /** The service's character timings, or (later) those of a forced alignment of its audio. */
  alignment: CharacterAlignment | undefined;
}

export interface LedgerSegment {
  readonly start: number;
  readonly end: number;
  readonly text: string;
}

export class TextLedger {
  private readonly spans: SegmentSpan[] = [];
  private audioMs = 0;

  /**
   * A segment's audio begins, with its character timings when the service sent them; returns its index
   * (for `align`).
   */
  beginSegment(segment: LedgerSegment, alignment?: CharacterAlignment): number {
    const { start, end, text } = segment;
    this.spans.push({ start, end, text, startMs: this.audioMs, ms: 0, alignment });
    return this.spans.length - 1;
  }

  /**
   * Character timings found for segment `index` after its audio came (a forced alignment): from now on
   * it is cut by them rather than estimated. Timings the service sent are kept.
   */
  align(index: number, alignment: CharacterAlignment): void {
    const span = this.spans[index];
    if (span && span.alignment === undefined) span.alignment = alignment;
  }

  /** More audio of the current segment (ms). */
  addAudio(ms: number): void {
    const span = this.spans.at(-1);
    if (span) span.ms += ms;
    this.audioMs += ms;
  }

  /** The utterance's audio so far (ms). */
  get totalMs(): number {
    return this.audioMs;
  }

  /** Whether any segment so far had character timings. */
  get aligned(): boolean {
    return this.spans.some((s) => s.alignment !== undefined);
  }

  /** Offset into the text up to which the listener heard it, `playedMs` into the utterance's audio. */
  heardOffset(playedMs: number, text: string): number {
    if (playedMs <= 0) return 0;
    let offset = 0;
    for (const span of this.spans) {
      if (playedMs >= span.startMs + span.ms) {
        offset = span.end;
        continue;
      }
      const into = playedMs - span.startMs;
      if (into <= 0) break;
      if (span.alignment) return span.start + alignedLength(span, into);
      if (span.ms === 0) break;
      const estimate = span.start + Math.floor(((span.end - span.start) * into) / span.ms);
      const cut = text.lastIndexOf(' ', estimate);
      offset = Math.max(offset, cut > span.start ? cut : offset);
      break;
    }
    return offset;
  }
}

/**
 * UTF-16 length of the segment's text up to the last character whose audio ended by `intoMs`. The
 * timings count code points (as the service does), JavaScript strings count UTF-16 units.
 */
function alignedLength(span: SegmentSpan, intoMs: number): number {
  const { endMs } = span.alignment!;
  let heard = 0;
  while (heard < endMs.length && endMs[heard]! <= intoMs) heard++;
  let length = 0;
  for (let i = 0; i < heard && length < span.text.length; i++)
    length += span.text.codePointAt(length)! > 0xffff ? 2 : 1;
  return Math.min(length, span.end - span.start);
}
