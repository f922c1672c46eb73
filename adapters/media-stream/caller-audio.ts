/** The caller's side of a call: its audio as samples, and the detector that finds speech in it. */
import { decodeAlaw, decodeMulaw } from '../../src/audio/g711.js';
import { bytesToInt16 } from '../../src/audio/pcm.js';
import type { WireFormat } from '../../src/audio/framer.js';
import type { CallerSilence, SpeechTurn } from '../../src/barge-in/index.js';

/** A confirmed run of the caller's speech, on the inbound timeline (ms). */
export interface DetectedOnset {
  /** Where the run of speech that confirmed it began (barge-in's onset). */
  onsetMs: number;
  /** Where the caller's speech began, when the detector says (it may be earlier: detector.ts). */
  speechStartMs?: number;
  /** Where it was confirmed (the end of the window that decided), when the detector says. */
  detectedMs?: number;
}

/** Finds the start of speech in the caller's audio (the VAD). One per call. */
export interface OnsetDetector {
  /**
   * Feeds the caller's audio in order; resolves with the onset when speech is confirmed, once per run
   * of speech. A push may come before the earlier ones resolved: they are processed, and resolve, in
   * the order given.
   */
  push(
    samples: Int16Array,
    info: {
      timestampMs: number;
      botAudible: boolean;
      /**
       * The bot's audio as played for the same span, at `sampleRate` (echo-aware detection): about
       * `samples.length` × sampleRate ÷ the inbound rate samples; absent while the bot is quiet.
       */
      reference?: Int16Array | undefined;
      /** How far the reference moved within the span (samples at `sampleRate`; `EchoReference.read`). */
      referenceMoved?: number | undefined;
    },
  ): Promise<DetectedOnset | undefined>;
  reset(): void;
  /** The call is over (frees what the detector holds elsewhere, e.g. in a VAD worker). */
  close?(): void;
  /** The rate the detector works at, and wants its reference at; undefined: it takes no reference. */
  readonly referenceRate?: number | undefined;
}

/**
 * What the call asks of its detector besides onsets: the end of each of the caller's turns, and the
 * silence since they last spoke after each push (a relay that ends turns by their words reads it).
 */
export interface DetectorHooks {
  onTurnEnd?: ((turn: SpeechTurn) => void) | undefined;
  onSilence?: ((silence: CallerSilence) => void) | undefined;
}

/** The caller's audio as mono samples: a stereo stream (jambonz `mixType: stereo`) keeps channel 0, the caller. */
export function decodeCallerAudio(payload: Uint8Array, format: WireFormat): Int16Array {
  let samples: Int16Array;
  switch (format.encoding) {
    case 'mulaw':
      samples = decodeMulaw(payload);
      break;
    case 'alaw':
      samples = decodeAlaw(payload);
      break;
    case 's16le':
      samples = bytesToInt16(payload.length % 2 === 0 ? payload : payload.subarray(0, payload.length - 1));
      break;
  }
  if (format.channels === 1) return samples;
  const mono = new Int16Array(samples.length >> 1);
  for (let i = 0; i < mono.length; i++) mono[i] = samples[2 * i]!;
  return mono;
}
