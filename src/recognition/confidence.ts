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
 * - the share of its words' frames that are carrier words ("I'd like to", "please"): speech outside
 *   the menu is forced onto long runs of carriers around a short answer.
 *
 * They are weighed by a logistic regression, its threshold folded into the constant so that 0.5
 * (`DEFAULT_MIN_CONFIDENCE`) is where a no-match begins. Fitted on the menu benchmark's recognitions
 * (bench/menus.ts: 15 voices, 8 Flite and 7 eSpeak, × 36 utterances, through μ-law, clean, 20 and 10 dB
 * SNR; a right branch against a wrong one or a sentence outside the menu), its threshold the lowest
 * at which the most answers at 20 dB were right with at most 2 % wrong and no more sentences outside
 * the menu taken than before it (83 % refused): 95.0 % right, 1.7 % wrong there (clean 95.8 / 0.8 / 82,
 * 10 dB 80.6 / 6.1 / 85). The same rule refitted without what it is judged on, at 20 dB: each of the 15
 * voices left out in turn, 95.0 / 1.7 / 84 (clean 95.0 / 0.8 / 82, 10 dB 80.0 / 5.6 / 84); a third of
 * the sentences left out in turn, 94.4 / 1.9 / 84. The hand-made score it replaces (the fit less 40 ×
 * the unexplained share, 4 × the margin clamped to −5..3, 0.2 × the worst word), tuned on all of it:
 * 93.1 / 1.9 / 83 (72.5 % right, 3.6 % wrong at 10 dB). The carrier share is what moved it: the
 * regression without it did 93.3 / 2.2 / 82 with each voice left out, the hand-made score with it 93.9.
 * At 10 dB it takes more right answers and more wrong ones than the score it replaces.
 *
 * Measured and left out: soundswallower's lattice posteriors (`p` of get_alignment: the utterance's
 * always 1.000, its words' 0.8–0.97 for right and wrong alike); a second pass with a free phone loop
 * (no better than the fit, and more CPU than the grammar pass); the answer's words' own fit, the
 * words' count, frames per word, the competitor's acoustic fit (no gain left out by voice); the fit
 * alone, one pass (88.3 % right at 20 dB left out by voice: the margin is worth its pass).
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

/**
 * The regression's weights, per unit of each feature (scores per frame in the decoder's units), and
 * its constant with the threshold folded in.
 */
const WEIGHTS = {
  perFrame: 0.1651,
  unexplained: -15.68,
  worstWord: 0.0396,
  margin: 0.5338,
  carrierShare: -4.153,
  constant: 11.092,
} as const;
/**
 * A margin beyond these adds nothing more (per frame). Below −1 the rival is simply better (the first
 * pass's beam lost it); clamped at −5 instead, the regression did no better left out by voice, and a
 * second pass was needed twice as often (the recogniser skips it when the clamp's ends agree).
 */
export const MARGIN_MIN = -1;
export const MARGIN_MAX = 3;
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

/** The evidence for a path: the log-odds that it is the answer said. See the header. */
export function score(fit: PathFit, margin: number, carrierShare: number): number {
  return (
    WEIGHTS.constant +
    WEIGHTS.perFrame * fit.perFrame +
    WEIGHTS.unexplained * fit.unexplained +
    WEIGHTS.worstWord * fit.worstWord +
    WEIGHTS.margin * Math.min(MARGIN_MAX, Math.max(MARGIN_MIN, margin)) +
    WEIGHTS.carrierShare * carrierShare
  );
}

/**
 * 0..1: a logistic of `score`. `margin` (per frame) is the path's over the best path without its
 * answer; `MARGIN_MAX` when there is no other answer (and, as an upper bound, before it is known).
 * `carrierShare` is the share of its words' frames that are carriers (`carrierShare()`).
 */
export function confidence(fit: PathFit | undefined, margin: number, carrierShare: number): number {
  if (!fit) return 0;
  return 1 / (1 + Math.exp(-score(fit, margin, carrierShare)));
}

/**
 * The share of the words' time (`startMs`..`endMs`) taken by the first `before` and the last `after`
 * of them: the carriers around the answer (grammar.ts's `carrierWords`). 0 without words.
 */
export function carrierShare(
  words: ReadonlyArray<{ readonly startMs: number; readonly endMs: number }>,
  carriers: { readonly before: number; readonly after: number } | undefined,
): number {
  if (!carriers) return 0;
  let total = 0;
  let carried = 0;
  words.forEach((w, i) => {
    const length = w.endMs - w.startMs;
    total += length;
    if (i < carriers.before || i >= words.length - carriers.after) carried += length;
  });
  return total > 0 ? carried / total : 0;
}
