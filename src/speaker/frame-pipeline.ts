import { Framer, type WireFormat } from '../audio/framer.js';
import { bytesToInt16 } from '../audio/pcm.js';
import { Resampler } from '../audio/resampler.js';

/**
 * Bytes of the service's PCM (s16le mono, `inputRate`) in, the sink's frames out: resampling (and
 * mono → stereo), framing and encoding, each stateful and independent of how the samples were chunked.
 *
 * Chunks hold whole samples: the speech client aligns the body (`HttpSpeechStream`), and the phrase cache
 * replays those same chunks. A chunk may start at an odd byte offset (a slice of Node's buffer pool); it
 * is copied then, never misread.
 */
export class FramePipeline {
  private readonly resampler: Resampler | undefined;
  private readonly framer: Framer;

  constructor(inputRate: number, format: WireFormat, frameMs: number) {
    this.resampler =
      format.sampleRate === inputRate && format.channels === 1
        ? undefined
        : new Resampler({ inputRate, outputRate: format.sampleRate, outputChannels: format.channels });
    this.framer = new Framer(format, frameMs);
  }

  /** Frames completed by `chunk` (an even number of bytes; a RangeError otherwise). */
  push(chunk: Uint8Array): Uint8Array[] {
    const samples = bytesToInt16(chunk);
    return this.framer.push(this.resampler ? this.resampler.push(samples) : samples);
  }

  /**
   * The end of the utterance: the resampler's look-ahead, then the last partial frame padded with
   * silence (never dropped). Segments of one utterance run through without a flush, as one signal.
   */
  finish(): Uint8Array[] {
    const tail = this.resampler ? this.framer.push(this.resampler.flush()) : [];
    return [...tail, ...this.framer.flush()];
  }
}
