import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { VoiceStore, VoiceStoreFullError } from '../../../src/service/voices/store.js';

const engine = { language: 'en-us', variant: 'm3', pitch: 40, range: 50, rateWpm: 170 };

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
