/**
 * The built-in cast, through the local service: every key sees it as premade voices with labels, each
 * is a voice the engines really have (Flite's, and eSpeak-NG's for other languages), and each sounds
 * unlike every other while speaking at a pace a listener can follow.
 */
import Init from '@echogarden/espeak-ng-emscripten';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { concatInt16 } from '../../src/audio/pcm.js';
import { FliteEngine } from '../../src/service/engine/flite/engine.js';
import type { FliteVoiceParams } from '../../src/service/engine/voice-params.js';
import { analyzeSpeech } from '../../src/service/voices/analyze.js';
import { BUILT_IN_VOICE_ID, BUILT_IN_VOICE_IDS, builtInVoices } from '../../src/service/voices/builtin.js';
import { MAX_DERIVED_RATE, MIN_DERIVED_RATE } from '../../src/service/voices/flite-params.js';
import { spectralCentroidHz } from '../../testkit/spectrum.js';
import { KEYS, NO_PHONE_BARGE_IN, startTestApp, type TestApp } from '../helpers/app.js';

const SERVICE_RATE = 24_000;
/** Voiced and voiceless sounds, stressed and unstressed syllables, a clause pause: about 5 s of speech. */
const SENTENCE =
  'The old bridge creaks as the travellers cross the river at dawn, and the ferryman counts their coins.';

/*
 * How far apart two voices must be, as the larger value over the smaller, minus one (stricter than a
 * bare difference limen, so that the difference is plain, not just detectable):
 * - 15 % in median F0 (2.4 semitones). Listeners needed F0 changes of under 5 to 15 Hz (median 12 Hz)
 *   to notice them in sentences read by a male voice (Harris & Umeda, JASA 1987): up to about 15 % of a
 *   male F0 near 100 Hz.
 * - 15 % in spectral centroid: three times what the default voice's centroid moves when only its pace
 *   changes (voice_settings speed 0.8 → 1.2: 4.7 %), a change that leaves it the same voice.
 * A pair must differ by at least this much in one of the two.
 */
const F0_MARGIN = 0.15;
const CENTROID_MARGIN = 0.15;

interface Measured {
  voiceId: string;
  f0Hz: number;
  centroidHz: number;
  seconds: number;
}

/** The larger over the smaller, minus one; a voice with no F0 (a whisper) is infinitely far from one with. */
function relativeDifference(a: number, b: number): number {
  if (a === b) return 0;
  const [low, high] = a < b ? [a, b] : [b, a];
  return low <= 0 ? Infinity : high / low - 1;
}

function toFloat(pcm: Buffer): Float32Array {
  const out = new Float32Array(pcm.length >> 1);
  for (let i = 0; i < out.length; i++) out[i] = pcm.readInt16LE(i * 2) / 32768;
  return out;
}

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp(NO_PHONE_BARGE_IN);
});
afterAll(async () => {
  await t.close();
});

async function speak(voiceId: string, text: string): Promise<Float32Array> {
  const res = await fetch(`${t.api}/v1/text-to-speech/${voiceId}?output_format=pcm_24000`, {
    method: 'POST',
    headers: { 'xi-api-key': KEYS.main, 'content-type': 'application/json' },
    body: JSON.stringify({ text }),
  });
  expect(res.status).toBe(200);
  return toFloat(Buffer.from(await res.arrayBuffer()));
}

describe('the built-in voices', () => {
  it('are listed to every key as premade voices with a description and gender, age, accent and use-case labels', async () => {
    // A key that created nothing sees exactly the cast.
    const res = await fetch(`${t.api}/v2/voices?page_size=100`, {
      headers: { 'xi-api-key': KEYS.other },
    });
    const list = (await res.json()) as {
      voices: Array<{
        voice_id: string;
        name: string;
        category: string;
        description: string | null;
        labels: Record<string, string>;
        is_owner: boolean;
      }>;
      total_count: number;
    };
    expect(list.total_count).toBe(BUILT_IN_VOICE_IDS.length);
    expect(list.voices.map((v) => v.voice_id).sort()).toEqual([...BUILT_IN_VOICE_IDS].sort());
    // Ids are public (configs and scripts name them): a release may retune a voice, never rename it.
    expect(BUILT_IN_VOICE_IDS).toEqual([
      BUILT_IN_VOICE_ID,
      'voxbridge-narrator',
      'voxbridge-deep',
      'voxbridge-high',
      'voxbridge-elder',
      'voxbridge-whisper',
      'voxbridge-fast',
      'voxbridge-scottish',
    ]);
    expect(new Set(list.voices.map((v) => v.name)).size).toBe(list.voices.length);
    for (const v of list.voices) {
      expect(v).toMatchObject({ category: 'premade', is_owner: false });
      expect(v.voice_id).toMatch(/^voxbridge-[a-z]+$/);
      expect(v.description?.length).toBeGreaterThan(20);
      expect(v.labels).toEqual({
        language: 'en',
        gender: expect.stringMatching(/^(male|female)$/) as unknown,
        age: expect.stringMatching(/^(young|middle_aged|old)$/) as unknown,
        accent: expect.any(String) as unknown,
        use_case: expect.any(String) as unknown,
      });
    }
    // The same list under `voice_type=default` and `category=premade`.
    for (const query of ['voice_type=default', 'category=premade']) {
      const filtered = (await (
        await fetch(`${t.api}/v2/voices?page_size=100&${query}`, { headers: { 'xi-api-key': KEYS.main } })
      ).json()) as { voices: Array<{ voice_id: string }> };
      expect(filtered.voices.map((v) => v.voice_id).sort()).toEqual([...BUILT_IN_VOICE_IDS].sort());
    }
  });

  it("are voices the engines have: Flite's own voices, and for other languages eSpeak's languages and variants", async () => {
    const engines = t.app.service!.engines;
    const flite = engines.find((e) => e.id === 'flite')!;
    expect(flite.licence.copyleft).toBe(false);
    for (const { voice_id, engine: params } of builtInVoices()) {
      expect(params.engine, voice_id).toBe('flite');
      const fliteVoice = (params as FliteVoiceParams).voice;
      expect(
        flite.voices.map((v) => v.id),
        `${voice_id}: Flite voice ${fliteVoice}`,
      ).toContain(fliteVoice);
    }
    const module = await Init();
    const engine = new module.eSpeakNGWorker();
    const languages = new Set(engine.list_voices().flatMap((v) => v.languages.map((l) => l.name)));
    // eSpeak falls back to its plain voice, silently, for a variant it does not have: look for the file.
    const fs = (module as unknown as { FS: { analyzePath(path: string): { exists: boolean } } }).FS;
    for (const { voice_id, espeak } of builtInVoices()) {
      expect(espeak, voice_id).toBeDefined();
      expect(languages.has(espeak!.language), `${voice_id}: language ${espeak!.language}`).toBe(true);
      expect(engine.set_voice(espeak!.language), `${voice_id}: set_voice(${espeak!.language})`).toBe(0);
      expect(
        fs.analyzePath(`/usr/share/espeak-ng-data/voices/!v/${espeak!.variant}`).exists,
        `${voice_id}: variant ${espeak!.variant}`,
      ).toBe(true);
    }
  });

  it('sound distinct: every pair differs by ≥ 15 % in median F0 or in spectral centroid, each at an intelligible pace', async () => {
    const measured: Measured[] = [];
    for (const voiceId of BUILT_IN_VOICE_IDS) {
      const samples = await speak(voiceId, SENTENCE);
      measured.push({
        voiceId,
        f0Hz: analyzeSpeech(samples, SERVICE_RATE).f0Hz,
        centroidHz: spectralCentroidHz(samples, SERVICE_RATE),
        seconds: samples.length / SERVICE_RATE,
      });
    }
    // The engine's normal pace: the band flite-params.ts keeps voices made from samples in (slower,
    // Flite drawls; faster, syllables run together), measured as the sentence's length in the default
    // voice, through the same engine in this thread.
    const flite = await FliteEngine.load();
    const secondsAt = (rate: number): number => {
      const parts: Int16Array[] = [];
      const voice = builtInVoices()[0]!.engine as FliteVoiceParams;
      flite.synthesize(SENTENCE, { ...voice, rate }, false, {
        audio: (samples) => parts.push(samples) > 0,
        words: () => undefined,
      });
      return concatInt16(parts).length / SERVICE_RATE;
    };
    const longest = secondsAt(MIN_DERIVED_RATE);
    const shortest = secondsAt(MAX_DERIVED_RATE);

    const pairs: string[] = [];
    let closest = { score: Infinity, text: '' };
    for (let i = 0; i < measured.length; i++) {
      for (let j = i + 1; j < measured.length; j++) {
        const a = measured[i]!;
        const b = measured[j]!;
        const f0 = relativeDifference(a.f0Hz, b.f0Hz);
        const centroid = relativeDifference(a.centroidHz, b.centroidHz);
        const text = `${a.voiceId} / ${b.voiceId}: F0 ${(f0 * 100).toFixed(1)} %, centroid ${(centroid * 100).toFixed(1)} %`;
        const score = Math.max(f0 / F0_MARGIN, centroid / CENTROID_MARGIN);
        if (score < closest.score) closest = { score, text };
        if (score < 1) pairs.push(text);
      }
    }
    console.log(
      [
        `"${SENTENCE}"`,
        'voice                 median F0   centroid   length',
        ...measured.map(
          (m) =>
            `${m.voiceId.padEnd(20)}  ${m.f0Hz.toFixed(1).padStart(6)} Hz  ${m.centroidHz.toFixed(0).padStart(5)} Hz  ${m.seconds.toFixed(2)} s`,
        ),
        `normal length: ${shortest.toFixed(2)}–${longest.toFixed(2)} s (rate ${MAX_DERIVED_RATE}–${MIN_DERIVED_RATE})`,
        `closest pair: ${closest.text}`,
      ].join('\n'),
    );
    expect(pairs, 'pairs closer than the margins').toEqual([]);
    for (const m of measured) {
      expect(m.seconds, `${m.voiceId}'s length`).toBeGreaterThanOrEqual(shortest);
      expect(m.seconds, `${m.voiceId}'s length`).toBeLessThanOrEqual(longest);
    }
    // The whisper has no F0 at all; every other voice has one.
    for (const m of measured) {
      if (m.voiceId === 'voxbridge-whisper') expect(m.f0Hz).toBe(0);
      else expect(m.f0Hz, m.voiceId).toBeGreaterThan(0);
    }
  });
});
