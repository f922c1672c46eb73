/** Audio files written as they arrive, finding the system's player, progress figures, key presses. */
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseWav, wavHeader } from '../../../src/audio/wav.js';
import { AudioFile, WavRecorder } from '../../../src/cli/audio-file.js';
import { keyAction } from '../../../src/cli/keyboard.js';
import { findPlayer, micCommand } from '../../../src/cli/player.js';
import { audioSeconds, formatBytes } from '../../../src/cli/progress.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'voxbridge-cli-unit-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('AudioFile', () => {
  it("fills in a streamed WAV header's sizes on close", async () => {
    const path = join(dir, 'streamed.wav');
    const file = await AudioFile.create(path);
    await file.write(wavHeader({ sampleRate: 24_000, channels: 1, bitsPerSample: 16 }));
    await file.write(new Uint8Array(4800));
    await file.close({ wav: true });
    const bytes = await readFile(path);
    expect(bytes.length).toBe(44 + 4800);
    expect(bytes.readUInt32LE(4)).toBe(36 + 4800);
    expect(bytes.readUInt32LE(40)).toBe(4800);
  });

  it('leaves anything else as written, and discard removes the file', async () => {
    const path = join(dir, 'raw.pcm');
    const file = await AudioFile.create(path);
    await file.write(Buffer.from('RIFF but not a wave file at all, just text......'));
    await file.close({ wav: true });
    expect((await readFile(path, 'utf8')).startsWith('RIFF but not')).toBe(true);
    const gone = await AudioFile.create(join(dir, 'gone.wav'));
    await gone.write(new Uint8Array(10));
    await gone.discard();
    await expect(readFile(join(dir, 'gone.wav'))).rejects.toThrow(/ENOENT/);
  });
});

describe('WavRecorder', () => {
  it('writes a valid 16-bit WAV of what it was given, in order', async () => {
    const path = join(dir, 'rec.wav');
    const rec = await WavRecorder.create(path, 8000);
    for (let i = 0; i < 50; i++) rec.write(new Uint8Array(new Int16Array(160).fill(i * 100).buffer));
    await rec.close();
    const wav = parseWav(await readFile(path));
    expect(wav.sampleRate).toBe(8000);
    expect(wav.samples.length).toBe(8000);
    expect(Math.round(wav.samples[160 * 49]! * 32768)).toBe(4900);
  });
});

describe('findPlayer', () => {
  it('prefers play, then ffplay, then aplay; aplay cannot play mp3; none found is undefined', async () => {
    const bin = join(dir, 'bin');
    await mkdir(bin);
    const tool = async (name: string): Promise<void> => {
      await writeFile(join(bin, name), '#!/bin/sh\n');
      await chmod(join(bin, name), 0o755);
    };
    expect(findPlayer('wav', { PATH: bin })).toBeUndefined();
    await tool('aplay');
    expect(findPlayer('wav', { PATH: bin })?.name).toBe('aplay');
    expect(findPlayer('mp3', { PATH: bin })).toBeUndefined();
    await tool('ffplay');
    expect(findPlayer('mp3', { PATH: `/nonexistent:${bin}` })).toMatchObject({
      name: 'ffplay',
      path: join(bin, 'ffplay'),
    });
    await tool('play');
    expect(findPlayer('wav', { PATH: bin })).toEqual({
      name: 'play',
      path: join(bin, 'play'),
      args: ['-q', '-V1', '-t', 'wav', '-'],
    });
    // Not executable: not a player.
    await writeFile(join(bin, 'rec'), '');
    expect(micCommand({ PATH: bin })).toBeUndefined();
  });
});

describe('progress and keys', () => {
  it('seconds of audio per format', () => {
    expect(audioSeconds('pcm_24000', 48_000)).toBe(1);
    expect(audioSeconds('wav_24000', 44 + 96_000)).toBe(2);
    expect(audioSeconds('mp3_44100_192', 24_000)).toBe(1);
    expect(formatBytes(512)).toBe('512 B');
    expect(formatBytes(1536)).toBe('1.5 KiB');
  });

  it('keys: DTMF digits, q or Ctrl-C to hang up, the rest ignored', () => {
    expect(keyAction('7')).toEqual({ type: 'dtmf', digit: '7' });
    expect(keyAction('#')).toEqual({ type: 'dtmf', digit: '#' });
    expect(keyAction('b')).toEqual({ type: 'dtmf', digit: 'B' });
    expect(keyAction('q')).toEqual({ type: 'hangup' });
    expect(keyAction('\u0003')).toEqual({ type: 'hangup' });
    expect(keyAction('x')).toBeUndefined();
  });
});
