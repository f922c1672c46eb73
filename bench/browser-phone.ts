/**
 * The browser phone as a user meets it: calls from the page in headless Chromium (the fake microphone
 * plays speech, muted until the caller "talks") against the app with the local speech service. Per
 * call: the page's time from the media stream opening to the first audible audio it plays; the
 * greeting's first byte and first frame on the server; the caller's speech onset → the page's audio cut
 * (measured by the page: when the onset's 20 ms left it, when the clear arrived), and the server's
 * detection delay (onset → confirmed, on the caller's timeline).
 */
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { startBenchApp } from './app.js';
import { launchChromium, writeCallerSpeech } from '../testkit/browser.js';
import { SseReader } from '../testkit/sse.js';
import { fmt, percentile, printTable } from './stats.js';

const CALLS = 8;

async function shownMs(page: Page, id: string, timeoutMs = 20_000): Promise<number> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = await page.locator(`#${id}`).getAttribute('data-ms');
    if (value !== null) return Number(value);
    if (performance.now() > deadline) throw new Error(`the page never showed #${id}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function heardAtLeast(page: Page, ms: number): Promise<void> {
  const deadline = performance.now() + 20_000;
  while (Number(await page.locator('#stat-heard').getAttribute('data-ms')) < ms) {
    if (performance.now() > deadline) throw new Error('the greeting never reached the page');
    await new Promise((r) => setTimeout(r, 20));
  }
}

interface Figures {
  firstAudioMs: number;
  firstByteMs: number;
  firstFrameMs: number;
  onsetToCutMs: number;
  detectionMs: number;
}

export async function benchBrowserPhone(): Promise<void> {
  const bench = await startBenchApp('browser');
  const { app, dir } = bench;
  const wav = join(dir, 'caller.wav');
  await writeCallerSpeech(wav);
  const browser = await launchChromium(wav);
  const figures: Figures[] = [];
  try {
    for (let i = 0; i < CALLS; i++) {
      const context = await browser.newContext();
      const page = await context.newPage();
      await page.goto(`${app.url}/`);
      await page.locator('#call:not([disabled])').waitFor();
      await page.click('#mute');
      await page.click('#call');
      await page.locator('#call-id').filter({ hasText: /^CA/ }).waitFor();
      const callId = (await page.locator('#call-id').textContent())!;
      while (app.calls.get(callId)?.state.status !== 'active') await new Promise((r) => setTimeout(r, 10));
      const events = new SseReader(`${app.url}/calls/${callId}/events?after=0`);
      await heardAtLeast(page, 1000);
      await page.click('#mute');
      const onsetToCutMs = await shownMs(page, 'stat-barge-in');
      await page.click('#mute');
      await events.until((e) => e.some((x) => x.event === 'utterance.finished'));
      const bargeIn = events.of('barge-in')[0] as { onset_ms: number; detected_ms: number };
      const greeting = events.of('utterance.finished')[0] as {
        result: { first_byte_ms: number; first_frame_ms: number };
      };
      figures.push({
        firstAudioMs: await shownMs(page, 'stat-first-audio'),
        firstByteMs: greeting.result.first_byte_ms,
        firstFrameMs: greeting.result.first_frame_ms,
        onsetToCutMs,
        detectionMs: bargeIn.detected_ms - bargeIn.onset_ms,
      });
      await page.click('#hangup');
      events.close();
      await context.close();
    }
  } finally {
    await browser.close();
    await bench.close();
  }
  const row = (name: string, pick: (f: Figures) => number, where: string): string[] => {
    const values = figures.map(pick);
    return [
      name,
      fmt(percentile(values, 50), 0),
      fmt(percentile(values, 95), 0),
      fmt(Math.max(...values), 0),
      where,
    ];
  };
  printTable(
    `Browser phone (${figures.length} calls from headless Chromium, default flow, fake microphone)`,
    ['measure', 'p50 ms', 'p95 ms', 'max ms', 'measured by'],
    [
      row('stream open → first audible audio played', (f) => f.firstAudioMs, 'the page'),
      row('greeting (cached after call 1): request → first byte', (f) => f.firstByteMs, 'the server'),
      row('greeting (cached after call 1): request → first frame', (f) => f.firstFrameMs, 'the server'),
      row('caller speech onset → audio cut in the page', (f) => f.onsetToCutMs, 'the page'),
      row('  of which onset → barge-in confirmed', (f) => f.detectionMs, 'the server'),
    ],
  );
}
