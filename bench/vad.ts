/**
 * The barge-in detector alone, on the audio the tests use at larger scale: recall and onset latency on
 * eSpeak speech in noise, false triggers on ten minutes of a line where nobody talks, CPU per 20 ms
 * chunk (idle line and speech) and memory per detector, at 8 and 16 kHz.
 */
import { SileroModel, SpeechOnsetDetector } from '../src/audio/vad/index.js';
import { nonSpeechSecond, noisyUtterance, UTTERANCES, VOICES } from '../test/helpers/vad-audio.js';
import { seeded } from '../test/helpers/random.js';
import { fmt, percentile, printTable } from './stats.js';

function cpuUs(): number {
  const u = process.cpuUsage();
  return u.user + u.system;
}

export async function benchVad(): Promise<void> {
  // Well warmed, and V8's background compilation given time to finish, so it is not measured.
  const model = await SileroModel.load({ warmupWindows: 1000 });
  await new Promise((r) => setTimeout(r, 3000));
  const rows: string[][] = [];
  for (const sampleRate of [8000, 16_000] as const) {
    const chunk = sampleRate / 50;
    const latencies: number[] = [];
    let total = 0;
    let inTime = 0;
    let speechChunks = 0;
    let speechCpu = 0;
    let seed = 1;
    for (const snr of [20, 10, 5])
      for (const text of UTTERANCES)
        for (const voice of VOICES) {
          const u = await noisyUtterance(text, voice, sampleRate, snr, seed++);
          const d = new SpeechOnsetDetector(model, { sampleRate: sampleRate });
          let first: number | undefined;
          const c0 = cpuUs();
          for (let o = 0; o < u.samples.length; o += chunk) {
            const onset = await d.push(u.samples.subarray(o, o + chunk), {
              timestampMs: (o / sampleRate) * 1000,
              botAudible: false,
            });
            if (onset && first === undefined) first = onset.detectedMs - u.onsetMs;
          }
          speechCpu += cpuUs() - c0;
          speechChunks += u.samples.length / chunk;
          total++;
          if (first !== undefined) {
            latencies.push(first);
            if (first <= 300) inTime++;
          }
        }
    const d = new SpeechOnsetDetector(model, { sampleRate });
    const random = seeded(42);
    let falseTriggers = 0;
    let idleCpu = 0;
    let idleChunks = 0;
    for (let second = 0; second < 600; second++) {
      const x = nonSpeechSecond(second, sampleRate, random);
      const c0 = cpuUs();
      for (let o = 0; o < x.length; o += chunk)
        if (
          await d.push(x.subarray(o, o + chunk), {
            timestampMs: second * 1000 + (o / sampleRate) * 1000,
            botAudible: false,
          })
        )
          falseTriggers++;
      idleCpu += cpuUs() - c0;
      idleChunks += 50;
    }
    // A steady quiet line (noise 45 dB below full scale) for a minute: the gate keeps Silero asleep.
    const quiet = new SpeechOnsetDetector(model, { sampleRate });
    let quietCpu = 0;
    for (let second = 0; second < 60; second++) {
      const x = nonSpeechSecond(0, sampleRate, random);
      const c0 = cpuUs();
      for (let o = 0; o < x.length; o += chunk)
        await quiet.push(x.subarray(o, o + chunk), {
          timestampMs: second * 1000 + (o / sampleRate) * 1000,
          botAudible: false,
        });
      if (second >= 2) quietCpu += cpuUs() - c0;
    }
    const quietChunks = 58 * 50;
    (globalThis as { gc?: () => void }).gc?.();
    const h0 = process.memoryUsage().heapUsed;
    const keep: SpeechOnsetDetector[] = [];
    for (let i = 0; i < 1000; i++) keep.push(new SpeechOnsetDetector(model, { sampleRate }));
    (globalThis as { gc?: () => void }).gc?.();
    const heapKb = (process.memoryUsage().heapUsed - h0) / 1000 / 1024;
    rows.push([
      String(sampleRate),
      `${inTime}/${total} (${fmt((100 * inTime) / total, 1)} %)`,
      `${fmt(percentile(latencies, 50), 0)} / ${fmt(percentile(latencies, 95), 0)}`,
      String(falseTriggers),
      fmt(quietCpu / quietChunks, 1),
      fmt(idleCpu / idleChunks, 1),
      fmt(speechCpu / speechChunks, 1),
      fmt(heapKb, 1) + ' KB',
    ]);
  }
  printTable(
    'Barge-in detector (energy gate + Silero v5 on onnxruntime-web WASM), eSpeak speech in noise at 20/10/5 dB SNR',
    [
      'rate',
      'onsets found ≤ 300 ms',
      'latency p50 / p95 ms',
      'false triggers in 10 min non-speech',
      'µs/20 ms quiet line',
      'µs/20 ms mixed non-speech',
      'µs/20 ms speech',
      'heap per detector',
    ],
    rows,
  );
}
