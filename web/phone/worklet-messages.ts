/** What the page and its audio worklet (`worklet.ts`) say to each other over the node's port. */

/** 20 ms at the page's 8 kHz audio context: one Twilio media message. */
export const FRAME_SAMPLES = 160;
export const SAMPLE_RATE = 8000;

export type ToWorklet =
  /** Audio from voxbridge, to play after what is queued. */
  | { type: 'play'; samples: Float32Array }
  /** A mark: echoed back once everything queued before it has played. */
  | { type: 'mark'; name: string }
  /** Drop what is queued (a barge-in); every pending mark is echoed back. */
  | { type: 'clear' };

export type FromWorklet =
  /** Every 20 ms: the microphone's samples, and both directions' levels in dBFS. */
  | { type: 'frame'; mic: Int16Array; micDb: number; outDb: number }
  | { type: 'marked'; name: string }
  | { type: 'cleared'; droppedMs: number };
