/**
 * The README's library example, compiled and run as a user would run it, against the real app: it
 * must speak, then be cut by its own barge-in, and leave playable audio behind.
 */
import { execFile } from 'node:child_process';
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/paths.js';
import { KEYS, NO_PHONE_BARGE_IN, startTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp(NO_PHONE_BARGE_IN);
});
afterAll(async () => {
  await t.close();
});

describe('examples/speaker-in-your-bot', () => {
  it('speaks a greeting in full, then reports the barge-in with what was heard', async () => {
    const out = join(t.dataDir, 'out.raw');
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [join(PROJECT_ROOT, 'dist/examples/speaker-in-your-bot.js'), out],
      {
        env: { PATH: process.env['PATH'] ?? '', SPEECH_BASE_URL: t.url, SPEECH_API_KEY: KEYS.main },
        timeout: 30_000,
      },
    );
    const [greeting, cut] = stdout.trim().split('\n');
    expect(greeting).toMatch(/^played \d+ ms: Hello! I start speaking as soon as the first audio arrives\.$/);
    const m = /^interrupted (\d+) ms: (.*)$/.exec(cut ?? '');
    expect(m).not.toBeNull();
    // Cut 1.5 s in: what was heard is about that long, and the text up to there.
    expect(Number(m![1])).toBeGreaterThan(1000);
    expect(Number(m![1])).toBeLessThanOrEqual(1600);
    expect('This answer is long, and the listener will talk over it before it ends.'.startsWith(m![2]!)).toBe(
      true,
    );
    const greetingMs = Number(/^played (\d+)/.exec(greeting!)![1]);
    // 20 ms of 48 kHz stereo s16le is 3840 bytes; everything sent went to the file.
    const bytes = (await readFile(out)).length;
    expect(bytes % 3840).toBe(0);
    expect(bytes / 3840).toBeGreaterThanOrEqual((greetingMs + Number(m![1])) / 20);
    await rm(out);
  });
});
