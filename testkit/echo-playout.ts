/**
 * What the bot plays into a call, for offline runs of the echo-aware detector: its replies one after
 * another, and per sample of the caller's timeline what the caller hears (before the echo path: feed it
 * to an `EchoLine`) and the reference the detector gets beside it, placed as the playout clock would
 * place it: exactly, each reply some ms off, or through gaps in the far end's playout that the reference
 * follows late. Deterministic for a seed.
 */
import { seeded } from './random.js';
import { speechBounds } from './vad-audio.js';

/** How the detector is fed: the rate, the reference's advance (samples), and the samples a push. */
export interface PlayoutGrid {
  sampleRate: number;
  advance: number;
  chunk: number;
}

/** One reply of the bot's: where its audio sits in the track, and where its speech starts and ends. */
export interface Reply {
  at: number;
  length: number;
  speechStart: number;
  speechEnd: number;
}

/** The bot's side of a call: the audio it plays (samples from the call's start) and its replies. */
export interface BotTrack {
  samples: Int16Array;
  replies: Reply[];
}

/**
 * What a line is fed, per sample of the caller's timeline: what the caller hears, the reference the
 * detector gets (advanced), and per push how far the reference moved within it.
 */
export interface Playout {
  heard: Int16Array;
  reference: Int16Array;
  moved: Int32Array;
  /** Where each reply's speech starts, as heard (samples). */
  replyStarts: number[];
}

/**
 * The bot talking for `seconds` (and one more, for the reference's advance): replies `lines[first]`,
 * `lines[first + 1]`, … with 0.2–0.7 s pauses between them.
 */
export function botTrack(
  lines: readonly Int16Array[],
  sampleRate: number,
  seconds: number,
  seed: number,
  first = 0,
): BotTrack {
  const random = seeded(seed);
  const samples = new Int16Array(Math.ceil(seconds * sampleRate) + sampleRate);
  const replies: Reply[] = [];
  let at = 0;
  for (let i = first; at < samples.length; i++) {
    const line = lines[i % lines.length]!;
    const { onset, end } = speechBounds(line);
    samples.set(line.subarray(0, samples.length - at), at);
    replies.push({ at, length: line.length, speechStart: at + onset, speechEnd: at + end });
    at += line.length + Math.floor(sampleRate * (0.2 + random() * 0.5));
  }
  return { samples, replies };
}

/** The caller hears the bot as played; the reference is where the playout clock has it. */
export function steady(bot: BotTrack, grid: PlayoutGrid): Playout {
  const n = bot.samples.length - grid.advance;
  return {
    heard: bot.samples.subarray(0, n),
    reference: bot.samples.subarray(grid.advance),
    moved: new Int32Array(Math.ceil(n / grid.chunk)),
    replyStarts: bot.replies.map((r) => r.speechStart),
  };
}

/**
 * Each reply heard up to `maxOffMs` from where the reference has it (a reply's playout estimate under
 * load lands some ms from the last one's).
 */
export function placedOff(bot: BotTrack, grid: PlayoutGrid, seed: number, maxOffMs: number): Playout {
  const random = seeded(seed);
  const playout = steady(bot, grid);
  const heard = new Int16Array(playout.heard.length);
  const replyStarts: number[] = [];
  for (const r of bot.replies) {
    const off = Math.round(((random() * 2 - 1) * maxOffMs * grid.sampleRate) / 1000);
    for (let i = 0; i < r.length; i++) {
      const t = r.at + off + i;
      if (t >= 0 && t < heard.length) heard[t] = bot.samples[r.at + i]!;
    }
    replyStarts.push(r.speechStart + off);
  }
  return { ...playout, heard, replyStarts };
}

/**
 * A gap of 20–200 ms in the far end's playout every 3–6 s: the caller hears nothing during it and
 * everything after it that much later; the reference follows `seenAfterMs` later (as returned marks
 * reveal it), the push where it does saying by how much it moved.
 */
export function throughGaps(bot: BotTrack, grid: PlayoutGrid, seed: number, seenAfterMs: number): Playout {
  const { sampleRate: rate, advance, chunk } = grid;
  const random = seeded(seed);
  const n = bot.samples.length - advance;
  const gaps: Array<{ at: number; length: number }> = [];
  for (let at = Math.floor(rate * (3 + random() * 3)); at < n; at += Math.floor(rate * (3 + random() * 3)))
    gaps.push({ at, length: Math.round((rate * (20 + random() * 180)) / 1000) });
  const shiftAt = (t: number): number => gaps.reduce((sum, g) => (g.at <= t ? sum + g.length : sum), 0);
  const heard = new Int16Array(n);
  for (let t = 0; t < n; t++) {
    const inGap = gaps.some((g) => t >= g.at && t < g.at + g.length);
    const from = t - shiftAt(t);
    heard[t] = inGap || from < 0 ? 0 : bot.samples[from]!;
  }
  const seenAfter = (rate * seenAfterMs) / 1000;
  const reference = new Int16Array(n);
  const moved = new Int32Array(Math.ceil(n / chunk));
  for (let c = 0, t = 0; t < n; c++, t += chunk) {
    const shift = shiftAt(t - seenAfter);
    const before = shiftAt(t - chunk - seenAfter);
    moved[c] = -(shift - before);
    for (let i = 0; i < chunk && t + i < n; i++) {
      const from = t + i + advance - shift;
      reference[t + i] = from >= 0 && from < bot.samples.length ? bot.samples[from]! : 0;
    }
  }
  return {
    heard,
    reference,
    moved,
    replyStarts: bot.replies.map((r) => r.speechStart + shiftAt(r.speechStart)),
  };
}
