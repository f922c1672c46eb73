/**
 * The echo-aware barge-in detector offline, deterministic: the real `SpeechOnsetDetector` (energy gate,
 * noise suppressor, Silero and the echo estimator, in this thread) on a fixed clock, fed 20 ms chunks of
 * synthetic phone lines on the inbound timeline, no wall clock and no worker threads. Seeds are fixed,
 * so the output is the same, byte for byte, from run to run on one machine: a change that must not
 * change behaviour (a refactor) diffs it, and the last table's digests of every echo verdict and every
 * onset catch what the figures round away.
 *
 * 18 lines, all 8 kHz through mu-law: echo paths of 40–300 ms and 6–30 dB echo return loss, and lines
 * without echo, each with no line noise, at 20 and at 10 dB SNR (against the bot's and the caller's
 * −20 dBFS speech). The bot's speech is the default voice's (Flite, at its own level) and then eSpeak's
 * (`ECHO_OFFLINE_BOT`), replies with short pauses between them; the caller's are `UTTERANCES` ×
 * `VOICES` (testkit/vad-audio.ts) but one.
 *
 * - (a) Echo alone: the bot talks to a caller who only echoes it, `ECHO_OFFLINE_SECONDS` per line
 *   (default 120); every onset is a false barge-in. Also with each reply heard up to ±30 ms from
 *   where the reference has it (as the playout clock places replies under load), and with a gap of
 *   20–200 ms in the far end's playout every 3–6 s (the reference placed afresh 1.5 s after each, as
 *   returned marks reveal).
 * - (b) Talk-overs: the caller talks over the bot `ECHO_OFFLINE_TALK_OVERS` times per line (default
 *   30), from 5 s into the call on, 1.5–3.5 s after their last words end, so at every offset into a
 *   reply and into the pauses between them: onset → decision on the inbound timeline, and misses (no
 *   decision within 2 s).
 * - (c) A call's first 3 s, while the echo path is not known yet: `ECHO_OFFLINE_EARLY_CALLS` calls per
 *   line (default 24), the bot talking from the call's start and the caller's onset 0.3–2.7 s in; calls
 *   cut by the echo alone before the caller spoke, onset → decision, misses.
 *
 * `ECHO_OFFLINE_LINES` (comma-separated indices into the 18) runs some lines only.
 */
import { createHash, type Hash } from 'node:crypto';
import { resampleWhole } from '../src/audio/resampler.js';
import { SpeechOnsetDetector } from '../src/barge-in/detector.js';
import { REFERENCE_ADVANCE_MS, type EchoVerdict } from '../src/barge-in/echo.js';
import {
  SileroModel,
  SileroSession,
  type SileroResult,
  type SileroRunner,
  type VadSampleRate,
} from '../src/barge-in/silero.js';
import { defaultVoiceSpeech, espeakSpeech } from '../testkit/audio.js';
import { atLevel, EchoLine, ECHO_PATHS, LINE_NOISES_DBFS } from '../testkit/echo-line.js';
import {
  botTrack,
  placedOff,
  steady,
  throughGaps,
  type Playout,
  type PlayoutGrid,
} from '../testkit/echo-playout.js';
import { seeded } from '../testkit/random.js';
import { speechBounds, UTTERANCES, VOICES } from '../testkit/vad-audio.js';
import { printReport, type Line, type LineResult } from './echo-offline-report.js';
import { cpuUs, fmt } from './stats.js';

const RATE = 8000;
const CHUNK = 160;
const ENGINE_RATE = 22_050;
const GRID: PlayoutGrid = { sampleRate: RATE, advance: (REFERENCE_ADVANCE_MS * RATE) / 1000, chunk: CHUNK };
/**
 * The bot's voices, each run in turn (`ECHO_OFFLINE_BOT`, comma-separated): `flite`, the default voice
 * at its own level (what `npm start` speaks), and `espeak`, eSpeak's at −20 dBFS (the figures in
 * docs/calls.md before the default voice became Flite's).
 */
const BOT_VOICES = {
  flite: { title: 'the default voice (Flite, at its own level)', line: fliteLine },
  espeak: { title: "eSpeak's, at −20 dBFS", line: espeakLine },
} as const;
type BotVoice = keyof typeof BOT_VOICES;
function botVoices(): BotVoice[] {
  const names = (process.env['ECHO_OFFLINE_BOT'] ?? 'flite,espeak').split(',').map((v) => v.trim());
  for (const name of names)
    if (!(name in BOT_VOICES))
      throw new Error(`ECHO_OFFLINE_BOT: no bot voice ${JSON.stringify(name)} (flite, espeak)`);
  return names as BotVoice[];
}
const ECHO_SECONDS = Number(process.env['ECHO_OFFLINE_SECONDS'] ?? 120);
const TALK_OVERS = Number(process.env['ECHO_OFFLINE_TALK_OVERS'] ?? 30);
const EARLY_CALLS = Number(process.env['ECHO_OFFLINE_EARLY_CALLS'] ?? 24);
/** A talk-over not decided within this long after its onset is missed (as in `bench echo-lines`). */
const MISS_AFTER_MS = 2000;
/** A false barge-in this soon after a reply's speech starts (as heard) is at that reply's start. */
const REPLY_START_MS = 1000;
/** Talk-overs start this far into the call: the path is known by then on most lines. */
const TALK_FROM_MS = 5000;
/** How far from where the reference has it each reply is heard, at most (ms). */
const PLACEMENT_MS = 30;
/** The reference is placed afresh this long after a gap in the far end's playout (ms). */
const GAP_SEEN_AFTER_MS = 1500;

const BOT_LINES = [
  'Hello, and thank you for calling. This is a demonstration of live speech over a phone line.',
  'You can interrupt me at any moment simply by speaking, and I will stop and listen.',
  'For opening hours, press one. To hear this menu again, press two. To leave a message, press three.',
  'The old bridge creaks as the travellers cross the river at dawn, and the ferryman counts their coins.',
  'Your booking is confirmed for Friday at seven, a table for four by the window.',
  'I am sorry, I did not catch that. Could you say the name of the street again?',
];

interface Utterance {
  samples: Int16Array;
  onset: number;
}

/**
 * Silero and the echo estimation of this thread's session, every echo verdict folded into a digest and
 * shown to `observe` as it is given.
 */
class RecordingRunner implements SileroRunner {
  readonly verdicts: Hash = createHash('sha256');
  observe: ((verdict: EchoVerdict) => void) | undefined;
  private readonly fields = new Float64Array(7);

  constructor(private readonly session: SileroSession) {}

  get runtime(): string {
    return this.session.runtime;
  }

  run(input: Float32Array, state: Float32Array, sampleRate: VadSampleRate): Promise<SileroResult> {
    return this.session.run(input, state, sampleRate);
  }

  async echo(
    stream: number,
    inbound: Int16Array,
    reference: Int16Array,
    sampleRate: VadSampleRate,
    moved: number,
  ): Promise<EchoVerdict> {
    const v = await this.session.echo(stream, inbound, reference, sampleRate, moved);
    const f = this.fields;
    f[0] = Number(v.echo);
    f[1] = Number(v.caller);
    f[2] = Number(v.converged);
    f[3] = Number(v.cautious);
    f[4] = Number(v.clean);
    f[5] = v.delayMs ?? Number.NaN;
    f[6] = v.erlDb ?? Number.NaN;
    this.verdicts.update(new Uint8Array(f.buffer));
    this.observe?.(v);
    return v;
  }

  closeEcho(stream: number): void {
    this.session.closeEcho(stream);
  }
}

/**
 * One call on `line`: `ms` of the caller's timeline, chunk by chunk through the echo line into a fresh
 * detector; the onsets it reports, as decided (ms). `cpu`, if given, gets the detector's CPU time (µs),
 * the line's own work left out.
 */
async function runCall(
  model: SileroModel,
  line: Line,
  seed: number,
  playout: Playout,
  ms: number,
  caller?: Int16Array,
  cpu?: { us: number },
): Promise<number[]> {
  const detector = new SpeechOnsetDetector(model, { sampleRate: RATE, echo: true, now: () => 0 });
  const echo = new EchoLine({
    sampleRate: RATE,
    ...(line.path ?? { delayMs: 0, erlDb: 200 }),
    noiseDbfs: line.noiseDbfs,
    seed,
  });
  const decided: number[] = [];
  const end = Math.min(playout.heard.length, Math.round((ms * RATE) / 1000));
  try {
    for (let c = 0, t = 0; t + CHUNK <= end; c++, t += CHUNK) {
      const inbound = echo.next(playout.heard.subarray(t, t + CHUNK), CHUNK, caller?.subarray(t, t + CHUNK));
      const reference = playout.reference.slice(t, t + CHUNK);
      const cpu0 = cpu ? cpuUs() : 0;
      const onset = await detector.push(inbound, {
        timestampMs: (t / RATE) * 1000,
        botAudible: true,
        reference,
        referenceMoved: playout.moved[c]!,
      });
      if (cpu) cpu.us += cpuUs() - cpu0;
      if (onset) decided.push(onset.detectedMs);
    }
  } finally {
    detector.close();
  }
  return decided;
}

/** Of `decided`, the first within `MISS_AFTER_MS` of `onsetMs` (and not before it). */
function decisionFor(decided: readonly number[], onsetMs: number): number | undefined {
  return decided.find((d) => d >= onsetMs && d < onsetMs + MISS_AFTER_MS);
}

async function runLine(
  model: SileroModel,
  runner: RecordingRunner,
  line: Line,
  botLines: readonly Int16Array[],
  speech: readonly Utterance[],
): Promise<LineResult> {
  const seed = 1000 * (line.index + 1);
  // (a) The echo alone.
  const bot = botTrack(botLines, RATE, ECHO_SECONDS, seed + 1);
  let pathFoundMs: number | undefined;
  let last: EchoVerdict | undefined;
  let windows = 0;
  runner.observe = (v) => {
    windows++;
    if (pathFoundMs === undefined && v.converged) pathFoundMs = (windows * 256 * 1000) / RATE;
    last = v;
  };
  const steadyPlayout = steady(bot, GRID);
  const cpu = { us: 0 };
  const steadyOnsets = await runCall(
    model,
    line,
    seed + 2,
    steadyPlayout,
    ECHO_SECONDS * 1000,
    undefined,
    cpu,
  );
  runner.observe = undefined;
  const atReplyStart = steadyOnsets.filter((d) =>
    steadyPlayout.replyStarts.some((s) => d >= (s * 1000) / RATE && d < (s * 1000) / RATE + REPLY_START_MS),
  ).length;
  const offOnsets = await runCall(
    model,
    line,
    seed + 3,
    placedOff(bot, GRID, seed + 4, PLACEMENT_MS),
    ECHO_SECONDS * 1000,
  );
  const gapOnsets = await runCall(
    model,
    line,
    seed + 5,
    throughGaps(bot, GRID, seed + 6, GAP_SEEN_AFTER_MS),
    ECHO_SECONDS * 1000,
  );

  // (b) Talk-overs, 1.5–3.5 s after the caller's last words.
  const random = seeded(seed + 7);
  const talks: Array<{ at: number; u: Utterance }> = [];
  let at = (TALK_FROM_MS * RATE) / 1000;
  for (let k = 0; k < TALK_OVERS; k++) {
    const u = speech[(7 * k + 5 * line.index) % speech.length]!;
    at += Math.floor(RATE * random() * 2);
    talks.push({ at, u });
    at += u.samples.length + Math.floor(RATE * 1.5);
  }
  const talkBot = botTrack(botLines, RATE, at / RATE + 1, seed + 8, line.index);
  const talkPlayout = steady(talkBot, GRID);
  const track = new Int16Array(talkPlayout.heard.length);
  for (const { at: from, u } of talks) track.set(u.samples.subarray(0, track.length - from), from);
  const talkDecided = await runCall(model, line, seed + 9, talkPlayout, (at / RATE) * 1000, track);
  const result: LineResult = {
    line,
    cpuPct: cpu.us / 1000 / (ECHO_SECONDS * 10),
    echoMinutes: ECHO_SECONDS / 60,
    steady: steadyOnsets,
    steadyAtReplyStart: atReplyStart,
    pathFoundMs,
    delayMs: last?.delayMs,
    erlDb: last?.erlDb,
    placedOff: offOnsets,
    gaps: gapOnsets,
    talkOverMs: [],
    talkOverAtReplyStartMs: [],
    talkOverInPauseMs: [],
    talkOverMissed: 0,
    talkOverStray: 0,
    earlyMs: [],
    earlyCut: 0,
    earlyMissed: 0,
  };
  const matched = new Set<number>();
  for (const { at: from, u } of talks) {
    const onset = from + u.onset;
    const onsetMs = (onset / RATE) * 1000;
    const d = decisionFor(talkDecided, onsetMs);
    if (d === undefined) {
      result.talkOverMissed++;
      continue;
    }
    matched.add(d);
    result.talkOverMs.push(d - onsetMs);
    const reply = talkBot.replies.findLast((r) => r.speechStart <= onset);
    if (!reply || onset >= reply.speechEnd) result.talkOverInPauseMs.push(d - onsetMs);
    else if (onset - reply.speechStart < (RATE * REPLY_START_MS) / 1000)
      result.talkOverAtReplyStartMs.push(d - onsetMs);
  }
  result.talkOverStray = talkDecided.filter((d) => !matched.has(d)).length;

  // (c) A call's first seconds: the caller's onset 0.3–2.7 s in.
  for (let k = 0; k < EARLY_CALLS; k++) {
    const u = speech[(11 * k + 7 * line.index) % speech.length]!;
    const onsetMs = 300 + (EARLY_CALLS > 1 ? (2400 * k) / (EARLY_CALLS - 1) : 0);
    // eSpeak's lead-in (silence) before the onset is shorter than the 0.3 s before it.
    const from = Math.round((onsetMs * RATE) / 1000) - u.onset;
    if (from < 0) throw new Error(`an utterance's speech starts after ${onsetMs} ms`);
    const callMs = onsetMs + MISS_AFTER_MS;
    const early = botTrack(botLines, RATE, callMs / 1000 + 1, seed + 10 + k, k + line.index);
    const playout = steady(early, GRID);
    const caller = new Int16Array(playout.heard.length);
    caller.set(u.samples.subarray(0, caller.length - from), from);
    const trueOnsetMs = ((from + u.onset) / RATE) * 1000;
    const decided = await runCall(model, line, seed + 30 + k, playout, callMs, caller);
    if (decided.some((d) => d < trueOnsetMs)) result.earlyCut++;
    const d = decisionFor(decided, trueOnsetMs);
    if (d === undefined) result.earlyMissed++;
    else result.earlyMs.push(d - trueOnsetMs);
  }
  return result;
}

/** eSpeak's speech, levelled at −20 dBFS: the lines the figures in docs/calls.md were measured on. */
async function espeakLine(text: string, i: number): Promise<Int16Array> {
  return atLevel(
    resampleWhole(await espeakSpeech(text, i % 2 ? 'en-gb' : 'en-us', 50), ENGINE_RATE, RATE),
    -20,
  );
}

/** The default voice's speech (Flite), at its own level, as `npm start` speaks it. */
async function fliteLine(text: string): Promise<Int16Array> {
  return defaultVoiceSpeech(text, RATE);
}

export async function benchEchoOffline(): Promise<void> {
  const cpu0 = process.cpuUsage();
  // The bot's lines first: eSpeak's pitch flutter goes on from one synthesis to the next, and its
  // lines were always synthesised before the callers'.
  const bots: Array<[BotVoice, Int16Array[]]> = [];
  for (const bot of botVoices()) bots.push([bot, await Promise.all(BOT_LINES.map(BOT_VOICES[bot].line))]);
  // Every sentence in every voice but one: eSpeak's en-us+f3 (breathy) differs from run to run.
  const voices = VOICES.filter(([voice]) => voice !== 'en-us+f3');
  const speech: Utterance[] = await Promise.all(
    voices.flatMap(([voice, pitch, rate]) =>
      UTTERANCES.map(async (text) => {
        const samples = atLevel(
          resampleWhole(await espeakSpeech(text, voice, pitch, rate), ENGINE_RATE, RATE),
          -20,
        );
        return { samples, onset: speechBounds(samples).onset };
      }),
    ),
  );
  const session = await SileroSession.create();
  const all: Line[] = LINE_NOISES_DBFS.flatMap((noiseDbfs) =>
    ECHO_PATHS.map((path) => ({ path, noiseDbfs })),
  ).map((l, index) => ({ ...l, index }));
  const only = process.env['ECHO_OFFLINE_LINES'];
  const lines = only ? only.split(',').map((i) => all[Number(i)]!) : all;
  for (const [bot, botLines] of bots) {
    console.log(`\n# The bot's voice: ${BOT_VOICES[bot].title}`);
    const runner = new RecordingRunner(session);
    const model = new SileroModel(runner);
    const results: LineResult[] = [];
    for (const line of lines) results.push(await runLine(model, runner, line, botLines, speech));
    printReport(results, {
      echoSeconds: ECHO_SECONDS,
      talkFromMs: TALK_FROM_MS,
      talkOvers: TALK_OVERS,
      earlyCalls: EARLY_CALLS,
      noises: LINE_NOISES_DBFS,
      verdictDigest: runner.verdicts.digest('hex'),
    });
  }
  const cpu = process.cpuUsage(cpu0);
  // Not on stdout, which must not change from run to run.
  console.error(`echo-offline: ${fmt((cpu.user + cpu.system) / 1e6, 1)} s of CPU`);
}
