/**
 * Answering-machine detection's rules, on synthetic lines whose every time is known: "speech" is a
 * voiced buzz (harmonics of a wavering 140 Hz) in syllables of 250 ms, a beep a sine, the line digital
 * silence or white noise. Each rule decides at the moment it says, on frame time.
 */
import { describe, expect, it } from 'vitest';
import { TONE_BLOCK_MS } from '../../../src/audio/tone.js';
import {
  AMD_DEFAULTS,
  createAnsweringMachineDetector,
  type AmdEvent,
  type AmdOptions,
} from '../../../src/barge-in/amd.js';
import { seeded } from '../../../testkit/random.js';

const RATE = 8000;
/** Decisions fall on 32 ms blocks: a time is right within two of them. */
const SLACK = 2 * TONE_BLOCK_MS;

/** A line built piece by piece at `rate`, as floating-point samples. */
class Line {
  private parts: Float64Array[] = [];
  ms = 0;

  constructor(readonly rate = RATE) {}

  private add(x: Float64Array): this {
    this.parts.push(x);
    this.ms += (x.length * 1000) / this.rate;
    return this;
  }

  silence(ms: number): this {
    return this.add(new Float64Array(Math.round((ms * this.rate) / 1000)));
  }

  /** Voiced syllables (a 250 ms rise and fall each) for `ms`, at about `dbfs` RMS. */
  talk(ms: number, dbfs = -20): this {
    const n = Math.round((ms * this.rate) / 1000);
    const a = 32768 * 10 ** (dbfs / 20) * 1.6;
    const x = new Float64Array(n);
    let phase = 0;
    for (let i = 0; i < n; i++) {
      const t = i / this.rate;
      phase += (2 * Math.PI * 140 * (1 + 0.05 * Math.sin(2 * Math.PI * 3 * t))) / this.rate;
      let v = 0;
      for (let k = 1; k <= 20; k++) v += Math.sin(k * phase) / k;
      // Syllables: up and down every 250 ms, never quite silent within the word.
      const envelope = 0.15 + 0.85 * Math.sin(Math.PI * ((t * 4) % 1)) ** 2;
      x[i] = (a * envelope * v) / 2;
    }
    return this.add(x);
  }

  /** Sentences of `sentenceMs` with `pauseMs` between them, for `totalMs`. */
  greeting(totalMs: number, sentenceMs = 1500, pauseMs = 300, dbfs = -20): this {
    let done = 0;
    while (done < totalMs) {
      const ms = Math.min(sentenceMs, totalMs - done);
      this.talk(ms, dbfs);
      done += ms;
      if (done < totalMs) {
        this.silence(pauseMs);
        done += pauseMs;
      }
    }
    return this;
  }

  beep(hz: number, ms: number, dbfs = -20): this {
    const n = Math.round((ms * this.rate) / 1000);
    const a = 32768 * 10 ** (dbfs / 20) * Math.SQRT2;
    return this.add(
      Float64Array.from({ length: n }, (_, i) => a * Math.sin((2 * Math.PI * hz * i) / this.rate)),
    );
  }

  /** A click: 2 ms of full-scale crackle. */
  click(): this {
    const random = seeded(11);
    return this.add(
      Float64Array.from({ length: Math.round(this.rate / 500) }, () => (random() * 2 - 1) * 30_000),
    );
  }

  /** The line as s16, with white noise at `noiseDbfs` RMS under all of it. */
  samples(noiseDbfs?: number, seed = 1): Int16Array {
    const total = this.parts.reduce((n, p) => n + p.length, 0);
    const out = new Int16Array(total);
    const random = seeded(seed);
    const noise = noiseDbfs === undefined ? 0 : 32768 * 10 ** (noiseDbfs / 20) * Math.sqrt(3);
    let at = 0;
    for (const p of this.parts)
      for (const v of p) {
        out[at++] = Math.max(-32768, Math.min(32767, Math.round(v + (random() * 2 - 1) * noise)));
      }
    return out;
  }
}

interface Heard {
  events: Array<AmdEvent & { pushedMs: number }>;
  detector: ReturnType<typeof createAnsweringMachineDetector>;
}

/** Pushes `samples` in `frameMs` frames (20 ms, as gateways send them), noting when each event came. */
function listen(samples: Int16Array, options: Partial<AmdOptions> = {}, frameMs = 20, rate = RATE): Heard {
  const detector = createAnsweringMachineDetector({ sampleRate: rate, ...options });
  const frame = Math.round((frameMs * rate) / 1000);
  const events: Heard['events'] = [];
  for (let at = 0; at < samples.length; at += frame)
    for (const e of detector.push(samples.subarray(at, at + frame)))
      events.push({ ...e, pushedMs: (Math.min(samples.length, at + frame) * 1000) / rate });
  return { events, detector };
}

function decisionOf(h: Heard) {
  const d = h.detector.decision;
  if (!d) throw new Error('no decision');
  return d;
}

describe('answering-machine detection: who answered', () => {
  it('a short answer and then silence is a person, decided humanSilenceMs after the answer ends', () => {
    const line = new Line().silence(600).talk(700).silence(3000);
    for (const noise of [undefined, -45]) {
      const h = listen(line.samples(noise));
      const d = decisionOf(h);
      expect(d.result).toBe('human');
      expect(d.reason).toBe('short-speech');
      expect(Math.abs(d.speechStartMs! - 600)).toBeLessThanOrEqual(SLACK);
      expect(Math.abs(d.decidedAtMs - (1300 + AMD_DEFAULTS.humanSilenceMs))).toBeLessThanOrEqual(SLACK);
      expect(d.greetingMs).toBeLessThan(800);
      expect(d.speechMs).toBeGreaterThan(300);
      // One decision, reported as the frame that settled it was pushed, and nothing else.
      expect(h.events.map((e) => e.type)).toEqual(['decision']);
      expect(h.events[0]!.pushedMs - d.decidedAtMs).toBeLessThan(20);
      expect(h.detector.greeting.status).toBe('idle');
    }
  });

  it('"Hello?", then "Hello?" again 1.5 s later: a person, decided before the second', () => {
    const d = decisionOf(
      listen(new Line().silence(300).talk(500).silence(1500).talk(500).silence(2000).samples()),
    );
    expect(d.result).toBe('human');
    expect(d.decidedAtMs).toBeLessThan(2300);
  });

  it('sentences with short pauses past machineSpeechMs are a machine, decided machineSpeechMs after they start', () => {
    for (const noise of [undefined, -40]) {
      const h = listen(new Line().silence(400).greeting(8000, 1500, 350).silence(3000).samples(noise));
      const d = decisionOf(h);
      expect(d.result).toBe('machine');
      expect(d.reason).toBe('long-speech');
      // The first syllable's soft start is under the gate for a few blocks in noise.
      expect(d.speechStartMs! - 400).toBeGreaterThanOrEqual(-TONE_BLOCK_MS);
      expect(d.speechStartMs! - 400).toBeLessThanOrEqual(150);
      // Decided by the first speech at or past machineSpeechMs from its start (a syllable's trough waits).
      const after = d.decidedAtMs - (d.speechStartMs! + AMD_DEFAULTS.machineSpeechMs);
      expect(after).toBeGreaterThanOrEqual(0);
      expect(after).toBeLessThanOrEqual(150);
    }
  });

  it('the thresholds are the options: a longer machineSpeechMs waits longer, a shorter humanSilenceMs decides sooner', () => {
    const greeting = new Line().silence(400).greeting(8000).samples();
    expect(decisionOf(listen(greeting, { machineSpeechMs: 4000 })).decidedAtMs).toBeGreaterThanOrEqual(
      4400 - SLACK,
    );
    const hello = new Line().silence(400).talk(600).silence(3000).samples();
    expect(decisionOf(listen(hello, { humanSilenceMs: 400 })).decidedAtMs).toBeLessThanOrEqual(1400 + SLACK);
    // A pause longer than humanSilenceMs splits a greeting: a person, by this rule.
    const paused = new Line().silence(400).talk(1500).silence(1000).greeting(5000).samples();
    expect(decisionOf(listen(paused)).result).toBe('human');
    expect(decisionOf(listen(paused, { humanSilenceMs: 1200 })).result).toBe('machine');
  });

  it('nothing said is unknown at silenceTimeoutMs, on a silent line and on a noisy one', () => {
    for (const noise of [undefined, -50, -35]) {
      const d = decisionOf(listen(new Line().silence(7000).samples(noise, 5)));
      expect(d.result).toBe('unknown');
      expect(d.reason).toBe('silence');
      expect(d.speechStartMs).toBeUndefined();
      expect(Math.abs(d.decidedAtMs - AMD_DEFAULTS.silenceTimeoutMs)).toBeLessThanOrEqual(SLACK);
    }
  });

  it('clicks are not speech: they neither start an answer nor break the silence after one', () => {
    const clicks = new Line().silence(1000).click().silence(1500).click().silence(4000).samples(-55);
    expect(decisionOf(listen(clicks)).result).toBe('unknown');
    const hello = new Line().silence(300).talk(600).silence(400).click().silence(2000).samples(-55);
    const d = decisionOf(listen(hello));
    expect(d.result).toBe('human');
    expect(Math.abs(d.decidedAtMs - (900 + AMD_DEFAULTS.humanSilenceMs))).toBeLessThanOrEqual(SLACK);
  });

  it("learns a noisy line's floor from its first windows: its first second is not speech", () => {
    // Noise at −35 dBFS from the first sample: the barge-in's gate would open on all of its first second.
    const d = decisionOf(listen(new Line().silence(1500).talk(600).silence(3000).samples(-35, 7)));
    expect(d.result).toBe('human');
    expect(Math.abs(d.speechStartMs! - 1500)).toBeLessThanOrEqual(SLACK);
    expect(d.noiseFloorDbfs).toBeGreaterThan(-40);
    expect(d.noiseFloorDbfs).toBeLessThan(-33);
  });

  it('a beep alone is a machine, by its beep, decided as it ends', () => {
    const h = listen(new Line().silence(1000).beep(1000, 500).silence(2000).samples(-50));
    const d = decisionOf(h);
    expect(d.result).toBe('machine');
    expect(d.reason).toBe('beep');
    expect(Math.abs(d.beep!.frequencyHz - 1000)).toBeLessThan(10);
    expect(d.decidedAtMs - 1500).toBeGreaterThanOrEqual(0);
    expect(d.decidedAtMs - 1500).toBeLessThanOrEqual(SLACK);
    // The beep also ends the wait for the greeting's end that the decision started.
    expect(h.events.map((e) => e.type)).toEqual(['decision', 'beep']);
  });

  it('decides the same, at the same moment, however the audio is chunked and at any rate', () => {
    const audio = new Line().silence(500).greeting(6000).silence(600).beep(850, 600).silence(2000);
    const reference = listen(audio.samples(-45));
    const strip = (h: Heard) => h.events.map(({ pushedMs: _, ...e }) => e);
    for (const frameMs of [1, 10, 32, 50, 1000])
      expect(strip(listen(audio.samples(-45), {}, frameMs))).toEqual(strip(reference));
    for (const rate of [16_000, 48_000]) {
      const line = new Line(rate).silence(500).greeting(6000).silence(600).beep(850, 600).silence(2000);
      const h = listen(line.samples(-45), {}, 20, rate);
      expect(h.detector.decision?.result).toBe('machine');
      expect(
        Math.abs(h.detector.decision!.decidedAtMs - reference.detector.decision!.decidedAtMs),
      ).toBeLessThanOrEqual(SLACK);
      expect(h.events.map((e) => e.type)).toEqual(['decision', 'beep']);
    }
  });
});

describe("answering-machine detection: the greeting's end", () => {
  it('after a machine decision, reports the beep that ends its greeting, with its frequency, as it ends', () => {
    const line = new Line().silence(300).greeting(7000).silence(500);
    const beepStart = line.ms;
    line.beep(1400, 700).silence(3000);
    const h = listen(line.samples(-45));
    expect(h.events.map((e) => e.type)).toEqual(['decision', 'beep']);
    const beep = h.events[1]!;
    if (beep.type !== 'beep') throw new Error('not a beep');
    expect(Math.abs(beep.beep.frequencyHz - 1400)).toBeLessThan(14);
    expect(Math.abs(beep.beep.startMs - beepStart)).toBeLessThanOrEqual(TONE_BLOCK_MS);
    expect(beep.atMs - (beepStart + 700)).toBeGreaterThanOrEqual(0);
    expect(beep.atMs - (beepStart + 700)).toBeLessThanOrEqual(SLACK);
    expect(h.detector.greeting).toMatchObject({ status: 'ended', event: { type: 'beep', atMs: beep.atMs } });
  });

  it('with no beep, the greeting ends after greetingEndSilenceMs of silence, never during its pauses', () => {
    const line = new Line().silence(300).greeting(9000, 2000, 400);
    const end = line.ms;
    line.silence(4000);
    const h = listen(line.samples(-45));
    expect(h.events.map((e) => e.type)).toEqual(['decision', 'greeting-end']);
    const e = h.events[1]!;
    if (e.type !== 'greeting-end') throw new Error('not the end');
    // The last syllable's fading tail is under the gate for a block or few.
    expect(end - e.lastSoundMs).toBeGreaterThanOrEqual(0);
    expect(end - e.lastSoundMs).toBeLessThanOrEqual(150);
    expect(e.atMs - (e.lastSoundMs + AMD_DEFAULTS.greetingEndSilenceMs)).toBeGreaterThanOrEqual(0);
    expect(e.atMs - (e.lastSoundMs + AMD_DEFAULTS.greetingEndSilenceMs)).toBeLessThanOrEqual(SLACK);
  });

  it('a beep too faint to count as speech still holds off the end of the greeting, and is the end', () => {
    // The beep is 8 dB over the line's noise: not speech (12 dB), but a tone.
    const line = new Line().silence(300).greeting(5000).silence(1300);
    const beepEnd = line.ms + 800;
    line.beep(1000, 800, -37).silence(3000);
    const h = listen(line.samples(-45));
    expect(h.events.map((e) => e.type)).toEqual(['decision', 'beep']);
    expect(h.events[1]!.pushedMs - beepEnd).toBeGreaterThanOrEqual(0);
    expect(h.events[1]!.pushedMs - beepEnd).toBeLessThanOrEqual(SLACK);
  });

  it('times out after maxGreetingWaitMs of a greeting that never ends', () => {
    const h = listen(new Line().silence(200).greeting(12_000).samples(), { maxGreetingWaitMs: 5000 });
    expect(h.events.map((e) => e.type)).toEqual(['decision', 'greeting-timeout']);
    expect(Math.abs(h.events[1]!.pushedMs - (h.detector.decision!.decidedAtMs + 5000))).toBeLessThanOrEqual(
      SLACK,
    );
  });

  it('waits only when asked for anything but a machine, and not at all without waitForGreetingEndAfterMachine', () => {
    const hello = new Line().silence(300).talk(600).silence(4000).samples();
    const detector = createAnsweringMachineDetector({ sampleRate: RATE });
    const first = detector.push(hello.subarray(0, 2 * RATE));
    expect(first.map((e) => e.type)).toEqual(['decision']);
    expect(detector.greeting.status).toBe('idle');
    detector.waitForGreetingEnd({ silenceMs: 2000 });
    expect(detector.greeting).toMatchObject({
      status: 'waiting',
      sinceMs: detector.nowMs,
      endSilenceMs: 2000,
    });
    // The answer ended at 900 ms: 2 s of silence after it ends the wait at 2900 ms.
    const rest = detector.push(hello.subarray(2 * RATE));
    expect(rest.map((e) => e.type)).toEqual(['greeting-end']);
    expect(Math.abs(rest[0]!.atMs - 2900)).toBeLessThanOrEqual(SLACK);
    const machine = listen(new Line().silence(300).greeting(5000).silence(3000).samples(), {
      waitForGreetingEndAfterMachine: false,
    });
    expect(machine.events.map((e) => e.type)).toEqual(['decision']);
    expect(machine.detector.greeting.status).toBe('idle');
  });

  it('every option has bounds, and the defaults are within them', () => {
    expect(() => createAnsweringMachineDetector({ sampleRate: 4000 })).toThrow(RangeError);
    for (const [name, value] of [
      ['silenceTimeoutMs', 100],
      ['machineSpeechMs', 60_000],
      ['humanSilenceMs', 50],
      ['minSpeechMs', 5000],
      ['greetingEndSilenceMs', 0],
      ['maxGreetingWaitMs', 1e9],
      ['beepMinMs', 10],
      ['beepMinHz', 50],
      ['openAboveFloorDb', 1],
      ['minLevelDbfs', 0],
      ['speechPeakDb', 3],
      ['humanSilenceMs', Number.NaN],
    ] as const)
      expect(() => createAnsweringMachineDetector({ sampleRate: RATE, [name]: value }), name).toThrow(
        new RegExp(name),
      );
    expect(() =>
      createAnsweringMachineDetector({ sampleRate: RATE, beepMinMs: 800, beepMaxMs: 500 }),
    ).toThrow(/beepMaxMs/);
    expect(() =>
      createAnsweringMachineDetector({ sampleRate: RATE }).waitForGreetingEnd({ maxWaitMs: 10 }),
    ).toThrow(/maxWaitMs/);
    expect(() => createAnsweringMachineDetector({ sampleRate: 8000, ...AMD_DEFAULTS })).not.toThrow();
    // From JavaScript, an option given as undefined takes its default.
    const loose = { sampleRate: RATE, humanSilenceMs: undefined } as unknown as AmdOptions;
    expect(
      decisionOf(listen(new Line().silence(300).talk(600).silence(2000).samples(), loose)).decidedAtMs,
    ).toBeLessThanOrEqual(900 + AMD_DEFAULTS.humanSilenceMs + SLACK);
  });
});
