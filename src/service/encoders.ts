import { createMp3Encoder } from 'wasm-media-encoders';
import { int16ToBytes } from '../audio/pcm.js';
import { wavHeader } from '../audio/wav.js';
import type { OutputFormat } from '../speech/formats.js';
import { OUTPUT_SAMPLE_RATE } from './engine/engine.js';

/** Turns the engine's 24 kHz mono samples into one output format's bytes, chunk by chunk. */
export interface AudioEncoder {
  /** Bytes that precede any audio (a streamed WAV's header), if the format has them. */
  readonly preamble: Uint8Array | undefined;
  push(samples: Int16Array): Uint8Array;
  end(): Uint8Array;
}

const EMPTY = new Uint8Array(0);
const INT16_SCALE = 1 / 32768;
const MP3_BITRATE_KBPS = 192;
const MP3_SAMPLE_RATE = 44_100;

class PcmEncoder implements AudioEncoder {
  constructor(readonly preamble: Uint8Array | undefined) {}
  push(samples: Int16Array): Uint8Array {
    return int16ToBytes(samples);
  }
  end(): Uint8Array {
    return EMPTY;
  }
}

/** LAME (WASM) at 192 kbps CBR, resampling 24 → 44.1 kHz internally. */
class Mp3Encoder implements AudioEncoder {
  readonly preamble = undefined;
  private floats = new Float32Array(4096);
  constructor(private readonly lame: Awaited<ReturnType<typeof createMp3Encoder>>) {
    lame.configure({
      sampleRate: OUTPUT_SAMPLE_RATE,
      channels: 1,
      bitrate: MP3_BITRATE_KBPS,
      outputSampleRate: MP3_SAMPLE_RATE,
    });
  }
  push(samples: Int16Array): Uint8Array {
    if (this.floats.length < samples.length) this.floats = new Float32Array(samples.length);
    const f = this.floats.subarray(0, samples.length);
    for (let i = 0; i < samples.length; i++) f[i] = samples[i]! * INT16_SCALE;
    // The encoder returns a view into its own memory, reused by the next call: copy it out.
    return this.lame.encode([f]).slice();
  }
  end(): Uint8Array {
    return this.lame.finalize().slice();
  }
}

/**
 * `streamed`: a WAV whose length is not known yet gets placeholder sizes (docs/speech-service.md). A
 * whole-body WAV is framed by the caller, who knows the length.
 */
export async function createEncoder(format: OutputFormat, streamed: boolean): Promise<AudioEncoder> {
  switch (format) {
    case 'pcm_24000':
      return new PcmEncoder(undefined);
    case 'wav_24000':
      return new PcmEncoder(streamed ? streamedWavHeader() : undefined);
    case 'mp3_44100_192':
      return new Mp3Encoder(await createMp3Encoder());
  }
}

/** The header of a whole-body WAV of `dataBytes` bytes of 24 kHz mono s16le. */
export function wholeWavHeader(dataBytes: number): Uint8Array {
  return wavHeader({ sampleRate: OUTPUT_SAMPLE_RATE, channels: 1, bitsPerSample: 16, dataBytes });
}

/** The header of a WAV whose length is not known yet: placeholder sizes (docs/speech-service.md). */
export function streamedWavHeader(): Uint8Array {
  return wavHeader({ sampleRate: OUTPUT_SAMPLE_RATE, channels: 1, bitsPerSample: 16 });
}
