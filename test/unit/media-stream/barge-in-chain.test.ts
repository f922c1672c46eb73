/**
 * The caller's voice → VAD → interrupt chain: audio decoded and handed to the VAD as it arrives, in
 * order, on the inbound timeline; an onset interrupts the bot; a VAD far behind skips audio; closing
 * stops it.
 */
import { EventEmitter } from 'node:events';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type { WireFormat } from '../../../src/audio/framer.js';
import {
  BargeInChain,
  MAX_VAD_BACKLOG_MS,
  type BargeIn,
} from '../../../adapters/media-stream/barge-in-chain.js';
import type { DetectedOnset, OnsetDetector } from '../../../adapters/media-stream/caller-audio.js';

const MULAW_8K: WireFormat = { encoding: 'mulaw', sampleRate: 8000, channels: 1 };
const S16LE_8K: WireFormat = { encoding: 's16le', sampleRate: 8000, channels: 1 };
/** 20 ms of mu-law silence. */
const FRAME = new Uint8Array(160).fill(0xff);

interface Push {
  samples: number;
  timestampMs: number;
  botAudible: boolean;
  answer: (onset: DetectedOnset | undefined) => void;
}

/** A detector whose every push waits until the test answers it. */
class ScriptedDetector implements OnsetDetector {
  readonly pushes: Push[] = [];
  resets = 0;
  push(
    samples: Int16Array,
    info: { timestampMs: number; botAudible: boolean },
  ): Promise<DetectedOnset | undefined> {
    return new Promise((answer) => this.pushes.push({ samples: samples.length, ...info, answer }));
  }
  reset(): void {
    this.resets++;
  }
}

const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

function setup(options: { speaking?: boolean; playedMs?: number; writtenMs?: number } = {}) {
  const detector = new ScriptedDetector();
  const bargeIns: BargeIn[] = [];
  let interrupts = 0;
  const speaking = options.speaking ?? true;
  const chain = new BargeInChain({
    detector,
    inbound: MULAW_8K,
    speaker: {
      speakingId: speaking ? 'u1' : undefined,
      interrupt: () => {
        interrupts++;
        return speaking
          ? { interrupted: true, playedMs: 640, heardText: 'Hello there' }
          : { interrupted: false, playedMs: 0, heardText: '' };
      },
    },
    sink: { playedMs: () => options.playedMs ?? 100, writtenMs: () => options.writtenMs ?? 300 },
    onBargeIn: (b) => bargeIns.push(b),
    log: pino({ level: 'silent' }),
  });
  return { chain, detector, bargeIns, interrupts: () => interrupts };
}

describe('BargeInChain', () => {
  it('hands decoded audio to the VAD as it arrives, in order, on the inbound timeline', async () => {
    const { chain, detector } = setup();
    expect(chain.push(FRAME)).toBe(true);
    expect(chain.push(FRAME)).toBe(true);
    expect(chain.push(FRAME, 5000)).toBe(true);
    // All three at once: the detector keeps them in order, the chain does not wait for each answer.
    expect(detector.pushes.map((p) => p.timestampMs)).toEqual([0, 20, 5000]);
    expect(detector.pushes[0]).toMatchObject({ samples: 160, botAudible: true });
    // No timestamp from the gateway: the position is the samples received before it (0, then 20 ms).
    expect(chain.backlogSamples).toBe(480);
    detector.pushes[0]!.answer(undefined);
    await tick();
    expect(chain.backlogSamples).toBe(320);
    detector.pushes[1]!.answer(undefined);
    detector.pushes[2]!.answer(undefined);
    await tick();
    expect(chain.backlogSamples).toBe(0);
  });

  it('an onset interrupts the bot and reports what was cut', async () => {
    const { chain, detector, bargeIns } = setup();
    chain.push(FRAME, 1000);
    await tick();
    detector.pushes[0]!.answer({ onsetMs: 880, detectedMs: 1012 });
    await tick();
    expect(bargeIns).toEqual([
      { utteranceId: 'u1', onsetMs: 880, detectedMs: 1012, playedMs: 640, heardText: 'Hello there' },
    ]);
  });

  it('an onset without its confirmation time is dated at the end of the chunk that completed it', async () => {
    const { chain, detector, bargeIns } = setup();
    chain.push(FRAME, 1000);
    await tick();
    detector.pushes[0]!.answer({ onsetMs: 880 });
    await tick();
    expect(bargeIns[0]).toMatchObject({ onsetMs: 880, detectedMs: 1020 });
  });

  it('an onset with nothing to interrupt reports nothing; the bot inaudible is said to the VAD', async () => {
    const { chain, detector, bargeIns, interrupts } = setup({
      speaking: false,
      playedMs: 300,
      writtenMs: 300,
    });
    chain.push(FRAME);
    await tick();
    expect(detector.pushes[0]!.botAudible).toBe(false);
    detector.pushes[0]!.answer({ onsetMs: 0 });
    await tick();
    expect(interrupts()).toBe(1);
    expect(bargeIns).toEqual([]);
  });

  it(`skips audio once ${MAX_VAD_BACKLOG_MS} ms wait for the VAD; an empty payload is no audio`, async () => {
    const { chain, detector } = setup();
    const frames = MAX_VAD_BACKLOG_MS / 20;
    for (let i = 0; i < frames; i++) expect(chain.push(FRAME)).toBe(true);
    expect(chain.push(FRAME)).toBe(false);
    expect(chain.push(new Uint8Array(0))).toBe(true);
    await tick();
    detector.pushes[0]!.answer(undefined);
    await tick();
    expect(chain.push(FRAME)).toBe(true);
  });

  it('close() resets the detector, and neither queued audio nor a late onset interrupts', async () => {
    const { chain, detector, bargeIns, interrupts } = setup();
    chain.push(FRAME);
    chain.push(FRAME);
    await tick();
    chain.close();
    expect(detector.resets).toBe(1);
    detector.pushes[0]!.answer({ onsetMs: 0 });
    detector.pushes[1]!.answer({ onsetMs: 20 });
    await tick();
    expect(interrupts()).toBe(0);
    expect(bargeIns).toEqual([]);
    expect(chain.push(FRAME)).toBe(true);
    await tick();
    expect(detector.pushes).toHaveLength(2);
  });

  it('tells no move of the echo when the bot speaks again after a silence longer than an echo lasts', async () => {
    // The bot's frames as the phone sink writes them (s16le, 8 kHz), placed on a fake wall clock.
    const clock = { ms: 0, now: () => clock.ms, sleepUntil: async () => {} };
    const played = new EventEmitter();
    const pushes: Array<{ timestampMs: number; reference: boolean; moved: number }> = [];
    const chain = new BargeInChain({
      detector: {
        referenceRate: 8000,
        push: (_samples, info) => {
          pushes.push({
            timestampMs: info.timestampMs,
            reference: info.reference !== undefined,
            moved: info.referenceMoved ?? 0,
          });
          return Promise.resolve(undefined);
        },
        reset: () => {},
      },
      inbound: MULAW_8K,
      speaker: { speakingId: 'u1', interrupt: () => ({ interrupted: false, playedMs: 0, heardText: '' }) },
      sink: { playedMs: () => 0, writtenMs: () => 0 },
      played: Object.assign(played, { format: S16LE_8K, clock }),
      onBargeIn: () => {},
      log: pino({ level: 'silent' }),
    });
    const frame = new Uint8Array(new Int16Array(160).fill(1000).buffer);
    // Two replies of 2 s, the second 5 s after the first ends; the caller's 20 ms chunks arrive 40 ms
    // after their inbound time throughout, each read against what played.
    const reply = (fromMs: number): void => {
      for (let f = 0; f < 100; f++) played.emit('frame', { payload: frame, playAtMs: fromMs + f * 20 });
    };
    reply(1000);
    for (let c = 0; c < 450; c++) {
      if (c === 350) reply(8000);
      clock.ms = (c + 1) * 20 + 40;
      chain.push(FRAME, c * 20);
    }
    await tick();
    // The reference is read while the bot plays or its echo may last, and not in the silence between.
    const withReference = pushes.filter((p) => p.reference).map((p) => p.timestampMs);
    expect(withReference.some((t) => t >= 1000 && t < 3000)).toBe(true);
    expect(withReference.some((t) => t >= 8000)).toBe(true);
    expect(withReference.some((t) => t >= 5000 && t < 7000)).toBe(false);
    // Nothing moved: the distance between the last read and the next one is the bot's silence. (Told
    // as a move of seconds, it threw the echo canceller's taps off at the start of every reply.)
    expect(pushes.filter((p) => p.moved !== 0)).toEqual([]);
  });
});
