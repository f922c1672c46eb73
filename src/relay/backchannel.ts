/**
 * Backchannels: what a listener says while the other talks to show they follow ("yeah", "uh-huh",
 * "okay", "right", "mm-hmm"), not to take the floor. Voice-agent users' most common complaint after
 * being cut off (livekit/agents #4039, pipecat #1391) is an "uh-huh" that stops the agent's answer.
 * A barge-in on a relay app's answer is held while the caller's turn is heard; when its words are
 * only acknowledgements (or there are none: a cough), the answer goes on where it was cut and the app
 * is told of neither (docs/relay.md, «Backchannels»). Pure: the words in, the verdict out.
 */

/** The acknowledgements a relay lets pass unless its config says otherwise (`relays.NAME.backchannels`). */
export const DEFAULT_BACKCHANNELS: readonly string[] = [
  'yeah',
  'yes',
  'yep',
  'yup',
  'uh-huh',
  'mm-hmm',
  'mhm',
  'mm',
  'hmm',
  'okay',
  'ok',
  'right',
  'sure',
  'alright',
  'all right',
  'got it',
  'i see',
];

/**
 * A turn holding more speech than this (ms) is not a backchannel, whatever it says: the caller is
 * talking (LiveKit's `min_interruption_duration` is 500 ms of speech; an "okay, yeah" takes ~800).
 */
export const BACKCHANNEL_MAX_SPEECH_MS = 1500;
/** More words than this are not an acknowledgement ("yeah yeah okay right" is four). */
const MAX_WORDS = 6;
/**
 * The barge-in is decided within this long (ms): a turn whose end or words have not come by then (the
 * caller still talking, speech-to-text stalled) counts as a real interruption.
 */
export const BACKCHANNEL_WINDOW_MS = 4000;

/** Lower case words, hyphens and punctuation gone ("Uh-huh, okay." → uh huh okay). */
export function backchannelWords(text: string): string[] {
  return text
    .toLowerCase()
    .replace(/[‘’]/g, "'")
    .replace(/[^\p{L}\p{N}' ]+/gu, ' ')
    .split(/\s+/)
    .map((w) => w.replace(/^'+|'+$/g, ''))
    .filter((w) => w !== '');
}

/** The phrases as word lists, longest first (so "all right" is tried before "right"). */
export function backchannelPhrases(phrases: readonly string[]): string[][] {
  return phrases
    .map(backchannelWords)
    .filter((p) => p.length > 0)
    .sort((a, b) => b.length - a.length);
}

/**
 * Whether `transcript` is only acknowledgements from `phrases` (as `backchannelPhrases` gives them),
 * or holds no words at all; false for anything else, and for more than a few words.
 */
export function isBackchannel(transcript: string, phrases: readonly string[][]): boolean {
  const words = backchannelWords(transcript);
  if (words.length > MAX_WORDS) return false;
  let at = 0;
  while (at < words.length) {
    const phrase = phrases.find((p) => p.every((w, i) => words[at + i] === w));
    if (!phrase) return false;
    at += phrase.length;
  }
  return true;
}

/**
 * Whether the words so far already rule a backchannel out (a word no acknowledgement starts with):
 * a partial transcript that says so makes the barge-in real before the turn ends.
 */
export function cannotBeBackchannel(partial: string, phrases: readonly string[][]): boolean {
  const words = backchannelWords(partial);
  if (words.length > MAX_WORDS) return true;
  // All but the last word must be whole acknowledgements; the last may still be growing ("ye").
  let at = 0;
  while (at < words.length) {
    const rest = words.slice(at);
    const whole = phrases.find((p) => p.every((w, i) => rest[i] === w));
    if (whole) {
      at += whole.length;
      continue;
    }
    const growing = phrases.some((p) =>
      rest.every((w, i) => (i === rest.length - 1 ? p[i]?.startsWith(w) === true : p[i] === w)),
    );
    return !growing;
  }
  return false;
}
