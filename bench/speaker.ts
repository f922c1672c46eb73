/**
 * The speaker's audio path against what users pick instead (ffmpeg per utterance, sox), its added
 * latency, barge-in timing and memory: the figures of the speaker issue's benchmark.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { WireFormat } from '../src/audio/framer.js';
import { designResampler, Resampler } from '../src/audio/resampler.js';
import { startApp } from '../src/app/app.js';
import { loadConfig } from '../src/app/config.js';
import { createLogger } from '../src/app/logger.js';
import { systemClock } from '../src/speaker/clock.js';
import { FramePipeline } from '../src/speaker/frame-pipeline.js';
import { PlayoutClock } from '../src/speaker/playout-clock.js';
import type { SpeechAudio, SpeechSource } from '../src/speaker/segment-audio.js';
import type { AudioSink, SinkFrame } from '../src/speaker/sink.js';
import { Speaker } from '../src/speaker/speaker.js';
import { BUILT_IN_VOICE_ID } from '../src/service/voices/builtin.js';
import { SpeechClient } from '../src/speech/client.js';
import {
  ffmpegArgs,
  measureProcess,
  measureRuns,
  soxArgs,
  soxReference8kArgs,
  type Target,
} from './baselines.js';
import { cpuUs, fmt, median, percentile, printTable } from './stats.js';

const KEY = 'bench-key-0123456789abcdef';
const FORMATS: Record<Target, WireFormat> = {
  mulaw8k: { encoding: 'mulaw', sampleRate: 8000, channels: 1 },
  stereo48k: { encoding: 's16le', sampleRate: 48_000, channels: 2 },
};
const BYTES_PER_SECOND_24K = 48_000;
const CHUNK_BYTES = 4800; // 100 ms, the size the local service streams in

function gc(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

function runPipeline(pcm: Uint8Array, format: WireFormat): number {
  const p = new FramePipeline(24_000, format, 20);
  let frames = 0;
  for (let o = 0; o < pcm.length; o += CHUNK_BYTES) frames += p.push(pcm.subarray(o, o + CHUNK_BYTES)).length;
  return frames + p.finish().length;
}

/** A sink that takes frames at once and plays them on a local clock; records arrival times. */
export class TimingSink implements AudioSink {
  readonly frameMs = 20;
  readonly arrivals: number[] = [];
  readonly clears: number[] = [];
  private readonly playout = new PlayoutClock(systemClock);
  constructor(
    readonly format: WireFormat,
    readonly leadMs: number,
    readonly selfPaced: boolean,
  ) {}
  async write(_frame: SinkFrame): Promise<void> {
    this.arrivals.push(performance.now());
    this.playout.onWrite(this.frameMs);
  }
  clear(): void {
    this.clears.push(performance.now());
    this.playout.onClear();
  }
  writtenMs(): number {
    return this.playout.writtenMs();
  }
  playedMs(): number {
    return this.selfPaced ? this.playout.writtenMs() : this.playout.playedMs();
  }
  whenPlayed(positionMs: number, signal?: AbortSignal): Promise<void> {
    return this.selfPaced ? Promise.resolve() : this.playout.whenPlayed(positionMs, signal);
  }
}

/** A speech source replaying PCM from memory in uneven chunks, noting when each one was handed over. */
function memorySource(pcm: Uint8Array, handedAt: Array<{ at: number; endByte: number }>): SpeechSource {
  return {
    async stream(): Promise<SpeechAudio> {
      async function* chunks(): AsyncGenerator<Uint8Array> {
        let o = 0;
        let seed = 7;
        while (o < pcm.length) {
          seed = (seed * 1103515245 + 12345) & 0x7fffffff;
          // Uneven sizes, whole samples each: the speech client aligns the body before the speaker.
          const size = (301 + (seed % 4500)) & ~1;
          const chunk = pcm.subarray(o, Math.min(pcm.length, o + size));
          o += chunk.length;
          await new Promise((r) => setImmediate(r));
          handedAt.push({ at: performance.now(), endByte: o });
          yield chunk;
        }
      }
      const it = chunks();
      return {
        cancel: () => void it.return(undefined),
        [Symbol.asyncIterator]: () => it,
      };
    },
  };
}

/** Upper edge of the band the in-band SNR compares: below both filters' transition bands. */
const IN_BAND_HZ = 3200;

function snrDb(reference: Int16Array, test: Int16Array): number {
  const n = Math.min(reference.length, test.length);
  let signal = 0;
  let noise = 0;
  for (let i = 0; i < n; i++) {
    const d = test[i]! - reference[i]!;
    signal += reference[i]! * reference[i]!;
    noise += d * d;
  }
  return 10 * Math.log10(signal / noise);
}

/** A 201-tap Blackman-windowed sinc lowpass at IN_BAND_HZ (independent of the resampler under test). */
function lowpass(x: Int16Array, sampleRate: number): Int16Array {
  const taps = 201;
  const centre = (taps - 1) / 2;
  const fc = IN_BAND_HZ / sampleRate;
  const h = new Float64Array(taps);
  for (let k = 0; k < taps; k++) {
    const m = k - centre;
    const w =
      0.42 - 0.5 * Math.cos((2 * Math.PI * k) / (taps - 1)) + 0.08 * Math.cos((4 * Math.PI * k) / (taps - 1));
    h[k] = (m === 0 ? 2 * fc : Math.sin(2 * Math.PI * fc * m) / (Math.PI * m)) * w;
  }
  const y = new Int16Array(x.length);
  for (let i = centre; i < x.length - centre; i++) {
    let a = 0;
    for (let k = 0; k < taps; k++) a += h[k]! * x[i + k - centre]!;
    y[i] = Math.round(a);
  }
  return y;
}

/**
 * Worst level, relative to the input tone, of what a tone above 4.6 kHz leaves in the 8 kHz output:
 * every such tone lies above the output's Nyquist frequency, so whatever comes out is its alias.
 */
function stopbandRejectionDb(): number {
  const amplitude = 30_000;
  let worst = -Infinity;
  for (let f = 4600; f <= 11_900; f += 50) {
    const input = new Int16Array(24_000 / 4);
    for (let n = 0; n < input.length; n++)
      input[n] = Math.round(amplitude * Math.sin((2 * Math.PI * f * n) / 24_000));
    const out = new Resampler({ inputRate: 24_000, outputRate: 8000 }).push(input);
    let energy = 0;
    const edge = 100;
    for (let n = edge; n < out.length - edge; n++) energy += out[n]! * out[n]!;
    const rms = Math.sqrt(energy / (out.length - 2 * edge));
    worst = Math.max(worst, 20 * Math.log10(Math.max(rms, 1e-9) / (amplitude / Math.SQRT2)));
  }
  return -worst;
}

export async function benchSpeaker(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'voxbridge-bench-speaker-'));
  const app = await startApp(
    loadConfig({ PORT: '0', DATA_DIR: dir, LOG_LEVEL: 'silent', SPEECH_API_KEY: KEY }),
    {
      logger: createLogger('silent'),
    },
  );
  try {
    // 60 s of speech from the local service.
    const text = Array.from(
      { length: 60 },
      (_, i) => `This is sentence ${i + 1} of the benchmark reading, spoken at an even pace.`,
    ).join(' ');
    const whole = (
      await app.client.synthesize({ voiceId: BUILT_IN_VOICE_ID, text, outputFormat: 'pcm_24000' })
    ).audio;
    const sixty = new Uint8Array(
      whole.buffer,
      whole.byteOffset,
      Math.min(whole.length, 60 * BYTES_PER_SECOND_24K),
    );
    const three = sixty.subarray(0, 3 * BYTES_PER_SECOND_24K);
    const tenMinutes = new Uint8Array(sixty.length * 10);
    for (let i = 0; i < 10; i++) tenMinutes.set(sixty, i * sixty.length);
    const sixtySeconds = sixty.length / BYTES_PER_SECOND_24K;

    // 1. Cost: ours vs ffmpeg per utterance vs sox.
    const rows: string[][] = [];
    for (const target of ['mulaw8k', 'stereo48k'] as const) {
      const format = FORMATS[target];
      for (let i = 0; i < 3; i++) runPipeline(sixty, format); // warm
      const longRuns: number[] = [];
      for (let i = 0; i < 5; i++) {
        const c0 = cpuUs() / 1000;
        for (let r = 0; r < 4; r++) runPipeline(sixty, format);
        longRuns.push(((cpuUs() / 1000 - c0) / 1000) * (3600 / (4 * sixtySeconds)));
      }
      const c0 = cpuUs() / 1000;
      const utterances = 200;
      for (let i = 0; i < utterances; i++) runPipeline(three, format);
      const oursPerUtteranceMs = (cpuUs() / 1000 - c0) / utterances;
      gc();
      const h0 = process.memoryUsage().heapUsed;
      const keep: FramePipeline[] = [];
      for (let i = 0; i < 1000; i++) keep.push(new FramePipeline(24_000, format, 20));
      gc();
      const oursMemKb = (process.memoryUsage().heapUsed - h0) / 1000 / 1024;
      keep.length = 0;

      const ff3: number[] = [];
      const ffRss: number[] = [];
      for (let i = 0; i < 5; i++) {
        const r = await measureRuns('ffmpeg', ffmpegArgs(target), three, 10);
        ff3.push(r.cpuMs);
        ffRss.push(r.maxRssMb);
      }
      const ffLong = await measureProcess('ffmpeg', ffmpegArgs(target), tenMinutes);
      const sox3: number[] = [];
      const soxRss: number[] = [];
      for (let i = 0; i < 5; i++) {
        const r = await measureRuns('sox', soxArgs(target), three, 10);
        sox3.push(r.cpuMs);
        soxRss.push(r.maxRssMb);
      }
      const soxLong = await measureProcess('sox', soxArgs(target), tenMinutes);
      const perHour = (ms: number): number => (ms / 1000) * (3600 / (10 * sixtySeconds));
      const ours = median(longRuns);
      rows.push([
        target,
        'voxbridge (TypeScript)',
        fmt(ours, 2),
        fmt(oursPerUtteranceMs, 2),
        fmt(oursMemKb, 1) + ' KB',
        '1x / 1x',
      ]);
      rows.push([
        '',
        'ffmpeg per utterance',
        fmt(perHour(ffLong.cpuMs), 2),
        fmt(median(ff3), 1),
        fmt(median(ffRss), 1) + ' MB',
        `${fmt(median(ff3) / oursPerUtteranceMs, 0)}x CPU / ${fmt((median(ffRss) * 1024) / oursMemKb, 0)}x mem`,
      ]);
      rows.push([
        '',
        'sox',
        fmt(perHour(soxLong.cpuMs), 2),
        fmt(median(sox3), 1),
        fmt(median(soxRss), 1) + ' MB',
        `${fmt(median(sox3) / oursPerUtteranceMs, 0)}x CPU / ${fmt((median(soxRss) * 1024) / oursMemKb, 0)}x mem`,
      ]);
    }
    printTable(
      '24 kHz speech → sink frames: CPU and memory (ours in-process; baselines as processes, GNU time)',
      [
        'path',
        'tool',
        'CPU-s per hour (long input)',
        'CPU ms per 3 s utterance',
        'memory per stream',
        'baseline ÷ ours (3 s)',
      ],
      rows,
    );

    // 2. Quality against sox's very-high-quality resampler.
    const reference = await measureProcess('sox', soxReference8kArgs(), sixty);
    const oursFrames: Uint8Array[] = [];
    const p8 = new FramePipeline(24_000, { encoding: 's16le', sampleRate: 8000, channels: 1 }, 20);
    for (let o = 0; o < sixty.length; o += CHUNK_BYTES)
      oursFrames.push(...p8.push(sixty.subarray(o, o + CHUNK_BYTES)));
    oursFrames.push(...p8.finish());
    const ours8 = Buffer.concat(oursFrames);
    const refSamples = new Int16Array(reference.output.length >> 1);
    for (let i = 0; i < refSamples.length; i++) refSamples[i] = reference.output.readInt16LE(i * 2);
    const oursSamples = new Int16Array(ours8.length >> 1);
    for (let i = 0; i < oursSamples.length; i++) oursSamples[i] = ours8.readInt16LE(i * 2);
    const design = designResampler(24_000, 8000);
    console.log(
      `\n## Quality, 24 → 8 kHz on ${fmt(sixtySeconds, 0)} s of speech, against sox 'rate -v'\n` +
        `SNR, whole band: ${fmt(snrDb(refSamples, oursSamples), 1)} dB (sox keeps 3.4–3.8 kHz, which our telephone-band filter rolls off)\n` +
        `SNR below ${IN_BAND_HZ} Hz: ${fmt(snrDb(lowpass(refSamples, 8000), lowpass(oursSamples, 8000)), 1)} dB\n` +
        `stopband rejection measured (tones 4.6–11.9 kHz, all of which alias into 0–3.4 kHz): ${fmt(stopbandRejectionDb(), 1)} dB (target ≥ 80)\n` +
        `our filter: ${JSON.stringify(design)}`,
    );

    // 3. Added latency: the byte that completes a frame arrives → the frame reaches the sink.
    const handed: Array<{ at: number; endByte: number }> = [];
    const latencySink = new TimingSink(FORMATS.mulaw8k, 0, true);
    const latencySpeaker = new Speaker({
      source: memorySource(sixty, handed),
      sink: latencySink,
      voiceId: 'memory',
    });
    await latencySpeaker.say('replayed').result;
    // Frame k (20 ms at 24 kHz = 960 bytes) is complete once byte (k+1)·960 has arrived (plus the filter's look-ahead).
    const lookAheadBytes = 2 * 3 * new Resampler({ inputRate: 24_000, outputRate: 8000 }).delaySamples;
    const latencies: number[] = [];
    let h = 0;
    for (let k = 0; k < latencySink.arrivals.length - 1; k++) {
      const needed = (k + 1) * 960 + lookAheadBytes;
      while (h < handed.length - 1 && handed[h]!.endByte < needed) h++;
      latencies.push(latencySink.arrivals[k]! - handed[h]!.at);
    }
    console.log(
      `\n## Added latency, byte completing a frame → frame at the sink (${latencies.length} frames)\np50 ${fmt(percentile(latencies, 50), 3)} ms, p99 ${fmt(percentile(latencies, 99), 3)} ms, max ${fmt(Math.max(...latencies), 3)} ms (target p99 ≤ 5 ms)`,
    );
    await latencySpeaker.close();

    // 4. Barge-in: interrupt() → sink.clear() and → upstream socket closed.
    const toClear: number[] = [];
    const toClose: number[] = [];
    for (let i = 0; i < 30; i++) {
      const sink = new TimingSink(FORMATS.mulaw8k, 200, false);
      const client = new SpeechClient({ baseUrl: app.url, apiKey: KEY });
      const speaker = new Speaker({ source: client, sink, voiceId: BUILT_IN_VOICE_ID });
      const closes: number[] = [];
      const onConnection = (s: Socket): void => void s.once('close', () => closes.push(performance.now()));
      app.server.on('connection', onConnection);
      // A fresh connection each time, so the socket that closes is this utterance's.
      const handle = speaker.say(
        `Interruption number ${i + 1}. ` +
          'This reply goes on and on, until the listener speaks. '.repeat(30),
      );
      await new Promise((r) => setTimeout(r, 300 + (i % 5) * 60));
      const t0 = performance.now();
      speaker.interrupt();
      toClear.push(sink.clears[0]! - t0);
      await handle.result;
      const deadline = performance.now() + 1000;
      while (!closes.some((c) => c >= t0) && performance.now() < deadline)
        await new Promise((r) => setImmediate(r));
      // Sockets of finished segments may have closed earlier; the one cut by the barge-in closes after t0.
      const after = closes.filter((c) => c >= t0);
      if (after.length > 0) toClose.push(Math.min(...after) - t0);
      app.server.off('connection', onConnection);
      await speaker.close();
      await client.close();
    }
    console.log(
      `\n## Barge-in (${toClear.length} interruptions mid-sentence)\ninterrupt() → sink.clear(): p50 ${fmt(percentile(toClear, 50), 3)} ms, p99 ${fmt(percentile(toClear, 99), 3)} ms (target ≤ 5 ms)\n` +
        `interrupt() → upstream socket closed (server side): p50 ${fmt(percentile(toClose, 50), 2)} ms, p99 ${fmt(percentile(toClose, 99), 2)} ms over ${toClose.length} (target ≤ 20 ms)`,
    );

    // 5. Heap per idle and per speaking speaker.
    gc();
    const idle0 = process.memoryUsage().heapUsed;
    const idle: Speaker[] = [];
    for (let i = 0; i < 500; i++)
      idle.push(
        new Speaker({
          source: app.client,
          sink: new TimingSink(FORMATS.mulaw8k, 200, false),
          voiceId: BUILT_IN_VOICE_ID,
        }),
      );
    gc();
    const idleKb = (process.memoryUsage().heapUsed - idle0) / 500 / 1024;
    gc();
    const speak0 = process.memoryUsage().heapUsed;
    const speaking = idle.slice(0, 20);
    const handles = speaking.map((sp, i) =>
      sp.say(`Speaker ${i} reads a long passage aloud. ` + 'It keeps going for a good while. '.repeat(40)),
    );
    await new Promise((r) => setTimeout(r, 2000));
    gc();
    const speakingKb = (process.memoryUsage().heapUsed - speak0) / 20 / 1024;
    await Promise.all(speaking.map((sp) => sp.close()));
    await Promise.all(handles.map((h) => h.result));
    console.log(
      `\n## Heap\nper idle speaker: ${fmt(idleKb, 1)} KB; per speaking speaker (20 speaking at once, 2 s in, paced, lead 200 ms): ${fmt(speakingKb, 0)} KB more`,
    );
  } finally {
    await app.close();
    await rm(dir, { recursive: true, force: true });
  }
}
