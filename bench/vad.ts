/**
 * The barge-in detector alone, on the audio the tests use at larger scale: recall and onset latency on
 * eSpeak speech (8 sentences × 7 voices) in white and pink noise at 20, 10 and 5 dB SNR (through mu-law
 * at 8 kHz), false triggers on ten minutes of a line where nobody talks, CPU per 20 ms chunk (gate
 * closed, Silero running) and memory per detector, at 8 and 16 kHz.
 */
import {
  SileroModel,
  SpeechOnsetDetector,
  type SpeechOnset,
  type VadSampleRate,
} from '../src/barge-in/index.js';
import { seeded } from '../testkit/random.js';
import {
  NON_SPEECH_KINDS,
  nonSpeechSecond,
  noisyUtterance,
  UTTERANCES,
  VOICES,
} from '../testkit/vad-audio.js';
import { cpuUs, fmt, percentile, printTable } from './stats.js';

const SNRS = [20, 10, 5];
const COLORS = ['white', 'pink'] as const;

const gc = (): void => (globalThis as { gc?: () => void }).gc?.();

function memoryBytes(): number {
  const m = process.memoryUsage();
  // `external` includes the ArrayBuffers behind typed arrays.
  return m.heapUsed + m.external;
}

interface Cost {
  /** Wall time of pushes that ran no inference / at least one, and how many. */
  gateUs: number;
  gateChunks: number;
  sileroUs: number;
  sileroChunks: number;
}

/** Pushes `samples` in 20 ms chunks, timing each push and sorting it by whether Silero ran. */
async function pushAll(
  detector: SpeechOnsetDetector,
  samples: Int16Array,
  startMs: number,
  cost: Cost,
): Promise<SpeechOnset[]> {
  const rate = detector.sampleRate;
  const chunk = rate / 50;
  const found: SpeechOnset[] = [];
  for (let o = 0; o < samples.length; o += chunk) {
    const before = detector.stats.inferences;
    const t0 = performance.now();
    const onset = await detector.push(samples.subarray(o, o + chunk), {
      timestampMs: startMs + (o / rate) * 1000,
      botAudible: false,
    });
    const us = (performance.now() - t0) * 1000;
    if (detector.stats.inferences > before) {
      cost.sileroUs += us;
      cost.sileroChunks++;
    } else {
      cost.gateUs += us;
      cost.gateChunks++;
    }
    if (onset) found.push(onset);
  }
  return found;
}

export async function benchVad(): Promise<void> {
  gc();
  const rss0 = process.memoryUsage().rss;
  // Well warmed, and V8's background compilation given time to finish, so it is not measured.
  const model = await SileroModel.load({ warmupWindows: 1000 });
  await new Promise((r) => setTimeout(r, 3000));
  gc();
  const modelMb = (process.memoryUsage().rss - rss0) / 1024 / 1024;
  const recallRows: string[][] = [];
  const costRows: string[][] = [];
  for (const sampleRate of [8000, 16_000] as const satisfies readonly VadSampleRate[]) {
    const chunkMs = 20;
    const cost: Cost = { gateUs: 0, gateChunks: 0, sileroUs: 0, sileroChunks: 0 };
    const all: number[] = [];
    const allErrors: number[] = [];
    let speechCpu = 0;
    let speechChunks = 0;
    let seed = 1;
    for (const snr of SNRS) {
      const latencies: number[] = [];
      const onsetErrors: number[] = [];
      for (const color of COLORS)
        for (const text of UTTERANCES)
          for (const voice of VOICES) {
            const u = await noisyUtterance(text, voice, sampleRate, snr, seed++, {
              color,
              mulaw: sampleRate === 8000,
            });
            // Offline, on the inbound timeline: a fixed clock keeps the machine's load from putting the
            // detector "behind" (Silero skipped), so the figures are the algorithm's alone.
            const d = new SpeechOnsetDetector(model, { sampleRate, now: () => 0 });
            const c0 = cpuUs();
            const found = await pushAll(d, u.samples, 0, cost);
            speechCpu += cpuUs() - c0;
            speechChunks += u.samples.length / (sampleRate / 50);
            const first = found[0];
            latencies.push(first ? first.detectedMs - u.onsetMs : Number.POSITIVE_INFINITY);
            if (first) onsetErrors.push(Math.abs(first.onsetMs - u.onsetMs));
          }
      all.push(...latencies);
      allErrors.push(...onsetErrors);
      recallRows.push(recallRow(`${sampleRate}`, `${snr} dB`, latencies, onsetErrors));
    }
    recallRows.push(recallRow(`${sampleRate}`, 'all', all, allErrors));

    // Ten minutes of a line where nobody talks (ten kinds of non-speech, a second each, in turn).
    const d = new SpeechOnsetDetector(model, { sampleRate, now: () => 0 });
    const random = seeded(42);
    const triggers: string[] = [];
    let idleCpu = 0;
    for (let second = 0; second < 600; second++) {
      const x = nonSpeechSecond(second, sampleRate, random);
      const c0 = cpuUs();
      for (const onset of await pushAll(d, x, second * 1000, cost))
        triggers.push(
          `${fmt(onset.onsetMs / 1000, 1)} s ${NON_SPEECH_KINDS[second % NON_SPEECH_KINDS.length]}`,
        );
      idleCpu += cpuUs() - c0;
    }
    const idleStats = d.stats;
    // A steady line (noise 45 dB below full scale) for a minute: the gate keeps Silero asleep.
    const quiet = new SpeechOnsetDetector(model, { sampleRate, now: () => 0 });
    const quietCost: Cost = { gateUs: 0, gateChunks: 0, sileroUs: 0, sileroChunks: 0 };
    let quietCpu = 0;
    for (let second = 0; second < 60; second++) {
      const x = nonSpeechSecond(0, sampleRate, random);
      const c0 = cpuUs();
      await pushAll(quiet, x, second * 1000, quietCost);
      if (second >= 2) quietCpu += cpuUs() - c0;
    }

    // Memory: detectors that have each run Silero on a few windows; a first round settles the heap.
    await detectorKb(model, sampleRate);
    const perDetectorKb = await detectorKb(model, sampleRate);

    costRows.push([
      String(sampleRate),
      String(triggers.length) + (triggers.length ? ` (${triggers.slice(0, 3).join('; ')})` : ''),
      `${fmt((100 * idleStats.inferences) / idleStats.windows, 0)} %`,
      fmt(quietCpu / (58 * (1000 / chunkMs)), 1),
      fmt(cost.gateUs / cost.gateChunks, 1),
      fmt(cost.sileroUs / cost.sileroChunks, 0),
      fmt(idleCpu / (600 * (1000 / chunkMs)), 0),
      fmt(speechCpu / speechChunks, 0),
      fmt(perDetectorKb, 1),
    ]);
  }
  const endMb = (process.memoryUsage().rss - rss0) / 1024 / 1024;
  printTable(
    `Barge-in detector: energy gate + Silero v5 on ${model.runtime}, eSpeak speech (8 sentences × 7 voices × white/pink noise) per SNR; onset latency = confirmed − true onset`,
    ['rate', 'SNR', 'found ≤ 300 ms', 'latency p50 / p95 ms', 'onset error p50 / p95 ms'],
    recallRows,
  );
  printTable(
    `Barge-in detector cost (CPU µs per 20 ms chunk; the shared model adds ${fmt(modelMb, 0)} MB RSS to the process once loaded, ${fmt(endMb, 0)} MB after this bench)`,
    [
      'rate',
      'false triggers / 10 min non-speech',
      'Silero on (non-speech)',
      'steady line CPU',
      'push, gate only',
      'push, Silero ran',
      'non-speech CPU',
      'speech corpus CPU',
      'KB per detector',
    ],
    costRows,
  );
}

/** Heap and ArrayBuffer bytes held per detector that has run Silero on a few windows of loud noise (KB). */
async function detectorKb(model: SileroModel, sampleRate: VadSampleRate): Promise<number> {
  const n = 1000;
  const loud = nonSpeechSecond(6, sampleRate, seeded(1)).subarray(0, sampleRate / 5);
  gc();
  gc();
  const m0 = memoryBytes();
  const keep: SpeechOnsetDetector[] = [];
  for (let i = 0; i < n; i++) {
    const detector = new SpeechOnsetDetector(model, { sampleRate, now: () => 0 });
    await detector.push(loud, { timestampMs: 0, botAudible: false });
    keep.push(detector);
  }
  gc();
  gc();
  const kb = (memoryBytes() - m0) / n / 1024;
  if (keep.some((k) => k.stats.inferences === 0)) throw new Error('Silero did not run in the memory test');
  return kb;
}

function recallRow(rate: string, snr: string, latencies: number[], onsetErrors: number[]): string[] {
  const found = latencies.filter((l) => Number.isFinite(l));
  const inTime = latencies.filter((l) => l <= 300).length;
  return [
    rate,
    snr,
    `${inTime}/${latencies.length} (${fmt((100 * inTime) / latencies.length, 1)} %)`,
    `${fmt(percentile(found, 50), 0)} / ${fmt(percentile(found, 95), 0)}`,
    onsetErrors.length
      ? `${fmt(percentile(onsetErrors, 50), 0)} / ${fmt(percentile(onsetErrors, 95), 0)}`
      : '',
  ];
}
