/**
 * A speaker in your own bot: implement `AudioSink` for your transport, hand the speaker text, and
 * interrupt it when the listener talks. Run it against `npm start` (or any ElevenLabs-compatible
 * service):
 *
 *   SPEECH_API_KEY=… node dist/examples/speaker-in-your-bot.js out.raw
 *
 * It writes s16le 48 kHz stereo to out.raw (`ffplay -f s16le -ar 48000 -ac 2 out.raw` plays it).
 * In your code, import from 'voxbridge' instead of '../src/index.js'.
 */
import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import type { Writable } from 'node:stream';
import {
  PlayoutClock,
  Speaker,
  SpeechClient,
  systemClock,
  type AudioSink,
  type SinkFrame,
  type WireFormat,
} from '../src/index.js';

/** Your transport. This one writes to a stream and plays out at real time on a local clock. */
class StreamSink implements AudioSink {
  readonly format: WireFormat = { encoding: 's16le', sampleRate: 48_000, channels: 2 };
  readonly frameMs = 20;
  /** Keep 200 ms ahead of real time, as a phone gateway's jitter buffer would. */
  readonly leadMs = 200;
  readonly selfPaced = false;
  private readonly playout = new PlayoutClock(systemClock);

  constructor(private readonly out: Writable) {}

  async write(frame: SinkFrame): Promise<void> {
    if (!this.out.write(frame.payload)) await once(this.out, 'drain'); // backpressure
    this.playout.onWrite(this.frameMs);
  }
  clear(): void {
    this.playout.onClear(); // a real transport also tells the far end to drop its buffer
  }
  writtenMs(): number {
    return this.playout.writtenMs();
  }
  playedMs(): number {
    return this.playout.playedMs();
  }
  whenPlayed(positionMs: number, signal?: AbortSignal): Promise<void> {
    return this.playout.whenPlayed(positionMs, signal);
  }
}

const client = new SpeechClient({
  baseUrl: process.env.SPEECH_BASE_URL ?? 'http://127.0.0.1:8080',
  apiKey: process.env.SPEECH_API_KEY ?? '',
});
const out = createWriteStream(process.argv[2] ?? 'out.raw');
const speaker = new Speaker({ source: client, sink: new StreamSink(out), voiceId: 'voxbridge-default' });

const greeting = await speaker.say('Hello! I start speaking as soon as the first audio arrives.').result;
console.log(greeting.status, greeting.playedMs, 'ms:', greeting.heardText);
if (greeting.status === 'failed') throw greeting.error; // e.g. a SpeechServiceError with its code

const reply = speaker.say('This answer is long, and the listener will talk over it before it ends.');
setTimeout(() => speaker.interrupt(), 1500); // barge-in: the listener started talking
const cut = await reply.result;
console.log(cut.status, cut.playedMs, 'ms:', cut.heardText);

await speaker.close();
await client.close();
out.end();
