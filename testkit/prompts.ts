/**
 * The benchmarks' hold prompts, one text each wherever it is spoken (a benchmark, and a test that
 * replays what the benchmark showed).
 */

/** A short hold message: `bench calls` and `bench cluster`. */
export const SHORT_HOLD_PROMPT =
  'Thank you for calling the benchmark line. All of our agents are busy, please stay on the line.';

/** The hold message `bench talkers` plays, which its callers talk over. */
export const TALKERS_PROMPT =
  'Thank you for calling the benchmark line. All of our agents are busy helping other callers right now. ' +
  'Please stay on the line, and the next available agent will be with you shortly.';
