import { Framer, type WireFormat } from '../audio/framer.js';
import { PcmAligner } from '../audio/pcm.js';
import { Resampler } from '../audio/resampler.js';

/**
 * Bytes of the service's PCM (s16le mono, `inputRate`) in, the sink's frames out: alignment, resampling
 * (and mono → stereo), framing and encoding, each stateful and independent of how the bytes were chunked.
 */
export class FramePipeline {
  private readonly aligner = new PcmAligner();
  private readonly resampler: Resampler | undefined;
  private readonly framer: Framer;

  constructor(inputRate: number, format: WireFormat, frameMs: number) {
    this.resampler =
      format.sampleRate === inputRate && format.channels === 1
        ? undefined
        : new Resampler({ inputRate, outputRate: format.sampleRate, outputChannels: format.channels });
    this.framer = new Framer(format, frameMs);
  }

  /** Frames completed by `chunk`. */
  push(chunk: Uint8Array): Uint8Array[] {
    const samples = this.aligner.push(chunk);
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
