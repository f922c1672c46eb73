/**
 * The browser phone end to end, in a real headless Chromium (Debian's, installed by
 * scripts/install-tools.sh) driven by playwright-core, against the real app with the local speech
 * service. The microphone is Chromium's fake capture device playing a WAV of speech in a loop, so the
 * page's Mute button decides when the "caller" talks: muted while the greeting plays (we hear it: the
 * page measures the energy of what it plays), unmuted to barge in, muted again to press a key.
 *
 * A screenshot of the page mid-call is saved to test-artifacts/browser-phone-mid-call.png.
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/paths.js';
import { builtInVoices } from '../../src/service/voices/builtin.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { launchChromium, writeCallerSpeech } from '../../testkit/browser.js';
import { SseReader } from '../../testkit/sse.js';

const ARTIFACTS = join(PROJECT_ROOT, 'test-artifacts');
const GREETING = 'Hello, and thank you for calling voxbridge.';

let t: TestApp;
let browser: Browser;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'voxbridge-browser-'));
  const wav = join(dir, 'caller.wav');
  await writeCallerSpeech(wav);
  [t, browser] = await Promise.all([startTestApp(), launchChromium(wav)]);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await t?.close();
  await rm(dir, { recursive: true, force: true });
});

/** A fresh tab (its own session storage) on `url`; `errors` collects the page's uncaught errors. */
async function openPage(url: string): Promise<{ page: Page; errors: string[] }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(url);
  return { page, errors };
}

/** A number the page shows in an element's `data-ms` (undefined until it has one). */
async function shownMs(page: Page, id: string): Promise<number | undefined> {
  const value = await page.locator(`#${id}`).getAttribute('data-ms');
  return value === null ? undefined : Number(value);
}

async function waitForShownMs(page: Page, id: string, atLeast: number, timeout = 20_000): Promise<number> {
  await expect
    .poll(async () => (await shownMs(page, id)) ?? Number.NEGATIVE_INFINITY, { timeout, interval: 50 })
    .toBeGreaterThanOrEqual(atLeast);
  return (await shownMs(page, id))!;
}

/** The call's id as the page shows it, once the server has the call. */
async function callOf(page: Page, app: TestApp): Promise<string> {
  await expect.poll(() => page.locator('#call-id').textContent()).toMatch(/^CA[0-9a-f]{32}$/);
  const id = (await page.locator('#call-id').textContent())!;
  const deadline = performance.now() + 5000;
  while (app.app.calls.get(id)?.state.status !== 'active') {
    if (performance.now() > deadline) throw new Error(`the server has no active call ${id}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  return id;
}

describe('the browser phone, in Chromium', () => {
  it('calls, hears the greeting, barges in by voice, presses a key and hears the answer, hangs up', async () => {
    const { page, errors } = await openPage(`${t.url}/`);
    await page.locator('#call:not([disabled])').waitFor();
    // The picker offers every built-in voice the service lists.
    expect(await page.locator('#voice option').allTextContents()).toEqual(
      expect.arrayContaining(builtInVoices().map((v) => `${v.name} (premade)`)),
    );
    await page.click('#mute'); // the fake microphone talks from the start: quiet until we want it
    await page.click('#call');
    const callId = await callOf(page, t);
    const events = new SseReader(`${t.url}/calls/${callId}/events?after=0`);
    try {
      // The greeting reaches the page: over a second and a half of audible audio played.
      await waitForShownMs(page, 'stat-heard', 1500);
      const firstAudio = (await shownMs(page, 'stat-first-audio'))!;
      expect(firstAudio).toBeGreaterThan(0);
      expect(firstAudio).toBeLessThan(5000);
      await expect.poll(() => page.locator('#status').textContent()).toBe('in call');
      await expect.poll(() => page.locator('#flow-map li.current').textContent()).toBe('greeting');

      // The caller speaks over the greeting: the server cuts it, the page shows where and how fast.
      await page.click('#mute');
      const stopMs = await waitForShownMs(page, 'stat-barge-in', 0);
      await page.click('#mute');
      expect(stopMs).toBeGreaterThan(0);
      expect(stopMs).toBeLessThan(3000);
      await events.until((e) => e.some((x) => x.event === 'barge-in'));
      const bargeIn = events.of('barge-in')[0] as {
        heard_text: string;
        onset_ms: number;
        detected_ms: number;
      };
      expect(bargeIn.detected_ms).toBeGreaterThan(bargeIn.onset_ms);
      expect(GREETING.startsWith(bargeIn.heard_text.slice(0, GREETING.length))).toBe(true);
      const interrupted = page.locator('#transcript li[data-status="interrupted"]');
      await expect.poll(() => interrupted.count()).toBe(1);
      expect(await interrupted.locator('.cut').textContent()).toMatch(
        /simply by speaking, and I will stop and listen\.$/,
      );

      // A key: the flow answers, and the page plays it.
      const heardBefore = (await shownMs(page, 'stat-heard'))!;
      await page.click('#keypad [data-digit="1"]');
      await events.until(
        (e) =>
          e.some(
            (x) =>
              x.event === 'utterance.started' && (x.data as { text: string }).text === 'You pressed one.',
          ),
        15_000,
      );
      expect(events.of('dtmf')).toEqual([expect.objectContaining({ digit: '1' })]);
      await waitForShownMs(page, 'stat-heard', heardBefore + 500);
      await expect
        .poll(() => page.locator('#transcript li[data-status="played"]').allTextContents())
        .toContainEqual(expect.stringContaining('You pressed one.'));
      await expect.poll(() => page.locator('#flow-map li.current').textContent()).toBe('menu');

      await mkdir(ARTIFACTS, { recursive: true });
      await page.screenshot({ path: join(ARTIFACTS, 'browser-phone-mid-call.png') });

      await page.click('#hangup');
      await expect.poll(() => page.locator('#status').textContent()).toMatch(/^ended/);
      await events.until((e) => e.some((x) => x.event === 'call.ended'));
      await expect.poll(() => t.app.calls.list().length).toBe(0);
      expect(errors).toEqual([]);
    } finally {
      events.close();
      await page.close();
    }
  }, 90_000);
});

describe('the browser phone with tokens', () => {
  let guarded: TestApp;
  beforeAll(async () => {
    guarded = await startTestApp({}, undefined, {
      CONTROL_TOKEN: 'test-control-token-2',
      MEDIA_STREAM_TOKEN: 'test-media-token-2',
    });
  });
  afterAll(async () => {
    await guarded.close();
  });

  it('asks for CONTROL_TOKEN and MEDIA_STREAM_TOKEN, then calls with them', async () => {
    const { page, errors } = await openPage(`${guarded.url}/`);
    try {
      const dialog = page.locator('dialog#tokens');
      await dialog.waitFor({ state: 'visible' });
      await page.fill('#control-token', 'test-control-token-2');
      await page.fill('#media-token', 'test-media-token-2');
      await page.click('dialog#tokens button[type="submit"]');
      await page.locator('#call:not([disabled])').waitFor();
      expect(await page.locator('#voice option').count()).toBeGreaterThan(1);
      await page.click('#mute');
      await page.click('#call');
      const callId = await callOf(page, guarded);
      await waitForShownMs(page, 'stat-heard', 500);
      // The page follows the guarded event stream too.
      await expect.poll(() => page.locator('#transcript li').count()).toBeGreaterThan(0);
      // The say box: POST /calls/{id}/say with the picked voice, cutting in (now).
      const events = new SseReader(`${guarded.url}/calls/${callId}/events?after=0`, {
        authorization: 'Bearer test-control-token-2',
      });
      try {
        await page.selectOption('#voice', 'voxbridge-default');
        await page.fill('#say-text', 'This sentence came from the text box.');
        await page.check('#say-now');
        await page.click('#say-send');
        await events.until(
          (e) =>
            e.some(
              (x) =>
                x.event === 'utterance.finished' &&
                (x.data as { result: { heard_text: string } }).result.heard_text ===
                  'This sentence came from the text box.',
            ),
          15_000,
        );
        await expect.poll(() => page.locator('#say-text').inputValue()).toBe('');
        await expect
          .poll(() => page.locator('#transcript li[data-status="played"]').allTextContents())
          .toContainEqual(expect.stringContaining('This sentence came from the text box.'));
      } finally {
        events.close();
      }
      await page.click('#hangup');
      await expect.poll(() => guarded.app.calls.get(callId)).toBeUndefined();
      expect(errors).toEqual([]);
    } finally {
      await page.close();
    }
  });

  it('says so when the media stream token is wrong', async () => {
    const { page, errors } = await openPage(`${guarded.url}/`);
    try {
      await page.locator('dialog#tokens').waitFor({ state: 'visible' });
      await page.fill('#control-token', 'test-control-token-2');
      await page.fill('#media-token', 'not-the-token');
      await page.click('dialog#tokens button[type="submit"]');
      await page.locator('#call:not([disabled])').waitFor();
      await page.click('#call');
      await expect.poll(() => page.locator('#status').textContent()).toBe('failed');
      expect(await page.locator('#notice').textContent()).toMatch(/^The call failed: .*MEDIA_STREAM_TOKEN/);
      expect(guarded.app.calls.list()).toHaveLength(0);
      // The tokens can be entered again.
      await page.click('#change-tokens');
      await page.locator('dialog#tokens').waitFor({ state: 'visible' });
      expect(errors).toEqual([]);
    } finally {
      await page.close();
    }
  });
});
