import { Framer, type WireFormat } from '../audio/framer.js';
import { bytesToInt16, concatInt16 } from '../audio/pcm.js';
import { Resampler } from '../audio/resampler.js';

/**
 * Bytes of the service's PCM (s16le mono, `inputRate`) in, the sink's frames out: resampling (and
 * mono → stereo), framing and encoding, each stateful and independent of how the samples were chunked.
 *
 * Chunks hold whole samples: the speech client aligns the body (`HttpSpeechStream`), and the phrase cache
 * replays those same chunks. A chunk may start at an odd byte offset (a slice of Node's buffer pool); it
 * is copied then, never misread.
 *
 * Each segment (one response) is resampled on its own, from silence before its start to silence after
 * its end (`endSegment`), while the framer runs through the whole utterance: frames straddle the joins,
 * and nothing is lost or added there. So a segment's resampled audio depends on that segment alone, and
 * the phrase cache can keep it at the sink's rate (a rendition) and play it again with no resampling
 * (`pushRendered`).
 */
export class FramePipeline {
  private readonly resampler: Resampler | undefined;
  private readonly framer: Framer;
  /**
   * The resampled audio's rate and channels (as `PhraseCache` renditions are keyed), when it is smaller
   * than the service's audio (a phone's 8 or 16 kHz). Undefined when the sink takes the service's audio
   * as it is, or more of it (Discord's 48 kHz stereo, four times the bytes for a cheap half-band
   * filter): nothing is recorded then.
   */
  readonly renditionFormat: string | undefined;
  /** The current segment's resampled audio, kept (`recordSegment`) while within `recordLimit` bytes. */
  private recorded: Int16Array[] | undefined;
  private recordedBytes = 0;
  private recordLimit = 0;
  private rendition: Int16Array | undefined;

  constructor(inputRate: number, format: WireFormat, frameMs: number) {
    this.resampler =
      format.sampleRate === inputRate && format.channels === 1
        ? undefined
        : new Resampler({ inputRate, outputRate: format.sampleRate, outputChannels: format.channels });
    this.renditionFormat =
      this.resampler && format.sampleRate * format.channels <= inputRate
        ? `${format.sampleRate}/${format.channels}`
        : undefined;
    this.framer = new Framer(format, frameMs);
  }

  /**
   * Keeps the resampled audio of the segment about to be pushed, for `takeRendition` after its end;
   * gives up on a segment whose rendition outgrows `maxBytes`. Nothing is kept when nothing is resampled.
   */
  recordSegment(maxBytes: number): void {
    this.recorded = this.renditionFormat ? [] : undefined;
    this.recordedBytes = 0;
    this.recordLimit = maxBytes;
  }

  /** Frames completed by `chunk` (an even number of bytes; a RangeError otherwise). */
  push(chunk: Uint8Array): Uint8Array[] {
    const samples = bytesToInt16(chunk);
    return this.framer.push(this.resampler ? this.record(this.resampler.push(samples)) : samples);
  }

  /** The segment's end: the resampler's look-ahead, computed with silence after it, into the frames. */
  endSegment(): Uint8Array[] {
    if (!this.resampler) return [];
    const tail = this.record(this.resampler.flush());
    if (this.recorded) this.rendition = concatInt16(this.recorded);
    this.recorded = undefined;
    return this.framer.push(tail);
  }

  /** The last segment's resampled audio, if it was recorded whole (`recordSegment`); once. */
  takeRendition(): Int16Array | undefined {
    const rendition = this.rendition;
    this.rendition = undefined;
    return rendition;
  }

  /**
   * A segment already at the sink's rate and channels (a rendition, or a piece of one), after a segment
   * that ended (`endSegment`): framed as it is.
   */
  pushRendered(samples: Int16Array): Uint8Array[] {
    return this.framer.push(samples);
  }

  /** The end of the utterance: the last partial frame padded with silence (never dropped). */
  finish(): Uint8Array[] {
    return [...this.endSegment(), ...this.framer.flush()];
  }

  private record(samples: Int16Array): Int16Array {
    if (this.recorded) {
      this.recordedBytes += samples.byteLength;
      if (this.recordedBytes > this.recordLimit) this.recorded = undefined;
      else this.recorded.push(samples);
    }
    return samples;
  }
}
