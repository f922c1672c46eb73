/**
 * Answering-machine detection on real (synthetic) speech: call starts from testkit/amd-corpus.ts (the
 * cast's and eSpeak's voices, 8 kHz μ-law, line noise or none, 0–1.5 s of silence first), three of each
 * kind, pushed in 20 ms frames as a gateway delivers them. Every one is taken for what it is, within
 * the rule's bounds; a voicemail's beep is found as it ends, a greeting without one ends after its
 * silence. `npm run bench -- amd` runs 300 of them.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { AMD_DEFAULTS, createAnsweringMachineDetector, type AmdEvent } from '../../src/barge-in/amd.js';
import { amdCall, CALL_KINDS, type AmdCall } from '../../testkit/amd-corpus.js';

const SEEDS = [1, 2, 3];
/** A decision falls on a 32 ms block, a rule's moment on a syllable's edge: this much either way. */
const SLACK_MS = 200;

interface Heard {
  readonly call: AmdCall;
  readonly events: readonly AmdEvent[];
}

let heard: Heard[];

beforeAll(async () => {
  const calls: AmdCall[] = [];
  for (const kind of CALL_KINDS) for (const seed of SEEDS) calls.push(await amdCall(kind, seed));
  heard = calls.map((call) => {
    const amd = createAnsweringMachineDetector({ sampleRate: call.sampleRate });
    const events: AmdEvent[] = [];
    for (let at = 0; at < call.samples.length; at += 160)
      events.push(...amd.push(call.samples.subarray(at, at + 160)));
    return { call, events };
  });
});

const decision = (h: Heard) => {
  const e = h.events.find((x) => x.type === 'decision');
  if (e?.type !== 'decision') throw new Error(`${h.call.id}: no decision`);
  return e.decision;
};

const label = (h: Heard): string =>
  `${h.call.id} (${h.call.voice}, ${h.call.noise ? `${h.call.noise.color} ${h.call.noise.snrDb.toFixed(0)} dB` : 'clean'}): ${h.call.text}`;

describe('answering-machine detection on synthetic call starts', () => {
  it('the corpus is what it says: greetings of 3–15 s, short answers, beeps after the greeting, μ-law at 8 kHz', () => {
    for (const { call } of heard) {
      expect(call.sampleRate).toBe(8000);
      if (call.kind === 'silence') {
        expect(call.speechStartMs).toBeUndefined();
        continue;
      }
      expect(call.speechStartMs! - call.leadMs).toBeLessThan(1);
      expect(call.leadMs).toBeLessThanOrEqual(1500);
      const spoken = call.speechEndMs! - call.speechStartMs!;
      if (call.expected === 'machine') {
        expect(spoken, call.id).toBeGreaterThanOrEqual(3000);
        expect(spoken, call.id).toBeLessThanOrEqual(18_000);
      } else expect(call.firstUtteranceMs!, call.id).toBeLessThanOrEqual(1700);
      if (call.beep) expect(call.beep.startMs).toBeGreaterThan(call.speechEndMs!);
    }
  });

  it('takes every call for what it is: person, machine, or unknown for silence', () => {
    for (const h of heard) expect(decision(h).result, label(h)).toBe(h.call.expected);
  });

  it('decides within its bounds: a person within 3 s of their first word, a machine as its greeting passes 2.4 s', () => {
    for (const h of heard) {
      const d = decision(h);
      const start = h.call.speechStartMs;
      if (h.call.expected === 'human') {
        expect(d.decidedAtMs - start!, label(h)).toBeLessThanOrEqual(3000);
        const answered = start! + h.call.firstUtteranceMs!;
        expect(d.decidedAtMs - answered, label(h)).toBeGreaterThanOrEqual(
          AMD_DEFAULTS.humanSilenceMs - SLACK_MS,
        );
        expect(d.decidedAtMs - answered, label(h)).toBeLessThanOrEqual(
          AMD_DEFAULTS.humanSilenceMs + SLACK_MS,
        );
      } else if (h.call.expected === 'machine') {
        expect(d.reason).toBe('long-speech');
        // Never before 2.4 s of greeting; later by what of its first words line noise hides.
        const after = d.decidedAtMs - (start! + AMD_DEFAULTS.machineSpeechMs);
        expect(after, label(h)).toBeGreaterThanOrEqual(-32);
        expect(after, label(h)).toBeLessThanOrEqual(500);
      } else expect(Math.abs(d.decidedAtMs - AMD_DEFAULTS.silenceTimeoutMs)).toBeLessThanOrEqual(32);
    }
  });

  it("finds a voicemail's beep as it ends, at its frequency", () => {
    const beeped = heard.filter((h) => h.call.beep);
    expect(beeped).toHaveLength(SEEDS.length);
    for (const h of beeped) {
      const ends = h.events.filter((e) => e.type !== 'decision');
      expect(
        ends.map((e) => e.type),
        label(h),
      ).toEqual(['beep']);
      const e = ends[0]!;
      if (e.type !== 'beep') throw new Error('not a beep');
      const truth = h.call.beep!;
      expect(Math.abs(e.beep.frequencyHz - truth.frequencyHz), label(h)).toBeLessThan(
        0.02 * truth.frequencyHz,
      );
      expect(e.atMs - truth.endMs, label(h)).toBeGreaterThanOrEqual(0);
      expect(e.atMs - truth.endMs, label(h)).toBeLessThanOrEqual(100);
    }
  });

  it('ends a greeting without a beep after its silence, never before its last word', () => {
    const plain = heard.filter((h) => h.call.kind === 'voicemail' || h.call.kind === 'ivr');
    for (const h of plain) {
      const ends = h.events.filter((e) => e.type !== 'decision');
      expect(
        ends.map((e) => e.type),
        label(h),
      ).toEqual(['greeting-end']);
      const e = ends[0]!;
      if (e.type !== 'greeting-end') throw new Error('not the end');
      const after = e.atMs - h.call.speechEndMs!;
      expect(after, label(h)).toBeGreaterThanOrEqual(AMD_DEFAULTS.greetingEndSilenceMs - SLACK_MS);
      expect(after, label(h)).toBeLessThanOrEqual(AMD_DEFAULTS.greetingEndSilenceMs + SLACK_MS);
    }
  });

  it('hears no beep and waits for no greeting where a person answered or nobody did', () => {
    for (const h of heard.filter((x) => x.call.expected !== 'machine'))
      expect(
        h.events.map((e) => e.type),
        label(h),
      ).toEqual(['decision']);
  });
});
