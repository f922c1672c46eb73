/**
 * Where a caller's speech began, as against where the run that confirmed it did (issue 45: the first
 * turn over a welcome greeting reached speech-to-text from the confirmation on), and the silence since
 * they last spoke, followed past the end of a turn. On a scripted model that hears each 32 ms window's
 * level, so the runs are exactly the ones written.
 */
import { describe, expect, it } from 'vitest';
import {
  MAX_SPEECH_LEAD_MS,
  SileroModel,
  SpeechOnsetDetector,
  type CallerSilence,
  type SileroRunner,
  type SpeechOnset,
  type SpeechTurn,
} from '../../../src/barge-in/index.js';
import { seeded } from '../../../testkit/random.js';

const WINDOW = 256;
const WINDOW_MS = 32;

/** A vowel (`V`) is speech at 0.95, the line (`_`) 0.02. 8 kHz, no noise suppression, a still clock. */
function scripted(options: {
  endOfTurnMs?: number;
  onTurnEnd?: (t: SpeechTurn) => void;
  onSilence?: (s: CallerSilence) => void;
}): SpeechOnsetDetector {
  const runner: SileroRunner = {
    runtime: 'scripted',
    run: (input, state) => {
      let sum = 0;
      for (let i = input.length - WINDOW; i < input.length; i++) sum += input[i]! ** 2;
      const rms = Math.sqrt(sum / WINDOW) * 32768;
      return Promise.resolve({ p: rms > 10_000 ? 0.95 : 0.02, state });
    },
    echo: () => Promise.reject(new Error('no echo here')),
    closeEcho: () => {},
  };
  return new SpeechOnsetDetector(new SileroModel(runner), {
    now: () => 0,
    sampleRate: 8000,
    denoise: false,
    minSpeechMs: 128,
    minSpeechWhileAudibleMs: 400,
    ...options,
  });
}

/** `script`'s windows (`V` speech, `_` the line), each pushed alone; what the detector found. */
async function run(
  detector: SpeechOnsetDetector,
  script: string,
  botAudible: boolean,
): Promise<SpeechOnset[]> {
  const random = seeded(3);
  const found: SpeechOnset[] = [];
  const level = { _: 300, V: 16_000 } as Record<string, number>;
  for (const [i, kind] of [...script.replaceAll(' ', '')].entries()) {
    const rms = level[kind]!;
    const window = Int16Array.from({ length: WINDOW }, () =>
      Math.round((random() - 0.5) * rms * Math.sqrt(12)),
    );
    const onset = await detector.push(window, { timestampMs: i * WINDOW_MS, botAudible });
    if (onset) found.push(onset);
  }
  return found;
}

const quiet = (windows: number): string => '_'.repeat(windows);
const speech = (windows: number): string => 'V'.repeat(windows);

describe("where the caller's speech began", () => {
  it('is the first of the short runs before the one that confirmed the onset over a talking bot', async () => {
    // "Hi, | yes, | I'd like to book a table": two syllables too short for the 400 ms rule, each
    // followed by a pause that ends its run (over 250 ms), then a run long enough.
    const script = quiet(10) + speech(4) + quiet(10) + speech(5) + quiet(10) + speech(16) + quiet(40);
    const turns: SpeechTurn[] = [];
    const detector = scripted({ onTurnEnd: (t) => turns.push(t) });
    const [onset, ...more] = await run(detector, script, true);
    expect(more).toEqual([]);
    expect(onset!.onsetMs).toBe((10 + 4 + 10 + 5 + 10) * WINDOW_MS);
    expect(onset!.speechStartMs).toBe(10 * WINDOW_MS);
    // The turn starts there too: its recorder keeps the audio from the first syllable.
    expect(turns).toHaveLength(1);
    expect(turns[0]!.startMs).toBe(10 * WINDOW_MS);
  });

  it('is where the confirming run began when a turn-long silence came before it', async () => {
    const script = quiet(10) + speech(4) + quiet(25) + speech(16) + quiet(30);
    const [onset] = await run(scripted({}), script, true);
    expect(onset!.onsetMs).toBe((10 + 4 + 25) * WINDOW_MS);
    expect(onset!.speechStartMs).toBe(onset!.onsetMs);
  });

  it(`reaches back at most ${MAX_SPEECH_LEAD_MS} ms before the confirming run`, async () => {
    // Syllables every 544 ms for 4 s, none long enough, then a long run.
    let script = quiet(5);
    for (let i = 0; i < 8; i++) script += speech(4) + quiet(13);
    script += speech(16) + quiet(30);
    const [onset] = await run(scripted({}), script, true);
    expect(onset!.onsetMs - onset!.speechStartMs).toBeLessThanOrEqual(MAX_SPEECH_LEAD_MS);
    expect(onset!.onsetMs - onset!.speechStartMs).toBeGreaterThan(MAX_SPEECH_LEAD_MS - 17 * WINDOW_MS);
  });

  it('is the onset itself for a caller heard at once (no run before it)', async () => {
    const [onset] = await run(scripted({}), quiet(10) + speech(12) + quiet(30), false);
    expect(onset!.speechStartMs).toBe(onset!.onsetMs);
    expect(onset!.onsetMs).toBe(10 * WINDOW_MS);
  });
});

describe("the silence since the caller's last speech", () => {
  it('is followed from the first onset on, past the end of the turn, and starts again with speech', async () => {
    const silences: CallerSilence[] = [];
    const turns: SpeechTurn[] = [];
    const detector = scripted({
      endOfTurnMs: 320,
      onTurnEnd: (t) => turns.push(t),
      onSilence: (s) => silences.push(s),
    });
    // Nothing before the first onset.
    await run(detector, quiet(10), false);
    expect(silences).toEqual([]);
    expect(detector.callerSilence).toBeUndefined();
    const script = quiet(10) + speech(10) + quiet(30) + speech(6);
    await run(detector, script, false);
    // The turn ended after 320 ms; the silence went on being counted to 960 ms.
    expect(turns).toHaveLength(1);
    const longest = Math.max(...silences.map((s) => s.quietMs));
    expect(longest).toBe(30 * WINDOW_MS);
    const atLongest = silences.find((s) => s.quietMs === longest)!;
    expect(atLongest.fromMs).toBe(turns[0]!.endMs);
    // Speaking again: no silence.
    expect(silences.at(-1)!.quietMs).toBe(0);
    expect(detector.callerSilence?.quietMs).toBe(0);
  });
});
