// Over 450 lines: one set of synthetic echo lines built once for every estimator check end to end.
/**
 * Echo-aware barge-in on deterministic synthetic lines: the bot's speech (the engine's, at −20 dBFS)
 * echoed back through a known path (delay, loss, a short impulse response, mu-law, line noise), the
 * caller's speech added at known times. The estimator must find the path, and follow it when it
 * changes; the detector must not take the echo for the caller, and must still hear the caller over it.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { dtmfTones } from '../../../src/audio/dtmf.js';
import { levelDbfs } from '../../../src/audio/level.js';
import { resampleWhole } from '../../../src/audio/resampler.js';
import {
  EchoEstimator,
  REFERENCE_ADVANCE_MS,
  SileroModel,
  SpeechOnsetDetector,
  type EchoVerdict,
} from '../../../src/barge-in/index.js';
import { defaultVoiceSpeech, espeakSpeech } from '../../../testkit/audio.js';
import { TALKERS_PROMPT } from '../../../testkit/prompts.js';
import { ECHO_PATHS, EchoLine, atLevel, type EchoPath } from '../../../testkit/echo-line.js';
import { seeded } from '../../../testkit/random.js';
import {
  nonSpeechSecond,
  NON_SPEECH_KINDS,
  speechBounds,
  UTTERANCES,
  VOICES,
} from '../../../testkit/vad-audio.js';

const RATE = 8000;
const WINDOW = 256;
const CHUNK = 160;
const ADVANCE = (REFERENCE_ADVANCE_MS * RATE) / 1000;
const ENGINE_RATE = 22_050;
const BOT_LINES = [
  'Hello, and thank you for calling. This is a demonstration of live speech over a phone line.',
  'You can interrupt me at any moment simply by speaking, and I will stop and listen.',
  'For opening hours, press one. To hear this menu again, press two. To leave a message, press three.',
  'The old bridge creaks as the travellers cross the river at dawn, and the ferryman counts their coins.',
];

/** The bot talking for `seconds`: its lines one after another, with pauses between them. */
let bot: Int16Array;
/**
 * Its lines, each synthesised once here: eSpeak's pitch flutter is pseudo-random and goes on from one
 * synthesis to the next, so the same text read later (after other tests') is not the same audio.
 */
let botLines: Int16Array[];
/** Caller utterances at −20 dBFS, with where their speech starts. */
let callers: Array<{ samples: Int16Array; onset: number }>;
let model: SileroModel;

/** The bot talking for 75 s: `lines` one after another, with pauses of 0.2–0.7 s between them. */
function botTalking(lines: readonly Int16Array[]): Int16Array {
  const random = seeded(5);
  const parts: Int16Array[] = [];
  let length = 0;
  for (let i = 0; length < RATE * 75; i++) {
    const pause = new Int16Array(Math.floor(RATE * (0.2 + random() * 0.5)));
    parts.push(lines[i % lines.length]!, pause);
    length += lines[i % lines.length]!.length + pause.length;
  }
  const track = new Int16Array(length + RATE);
  let offset = 0;
  for (const p of parts) {
    track.set(p, offset);
    offset += p.length;
  }
  return track;
}

let talkersPromptSpeech: Promise<Int16Array> | undefined;

/** The default voice saying `bench talkers`'s prompt, as `botTalking` plays it (synthesised once). */
function talkersPrompt(): Promise<Int16Array> {
  talkersPromptSpeech ??= defaultVoiceSpeech(TALKERS_PROMPT, RATE).then((speech) => botTalking([speech]));
  return talkersPromptSpeech;
}

beforeAll(async () => {
  botLines = await Promise.all(
    BOT_LINES.map(async (text, i) =>
      atLevel(resampleWhole(await espeakSpeech(text, i % 2 ? 'en-gb' : 'en-us', 50), ENGINE_RATE, RATE), -20),
    ),
  );
  bot = botTalking(botLines);
  callers = await Promise.all(
    UTTERANCES.slice(0, 6).map(async (text, i) => {
      const [voice, pitch] = VOICES[i % VOICES.length]!;
      const samples = atLevel(resampleWhole(await espeakSpeech(text, voice, pitch), ENGINE_RATE, RATE), -20);
      return { samples, onset: speechBounds(samples).onset };
    }),
  );
  model = await SileroModel.load();
}, 60_000);

interface Line extends EchoPath {
  noiseDbfs?: number;
  /** A new path from this second on. */
  change?: { atSeconds: number; path: EchoPath };
}

/** The caller's audio and the reference, window by window, for `seconds` of the bot talking. */
function* windows(
  line: Line,
  seconds: number,
  caller?: Int16Array,
): Generator<[Int16Array, Int16Array, number]> {
  const echo = new EchoLine({ sampleRate: RATE, ...line, seed: 3 });
  for (let t = 0; t + WINDOW + ADVANCE <= Math.min(bot.length, seconds * RATE); t += WINDOW) {
    if (line.change && t === Math.round((line.change.atSeconds * RATE) / WINDOW) * WINDOW)
      echo.setPath(line.change.path);
    const inbound = echo.next(bot.subarray(t, t + WINDOW), WINDOW, caller?.subarray(t, t + WINDOW));
    yield [inbound, bot.subarray(t + ADVANCE, t + ADVANCE + WINDOW), t / RATE];
  }
}

describe('echo estimator', () => {
  it.each([
    { delayMs: 40, erlDb: 6 },
    { delayMs: 300, erlDb: 6, noiseDbfs: -40 },
    { delayMs: 150, erlDb: 12, noiseDbfs: -45 },
  ])('finds the path of a line ($delayMs ms, $erlDb dB, noise $noiseDbfs dBFS) within about 3 s', (line) => {
    const estimator = new EchoEstimator(RATE);
    let convergedAt: number | undefined;
    let last: EchoVerdict | undefined;
    let echoWindows = 0;
    let callerWindows = 0;
    for (const [inbound, reference, at] of windows(line, 40)) {
      last = estimator.process(inbound, reference);
      if (last.converged) convergedAt ??= at;
      if (at > 3 && last.echo) {
        echoWindows++;
        if (last.caller) callerWindows++;
      }
    }
    // 300 ms, 6 dB at −40 dBFS: 3.07 s (under 3 s while a call’s first cell, half a transform’s frame,
    // pulled the line's noise floor 3 dB low: more of its cells counted for the search).
    expect(convergedAt).toBeLessThan(3.2);
    expect(Math.abs(last!.delayMs! - line.delayMs)).toBeLessThanOrEqual(16);
    expect(Math.abs(last!.erlDb! - line.erlDb)).toBeLessThan(5);
    // The bot talked nearly all the time: its echo was expected, and explained, in nearly every window.
    expect(echoWindows).toBeGreaterThan(0.6 * ((37 * RATE) / WINDOW));
    // Flagged windows are not barge-ins (Silero and the run length judge them; the minute-long tests
    // below count those), but the estimator alone should explain all but a few in a hundred.
    expect(callerWindows / echoWindows).toBeLessThan(0.03);
  });

  it('on a line without echo (the carrier cancels it) finds none, and takes its noise for nobody', () => {
    const estimator = new EchoEstimator(RATE);
    let last: EchoVerdict | undefined;
    let callerWindows = 0;
    for (const [inbound, reference, at] of windows({ delayMs: 0, erlDb: 200, noiseDbfs: -45 }, 20)) {
      last = estimator.process(inbound, reference);
      if (at > 3 && last.caller) callerWindows++;
    }
    expect(last!.converged).toBe(true);
    expect(last!.delayMs).toBeUndefined();
    expect(callerWindows).toBe(0);
  });

  it('follows an echo path that changes mid-call (a transfer): re-converges on the new delay', () => {
    const estimator = new EchoEstimator(RATE);
    const delays: Array<[number, number | undefined]> = [];
    const line = {
      delayMs: 40,
      erlDb: 6,
      noiseDbfs: -45,
      change: { atSeconds: 20, path: { delayMs: 250, erlDb: 10 } },
    };
    for (const [inbound, reference, at] of windows(line, 40)) {
      const v = estimator.process(inbound, reference);
      delays.push([at, v.delayMs]);
    }
    const before = delays.find(([at]) => at >= 19.5)![1]!;
    expect(Math.abs(before - 40)).toBeLessThanOrEqual(16);
    const after = delays.filter(([at]) => at >= 24).map(([, d]) => d!);
    expect(after.every((d) => Math.abs(d - 250) <= 16)).toBe(true);
  });

  it('a path that never showed over the line (under −45 dB) moving is judged as a first path, not cautiously', () => {
    // A chance match of the caller's speech with the bot's on a line without echo looks like this: a
    // delay whose echo settles far under the line, then another delay. (Sooner: a path that moves later
    // by less than a quarter second is looked for as after a gap in the far end's playout.)
    const cautiousAfterMove = (erlDb: number): number => {
      const estimator = new EchoEstimator(RATE);
      const line = { delayMs: 250, erlDb, change: { atSeconds: 20, path: { delayMs: 60, erlDb } } };
      let found = 0;
      let cautious = 0;
      for (const [inbound, reference, at] of windows(line, 40)) {
        const v = estimator.process(inbound, reference);
        if (at > 15 && at < 20 && v.converged && v.delayMs !== undefined && Math.abs(v.delayMs - 250) <= 16)
          found++;
        if (at >= 20 && v.cautious) cautious++;
      }
      expect(found).toBeGreaterThan(0); // the first path was found
      return cautious;
    };
    expect(cautiousAfterMove(12)).toBeGreaterThan(0); // an audible path moved: cautious while it settles
    expect(cautiousAfterMove(50)).toBe(0);
  });

  it('on a line whose echo never shows over it, a caller talking over the bot is taken for the caller, not for the bot at its loudest', () => {
    // The caller talks over the bot from 20 s on, and the path moves then. Its echo, 50 dB under the
    // bot, stays under the least line a caller must stand over (−70 dBFS): no path is found from it,
    // and a delay found later is most likely the caller's speech matching the bot's by chance. Either
    // way the echo is taken as on a line with no echo in sight, not as loud as a hybrid lets it be (6 dB
    // under the bot). (A path found and settled under −45 dB is judged so too when it moves:
    // path-status.ts, `INAUDIBLE_GAIN_DB`; with that floor a bot at −20 dBFS has none.)
    const estimator = new EchoEstimator(RATE);
    const track = new Int16Array(45 * RATE);
    for (let k = 0, t = 20 * RATE; t + 2 * RATE < track.length; k++, t += 2 * RATE)
      track.set(callers[k % callers.length]!.samples.subarray(0, 2 * RATE), t);
    const line = { delayMs: 60, erlDb: 50, change: { atSeconds: 20, path: { delayMs: 250, erlDb: 50 } } };
    let talking = 0;
    let heard = 0;
    let unsettled = 0;
    for (const [inbound, reference, at] of windows(line, 45, track)) {
      const v = estimator.process(inbound, reference);
      const t = Math.round(at * RATE);
      // The caller's windows (louder than −35 dBFS), after the move.
      if (at >= 20 && levelDbfs(track.subarray(t, t + WINDOW)) > -35) {
        talking++;
        if (v.caller) heard++;
        if (!v.converged) unsettled++;
      }
    }
    expect(talking).toBeGreaterThan(300);
    expect(heard / talking).toBeGreaterThan(0.9);
    // Not a path settling under the cautious rule: the line is judged as having no echo.
    expect(unsettled / talking).toBeLessThan(0.1);
  });

  it('refuses a reference of another length', () => {
    expect(() => new EchoEstimator(RATE).process(new Int16Array(256), new Int16Array(255))).toThrow(
      RangeError,
    );
  });
});

describe('echo-aware barge-in detector', () => {
  /**
   * Feeds `seconds` of the line in 20 ms chunks; the onsets found, as detected (ms). `echo: false`:
   * without echo detection; `'bot silent'`: neither a reference nor the bot audible. `voice`: the bot's
   * audio (default eSpeak's lines, `bot`).
   */
  async function run(
    line: Line,
    seconds: number,
    caller?: Int16Array,
    echo: boolean | 'bot silent' = true,
    denoise = true,
    voice = bot,
  ): Promise<number[]> {
    const detector = new SpeechOnsetDetector(model, {
      sampleRate: RATE,
      echo: echo === true,
      denoise,
      now: () => 0,
    });
    const line20 = new EchoLine({ sampleRate: RATE, ...line, seed: 3 });
    const onsets: number[] = [];
    for (let t = 0; t + CHUNK + ADVANCE <= Math.min(voice.length, seconds * RATE); t += CHUNK) {
      if (line.change && t === line.change.atSeconds * RATE) line20.setPath(line.change.path);
      const inbound = line20.next(voice.subarray(t, t + CHUNK), CHUNK, caller?.subarray(t, t + CHUNK));
      const onset = await detector.push(inbound, {
        timestampMs: (t / RATE) * 1000,
        botAudible: echo !== 'bot silent',
        reference: echo === true ? voice.slice(t + ADVANCE, t + ADVANCE + CHUNK) : undefined,
      });
      if (onset) onsets.push(onset.detectedMs);
    }
    return onsets;
  }

  /** The caller talking over the bot from 10 s on, every 5 s; the true onsets (ms). */
  function talkOver(seconds: number): { track: Int16Array; onsets: number[] } {
    const track = new Int16Array(seconds * RATE);
    const onsets: number[] = [];
    for (let k = 0, t = 10 * RATE; t + 3 * RATE < track.length; k++, t += 5 * RATE) {
      const u = callers[k % callers.length]!;
      track.set(u.samples.subarray(0, Math.min(u.samples.length, track.length - t)), t);
      onsets.push(((t + u.onset) / RATE) * 1000);
    }
    return { track, onsets };
  }

  it("the caller talking over the bot does not drag the echo path's loss down with it", () => {
    const estimator = new EchoEstimator(RATE);
    let lowest = Number.POSITIVE_INFINITY;
    const line = { delayMs: 150, erlDb: 12, noiseDbfs: -40 };
    for (const [inbound, reference, at] of windows(line, 75, talkOver(75).track)) {
      const v = estimator.process(inbound, reference);
      if (at > 5 && v.converged && v.erlDb !== undefined) lowest = Math.min(lowest, v.erlDb);
    }
    // The echo is never taken for much louder than it is (which would hide the caller's next words).
    expect(lowest).toBeGreaterThan(9);
  });

  it('on a 6 dB line at 10 dB SNR, the caller talking over the bot does not make its echo louder than it is', () => {
    // A caller as loud as the bot stands 6 dB over this echo, under the estimator's margins in many
    // windows, and those count for the echo's loss: at the median tracker's full pace it climbed
    // towards the caller. Measured (lowest / 5th percentile of the loss over the minute, dB): 40 ms
    // 5.45 / 6.19 and 300 ms 4.61 / 5.53; at full pace upward, 4.00 / 4.82 and 2.68 / 4.15.
    for (const delayMs of [40, 300]) {
      const estimator = new EchoEstimator(RATE);
      const losses: number[] = [];
      for (const [inbound, reference, at] of windows(
        { delayMs, erlDb: 6, noiseDbfs: -30 },
        75,
        talkOver(75).track,
      )) {
        const v = estimator.process(inbound, reference);
        if (at > 5 && v.converged && v.erlDb !== undefined) losses.push(v.erlDb);
      }
      losses.sort((x, y) => x - y);
      expect(losses.length, `${delayMs} ms`).toBeGreaterThan(1500);
      expect(losses[Math.floor(losses.length * 0.05)], `${delayMs} ms`).toBeGreaterThan(5);
      expect(losses[0], `${delayMs} ms`).toBeGreaterThan(4.25);
    }
  });

  it('a delay moving by a cell or two (150 ms lies between cells) under talk-over is the same path, judged without caution', () => {
    const estimator = new EchoEstimator(RATE);
    let last: EchoVerdict | undefined;
    let smallMoves = 0;
    /** How far the delay moved (ms) each time the verdict turned cautious. */
    const cautiousAfter: number[] = [];
    const line = { delayMs: 150, erlDb: 12, noiseDbfs: -40 };
    for (const [inbound, reference] of windows(line, 75, talkOver(75).track)) {
      const v = estimator.process(inbound, reference);
      if (last?.converged && v.delayMs !== last.delayMs && Math.abs(v.delayMs! - last.delayMs!) <= 16)
        smallMoves++;
      if (v.cautious && last && !last.cautious) cautiousAfter.push(Math.abs(v.delayMs! - last.delayMs!));
      last = v;
    }
    expect(smallMoves).toBeGreaterThan(0);
    // Only a move past the prediction's slop (±2 cells) is a new path to settle.
    expect(cautiousAfter.every((ms) => ms > 16)).toBe(true);
  });

  it.each([
    { delayMs: 40, erlDb: 6 },
    { delayMs: 300, erlDb: 6, noiseDbfs: -40 },
    { delayMs: 150, erlDb: 12, noiseDbfs: -30 },
  ])(
    'a minute of the bot talking to a caller who only echoes it ($delayMs ms, $erlDb dB, noise $noiseDbfs) barges in never once the path is known',
    async (line) => {
      const found = await run(line, 60);
      // Before the path is known (the first second or two), the loudest lines may cut the bot once.
      expect(found.filter((d) => d < 2500).length).toBeLessThanOrEqual(1);
      expect(found.filter((d) => d >= 2500)).toEqual([]);
    },
    60_000,
  );

  it('the same minute without echo detection barges in on the echo (the cautious 400 ms rule is not enough)', async () => {
    expect((await run({ delayMs: 40, erlDb: 6 }, 60, undefined, false)).length).toBeGreaterThan(3);
  }, 60_000);

  it.each([
    { delayMs: 40, erlDb: 6, noiseDbfs: -45 },
    { delayMs: 300, erlDb: 6, noiseDbfs: -40 },
    { delayMs: 0, erlDb: 200, noiseDbfs: -40 },
  ])(
    'the caller talking over the bot ($delayMs ms, $erlDb dB) is heard after a short run of speech',
    async (line) => {
      const { track, onsets } = talkOver(45);
      const found = (await run(line, 45, track)).filter((d) => d >= 2500);
      const latencies = onsets.map((on) => found.find((d) => d >= on && d < on + 1500)! - on);
      // Every onset caught; no onset where the caller said nothing.
      expect(latencies.every((l) => Number.isFinite(l))).toBe(true);
      expect(found.length).toBe(onsets.length);
      latencies.sort((a, b) => a - b);
      // On the inbound timeline, so not a wall-clock figure: the median within the 250 ms target.
      expect(latencies[Math.floor(latencies.length / 2)]).toBeLessThan(250);
      expect(latencies.at(-1)).toBeLessThan(1000);
    },
    60_000,
  );

  it('before the path is known, a caller talking over the bot is heard after the short run of speech', async () => {
    // The first second of the bot on a call: the echo is taken at its loudest (6 dB under the bot),
    // and speech over that needs minSpeechMs, not the 400 ms rule.
    const latencies: number[] = [];
    for (const [i, line] of [
      { delayMs: 0, erlDb: 200 },
      { delayMs: 80, erlDb: 20 },
      { delayMs: 150, erlDb: 12, noiseDbfs: -45 },
    ].entries())
      for (const u of callers.slice(i * 2, i * 2 + 2)) {
        const track = new Int16Array(4 * RATE);
        const at = Math.round(0.8 * RATE);
        track.set(u.samples.subarray(0, track.length - at), at);
        const onsetMs = ((at + u.onset) / RATE) * 1000;
        const found = await run(line, 4, track);
        // Nothing before the caller spoke (the echo alone), and the first onset soon after.
        expect(found.length).toBeGreaterThan(0);
        expect(found[0]).toBeGreaterThan(onsetMs);
        expect(found[0]).toBeLessThan(onsetMs + 1500);
        latencies.push(found[0]! - onsetMs);
      }
    latencies.sort((a, b) => a - b);
    // On the inbound timeline: the 400 ms rule could not decide in under 400 ms of speech.
    expect(latencies[Math.floor(latencies.length / 2)]).toBeLessThan(350);
  }, 60_000);

  it('a 300 ms "Hello?" over the first words of a call, 0.5 to 2.5 s in, is caught on every line, and nothing before it', async () => {
    // Before the path is known the echo is bounded lag by lag (echo/echo-bound.ts): a short word over
    // the greeting stands over what the echo could be, on lines with echo (40–300 ms, 6–30 dB) and
    // without, and the echo alone cuts nothing. At −20 dBFS (as loud as the bot) on every line; said
    // softly (−28 dBFS) where the echo is softer than that (12 dB down and more, or none), from 1 s in:
    // the rule before (the bot at its loudest, 6 dB down) missed 9 of those 12. In the first half second
    // the echo of the call's first words may still be on its way at any lag not yet heard, and a soft
    // word there is not told from it.
    const spoken = await espeakSpeech('Hello?', 'en-us', 50);
    const late: string[] = [];
    const latencies: number[] = [];
    for (const [level, paths] of [
      [-20, ECHO_PATHS],
      [-28, ECHO_PATHS.filter((p) => p === undefined || p.erlDb >= 12)],
    ] as const) {
      const said = atLevel(resampleWhole(spoken, ENGINE_RATE, RATE), level);
      const { onset } = speechBounds(said);
      const hello = said.slice(onset, onset + Math.round(0.3 * RATE));
      for (const path of paths) {
        const line = path ?? { delayMs: 0, erlDb: 200 };
        for (const atSeconds of level === -20 ? [0.5, 1.0, 1.5, 2.5] : [1.0, 1.5, 2.5]) {
          const track = new Int16Array(4 * RATE);
          const at = Math.round(atSeconds * RATE);
          track.set(hello, at);
          const found = await run(line, atSeconds + 1.5, track);
          const what = `${level} dBFS, ${path ? `${path.delayMs} ms, ${path.erlDb} dB` : 'no echo'}, at ${atSeconds} s`;
          expect(
            found.filter((d) => d < atSeconds * 1000),
            `${what}: cut before the caller spoke`,
          ).toEqual([]);
          if (found.length === 0) {
            late.push(`${what}: missed`);
            continue;
          }
          const latency = found[0]! - atSeconds * 1000;
          latencies.push(latency);
          // Caught while it is said, or just after.
          if (latency > 500) late.push(`${what}: ${latency.toFixed(0)} ms`);
        }
      }
    }
    expect(late).toEqual([]);
    latencies.sort((a, b) => a - b);
    console.info(
      `"Hello?" in a call's first seconds: onset → decision p50 ${latencies[Math.floor(latencies.length / 2)]} ms, max ${latencies.at(-1)} ms`,
    );
  }, 120_000);

  it('new utterances after 1–10 s of silence on converged near-silent lines (−60 dBFS, μ-law): their echo cuts none of 216', async () => {
    // Each reply's first moments: the path is known, the line is silent but for its μ-law floor, and the
    // bot starts again; its echo must not pass for the caller. 50+ replies a line.
    const random = seeded(11);
    const lines = botLines;
    const parts: Int16Array[] = [];
    const starts: number[] = [];
    let length = 0;
    for (let i = 0; starts.length < 54; i++) {
      const pause = new Int16Array(Math.floor(RATE * (1 + random() * 9)));
      parts.push(pause);
      length += pause.length;
      starts.push(length);
      const reply = lines[i % lines.length]!;
      parts.push(reply);
      length += reply.length;
    }
    const track = new Int16Array(length + RATE);
    let offset = 0;
    for (const p of parts) {
      track.set(p, offset);
      offset += p.length;
    }
    // As the caller hears it: each reply up to ±30 ms from where the reference has it (a reply's
    // playout estimate lands some ms from the last one's).
    const heard = new Int16Array(track.length);
    for (const [i, start] of starts.entries()) {
      const off = Math.round((random() * 2 - 1) * 0.03 * RATE);
      const reply = lines[i % lines.length]!;
      heard.set(reply.subarray(0, Math.min(reply.length, heard.length - start - off)), start + off);
    }
    const cut: string[] = [];
    for (const path of ECHO_PATHS) {
      if (!path) continue;
      const detector = new SpeechOnsetDetector(model, { sampleRate: RATE, echo: true, now: () => 0 });
      const line = new EchoLine({ sampleRate: RATE, ...path, noiseDbfs: -60, seed: 5 });
      for (let t = 0; t + CHUNK + ADVANCE <= track.length - RATE; t += CHUNK) {
        const inbound = line.next(heard.subarray(t, t + CHUNK), CHUNK);
        const onset = await detector.push(inbound, {
          timestampMs: (t / RATE) * 1000,
          botAudible: true,
          reference: track.slice(t + ADVANCE, t + ADVANCE + CHUNK),
        });
        // The first 10 s: the path is being found (counted elsewhere).
        if (onset && t > 10 * RATE) {
          const reply = starts.findLastIndex((s) => s <= t);
          cut.push(
            `${path.delayMs} ms, ${path.erlDb} dB: ${((t - starts[reply]!) / RATE).toFixed(2)} s into reply ${reply}`,
          );
        }
      }
    }
    expect(cut).toEqual([]);
  }, 300_000);

  it('on a noisy line without echo (10 dB SNR), the caller talking over the bot is heard as when the bot is silent', async () => {
    // The estimator's energy rule would miss soft onsets in that noise: once the line is found clean,
    // Silero judges what rises over its noise, exactly as with the bot silent.
    const { track } = talkOver(45);
    const line = { delayMs: 0, erlDb: 200, noiseDbfs: -30 };
    const talking = (await run(line, 45, track)).filter((d) => d >= 2500);
    expect(talking.length).toBeGreaterThan(0);
    expect(talking).toEqual((await run(line, 45, track, 'bot silent')).filter((d) => d >= 2500));
  }, 60_000);

  it('on a noisy line (10 dB SNR), Silero hears the caller sooner through the noise suppressor', async () => {
    const { track, onsets } = talkOver(60);
    const line = { delayMs: 0, erlDb: 200, noiseDbfs: -30 };
    const latencies = async (denoise: boolean): Promise<number[]> => {
      const found = (await run(line, 60, track, 'bot silent', denoise)).filter((d) => d >= 2500);
      expect(found.length).toBe(onsets.length);
      return onsets.map((on) => found.find((d) => d >= on && d < on + 1500)! - on);
    };
    const suppressed = await latencies(true);
    const raw = await latencies(false);
    // Measured: the 10 onsets in 1551 ms in all, none over 200; Silero hearing the line as it came,
    // 2383 ms, the slowest 640 ("No, that is not right": its run broke at the comma). With a 160 ms
    // run, 1871 and 2683.
    const sum = (xs: number[]): number => xs.reduce((a, b) => a + b);
    expect(Math.max(...suppressed)).toBeLessThan(300);
    expect(sum(suppressed)).toBeLessThan(0.8 * sum(raw));
  }, 60_000);

  it('on a noisy line with echo (150 ms, 12 dB, 10 dB SNR), a caller talking over the bot is heard soon', async () => {
    // A soft onset over the echo and the noise stays a little over both through a window rather than
    // far over them in single cells: the window's pooled bands hear it.
    const { track, onsets } = talkOver(60);
    const found = (await run({ delayMs: 150, erlDb: 12, noiseDbfs: -30 }, 60, track)).filter(
      (d) => d >= 2500,
    );
    const latencies = onsets.map((on) => found.find((d) => d >= on && d < on + 1500)! - on);
    expect(latencies.every((l) => Number.isFinite(l))).toBe(true);
    expect(found.length).toBe(onsets.length);
    // On the inbound timeline. Measured: 10 onsets in 2031 ms in all. The echo, 2 dB under the noise,
    // is never found here, and is taken as loud as it could be and hide in that noise (path-status.ts,
    // `MAX_UNSEEN_GAIN`); taken 20 dB under the bot, 1807 ms (median 192), but a quieter bot's echo then
    // passed for the caller. With a 160 ms run, 2959 (median 219), and judged cell by cell alone the
    // echo's veto held two of them back by 100–160 ms more (3311 ms).
    latencies.sort((a, b) => a - b);
    expect(latencies[Math.floor(latencies.length / 2)]).toBeLessThan(250);
    expect(latencies.reduce((a, b) => a + b)).toBeLessThan(2200);
  }, 60_000);

  it("the default voice's echo (Flite: quieter than eSpeak's, its pauses never silent) never barges in, on a line with no noise or hidden in a line's noise", async () => {
    // Flite's pauses echo as G.711's crumbs, a few dB over a silent line's own (the line a caller
    // must stand over is never under −70 dBFS); on a 12 dB path its echo sits at a −40 dBFS line's
    // noise, is never found, and is taken as loud as it could be and hide there. Measured: none on any
    // of the three; without the floor and the hidden echo, the first line alone barged in 4 times in
    // its 60 s.
    const voice = botTalking(await Promise.all(BOT_LINES.map((text) => defaultVoiceSpeech(text, RATE))));
    for (const line of [
      { delayMs: 40, erlDb: 6 },
      { delayMs: 150, erlDb: 12 },
      { delayMs: 150, erlDb: 12, noiseDbfs: -40 },
    ]) {
      const found = await run(line, 60, undefined, true, true, voice);
      expect({ line, found }).toEqual({ line, found: [] });
    }
    // A call's first seconds, `bench talkers`'s prompt on two of its lines: the line was found to show
    // no echo there while the first seconds' bound still ran, which then took the echo 20 dB under the
    // bot; both were cut about 3 s in (and again when the rest was resumed).
    const prompt = await talkersPrompt();
    for (const line of [
      { delayMs: 152, erlDb: 12, noiseDbfs: -41.7 },
      { delayMs: 262, erlDb: 14, noiseDbfs: -42.8 },
    ]) {
      const found = await run(line, 10, undefined, true, true, prompt);
      expect({ line, found }).toEqual({ line, found: [] });
    }
  }, 60_000);

  it('over a 6 dB hybrid (40 ms, 20 dB SNR), the canceller takes the echo out from under a caller as loud as it', async () => {
    // The caller's first syllable stands 4–6 dB over an echo that loud, under the estimator's margin;
    // over what the canceller leaves of the echo, it stands 20 dB and more.
    const { track, onsets } = talkOver(60);
    const found = (await run({ delayMs: 40, erlDb: 6, noiseDbfs: -40 }, 60, track)).filter((d) => d >= 2500);
    const latencies = onsets.map((on) => found.find((d) => d >= on && d < on + 1500)! - on);
    expect(latencies.every((l) => Number.isFinite(l))).toBe(true);
    // One more on the echo alone at most, 28.7 s in (so without the canceller too).
    expect(found.length).toBeLessThanOrEqual(onsets.length + 1);
    // On the inbound timeline. Measured: 10 onsets in 1487 ms in all, none over 200. With a 160 ms
    // run, 1999 ms, none over 300, and without the canceller 2223 ms (two of them 264 and 320 ms,
    // against 168 and 192).
    expect(latencies.reduce((a, b) => a + b)).toBeLessThan(1600);
  }, 60_000);

  it('DTMF, clicks, pops and hum over a talking bot on an echoing line never barge in', async () => {
    const random = seeded(9);
    const track = new Int16Array(40 * RATE);
    // From 5 s on, every kind of non-speech a line carries, one second each, four times over, but for
    // the bursts of loud noise: over the bot's echo Silero gives a burst 27 dB over the line's noise
    // 0.3–0.8, so whether it makes a run depends on where the burst falls against the windows. Placed 0
    // to 25 ms later (9 placements), the burst at 21 s barged in at 5 on the audio as it came, at all 9
    // through the noise suppressor. As far as the detector can tell such a burst is a door slammed, and
    // it is taken back (docs/calls.md).
    const loud = new Set(['loud white noise', 'pink noise']);
    for (let second = 5; second < 40; second++) {
      const kind = NON_SPEECH_KINDS[(second - 5) % NON_SPEECH_KINDS.length]!;
      // A second of plain line noise in place of a burst.
      track.set(nonSpeechSecond(loud.has(kind) ? 0 : second - 5, RATE, random), second * RATE);
    }
    const found = await run({ delayMs: 120, erlDb: 12, noiseDbfs: -45 }, 40, track);
    expect(NON_SPEECH_KINDS.length).toBe(10);
    expect(found.filter((d) => d >= 2500)).toEqual([]);
  }, 60_000);

  it('a line crackling with clicks (3 to 8 a second) under a talking bot on a 6 dB echo line barges in at most once', async () => {
    // Silero hears the echo under each click as speech; clicks every few hundred ms made a run of it
    // (17 barge-ins in 127 s on this line before clicks were told apart).
    const random = seeded(11);
    const track = new Int16Array(60 * RATE);
    const CLICKS = NON_SPEECH_KINDS.indexOf('clicks');
    for (let second = 3; second < 60; second++)
      track.set(nonSpeechSecond(10 * second + CLICKS, RATE, random), second * RATE);
    const found = await run({ delayMs: 300, erlDb: 6 }, 60, track);
    expect(found.filter((d) => d >= 2500).length).toBeLessThanOrEqual(1);
  }, 60_000);

  it('keys pressed while the bot starts talking on a 6 dB echo line, before its path is known, never barge in', async () => {
    // The echo is not known yet, so the tones are not explained away, and Silero takes the echo under
    // them for speech: the tones themselves must count as no speech. (Without that, 5 of these 6 calls
    // were cut.)
    const cut: number[] = [];
    for (const [i, digits] of ['1590', '*#2', '3847', '6', '0000', '12#'].entries()) {
      const track = new Int16Array(4 * RATE);
      track.set(
        atLevel(dtmfTones(digits, RATE), -10).subarray(0, 3 * RATE),
        Math.round((0.3 + 0.25 * i) * RATE),
      );
      const found = await run({ delayMs: i % 2 ? 300 : 40, erlDb: 6, noiseDbfs: -45 }, 4, track);
      if (found.some((d) => d >= 300)) cut.push(i);
    }
    expect(cut).toEqual([]);
  }, 60_000);

  /**
   * The echo alone, through a far end whose playout has gaps: from each gap on, the bot plays (and
   * echoes) that much later than the reference says, until the reference is placed afresh where it
   * plays (a returned mark shows it) 1.5 s later, and the read that passes that point says so.
   */
  async function throughGaps(
    line: Line,
    seconds: number,
    gaps: Array<{ atSeconds: number; ms: number }>,
    voice = bot,
  ) {
    const detector = new SpeechOnsetDetector(model, { sampleRate: RATE, echo: true, now: () => 0 });
    const echo = new EchoLine({ sampleRate: RATE, ...line, seed: 3 });
    const found: number[] = [];
    const heardShift = (t: number): number =>
      gaps.filter((g) => g.atSeconds * RATE <= t).reduce((sum, g) => sum + (g.ms * RATE) / 1000, 0);
    const referenceShift = (t: number): number => heardShift(t - 1.5 * RATE);
    for (let t = 0; t + CHUNK + ADVANCE <= Math.min(voice.length, seconds * RATE); t += CHUNK) {
      // What the caller hears: the bot as far behind as the gaps so far, silence within a gap.
      const played = new Int16Array(CHUNK);
      for (let i = 0; i < CHUNK; i++) {
        const inGap = gaps.some(
          (g) => t + i >= g.atSeconds * RATE && t + i < (g.atSeconds + g.ms / 1000) * RATE,
        );
        const from = t + i - heardShift(t + i);
        played[i] = inGap || from < 0 ? 0 : voice[from]!;
      }
      const inbound = echo.next(played, CHUNK);
      const shift = referenceShift(t);
      const from = t + ADVANCE - shift;
      const onset = await detector.push(inbound, {
        timestampMs: (t / RATE) * 1000,
        botAudible: true,
        reference: voice.slice(from, from + CHUNK),
        referenceMoved: shift - referenceShift(t - CHUNK) === 0 ? 0 : -(shift - referenceShift(t - CHUNK)),
      });
      if (onset) found.push(onset.detectedMs);
    }
    return found;
  }

  it('gaps in the far end’s playout (the echo comes later, then the reference catches up) never barge in', async () => {
    const gaps = [
      { atSeconds: 12, ms: 60 },
      { atSeconds: 20, ms: 120 },
      { atSeconds: 28, ms: 180 },
      { atSeconds: 36, ms: 100 },
    ];
    for (const line of [
      { delayMs: 104, erlDb: 17 },
      { delayMs: 300, erlDb: 6, noiseDbfs: -45 },
      { delayMs: 40, erlDb: 6, noiseDbfs: -40 },
    ]) {
      const found = await throughGaps(line, 45, gaps);
      expect({ line, found: found.filter((d) => d >= 2500) }).toEqual({ line, found: [] });
    }
  }, 60_000);

  it("a faint echo (the default voice's, 3–5 dB over the line's noise) neither cuts the bot where gaps in the far end's playout move it nor hides a caller", async () => {
    // So faint an echo seldom shows a gap as missing (a gap is seen where the echo stood 7.8 dB over
    // the noise), and the delay settled on may be a chance match: it is predicted at every lag up to
    // the delay and a gap's reach after it. Measured: none on either line; without it, 5 and 3 in the
    // same 45 s (the two lines `bench talkers` cut most under load).
    const prompt = await talkersPrompt();
    const gaps = [
      { atSeconds: 12, ms: 60 },
      { atSeconds: 16, ms: 180 },
      { atSeconds: 20, ms: 120 },
      { atSeconds: 25, ms: 200 },
      { atSeconds: 28, ms: 80 },
      { atSeconds: 33, ms: 150 },
      { atSeconds: 37, ms: 100 },
    ];
    const lines = [
      { delayMs: 48, erlDb: 16, noiseDbfs: -46.6 },
      { delayMs: 173, erlDb: 17, noiseDbfs: -46.4 },
    ];
    const cut: number[][] = [];
    for (const line of lines) cut.push((await throughGaps(line, 45, gaps, prompt)).filter((d) => d >= 5000));
    expect(cut).toEqual([[], []]);
    // A caller talking over it is heard as on a line without echo.
    const { track, onsets } = talkOver(40);
    const found = await run(lines[0]!, 40, track, true, true, prompt);
    const late = onsets.map((o) => (found.find((d) => d >= o && d < o + 1000) ?? Infinity) - o);
    expect(late.filter((ms) => ms > 400)).toEqual([]);
  }, 60_000);

  it('an echo path that changes mid-call costs at most one barge-in at the change, then none', async () => {
    const found = await run(
      { delayMs: 40, erlDb: 6, noiseDbfs: -45, change: { atSeconds: 15, path: { delayMs: 250, erlDb: 10 } } },
      60,
    );
    expect(found.filter((d) => d >= 2500 && d < 15_000)).toEqual([]);
    expect(found.filter((d) => d >= 15_000 && d < 17_000).length).toBeLessThanOrEqual(1);
    expect(found.filter((d) => d >= 17_000)).toEqual([]);
  }, 60_000);
});
