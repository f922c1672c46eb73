import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { BUILT_IN_VOICE_IDS } from '../../src/service/voices/builtin.js';
import { VoiceStore } from '../../src/service/voices/store.js';
import { KEYS, NO_PHONE_BARGE_IN, startTestApp } from '../helpers/app.js';
import { espeakSpeech, wavFile } from '../../testkit/audio.js';

describe('voice store persistence', () => {
  it('voices survive a restart of the app', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'voxbridge-persist-'));
    try {
      const first = await startTestApp(NO_PHONE_BARGE_IN, dir);
      const form = new FormData();
      form.append('name', 'Survivor');
      form.append(
        'files',
        new Blob([wavFile(await espeakSpeech('I will still be here tomorrow.', 'en-us+m3', 30), 22_050)]),
        's.wav',
      );
      const added = (await (
        await fetch(`${first.api}/v1/voices/add`, {
          method: 'POST',
          headers: { 'xi-api-key': KEYS.main },
          body: form,
        })
      ).json()) as {
        voice_id: string;
      };
      await first.close({ keepData: true });

      const second = await startTestApp(NO_PHONE_BARGE_IN, dir);
      try {
        const list = (await (
          await fetch(`${second.api}/v2/voices?search=survivor`, { headers: { 'xi-api-key': KEYS.main } })
        ).json()) as {
          voices: Array<{ voice_id: string; samples: unknown[] }>;
        };
        expect(list.voices.map((v) => v.voice_id)).toEqual([added.voice_id]);
        expect(list.voices[0]!.samples).toHaveLength(1);
        const speech = await fetch(
          `${second.api}/v1/text-to-speech/${added.voice_id}?output_format=pcm_24000`,
          {
            method: 'POST',
            headers: { 'xi-api-key': KEYS.main, 'content-type': 'application/json' },
            body: JSON.stringify({ text: 'Back again.' }),
          },
        );
        expect(speech.status).toBe(200);
        expect((await speech.arrayBuffer()).byteLength).toBeGreaterThan(10_000);
      } finally {
        await second.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('a stray directory or a corrupt voice.json does not stop the app from starting; the rest is served', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'voxbridge-stray-'));
    try {
      const first = await startTestApp(NO_PHONE_BARGE_IN, dir);
      const form = new FormData();
      form.append('name', 'Intact');
      form.append(
        'files',
        new Blob([wavFile(await espeakSpeech('Nothing happened to me.', 'en-us+m3', 30), 22_050)]),
        's.wav',
      );
      const res = await fetch(`${first.api}/v1/voices/add`, {
        method: 'POST',
        headers: { 'xi-api-key': KEYS.main },
        body: form,
      });
      const added = (await res.json()) as { voice_id: string };
      await first.close({ keepData: true });

      await mkdir(join(dir, 'voices', 'lost+found'));
      await mkdir(join(dir, 'voices', 'Broken0000000000000'));
      await writeFile(join(dir, 'voices', 'Broken0000000000000', 'voice.json'), '{"voice_id":');
      const second = await startTestApp(NO_PHONE_BARGE_IN, dir);
      try {
        const list = (await (
          await fetch(`${second.api}/v2/voices?page_size=100`, { headers: { 'xi-api-key': KEYS.main } })
        ).json()) as { voices: Array<{ voice_id: string }> };
        expect(list.voices.map((v) => v.voice_id).sort()).toEqual(
          [added.voice_id, ...BUILT_IN_VOICE_IDS].sort(),
        );
      } finally {
        await second.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('a write killed part-way leaves the store readable and every listed voice whole', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'voxbridge-kill-'));
    try {
      for (const delayMs of [150, 400, 700]) {
        const child = spawn(
          process.execPath,
          [join(import.meta.dirname, '../fixtures/store-writer.mjs'), dir],
          {
            stdio: ['ignore', 'pipe', 'inherit'],
          },
        );
        await once(child.stdout, 'data');
        await new Promise((r) => setTimeout(r, delayMs));
        child.kill('SIGKILL');
        await once(child, 'exit');

        const store = await VoiceStore.open(dir);
        expect(store.size).toBeGreaterThan(0);
        for (const voice of store.visibleTo('writer')) {
          expect(voice.samples).toHaveLength(2);
          for (const s of voice.samples) {
            const data = await readFile(join(dir, 'voices', voice.voice_id, s.sample_id));
            expect(data.length).toBe(s.size_bytes);
            expect(createHash('sha256').update(data).digest('hex')).toBe(s.hash);
          }
        }
        // Opening cleaned up whatever the killed write left half-done.
        expect((await readdir(join(dir, 'voices'))).filter((n) => n.startsWith('.tmp-'))).toEqual([]);
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
