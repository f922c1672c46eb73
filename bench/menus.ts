/**
 * Spoken menus, offline (issue 44): the recogniser (src/recognition/) on a phone menu of eight choices
 * with carrier words, answered by the cast's eight built-in voices (the local speech service) and seven
 * eSpeak voices, 24 answers each (360 a condition), through μ-law at 8 kHz with no noise and white line
 * noise at 20 and 10 dB SNR: the share of answers taken to the right branch, to a wrong one, and to
 * none (a no-match); out-of-grammar sentences and line noise alone, which must be no-matches; latency
 * from the end of the audio to the result and the worker's CPU per recognition; and forced alignment of
 * the bot's own sentences against the local service's character timings at random cut points (the words
 * heard before a barge-in), beside the proportional estimate used without timings. The tables of
 * answers, latency and CPU are the recogniser's as a gather runs it (`DEFAULT_MIN_CONFIDENCE`, a second
 * pass only when the margin decides); the threshold table comes from a second recogniser over the same
 * audio that always takes both passes, for its exact confidence.
 */
import { Recognizer, DEFAULT_MIN_CONFIDENCE, type Recognition } from '../src/recognition/recognizer.js';
import { menuGrammar } from '../src/recognition/grammar.js';
import { BUILT_IN_VOICE_IDS } from '../src/service/voices/builtin.js';
import {
  ANSWERS,
  BOT_SENTENCES,
  ESPEAK_RATE,
  espeakAnswer,
  MENU,
  OUT_OF_GRAMMAR,
  serviceSpeech,
} from '../testkit/menu-audio.js';
import { LINE_RATE, onPhoneLine } from '../testkit/phone-line.js';
import { seeded } from '../testkit/random.js';
import { VOICES } from '../testkit/vad-audio.js';
import { BENCH_KEY, startBenchApp } from './app.js';
import { fmt, median, percentile, printTable } from './stats.js';

const SNRS: ReadonlyArray<number | undefined> = [undefined, 20, 10];
const snrName = (snr: number | undefined): string => (snr === undefined ? 'none' : `${snr} dB`);
/** Random cut points per aligned sentence and voice. */
const CUTS = 25;
/** Line noise alone: seconds of it per condition. */
const NOISE_SECONDS = 2;

interface Speech {
  readonly samples: Int16Array;
  readonly sampleRate: number;
}

interface Voice {
  readonly name: string;
  speak(text: string): Promise<Speech>;
}

interface Outcome {
  readonly voice: string;
  readonly snr: number | undefined;
  /** The right key, or undefined for speech outside the menu. */
  readonly expected: string | undefined;
  /** The recognition as a gather gets it (`DEFAULT_MIN_CONFIDENCE`, the second pass only when needed). */
  readonly result: Recognition;
  /** The same audio with no threshold and both passes: the key its best path means, its exact confidence. */
  readonly exact: Recognition;
  readonly latencyMs: number;
  readonly audioMs: number;
}

const pct = (part: number, whole: number): string => (whole > 0 ? `${fmt((100 * part) / whole)} %` : 'n/a');

function voices(api: string): Voice[] {
  const cast: Voice[] = BUILT_IN_VOICE_IDS.map((id) => ({
    name: id,
    speak: async (text) => serviceSpeech(api, BENCH_KEY, id, text),
  }));
  const espeak: Voice[] = VOICES.map((v) => ({
    name: `espeak ${v[0]} p${v[1]}`,
    speak: async (text) => ({ samples: await espeakAnswer(text, v), sampleRate: ESPEAK_RATE }),
  }));
  return [...cast, ...espeak];
}

/** The key kept at `threshold` (the recogniser's rule: below it, a no-match); undefined: as recognised. */
function keptKey(o: Outcome, threshold: number | undefined): string | undefined {
  if (threshold === undefined) return o.result.key;
  return o.exact.confidence >= threshold ? o.exact.key : undefined;
}

function tally(outcomes: readonly Outcome[], threshold?: number) {
  const answers = outcomes.filter((o) => o.expected !== undefined);
  const outside = outcomes.filter((o) => o.expected === undefined);
  const right = answers.filter((o) => keptKey(o, threshold) === o.expected).length;
  const none = answers.filter((o) => keptKey(o, threshold) === undefined).length;
  const accepted = outside.filter((o) => keptKey(o, threshold) !== undefined).length;
  return {
    answers: answers.length,
    right,
    wrong: answers.length - right - none,
    none,
    outside: outside.length,
    accepted,
  };
}

export async function benchMenus(): Promise<void> {
  const app = await startBenchApp('menus');
  const recognizer = await Recognizer.start({ workers: 1 });
  // Threshold 0 and both passes: every best path's key and its exact confidence, for the threshold table.
  const exact = await Recognizer.start({ workers: 1, minConfidence: 0, exactConfidence: true });
  try {
    const api = `${app.app.url}/api/speech`;
    const grammar = menuGrammar(MENU);
    const outcomes: Outcome[] = [];
    const cast = voices(api);
    let seed = 1;
    for (const voice of cast) {
      const said: Array<{ expected: string | undefined; speech: Speech }> = [];
      for (const [key, text] of ANSWERS) said.push({ expected: key, speech: await voice.speak(text) });
      for (const text of OUT_OF_GRAMMAR) said.push({ expected: undefined, speech: await voice.speak(text) });
      for (const snr of SNRS)
        for (const { expected, speech } of said) {
          const line = onPhoneLine(speech.samples, speech.sampleRate, { snrDb: snr, seed: seed++ });
          const t0 = performance.now();
          const result = await recognizer.recognize(line, LINE_RATE, grammar);
          const latencyMs = performance.now() - t0;
          outcomes.push({
            voice: voice.name,
            snr,
            expected,
            result,
            exact: await exact.recognize(line, LINE_RATE, grammar),
            latencyMs,
            audioMs: (line.length / LINE_RATE) * 1000,
          });
        }
    }

    const rows = SNRS.map((snr) => {
      const of = outcomes.filter((o) => o.snr === snr);
      const t = tally(of);
      return [
        snrName(snr),
        String(t.answers),
        pct(t.right, t.answers),
        pct(t.wrong, t.answers),
        pct(t.none, t.answers),
        pct(t.outside - t.accepted, t.outside),
        fmt(median(of.map((o) => o.latencyMs)), 0),
        fmt(
          percentile(
            of.map((o) => o.latencyMs),
            95,
          ),
          0,
        ),
        fmt(median(of.map((o) => o.result.cpuMs)), 0),
        fmt(
          percentile(
            of.map((o) => o.result.cpuMs),
            95,
          ),
          0,
        ),
        fmt(median(of.map((o) => o.audioMs)) / 1000, 2),
      ];
    });
    printTable(
      `Menu answers (8 choices with carriers, ${cast.length} voices × ${ANSWERS.length} answers, μ-law 8 kHz, min confidence ${DEFAULT_MIN_CONFIDENCE})`,
      [
        'line noise',
        'answers',
        'right branch',
        'wrong branch',
        'no-match',
        'out-of-grammar no-match',
        'latency p50 ms',
        'p95',
        'CPU p50 ms',
        'p95',
        'audio p50 s',
      ],
      rows,
    );

    // Line noise alone (and digital silence): any key is a false branch.
    const noiseRows: string[][] = [];
    const random = seeded(99);
    for (const [name, rms] of [
      ['digital silence', 0],
      ['line noise −50 dBFS', 100],
      ['line noise −35 dBFS', 580],
      ['line noise −25 dBFS', 1840],
    ] as const) {
      let keys = 0;
      let texts = 0;
      const cpu: number[] = [];
      for (let n = 0; n < 10; n++) {
        const raw = new Int16Array(NOISE_SECONDS * LINE_RATE);
        for (let i = 0; i < raw.length; i++) raw[i] = Math.round((random() * 2 - 1) * rms * Math.sqrt(3));
        const line = onPhoneLine(raw, LINE_RATE, { leadMs: 0, tailMs: 0 });
        const r = await recognizer.recognize(line, LINE_RATE, grammar);
        if (r.key !== undefined || r.digits !== undefined) keys++;
        if (r.text !== '') texts++;
        cpu.push(r.cpuMs);
      }
      noiseRows.push([name, '10', String(keys), String(texts), fmt(median(cpu), 0)]);
    }
    printTable(
      `No speech (${NOISE_SECONDS} s, μ-law 8 kHz)`,
      ['audio', 'runs', 'with a key', "with text ≠ ''", 'CPU p50 ms'],
      noiseRows,
    );

    // Per voice at 20 dB.
    printTable(
      'By voice at 20 dB SNR',
      ['voice', 'right branch', 'wrong branch', 'no-match', 'out-of-grammar no-match'],
      cast.map((v) => {
        const t = tally(outcomes.filter((o) => o.voice === v.name && o.snr === 20));
        return [
          v.name,
          pct(t.right, t.answers),
          pct(t.wrong, t.answers),
          pct(t.none, t.answers),
          pct(t.outside - t.accepted, t.outside),
        ];
      }),
    );

    // The threshold's trade-off.
    const sweep: string[][] = [];
    for (const threshold of [0, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]) {
      const row = [fmt(threshold, 2)];
      for (const snr of SNRS) {
        const t = tally(
          outcomes.filter((o) => o.snr === snr),
          threshold,
        );
        row.push(`${pct(t.right, t.answers)} / ${pct(t.wrong, t.answers)} / ${pct(t.accepted, t.outside)}`);
      }
      sweep.push(row);
    }
    printTable(
      'Confidence threshold: right / wrong branch / out-of-grammar accepted',
      ['min confidence', ...SNRS.map(snrName)],
      sweep,
    );

    await benchAlignment(recognizer, api);
  } finally {
    await recognizer.close();
    await exact.close();
    await app.close();
  }
}

/** Index of the word holding `offset`'s last heard character: how many words end at or before it. */
function wordsBefore(ends: readonly number[], offset: number): number {
  let n = 0;
  while (n < ends.length && ends[n]! <= offset) n++;
  return n;
}

async function benchAlignment(recognizer: Recognizer, api: string): Promise<void> {
  const random = seeded(7);
  const aligned: number[] = [];
  const estimated: number[] = [];
  let alignedWithinWord = 0;
  let estimatedWithinWord = 0;
  let cuts = 0;
  let cpuMs = 0;
  let audioMs = 0;
  let failures = 0;
  for (const voice of BUILT_IN_VOICE_IDS)
    for (const text of BOT_SENTENCES) {
      const speech = await serviceSpeech(api, BENCH_KEY, voice, text);
      const durationMs = (speech.samples.length / speech.sampleRate) * 1000;
      const t0 = performance.now();
      let words;
      try {
        words = await recognizer.align(text, speech.samples, speech.sampleRate);
      } catch {
        failures++;
        continue;
      }
      cpuMs += performance.now() - t0;
      audioMs += durationMs;
      const wordEnds = words.map((w) => w.charEnd);
      for (let c = 0; c < CUTS; c++) {
        const cutMs = random() * durationMs;
        // The service's truth: the characters whose sound had ended by the cut, to the end of the last whole word.
        let heardChars = 0;
        while (heardChars < speech.charEndMs.length && speech.charEndMs[heardChars]! <= cutMs) heardChars++;
        const truth = wordsBefore(wordEnds, heardChars);
        const byAlignment = words.filter((w) => w.endMs <= cutMs).length;
        // The ledger's estimate without timings: the text spread over the audio, back to a space.
        const proportional = Math.floor((text.length * cutMs) / durationMs);
        const byEstimate = wordsBefore(wordEnds, Math.max(0, text.lastIndexOf(' ', proportional)));
        const at = (n: number): number => (n === 0 ? 0 : wordEnds[n - 1]!);
        aligned.push(Math.abs(at(byAlignment) - at(truth)));
        estimated.push(Math.abs(at(byEstimate) - at(truth)));
        if (Math.abs(byAlignment - truth) <= 1) alignedWithinWord++;
        if (Math.abs(byEstimate - truth) <= 1) estimatedWithinWord++;
        cuts++;
      }
    }
  printTable(
    `Heard text at random cuts vs the local service's character timings (${BUILT_IN_VOICE_IDS.length} voices × ${BOT_SENTENCES.length} sentences × ${CUTS} cuts, 24 kHz)`,
    ['method', 'cuts', 'error p50 chars', 'p95', 'within one word', 'time per s of audio'],
    [
      [
        'forced alignment',
        String(cuts),
        fmt(median(aligned), 0),
        fmt(percentile(aligned, 95), 0),
        pct(alignedWithinWord, cuts),
        `${fmt(cpuMs / (audioMs / 1000), 1)} ms (failed: ${failures})`,
      ],
      [
        'proportional estimate',
        String(cuts),
        fmt(median(estimated), 0),
        fmt(percentile(estimated, 95), 0),
        pct(estimatedWithinWord, cuts),
        '—',
      ],
    ],
  );
}
