/**
 * A relay session's talk cycle: the app's tokens up to `last: true` (or one `play`), spoken as one
 * utterance, or as two when a backchannel cut it and it resumed (its rest a new utterance). What was
 * heard of it, where it resumes, and the gap of the caller's turn it answers are read from it here;
 * the session (session.ts) keeps its cycles and their lifecycle.
 */
import type { AsyncQueue } from '../async/queue.js';
import type { Interruptible } from '../protocols/conversation-relay.js';
import { resumeIndex } from '../speaker/resume-text.js';
import type { UtteranceHandle, UtteranceMetrics } from '../speaker/speaker.js';
import type { TurnGap, TurnTiming } from './host.js';

/** The caller's turn a cycle answers: its timing, and when the prompt went and the answer began. */
export type Answering = TurnTiming & { readonly promptAt: number; readonly appMs: number };

export interface TalkCycle {
  /** The utterance speaking it now. */
  handle: UtteranceHandle;
  readonly interruptible: Interruptible;
  readonly preemptible: boolean;
  readonly voiceId: string | undefined;
  /** Cut by the caller (or preempted). */
  cut: boolean;
  /** The listener began to hear it. */
  heard: boolean;
  /** The app's tokens for it (a play has none): what the utterance speaking it reads. */
  tokens: AsyncQueue<string> | undefined;
  chars: number;
  /** The app's text of it so far. */
  said: string;
  /** Where in `said` the utterance speaking it now began (0, or where it resumed). */
  from: number;
  /** The app sent its `last`. */
  complete: boolean;
  /** A barge-in cut it and is being judged (`suspend`): what was heard then. Its tokens wait. */
  suspended: { heardText: string; playedMs: number } | undefined;
  /** A play's fetch, stopped once the cycle ends. */
  readonly fetching: AbortController | undefined;
  /** It answers a caller's turn, until its gap is reported. */
  answering: Answering | undefined;
}

/** A talk cycle of the app's text. */
export type TextCycle = TalkCycle & { readonly tokens: AsyncQueue<string> };

/** A cycle of `handle`'s, nothing fed to it yet. */
export function newCycle(
  handle: UtteranceHandle,
  o: { interruptible: Interruptible; preemptible: boolean },
  voiceId: string | undefined,
  answering: Answering | undefined,
): TalkCycle {
  return {
    handle,
    interruptible: o.interruptible,
    preemptible: o.preemptible,
    voiceId,
    cut: false,
    heard: false,
    tokens: undefined,
    chars: 0,
    said: '',
    from: 0,
    complete: false,
    suspended: undefined,
    fetching: undefined,
    answering,
  };
}

/** What was heard of `cycle`: its words heard whole before it resumed, then `heardText` of its utterance now. */
export function heardOf(cycle: TalkCycle, heardText: string): string {
  const before = cycle.said.slice(0, cycle.from).trim();
  if (before === '') return heardText;
  return heardText === '' ? before : `${before} ${heardText}`;
}

/**
 * What is left to say of `cycle` once `heardText` of its utterance was heard: from the first word not
 * heard whole, and where that is in `said`. Undefined when the heard text is not its text.
 */
export function restOf(cycle: TalkCycle, heardText: string): { rest: string; from: number } | undefined {
  const spoken = cycle.said.slice(cycle.from);
  // The speaker's text has a space wherever the app's had other whitespace (speaker.ts, `textOf`).
  const at = resumeIndex(spoken.replace(/\s/g, ' '), heardText);
  if (at === undefined) return undefined;
  const rest = spoken.slice(at).trimStart();
  return { rest, from: cycle.from + spoken.length - rest.length };
}

/** The gap of the turn `cycle` answers, once its first frame is out (`metrics`); else undefined. */
export function gapOf(cycle: TalkCycle, metrics: Readonly<UtteranceMetrics>): TurnGap | undefined {
  const turn = cycle.answering;
  const { firstFrameMs, firstByteMs } = metrics;
  if (!turn || firstFrameMs === undefined) return undefined;
  return {
    endpointingMs: turn.endpointingMs,
    sttMs: turn.sttMs,
    via: turn.via,
    appMs: turn.appMs,
    utteranceId: cycle.handle.id,
    firstByteMs,
    firstFrameMs,
    gapMs: turn.endpointingMs + turn.sttMs + turn.appMs + firstFrameMs,
  };
}
