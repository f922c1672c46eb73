/**
 * How sure a recognition is, 0..1: whether the audio really is the answer the grammar's best path
 * says, or speech the menu does not hold forced onto its nearest path, or a near miss between two
 * choices.
 *
 * A finite-state grammar always finds some path, so the path's existence says nothing. What does:
 * - its fit: the words' acoustic score per frame. The decoder scores each frame against the best
 *   senone active in it (ptm_mgau.c normalises every frame by the best), so speech the grammar holds
 *   scores near that best, and speech forced onto the wrong words far below it. Fillers (silence,
 *   noise) are left out: they fit any pause.
 * - the loud frames it left to fillers (`unexplained`): speech it could not make words of.
 * - its worst word's score per frame: a sentence outside the menu forced onto "I need … an operator"
 *   fits its carriers well and one word badly.
 * - its margin over the best path of the menu without that answer (a second pass, recognizer.ts), per
 *   frame: a near miss between two choices has almost none, or a negative one (the first pass's beam
 *   lost the better path).
 *
 * What was measured (the menu benchmark's 15 voices × 36 utterances, through μ-law, at 20 dB SNR;
 * right branch / wrong branch / out-of-grammar accepted, at the threshold that kept wrong ≤ 2 %):
 * - soundswallower's lattice posteriors (`p` of get_alignment): the utterance's always 1.000, its
 *   words' 0.8–0.97 for right and wrong alike, whatever `ascale`. Useless.
 * - the fit alone: 55 % / 1.9 % / 0.6 % before the noise was taken out (denoise.ts), 90 / 1.9 / 29 after.
 * - the fit against a second pass with a free phone loop (context-independent phones), the classic
 *   measure: no better than the fit alone (92 / 1.9 / 29), and more CPU than the grammar pass itself
 *   (37 vs 25 ms a second of audio). A phone loop inside the grammar as a garbage alternative cost 5×
 *   the grammar alone.
 * - the fit less 40 × the unexplained share: 88.6 / 1.4 / 12 (at the threshold kept for the others).
 * - with the margin (4 × the margin clamped to −5..3) and 0.2 × the worst word: 94.7 / 1.1 / 14; clean
 *   94.4 / 0.8 / 18; 10 dB 60.8 / 3.3 / 17. That is `score` below, its threshold at −40: the center.
 *   (0.3 × the worst word at −42: 94.7 / 1.1 / 13, at −40: 92.8 / 1.1 / 9; a threshold of −44: 95.8 %
 *   right, 1.1 % wrong, but 23 % of the sentences outside the menu accepted.)
 *   Trained on the eSpeak voices alone, a logistic regression on the same features did as well on the
 *   cast's (Flite) voices as on its own: the weights are not fitted to one engine.
 * The benchmark through the recogniser itself, at 0.5 (`DEFAULT_MIN_CONFIDENCE`), 20 dB: 93.3 % right,
 * 1.9 % wrong, 16.7 % of the sentences outside the menu accepted (one pass, the fit and the unexplained
 * share only: 86.9 / 2.2 / 12.8).
 */
import type { Segment } from './native.js';

/** What the worker measures of a path (per frame scores in the decoder's units: log base 1.0001 >> 10). */
export interface PathFit {
  /** The words' acoustic score per frame. */
  readonly perFrame: number;
  /** The share of loud frames left to fillers, 0..1. */
  readonly unexplained: number;
  /** The lowest score per frame of a word. */
  readonly worstWord: number;
}

export interface Calibration {
  /** `score` at which the confidence is 0.5. */
  readonly center: number;
  /** `score` over which it moves from 0.27 to 0.73. */
  readonly scale: number;
}

export const CALIBRATION: Calibration = { center: -40, scale: 4 };

const UNEXPLAINED_WEIGHT = 40;
const MARGIN_WEIGHT = 4;
/** A margin beyond these adds nothing more (per frame). */
export const MARGIN_MIN = -5;
export const MARGIN_MAX = 3;
const WORST_WORD_WEIGHT = 0.2;
/** The worst word's score, centred. */
const WORST_WORD_ORIGIN = -40;
/** Frames of the decoder: 10 ms hops of 25 ms windows at 8 kHz. */
const FRAME_HOP = 80;
const FRAME_WINDOW = 200;
/** A frame is loud within this of the loud frames (the top 10 %): -15 dB. */
const LOUD_RATIO = 10 ** (-15 / 10);
const LOUD_SHARE = 0.1;

/** A filler (`<sil>`, `[NOISE]`, `<s>`), or a null transition of the grammar. */
export function isFiller(word: string): boolean {
  return word.startsWith('<') || word.startsWith('[') || word.startsWith('(') || word === '';
}

/** Which of the decoder's frames of `input` (8 kHz) are loud: speech, where there is any. */
export function loudFrames(input: Float32Array): Uint8Array {
  const count = Math.floor(input.length / FRAME_HOP);
  const energy = new Float64Array(count);
  for (let f = 0; f < count; f++) {
    let sum = 0;
    const end = Math.min(input.length, f * FRAME_HOP + FRAME_WINDOW);
    for (let i = f * FRAME_HOP; i < end; i++) sum += input[i]! * input[i]!;
    energy[f] = sum;
  }
  const sorted = Float64Array.from(energy).sort();
  const loud = (sorted[Math.floor((1 - LOUD_SHARE) * (count - 1))] ?? 0) * LOUD_RATIO;
  return Uint8Array.from(energy, (e) => (e > loud ? 1 : 0));
}

/** The path's fit, from its segments and the loud frames of what was decoded; undefined with no words. */
export function pathFit(segments: readonly Segment[], loud: Uint8Array): PathFit | undefined {
  const explained = new Uint8Array(loud.length);
  let score = 0;
  let frames = 0;
  let worstWord = Number.POSITIVE_INFINITY;
  for (const s of segments) {
    if (isFiller(s.word)) continue;
    const length = s.endFrame - s.startFrame + 1;
    score += s.acousticScore;
    frames += length;
    worstWord = Math.min(worstWord, s.acousticScore / length);
    explained.fill(1, Math.max(0, s.startFrame), Math.min(loud.length, s.endFrame + 1));
  }
  if (frames === 0) return undefined;
  let total = 0;
  let left = 0;
  for (let f = 0; f < loud.length; f++)
    if (loud[f]) {
      total++;
      if (!explained[f]) left++;
    }
  return { perFrame: score / frames, unexplained: total > 0 ? left / total : 0, worstWord };
}

/** The evidence for a path, in the units of the per-frame scores; see the header. */
export function score(fit: PathFit, margin: number): number {
  return (
    fit.perFrame -
    UNEXPLAINED_WEIGHT * fit.unexplained +
    MARGIN_WEIGHT * Math.min(MARGIN_MAX, Math.max(MARGIN_MIN, margin)) +
    WORST_WORD_WEIGHT * (fit.worstWord - WORST_WORD_ORIGIN)
  );
}

/**
 * 0..1: a logistic of `score`. `margin` (per frame) is the path's over the best path without its
 * answer; `MARGIN_MAX` when there is no other answer (nor, as an upper bound, before it is known).
 */
export function confidence(
  fit: PathFit | undefined,
  margin: number,
  calibration: Calibration = CALIBRATION,
): number {
  if (!fit) return 0;
  return 1 / (1 + Math.exp(-(score(fit, margin) - calibration.center) / calibration.scale));
}
