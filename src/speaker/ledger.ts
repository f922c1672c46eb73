/**
 * Which text each frame of an utterance carries, so an interruption can say what the listener heard.
 * The service gives no word timings, so within a segment text is spread over its frames in proportion,
 * and the heard text is cut back to the last whole word.
 */
interface SegmentSpan {
  readonly start: number;
  readonly end: number;
  readonly firstFrame: number;
  /** Frames of this segment so far; final once the segment's audio has ended. */
  frames: number;
}

export class TextLedger {
  private readonly spans: SegmentSpan[] = [];
  private totalFrames = 0;

  /** A segment's audio begins; `start`/`end` are its offsets in the utterance's text. */
  beginSegment(start: number, end: number): void {
    this.spans.push({ start, end, firstFrame: this.totalFrames, frames: 0 });
  }

  /** One more frame of the current segment. */
  addFrame(): void {
    const span = this.spans.at(-1);
    if (span) span.frames++;
    this.totalFrames++;
  }

  get frames(): number {
    return this.totalFrames;
  }

  /** Offset into the text up to which `framesHeard` frames carried the speech, cut at a word boundary. */
  heardOffset(framesHeard: number, text: string): number {
    if (framesHeard <= 0) return 0;
    let offset = 0;
    for (const span of this.spans) {
      if (framesHeard >= span.firstFrame + span.frames) {
        offset = span.end;
        continue;
      }
      const into = framesHeard - span.firstFrame;
      if (into <= 0 || span.frames === 0) break;
      const estimate = span.start + Math.floor(((span.end - span.start) * into) / span.frames);
      const cut = text.lastIndexOf(' ', estimate);
      offset = Math.max(offset, cut > span.start ? cut : offset);
      break;
    }
    return offset;
  }
}
