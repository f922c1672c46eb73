/**
 * Silence inside a streamed answer (`npm run bench -- answers`): an LLM's answer streamed word by word
 * at 5, 12 and 30 words a second into a speaker on the local speech service, as a relay app streams
 * its tokens. The sink plays what it is given in real time (a gateway's buffer): a silence is a
 * stretch after the answer's first audio when that buffer had run dry (pauses the engine put inside
 * its own audio are not counted). Whole sentences (the speaker before: `keepTalking: false`) against
 * cutting a sentence when the audio queued would run out first. Target: the longest ≤ 200 ms at 12
 * words a second.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startApp } from '../src/app/app.js';
import { loadConfig } from '../src/app/config.js';
import { createLogger } from '../src/app/logger.js';
import type { WireFormat } from '../src/audio/framer.js';
import { Speaker } from '../src/speaker/speaker.js';
import { BUILT_IN_VOICE_ID } from '../src/service/voices/builtin.js';
import { SpeechClient } from '../src/speech/client.js';
import { TimingSink } from './speaker.js';
import { fmt, median, percentile, printTable } from './stats.js';

const KEY = 'bench-key-0123456789abcdef';
const FORMAT: WireFormat = { encoding: 'mulaw', sampleRate: 8000, channels: 1 };
const RATES = [5, 12, 30];
/** Answers as an LLM writes them: a short opener, then sentences of 8 to 26 words. */
const ANSWERS = [
  'Sure, I can help with that. Your order left our warehouse in Columbus this morning and the carrier expects to deliver it to your front door by Thursday afternoon at the latest. If nobody is home, they will leave a note with a number you can call to arrange another delivery at a time that suits you.',
  'Good question. The basic plan includes unlimited calls within the country, five gigabytes of data every month and voicemail, while the premium plan adds international roaming in more than forty countries together with a second line for another member of your household. You can switch plans at any time from the app.',
  'Let me check. Your appointment with Doctor Patel is confirmed for Tuesday the fourteenth at half past ten in the morning, and the clinic asks that you arrive fifteen minutes early to fill in the new patient forms at the front desk. Please bring your insurance card and a list of the medicines you take.',
  'Of course. To reset your password, open the sign-in page, choose the link that says you forgot your password, and enter the email address you used when you created your account so that we can send you a code. The code is valid for ten minutes, after which you can ask for a new one.',
];
const ROUNDS = Number(process.env['ANSWERS_ROUNDS'] ?? 2);

/**
 * The stretches a gateway's buffer, playing in real time what arrives, ran dry after the first frame:
 * each frame plays from when it arrives or when the one before ends, whichever is later.
 */
function silences(arrivals: readonly number[], frameMs: number): number[] {
  const dry: number[] = [];
  let endsAt: number | undefined;
  for (const at of arrivals) {
    if (endsAt !== undefined && at > endsAt) dry.push(at - endsAt);
    endsAt = Math.max(at, endsAt ?? at) + frameMs;
  }
  return dry;
}

/** `text` word by word at `wordsPerSecond`, each gap ±40 % (tokens do not come evenly). */
async function* streamed(text: string, wordsPerSecond: number, seed: number): AsyncGenerator<string> {
  let s = seed;
  const words = text.split(' ');
  for (const [i, word] of words.entries()) {
    s = (s * 1103515245 + 12345) & 0x7fffffff;
    const jitter = 0.6 + ((s % 1000) / 1000) * 0.8;
    await new Promise((r) => setTimeout(r, (1000 / wordsPerSecond) * jitter));
    yield i === 0 ? word : ` ${word}`;
  }
}

interface Run {
  longest: number[];
  total: number[];
  segments: number[];
  firstAudioMs: number[];
}

export async function benchAnswers(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'voxbridge-bench-answers-'));
  const app = await startApp(
    loadConfig({ PORT: '0', DATA_DIR: dir, LOG_LEVEL: 'silent', SPEECH_API_KEY: KEY }),
    { logger: createLogger('silent') },
  );
  const client = new SpeechClient({ baseUrl: app.url, apiKey: KEY });
  try {
    const runs = new Map<string, Run>();
    for (let round = 0; round < ROUNDS; round++)
      for (const rate of RATES)
        for (const keepTalking of [false, true])
          for (const [i, answer] of ANSWERS.entries()) {
            const sink = new TimingSink(FORMAT, 200, false);
            const speaker = new Speaker({ source: client, sink, voiceId: BUILT_IN_VOICE_ID, keepTalking });
            const result = await speaker.say(streamed(answer, rate, 7 + i + round * 31)).result;
            await speaker.close();
            const key = `${rate}|${keepTalking}`;
            const run = runs.get(key) ?? { longest: [], total: [], segments: [], firstAudioMs: [] };
            const dry = silences(sink.arrivals, sink.frameMs);
            run.longest.push(Math.max(0, ...dry));
            run.total.push(dry.reduce((a, b) => a + b, 0));
            run.segments.push(result.metrics.requestedSegments + result.metrics.cachedSegments);
            run.firstAudioMs.push(result.metrics.firstFrameMs ?? Number.NaN);
            runs.set(key, run);
          }
    printTable(
      `Silence inside a streamed answer (${ANSWERS.length} answers × ${ROUNDS}, 52–58 words each, local service, a gateway's buffer playing in real time)`,
      [
        'words/s',
        'segments',
        'longest silence p50 / max (ms)',
        'silence per answer p50 / max (ms)',
        'first audio p50 (ms)',
      ],
      RATES.flatMap((rate) =>
        [false, true].map((keep) => {
          const r = runs.get(`${rate}|${keep}`)!;
          return [
            `${rate}, ${keep ? 'cut to keep talking' : 'whole sentences (before)'}`,
            fmt(median(r.segments), 0),
            `${fmt(percentile(r.longest, 50), 0)} / ${fmt(Math.max(...r.longest), 0)}`,
            `${fmt(percentile(r.total, 50), 0)} / ${fmt(Math.max(...r.total), 0)}`,
            fmt(median(r.firstAudioMs), 0),
          ];
        }),
      ),
    );
  } finally {
    await client.close();
    await app.close();
    await rm(dir, { recursive: true, force: true });
  }
}
