/**
 * The page's audio thread: plays what voxbridge sends (a queue with Twilio's mark semantics) and cuts
 * the microphone into 20 ms frames, measuring the level of both. Runs in an AudioWorkletGlobalScope at
 * the context's 8 kHz, so no resampling happens here: the browser converts to and from the devices.
 */
import { FRAME_SAMPLES, type FromWorklet, type ToWorklet } from './worklet-messages.js';

// The AudioWorkletGlobalScope's names, which the DOM library does not declare.
declare abstract class AudioWorkletProcessor {
  readonly port: MessagePort;
}
declare function registerProcessor(
  name: string,
  processor: new () => AudioWorkletProcessor & {
    process(inputs: Float32Array[][], outputs: Float32Array[][]): boolean;
  },
): void;

const SILENT_DB = -100;

function dbfs(sumOfSquares: number, n: number): number {
  return sumOfSquares > 0 ? Math.max(SILENT_DB, 10 * Math.log10(sumOfSquares / n)) : SILENT_DB;
}

class PhoneIo extends AudioWorkletProcessor {
  /** Queued audio: chunks, and how far into the first one playback is. */
  private queue: Float32Array[] = [];
  private offset = 0;
  /** Samples ever queued, and ever played or dropped: the positions marks refer to. */
  private written = 0;
  private consumed = 0;
  private marks: Array<{ name: string; at: number }> = [];
  private readonly mic = new Int16Array(FRAME_SAMPLES);
  private filled = 0;
  private micEnergy = 0;
  private outEnergy = 0;

  constructor() {
    super();
    this.port.onmessage = (e: MessageEvent<ToWorklet>) => this.receive(e.data);
  }

  private post(message: FromWorklet, transfer: Transferable[] = []): void {
    this.port.postMessage(message, transfer);
  }

  private receive(message: ToWorklet): void {
    switch (message.type) {
      case 'play':
        this.queue.push(message.samples);
        this.written += message.samples.length;
        return;
      case 'mark':
        this.marks.push({ name: message.name, at: this.written });
        this.echoPlayedMarks();
        return;
      case 'clear': {
        const dropped = this.written - this.consumed;
        this.queue = [];
        this.offset = 0;
        this.consumed = this.written;
        this.echoPlayedMarks();
        this.post({ type: 'cleared', droppedMs: (dropped / FRAME_SAMPLES) * 20 });
        return;
      }
    }
  }

  private echoPlayedMarks(): void {
    while (this.marks.length > 0 && this.marks[0]!.at <= this.consumed)
      this.post({ type: 'marked', name: this.marks.shift()!.name });
  }

  process(inputs: Float32Array[][], outputs: Float32Array[][]): boolean {
    const out = outputs[0]?.[0];
    const input = inputs[0]?.[0];
    const n = out?.length ?? input?.length ?? 128;
    for (let i = 0; i < n; i++) {
      let sample = 0;
      const chunk = this.queue[0];
      if (chunk) {
        sample = chunk[this.offset++]!;
        this.consumed++;
        if (this.offset >= chunk.length) {
          this.queue.shift();
          this.offset = 0;
        }
      }
      if (out) out[i] = sample;
      this.outEnergy += sample * sample;
      const m = input ? input[i]! : 0;
      this.micEnergy += m * m;
      this.mic[this.filled++] = Math.max(-32768, Math.min(32767, Math.round(m * 32768)));
      if (this.filled === FRAME_SAMPLES) {
        const mic = this.mic.slice();
        this.post(
          {
            type: 'frame',
            mic,
            micDb: dbfs(this.micEnergy, FRAME_SAMPLES),
            outDb: dbfs(this.outEnergy, FRAME_SAMPLES),
          },
          [mic.buffer],
        );
        this.filled = 0;
        this.micEnergy = 0;
        this.outEnergy = 0;
      }
    }
    // The other output channels (a stereo destination) get the same.
    for (const channel of outputs[0]?.slice(1) ?? []) if (out) channel.set(out);
    this.echoPlayedMarks();
    return true;
  }
}

registerProcessor('voxbridge-phone-io', PhoneIo);
