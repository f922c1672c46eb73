/**
 * The local service's engines side by side, through the same HTTP path: time to the first audio byte
 * of `/stream` and the real-time factor of whole bodies, for eSpeak-NG (a stored voice on its plain
 * American variant, what the default voice was before Flite) and for the built-in voices on each of
 * Flite's voices. Also the cost of `/with-timestamps` (Flite runs a second, short pass for words).
 *
 * And a neural voice (the ONNX engine, sherpa-onnx): no real weights can be fetched here, so the bench
 * builds a model of a real Piper medium voice's size and shape with random weights (testkit/onnx:
 * ~15 M weights, 60 MB; the same encoder, flow and HiFi-GAN convolutions, so about the same work per
 * second of audio), spelling words by a lexicon; its audio is noise, its timing is the point.
 *
 *   npm run bench -- engines
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeVitsTestModel } from '../testkit/onnx/vits.js';
import type { SpeechClient } from '../src/speech/client.js';
import { startBenchService } from './local-service.js';
import { fmt, median, percentile, printTable } from './stats.js';

export const ESPEAK_VOICE = 'BenchEspeakM30000000';
const SHORT = 'The quick brown fox jumps over the lazy dog near the riverbank.';
const PARAGRAPH =
  'Thank you for calling the city library. You can renew your books, reserve a study room, or ask a ' +
  'librarian a question at any time of day. Our opening hours are nine to six on weekdays, and ten to ' +
  'four on Saturdays. The library is closed on Sundays and public holidays. To hear these options ' +
  'again, stay on the line, and a member of our team will be with you shortly.';
const BYTES_PER_SECOND = 48_000;
const RUNS = 30;
const WHOLE_RUNS = 6;

const ONNX_MODEL = 'piper-medium-size';
const ONNX_VOICE = `onnx-${ONNX_MODEL}`;

const VOICES: ReadonlyArray<readonly [label: string, voiceId: string]> = [
  ['eSpeak-NG en-us+m3 (the old default)', ESPEAK_VOICE],
  ['Flite kal16: voxbridge-default', 'voxbridge-default'],
  ['Flite rms: voxbridge-narrator', 'voxbridge-narrator'],
  ['Flite awb: voxbridge-scottish', 'voxbridge-scottish'],
  ['Flite slt: voxbridge-high', 'voxbridge-high'],
  ['Flite slt + whisper: voxbridge-whisper', 'voxbridge-whisper'],
];

/** An eSpeak voice in the store, as a voice made on eSpeak is stored. */
export async function storeEspeakVoice(dataDir: string): Promise<void> {
  const dir = join(dataDir, 'voices', ESPEAK_VOICE);
  await mkdir(dir, { recursive: true });
  await writeFile(
    join(dir, 'voice.json'),
    JSON.stringify({
      voice_id: ESPEAK_VOICE,
      name: 'eSpeak m3',
      owner: 'default',
      category: 'cloned',
      description: null,
      labels: {},
      created_at_unix: 0,
      engine: { engine: 'espeak-ng', language: 'en-us', variant: 'm3', pitch: 50, range: 50, rateWpm: 175 },
      samples: [],
    }),
  );
}

/** The Piper-medium-sized model, when sherpa-onnx-node is installed (it is an optional dependency). */
async function onnxModel(
  dir: string,
): Promise<{ label: string; parameters: number; bytes: number } | undefined> {
  try {
    await import('sherpa-onnx-node');
  } catch {
    console.log('(sherpa-onnx-node is not installed: no ONNX row)');
    return undefined;
  }
  const words = `${SHORT} ${PARAGRAPH}`.toLowerCase().match(/[a-z]+/g) ?? [];
  const m = await writeVitsTestModel(dir, {
    decoder: 'hifigan',
    hidden: 192,
    encoderLayers: 6,
    // ~70 ms of speech per letter, as people speak.
    framesPerToken: 6,
    words,
  });
  return {
    label: `ONNX VITS, Piper medium's size (${(m.parameters / 1e6).toFixed(1)} M weights, random)`,
    parameters: m.parameters,
    bytes: m.bytes,
  };
}

export async function benchEngines(): Promise<void> {
  const modelDir = await mkdtemp(join(tmpdir(), 'voxbridge-bench-onnx-'));
  const onnx = await onnxModel(join(modelDir, ONNX_MODEL));
  const bench = await startBenchService(
    'engines',
    storeEspeakVoice,
    onnx ? { onnxModels: [{ path: join(modelDir, ONNX_MODEL) }] } : {},
  );
  const plain = bench.client();
  const timed = bench.client(true);
  try {
    const rows: string[][] = [];
    for (const [label, voiceId] of onnx ? [...VOICES, [onnx.label, ONNX_VOICE] as const] : VOICES) {
      const firstByte = async (client: SpeechClient, text: string): Promise<number> => {
        const stream = await client.stream({ voiceId, text, outputFormat: 'pcm_24000' });
        for await (const _ of stream) {
          /* drain */
        }
        return stream.firstByteMs;
      };
      for (let i = 0; i < 3; i++) await firstByte(plain, SHORT);
      const short: number[] = [];
      const shortTimed: number[] = [];
      for (let i = 0; i < RUNS; i++) {
        short.push(await firstByte(plain, SHORT));
        shortTimed.push(await firstByte(timed, SHORT));
      }
      const rtf: number[] = [];
      for (let i = 0; i < WHOLE_RUNS; i++) {
        const t0 = performance.now();
        const r = await plain.synthesize({ voiceId, text: PARAGRAPH, outputFormat: 'pcm_24000' });
        rtf.push((performance.now() - t0) / 1000 / (r.audio.byteLength / BYTES_PER_SECOND));
      }
      rows.push([
        label,
        fmt(percentile(short, 50), 1),
        fmt(percentile(short, 95), 1),
        fmt(percentile(shortTimed, 50), 1),
        fmt(median(rtf), 4),
        `${fmt(1 / median(rtf), 0)}x`,
      ]);
    }
    printTable(
      `Engines through the local service (${availableParallelism()} workers; /stream first byte of a 63-character sentence, ms; whole body of ${PARAGRAPH.length} characters)`,
      ['voice', '1st byte p50', 'p95', 'with timestamps p50', 'real-time factor', 'speed'],
      rows,
    );
  } finally {
    await bench.close();
    await rm(modelDir, { recursive: true, force: true });
  }
}
