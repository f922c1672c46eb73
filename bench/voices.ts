/**
 * How intelligible each built-in voice is, measured by a recogniser trained on people: Debian's
 * `pocketsphinx` (0.8, its US English acoustic model and n-gram language model, 16 kHz) transcribes a
 * fixed set of sentences read by each voice, and the word error rate says how far that is from the text.
 * Beside it, each voice's real-time factor and first byte through the local service. eSpeak-NG (a
 * stored voice on its plain American variant, the default before Flite) is measured the same way.
 *
 *   npm run bench -- voices
 *
 * The recogniser is wideband: 8 kHz μ-law fails it for every engine, so the audio goes to it at 16 kHz
 * (the service's 24 kHz PCM, resampled). Its n-gram model punishes odd sentences, so two sets are read:
 * 32 everyday sentences of the kind voxbridge speaks (a receptionist, an agent, a narrator), the set the
 * target is held to, and 16 Harvard sentences (phonetically balanced, odd on purpose), for reference.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Resampler } from '../src/audio/resampler.js';
import { wavFile } from '../src/audio/wav.js';
import { builtInVoices } from '../src/service/voices/builtin.js';
import { ESPEAK_VOICE, storeEspeakVoice } from './engines.js';
import { startBenchService } from './local-service.js';
import { fmt, median, percentile, printTable } from './stats.js';

const run = promisify(execFile);

/** Everyday sentences, fixed (numbers spelled out: the recogniser's dictionary has words, not digits). */
export const EVERYDAY = [
  'Thank you for calling, how can I help you today?',
  'Your appointment is on Monday morning at ten.',
  'Please hold while I transfer you to the billing team.',
  'I am sorry, I did not catch that.',
  'Could you say your account number again?',
  'The store opens at nine and closes at six.',
  'Your order has been shipped and should arrive on Friday.',
  'Press one for sales or two for support.',
  'We are closed on Sundays and public holidays.',
  'Would you like me to send you a text message with the details?',
  'Your balance is twenty dollars and fifty cents.',
  'The weather today will be sunny with a light breeze.',
  'Is there anything else I can help you with?',
  'I have booked a table for two people at seven tonight.',
  'The next train to the city leaves in fifteen minutes.',
  'Please leave a message after the tone.',
  'Your password has been reset, please check your email.',
  'The doctor will call you back this afternoon.',
  'Good morning, this is a reminder about your delivery.',
  'We will see you next week, have a nice day.',
  'The meeting has been moved to Thursday afternoon.',
  'You can pay by card or by bank transfer.',
  'The old man opened the door and looked outside.',
  'A cold wind blew across the empty field.',
  'She picked up the phone and called her brother.',
  'The children played in the garden until it was dark.',
  'He said he would be home in time for dinner.',
  'The library has many books about history and science.',
  'Our team will contact you within two working days.',
  'Please confirm your date of birth.',
  'The package was left at the front door.',
  'Thank you for your patience, goodbye.',
] as const;

/** Harvard sentences (IEEE 1969, lists 1 and 2), hard for an n-gram model on purpose. */
export const HARVARD = [
  'The birch canoe slid on the smooth planks.',
  'Glue the sheet to the dark blue background.',
  "It's easy to tell the depth of a well.",
  'These days a chicken leg is a rare dish.',
  'Rice is often served in round bowls.',
  'The juice of lemons makes fine punch.',
  'The box was thrown beside the parked truck.',
  'The hogs were fed chopped corn and garbage.',
  'Four hours of steady work faced us.',
  'A large size in stockings is hard to sell.',
  'The boy was there when the sun rose.',
  'A rod is used to catch pink salmon.',
  'The source of the huge river is the clear spring.',
  'Kick the ball straight and follow through.',
  'Help the woman get back to her feet.',
  'A pot of tea helps to pass the evening.',
] as const;

const MODELS = '/usr/share/pocketsphinx/model/en-us';
const RECOGNISER_RATE = 16_000;

/** Lowercase words, apostrophes kept, everything else a separator. */
export function words(text: string): string[] {
  return text
    .toLowerCase()
    .replace(/[^a-z']+/g, ' ')
    .split(' ')
    .filter(Boolean);
}

/** Word-level edit distance (substitutions, insertions and deletions) between reference and hypothesis. */
export function wordErrors(reference: readonly string[], hypothesis: readonly string[]): number {
  let previous = Array.from({ length: hypothesis.length + 1 }, (_, j) => j);
  for (let i = 1; i <= reference.length; i++) {
    const current = [i];
    for (let j = 1; j <= hypothesis.length; j++)
      current[j] = Math.min(
        previous[j]! + 1,
        current[j - 1]! + 1,
        previous[j - 1]! + (reference[i - 1] === hypothesis[j - 1] ? 0 : 1),
      );
    previous = current;
  }
  return previous[hypothesis.length]!;
}

/** Transcribes 16 kHz WAV files in one `pocketsphinx_batch` run; one hypothesis per file, in order. */
async function transcribe(dir: string, files: readonly string[]): Promise<string[]> {
  const ctl = join(dir, 'files.ctl');
  const hyp = join(dir, 'out.hyp');
  await writeFile(ctl, `${files.map((f) => f.replace(/\.wav$/, '')).join('\n')}\n`);
  await run(
    'pocketsphinx_batch',
    [
      ...['-adcin', 'yes', '-cepdir', dir, '-cepext', '.wav', '-ctl', ctl, '-hyp', hyp],
      ...['-hmm', join(MODELS, 'en-us'), '-lm', join(MODELS, 'en-us.lm.bin')],
      ...['-dict', join(MODELS, 'cmudict-en-us.dict'), '-samprate', String(RECOGNISER_RATE)],
    ],
    { maxBuffer: 64 << 20 },
  );
  // Each line: the words, then " (file score)".
  const byFile = new Map<string, string>();
  for (const line of (await readFile(hyp, 'utf8')).split('\n')) {
    const m = /^(.*?)\s*\((\S+)(?:\s+-?\d+)?\)\s*$/.exec(line);
    if (m) byFile.set(m[2]!, m[1]!);
  }
  return files.map((f) => byFile.get(f.replace(/\.wav$/, '')) ?? '');
}

function pcmSamples(audio: Uint8Array): Int16Array {
  const copy = new Uint8Array(audio.byteLength - (audio.byteLength % 2));
  copy.set(audio.subarray(0, copy.byteLength));
  return new Int16Array(copy.buffer);
}

export async function benchVoices(): Promise<void> {
  try {
    await run('sh', ['-c', 'command -v pocketsphinx_batch'], { timeout: 10_000 });
    await readFile(join(MODELS, 'en-us', 'mdef'));
  } catch {
    console.log(
      '\n(voices: skipped, pocketsphinx or its model is missing: `bash scripts/install-tools.sh bench`)',
    );
    return;
  }
  const bench = await startBenchService('voices', storeEspeakVoice);
  const client = bench.client();
  const dir = await mkdtemp(join(tmpdir(), 'voxbridge-bench-voices-'));
  const voices: Array<readonly [label: string, id: string]> = [
    ...builtInVoices().map(
      (v) =>
        [
          `${v.voice_id} (Flite ${v.engine.engine === 'flite' ? v.engine.voice : v.engine.engine})`,
          v.voice_id,
        ] as const,
    ),
    ['eSpeak-NG en-us+m3 (the old default)', ESPEAK_VOICE],
  ];
  try {
    const rows: string[][] = [];
    for (const [label, voiceId] of voices) {
      const errors = { everyday: 0, harvard: 0 };
      const totals = { everyday: 0, harvard: 0 };
      const rtf: number[] = [];
      const firstByte: number[] = [];
      const files: string[] = [];
      const references: Array<{ set: 'everyday' | 'harvard'; words: string[] }> = [];
      const sets = [
        ['everyday', EVERYDAY],
        ['harvard', HARVARD],
      ] as const;
      for (const [set, sentences] of sets)
        for (const [i, text] of sentences.entries()) {
          const t0 = performance.now();
          const stream = await client.stream({ voiceId, text, outputFormat: 'pcm_24000' });
          const parts: Uint8Array[] = [];
          for await (const chunk of stream) parts.push(chunk);
          const seconds = performance.now() - t0;
          const audio = Buffer.concat(parts);
          firstByte.push(stream.firstByteMs);
          rtf.push(seconds / 1000 / (audio.byteLength / 48_000));
          const resampler = new Resampler({ inputRate: 24_000, outputRate: RECOGNISER_RATE });
          const pcm = pcmSamples(audio);
          const at16 = Buffer.concat([
            Buffer.from(resampler.push(pcm).buffer),
            Buffer.from(resampler.flush().buffer),
          ]);
          const name = `${voiceId}-${set}-${i}.wav`;
          await writeFile(join(dir, name), wavFile(pcmSamples(at16), RECOGNISER_RATE));
          files.push(name);
          references.push({ set, words: words(text) });
        }
      const hypotheses = await transcribe(dir, files);
      hypotheses.forEach((hypothesis, i) => {
        const { set, words: reference } = references[i]!;
        errors[set] += wordErrors(reference, words(hypothesis));
        totals[set] += reference.length;
      });
      rows.push([
        label,
        `${fmt((100 * errors.everyday) / totals.everyday, 1)} %`,
        `${fmt((100 * errors.harvard) / totals.harvard, 1)} %`,
        fmt(median(rtf), 4),
        fmt(percentile(firstByte, 50), 1),
        fmt(percentile(firstByte, 95), 1),
      ]);
    }
    printTable(
      `Voices: words wrong by pocketsphinx (en-us, 16 kHz) on ${EVERYDAY.length} everyday sentences (${EVERYDAY.reduce((n, s) => n + words(s).length, 0)} words; target ≤ 20 %) and ${HARVARD.length} Harvard sentences; real-time factor (whole /stream body) and first byte (ms) per sentence`,
      ['voice', 'WER everyday', 'WER Harvard', 'real-time factor', '1st byte p50', 'p95'],
      rows,
    );
  } finally {
    await bench.close();
    await rm(dir, { recursive: true, force: true });
  }
}
