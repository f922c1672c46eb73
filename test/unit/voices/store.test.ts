import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { FliteVoiceParams } from '../../../src/service/engine/voice-params.js';
import { calibratedF0Hz } from '../../../src/service/voices/espeak-params.js';
import { fliteCalibratedF0Hz } from '../../../src/service/voices/flite-params.js';
import { VoiceStore, VoiceStoreFullError } from '../../../src/service/voices/store.js';

const engine: FliteVoiceParams = { engine: 'flite', voice: 'kal16', f0Hz: 90, f0RangeHz: 10, rate: 1.1 };

function capturingLogger(): { logger: pino.Logger; lines: Array<{ level: number; msg: string }> } {
  const lines: Array<{ level: number; msg: string }> = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, callback): void {
      lines.push(JSON.parse(chunk.toString('utf8')) as { level: number; msg: string });
      callback();
    },
  });
  return { logger: pino({ level: 'warn' }, sink), lines };
}

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'voxbridge-store-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function addOne(store: VoiceStore, bytes: number): Promise<string> {
  const voice = await store.add({
    name: 'Kept',
    owner: 'me',
    description: null,
    labels: {},
    engine,
    files: [{ fileName: 'a.wav', mimeType: 'audio/wav', data: Buffer.alloc(bytes, 1) }],
  });
  return voice.voice_id;
}

describe('VoiceStore.open', () => {
  it('skips a stray directory and unreadable records with a warning naming each, and serves the rest', async () => {
    const kept = await addOne(await VoiceStore.open(dir), 1000);
    const voices = join(dir, 'voices');
    await mkdir(join(voices, 'stray'));
    await mkdir(join(voices, 'corrupt'));
    await writeFile(join(voices, 'corrupt', 'voice.json'), '{"voice_id": "corr');
    await mkdir(join(voices, 'elsewhere'));
    await writeFile(
      join(voices, 'elsewhere', 'voice.json'),
      JSON.stringify({ voice_id: 'another', name: 'x' }),
    );
    await mkdir(join(voices, 'not-a-voice'));
    await writeFile(join(voices, 'not-a-voice', 'voice.json'), '[1, 2, 3]');

    const { logger, lines } = capturingLogger();
    const store = await VoiceStore.open(dir, [], { logger });
    expect(store.size).toBe(1);
    expect(store.get(kept)?.name).toBe('Kept');
    expect(store.bytes.used).toBe(1000);
    const warnings = lines.filter((l) => l.level === 40).map((l) => l.msg);
    expect(warnings).toHaveLength(4);
    for (const name of ['stray', 'corrupt', 'elsewhere', 'not-a-voice'])
      expect(warnings.some((m) => m.includes(join(voices, name)))).toBe(true);
    // Left on disk for their owner to look at.
    expect((await readdir(voices)).sort()).toEqual(
      ['corrupt', 'elsewhere', kept, 'not-a-voice', 'stray'].sort(),
    );
  });
});

describe('voices stored before engines had names', () => {
  /** A `voice.json` as earlier versions wrote it: eSpeak settings without `engine`. */
  async function legacy(id: string, settings: Record<string, unknown>): Promise<void> {
    await mkdir(join(dir, 'voices', id), { recursive: true });
    await writeFile(
      join(dir, 'voices', id, 'voice.json'),
      JSON.stringify({
        voice_id: id,
        name: id,
        owner: 'me',
        category: 'cloned',
        description: null,
        labels: {},
        created_at_unix: 1,
        engine: settings,
        samples: [],
      }),
    );
  }

  it('are spoken by Flite at the F0 their eSpeak settings made, and keep those settings for other languages', async () => {
    const old = { language: 'en-us', variant: 'f3', pitch: 40, range: 50, rateWpm: 175 };
    await legacy('OldHigh0000000000000', old);
    const voice = (await VoiceStore.open(dir)).get('OldHigh0000000000000')!;
    // eSpeak's 175 wpm measures 4.8 syllables a second, which Flite speaks a third faster than its own pace.
    expect(voice.engine).toMatchObject({ engine: 'flite', voice: 'slt' });
    expect((voice.engine as FliteVoiceParams).rate).toBeGreaterThan(1.2);
    const f0 = fliteCalibratedF0Hz(voice.engine as FliteVoiceParams)!;
    expect(Math.abs(f0 / calibratedF0Hz(old)! - 1)).toBeLessThan(0.02);
    expect(voice.espeak).toEqual({ ...old, engine: 'espeak-ng' });
  });

  it('stay on eSpeak when Flite cannot take them: another language, or a variant with no calibration', async () => {
    await legacy('German00000000000000', {
      language: 'de',
      variant: 'm3',
      pitch: 50,
      range: 50,
      rateWpm: 175,
    });
    await legacy('Croak000000000000000', {
      language: 'en-us',
      variant: 'croak',
      pitch: 50,
      range: 50,
      rateWpm: 175,
    });
    const store = await VoiceStore.open(dir);
    expect(store.get('German00000000000000')?.engine).toMatchObject({ engine: 'espeak-ng', language: 'de' });
    expect(store.get('Croak000000000000000')?.engine).toMatchObject({
      engine: 'espeak-ng',
      variant: 'croak',
    });
  });

  it('are skipped, like any record, when their settings are of no known engine', async () => {
    await legacy('Unknown0000000000000', { engine: 'festival', voice: 'x' });
    expect((await VoiceStore.open(dir)).size).toBe(0);
  });
});

describe('VoiceStore size bound', () => {
  it('counts stored samples and reservations against maxBytes', async () => {
    const store = await VoiceStore.open(dir, [], { maxBytes: 2500 });
    await addOne(store, 1000);
    expect(store.tryReserve(1000)).toBe(true);
    expect(store.tryReserve(501)).toBe(false);
    await expect(addOne(store, 501)).rejects.toBeInstanceOf(VoiceStoreFullError);
    store.release(1000);
    await addOne(store, 1500);
    expect(store.bytes).toEqual({ used: 2500, reserved: 0 });
    // Reopened, the stored samples still count.
    expect((await VoiceStore.open(dir, [], { maxBytes: 2500 })).tryReserve(1)).toBe(false);
  });
});
