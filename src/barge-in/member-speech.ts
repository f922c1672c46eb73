/**
 * Barge-in on Discord: when a member of the voice channel is really talking. The receiver's `speaking`
 * events start on a user's first packet and end 100 ms after the last, and they fire on noise, a
 * cough or a keyboard too: a member counts as talking once their packets have carried audible energy
 * for `minSpeechMs` with no gap longer than `maxGapMs`. The clock is passed in with every event.
 *
 * Why this is not the phone's detector (`detector.ts`): each member arrives as a stream of their own,
 * already gated by their client (voice activity or push-to-talk, with its own echo cancellation and
 * noise suppression), and the bot's voice is never mixed into it. There is no echo of the bot to tell
 * apart and no line noise to see through, so a run of audible frames is the whole decision, and it
 * costs no worker thread (docs/calls.md, "Barge-in on Discord").
 */

export interface SpeakingDetectorOptions {
  /** Continuous speech needed (ms). Default 200. */
  minSpeechMs?: number;
  /** A silence within speech this short does not reset it (ms). Default 120. */
  maxGapMs?: number;
  /** A decoded frame at or above this level (dBFS) carries speech. Default -45. */
  minLevelDbfs?: number;
}

interface Talker {
  /** When the current run of audible frames began, and when the last audible frame arrived. */
  runStartMs: number;
  lastAudibleMs: number;
  reported: boolean;
}

export class SpeakingDetector {
  private readonly minSpeechMs: number;
  private readonly maxGapMs: number;
  private readonly minLevelDbfs: number;
  private readonly talkers = new Map<string, Talker>();

  constructor(options: SpeakingDetectorOptions = {}) {
    this.minSpeechMs = options.minSpeechMs ?? 200;
    this.maxGapMs = options.maxGapMs ?? 120;
    this.minLevelDbfs = options.minLevelDbfs ?? -45;
  }

  /**
   * One decoded frame of a member's audio (its level in dBFS) at `nowMs`. True once, when this frame
   * makes the member's run of speech long enough to barge in; again only after they stopped.
   */
  frame(userId: string, levelDbfs: number, nowMs: number): boolean {
    const talker = this.talkers.get(userId);
    if (levelDbfs < this.minLevelDbfs) {
      if (talker && nowMs - talker.lastAudibleMs > this.maxGapMs) this.talkers.delete(userId);
      return false;
    }
    if (!talker || nowMs - talker.lastAudibleMs > this.maxGapMs) {
      this.talkers.set(userId, { runStartMs: nowMs, lastAudibleMs: nowMs, reported: false });
      return false;
    }
    talker.lastAudibleMs = nowMs;
    if (talker.reported || nowMs - talker.runStartMs < this.minSpeechMs) return false;
    talker.reported = true;
    return true;
  }

  /** The receiver says the member stopped (100 ms after their last packet). */
  end(userId: string): void {
    this.talkers.delete(userId);
  }

  /** Members talking now (a run of speech under way). */
  get talking(): number {
    return this.talkers.size;
  }
}
