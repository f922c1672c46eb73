/**
 * A corpus turn (turn-corpus.ts) replayed through the caller's VAD as a call runs it (the barge-in
 * detector at 8 kHz, 20 ms pushes, its turn tracking) and, at every window of silence within the turn,
 * through an end-of-turn rule: today's fixed silence, or src/barge-in/endpointing.ts given the words a
 * realtime speech-to-text would have delivered by then. Shared by the endpointing tests and
 * bench/turns.ts.
 */
import {
  decideEndOfTurn,
  SpeechOnsetDetector,
  type EndpointDecision,
  type EndpointingConfig,
  type SileroModel,
  type SpeechTurn,
} from '../src/barge-in/index.js';
import type { CorpusTurn, TimedWord } from './turn-corpus.js';

/** The calls' detector settings (config/default.yaml, `calls.bargeIn`); no bot talks over these turns. */
const CALL_DETECTOR = { sampleRate: 8000, minSpeechMs: 128, minSpeechWhileAudibleMs: 400 } as const;
const CHUNK_MS = 20;

/** One window of silence within the turn: when it ended on the line's timeline, and the silence so far. */
export interface SilenceStep {
  readonly atMs: number;
  readonly silenceMs: number;
}

/**
 * Every window of silence the detector counted within the turn it tracked, in order. Its own end of
 * turn is set out of reach, so the silences are seen whole however long they last.
 */
export async function silenceSteps(model: SileroModel, turn: CorpusTurn): Promise<SilenceStep[]> {
  const detector = new SpeechOnsetDetector(model, { ...CALL_DETECTOR, endOfTurnMs: 3_600_000, now: () => 0 });
  const chunk = (turn.sampleRate * CHUNK_MS) / 1000;
  const steps: SilenceStep[] = [];
  for (let o = 0; o < turn.samples.length; o += chunk) {
    await detector.push(turn.samples.subarray(o, o + chunk), {
      timestampMs: (o / turn.sampleRate) * 1000,
      botAudible: false,
    });
    const s = detector.turnSilence;
    if (!s || s.quietMs === 0) continue;
    const atMs = s.fromMs + s.quietMs;
    if (steps.at(-1)?.atMs !== atMs) steps.push({ atMs, silenceMs: s.quietMs });
  }
  detector.close();
  return steps;
}

/** The turns the detector itself ends after `endOfTurnMs` of silence (today's rule, as a call runs it). */
export async function detectorTurns(
  model: SileroModel,
  turn: CorpusTurn,
  endOfTurnMs: number,
): Promise<SpeechTurn[]> {
  const turns: SpeechTurn[] = [];
  const detector = new SpeechOnsetDetector(model, {
    ...CALL_DETECTOR,
    endOfTurnMs,
    now: () => 0,
    onTurnEnd: (t) => turns.push(t),
  });
  const chunk = (turn.sampleRate * CHUNK_MS) / 1000;
  for (let o = 0; o < turn.samples.length; o += chunk)
    await detector.push(turn.samples.subarray(o, o + chunk), {
      timestampMs: (o / turn.sampleRate) * 1000,
      botAudible: false,
    });
  detector.close();
  return turns;
}

/**
 * How a realtime speech-to-text writes: `written` as the script has it (punctuation where the writer
 * put it, so a pause mid-sentence has none); `plain`, no punctuation or capitals at all; `eager`, as
 * `written` but a full stop after the last word once the caller has been quiet `EAGER_STOP_MS` (a
 * transcriber that commits, and punctuates, on a short pause).
 */
export type SttStyle = 'written' | 'plain' | 'eager';
export const EAGER_STOP_MS = 300;

/** The transcript at `atMs` of a speech-to-text that delivers each word `latencyMs` after its end. */
export function sttTranscript(
  words: readonly TimedWord[],
  latencyMs: number,
  style: SttStyle = 'written',
): (atMs: number) => string {
  return (atMs) => {
    const heard = words.filter((w) => w.endMs + latencyMs <= atMs).map((w) => w.text);
    const last = words[heard.length - 1];
    if (style === 'plain') return heard.map((w) => w.toLowerCase().replace(/[^\p{L}\p{N}']/gu, '')).join(' ');
    if (style === 'eager' && last && atMs >= last.endMs + Math.max(latencyMs, EAGER_STOP_MS))
      heard[heard.length - 1] =
        `${last.text.replace(/[.,;:!?]+$/u, '')}${/[?!]$/.test(last.text) ? '' : '.'}`;
    return heard.join(' ');
  };
}

export interface TurnEnd {
  /** When the turn was decided over, on the line's timeline. */
  readonly atMs: number;
  readonly silenceMs: number;
  /** The rule's decision (undefined for a fixed silence). */
  readonly decision?: EndpointDecision | undefined;
}

/** Where today's rule ends the turn: the first silence to reach `endOfTurnMs`. */
export function fixedEnd(steps: readonly SilenceStep[], endOfTurnMs: number): TurnEnd | undefined {
  const step = steps.find((s) => s.silenceMs >= endOfTurnMs);
  return step && { atMs: step.atMs, silenceMs: step.silenceMs };
}

/** Where the endpointing rule ends the turn, asked at every window of silence with the words so far. */
export function ruleEnd(
  steps: readonly SilenceStep[],
  transcriptAt: (atMs: number) => string,
  config?: EndpointingConfig,
): TurnEnd | undefined {
  for (const s of steps) {
    const decision = decideEndOfTurn({ transcript: transcriptAt(s.atMs), silenceMs: s.silenceMs }, config);
    if (decision.action === 'end') return { atMs: s.atMs, silenceMs: s.silenceMs, decision };
  }
  return undefined;
}

export interface TurnOutcome {
  /** Ended before the caller's last word was over: cut at a pause within the turn. */
  readonly premature: boolean;
  /** From the end of the last word to the decision (ms); undefined when cut or never ended. */
  readonly latencyMs: number | undefined;
  readonly end: TurnEnd | undefined;
}

export function outcome(turn: CorpusTurn, end: TurnEnd | undefined): TurnOutcome {
  const premature = end !== undefined && end.atMs < turn.endMs;
  return { premature, latencyMs: end && !premature ? end.atMs - turn.endMs : undefined, end };
}
